"""The native Kineto scanner's pid and tid of complete events, their lengths predicted by the event's recognized
category (``tracelens/ingest/_kineto_scan.c``, read_row_id_or_text): host and device rows of every category, one
after the other, with ids of every length and the near misses of each predicted length, are read as the msgspec
reader reads them (the same columns), or declined where msgspec fails."""

from __future__ import annotations

import random

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

CATEGORIES = ["cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "ac2g", "fwdbwd", "user_annotation", "Trace"]


def _row(category: str, pid: str, tid: str) -> str:
    return (
        f'{{\n    "ph":"X","cat":"{category}","name":"n","pid":{pid},"tid":{tid},"ts":1712195495519690.3,'
        '"dur":4.5,"args":{"External id":11,"Ev Idx":3}\n  }'
    )


IDS = [
    "0",
    "7",
    "1102",
    "1262",
    "12345678",
    "123456789",
    "9007199254740993",
    "-1",
    "-1102",
    "01",
    "00",
    "1.5",
    "1e3",
    "1E3",
    "1102.0",
    '"1102"',
    '"x"',
    "null",
    "18446744073709551616",
    "1102 ",
]


@pytest.mark.parametrize("odd", IDS)
def test_near_misses_after_each_length(odd: str) -> None:
    """Rows that set each category's prediction, then one with the odd id as pid and as tid, then more rows."""
    rows = [_row(c, p, t) for c in CATEGORIES for p, t in (("1102", "1262"), ("0", "7"))]
    for category in CATEGORIES:
        for row in (_row(category, odd, "7"), _row(category, "0", odd)):
            assert_as_msgspec_reads(event_list(*rows, row, *rows))


@pytest.mark.parametrize("seed", range(3))
def test_random_rows(seed: int) -> None:
    rng = random.Random(seed)
    ids = ["0", "7", "1102", "1262", "99", "123456", "12345678", "4294967296"]
    text = event_list(*(_row(rng.choice(CATEGORIES), rng.choice(ids), rng.choice(ids)) for _ in range(4000)))
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))
