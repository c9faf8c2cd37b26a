"""The native Kineto scanner's grid and block in Kineto's compact shape (``tracelens/ingest/_kineto_scan.c``,
read_triple_or_null's digit-run path: ``[4,106,1]``, three integers of 1 to 7 digits): every such list and
every near miss is read as the msgspec reader reads it (the same columns), or declined where msgspec fails."""

from __future__ import annotations

import pytest
from test_kineto_native import (
    assert_as_msgspec_reads,
    assert_same_block,
    event_list,
    native,
    needs_scanner,
    reference,
)

pytestmark = needs_scanner

PAD = "," + '"pad":"' + "p" * 40 + '"'  # 32 bytes and more after every list: the digit-run path's reach


def _kernel(grid: str, block: str = "[128,1,1]") -> str:
    return (
        '{\n    "ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1712195495505583.0,"dur":4.928,'
        '"args":{"External id":112,"queued":0,"device":0,"context":1,"stream":7,"correlation":135071,'
        '"registers per thread":30,"shared memory":0,"blocks per SM":5.3,"warps per SM":21.2,'
        f'"grid":{grid},"block":{block},"est. achieved occupancy %":33{PAD}}}\n  }}'
    )


LISTS = [
    "[4,106,1]",
    "[0,0,0]",
    "[1,1,1]",
    "[1234567,7654321,1]",
    "[12345678,1,1]",
    "[1,1,123456789]",
    "[04,1,1]",
    "[1,00,1]",
    "[1,1,01]",
    "[-1,1,1]",
    "[1,-2,3]",
    "[1.5,1,1]",
    "[1,1,1.0]",
    "[1e3,1,1]",
    "[1,1E3,1]",
    "[1,2]",
    "[1,2,3,4]",
    "[]",
    "[1]",
    "[ 1,2,3]",
    "[1 ,2,3]",
    "[1, 2, 3]",
    "[1,2,3 ]",
    "[1,,3]",
    "[,1,2]",
    "[1,2,]",
    '["1",2,3]',
    "[1,2,null]",
    "null",
    "[1,2,3",
    "[1;2;3]",
    "[9223372036854775807,1,1]",
    "[9223372036854775808,1,1]",
    "[0,1,2]",
    "[7,0,0]",
]


@pytest.mark.parametrize("grid", LISTS)
def test_grid_and_block_as_msgspec_reads_them(grid: str) -> None:
    for text in (
        event_list(_kernel(grid)),
        event_list(_kernel("[1,1,1]", grid)),
        event_list(_kernel(grid, grid)),
    ):
        assert_as_msgspec_reads(text)


def test_compact_lists_are_read_natively() -> None:
    text = event_list(
        *(
            _kernel(f"[{a},{b},{c}]", f"[{c},{a},{b}]")
            for a in (1, 9, 10, 99, 4096, 1234567)
            for b in (0, 1, 53)
            for c in (1, 7, 65535)
        )
    )
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))
