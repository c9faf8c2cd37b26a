"""A kernel's grid and block (list[int] | None): the scanner reads their integers of Kineto's shapes by its
fast number reader (their values put aside where only checked) and any other by the general one. Every
spelling must be read as msgspec reads it: three integers, another count, fractions, exponents, signs,
leading zeros, more than 16 digits, whitespace, null, nested or other values (declined where msgspec fails).
(An integer beyond int64 is left out: the scanner declines its block, as before, and msgspec reads it.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kineto_native import needs_scanner
from test_kineto_scan_sequences import _compare, _kineto_layout

_NUMBERS = [
    "1",
    "0",
    "7",
    "128",
    "2048",
    "-1",
    "01",
    "1.5",
    "1.0",
    "1e3",
    "1E+2",
    "-0",
    "12345678",
    "1234567890123456",
    "12345678901234567",
    "0.25",
    "3.",
    "+1",
    '"1"',
]
_TRIPLES = [
    "[1,1,1]",
    "[2048,1,1]",
    "[ 1 , 2 , 3 ]",
    "[1,2]",
    "[1,2,3,4]",
    "[]",
    "null",
    "[[1],1,1]",
    "[1,2,3",
    "{}",
    "[1,,2]",
]


def _kernel(grid: str, block: str) -> str:
    return (
        '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1712195495537802.0,"dur":58.463,'
        '"args":{"External id":1873,"queued":0,"device":0,"context":1,"stream":7,"correlation":140748,'
        '"registers per thread":40,"shared memory":8336,"blocks per SM":25.6,"warps per SM":409.600006,'
        f'"grid":{grid},"block":{block},"est. achieved occupancy %":75}}}}'
    )


@needs_scanner
@pytest.mark.parametrize("triple", _TRIPLES)
def test_triples_as_written(triple: str) -> None:
    _compare(_kineto_layout([_kernel("[1,1,1]", "[128,1,1]"), _kernel(triple, triple)]))


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_NUMBERS), min_size=0, max_size=4), st.sampled_from(_TRIPLES))
def test_triples_of_any_numbers(numbers: list[str], other: str) -> None:
    triple = "[" + ",".join(numbers) + "]"
    _compare(_kineto_layout([_kernel(triple, other), _kernel(other, triple)]))
