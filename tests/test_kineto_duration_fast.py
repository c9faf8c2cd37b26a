"""The native Kineto scanner's "dur" in Kineto's shape (``tracelens/ingest/_kineto_scan.c``, read_duration: 1 to
8 digits, a point, 1 to 8 digits, found in one 16-byte compare): every duration of that shape and every near
miss is read as the msgspec reader reads it (the same doubles, bit for bit), or declined where msgspec fails."""

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


def _row(dur: str) -> str:
    return (
        '{\n    "ph":"X","cat":"cpu_op","name":"aten::add","pid":1102,"tid":1262,"ts":1712195495519690.3,'
        f'"dur":{dur},"args":{{"External id":11,"Ev Idx":3}}\n  }}'
    )


def _durations(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n, f = rng.randrange(1, 10), rng.randrange(0, 10)
        whole = "0" if n == 1 and rng.random() < 0.3 else str(rng.randrange(10 ** (n - 1), 10**n))
        out.append(whole + ("." + "".join(rng.choice("0123456789") for _ in range(f)) if f else ""))
    return out


NEAR_MISSES = [
    "0.0",
    "0.5",
    "00.5",
    "01.5",
    "-0.5",
    "-4.928",
    "4.",
    "4.e3",
    "4.9e3",
    "4.9E-3",
    "4.9e",
    ".5",
    "4..9",
    "4.9.1",
    "12345678.12345678",
    "123456789.1",
    "1.123456789",
    "12345678.123456789",
    "99999999.99999999",
    "4.928",
    "2.08",
    "0.001",
    "1234.5",
    "7",
    "0",
    "1e3",
    "4.9x",
    '"4.9"',
    "null",
    "4.5 ",
    "4.5\n",
    "9007199254740993.5",
    "0.00000001",
    "0.000000001",
]


@pytest.mark.parametrize("dur", NEAR_MISSES)
def test_near_misses_as_msgspec_reads_them(dur: str) -> None:
    assert_as_msgspec_reads(event_list(_row(dur), _row("4.928")))


@pytest.mark.parametrize("seed", range(4))
def test_random_durations_bit_for_bit(seed: int) -> None:
    durations = _durations(seed, 3000)
    text = event_list(*(_row(d) for d in durations))
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))
    values = [float(d) for d in durations]
    assert [v.hex() for v in got["dur"].tolist()] == [
        v.hex() for v in values
    ]  # Python's float(), bit for bit
