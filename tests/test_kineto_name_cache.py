"""The native Kineto scanner's names taken by their bytes (``tracelens/ingest/_kineto_scan.c``, read_name): the
"name" of a complete event in Kineto's member order whose first 32 bytes (and, for a longer name, the rest and a
closing quote) are those of a plain name the block has already coded is taken as that name's span and code,
without the string scan, the hash and the table probe. Each case here scans the same block with that off (every
name scanned and coded, the reference) and on, and requires the scanner's whole output (columns, codes, the
distinct names in their order, counts, or the decline) to be the same; on well-formed blocks also the msgspec
reader's columns.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import shared_params
from test_kineto_native import assert_same_block, native, needs_scanner, plain_output, reference

from tracelens.ingest import kineto
from tracelens.ingest.kineto import native as native_engine

pytestmark = needs_scanner


@pytest.fixture
def scanner() -> Iterator[Any]:
    module = kineto._kineto_scan
    module._name_cache(True)
    yield module
    module._name_cache(True)


def _scan(module: Any, pieces: tuple[bytes, ...], cache: bool) -> tuple[Any, int]:
    """scan_events' whole output with the name cache on or off, and how many names it took."""
    module._name_cache(cache)
    scanned = plain_output(module.scan_events(pieces, native_engine.to_number, msgspec.json.decode))
    return scanned, module._name_cache(True)


def _same_both_ways(module: Any, *pieces: bytes) -> tuple[Any, int]:
    off, hits_off = _scan(module, pieces, False)
    on, hits = _scan(module, pieces, True)
    assert hits_off == 0
    assert on == off, pieces
    return on, hits


def _row(name: str, tid: int = 1262, ts: str = "1712195495519690.3", cat: str = "cpu_op") -> str:
    return (
        f'{{\n    "ph":"X","cat":"{cat}","name":{name},"pid":1102,"tid":{tid},"ts":{ts},"dur":4.5,'
        '"args":{"External id":11,"Ev Idx":3}\n  }'
    )


def _block(*events: str) -> bytes:
    return ("[\n  " + ",\n  ".join(events) + "\n]").encode()


# names around the key's 32 bytes, prefixes of each other, sharing the key's bytes and differing after them
NAMES = [
    "",
    "a",
    "aten::add",
    "aten::add_",
    "aten::addmm",
    "x" * 15,
    "x" * 16,
    "x" * 17,
    "y" * 30,
    "y" * 31,
    "y" * 32,
    "y" * 33,
    "y" * 34,
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<double> >",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >x",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> ",
    "z" * 200,
    "z" * 199 + "w",
]


def test_repeated_names_are_taken_and_coded_alike(scanner: Any) -> None:
    events = [_row(msgspec.json.encode(name).decode()) for name in NAMES] * 3
    random.Random(7).shuffle(events)
    text = _block(*events)
    on, hits = _same_both_ways(scanner, text)
    assert hits > len(NAMES)  # the repeats of names of 32 bytes and more at least
    assert on["rows"] == len(events)
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))


@pytest.mark.parametrize(
    "other",
    [
        '"aten::add\\u0041"',  # escaped: never a slot's, never taken
        '"aten::add\\""',
        '"aten::add\\\\"',
        '"aten::addé"',  # non-ASCII: scanned and validated as before
        '"' + "y" * 32 + '\\n"',
        '"' + "y" * 33 + '\\t"',
        '"' + "y" * 32 + 'é"',
        "null",
        '"aten::add',  # the quote missing (the block then declines)
        '"' + "y" * 32,
        '"' + "y" * 32 + "\x01" + '"',  # a control byte: declines
        '"' + "y" * 31 + "\x01" + '"',
        '"aten::add\x01"',
    ],
)
def test_names_that_look_like_a_coded_one(scanner: Any, other: str) -> None:
    """Each plain name first (so slots hold them), then a name that begins as one of them and is not it."""
    plain = [_row(msgspec.json.encode(name).decode()) for name in NAMES]
    _same_both_ways(scanner, _block(*plain, _row(other), *plain))
    _same_both_ways(scanner, _block(*plain, _row(other)))


def test_other_tids_and_times_after_short_names(scanner: Any) -> None:
    """A short name's key holds the bytes after it (pid, tid): other tids are other slots, all coded alike."""
    events = [
        _row('"aten::mul"', tid=tid, ts=f"17121954955196{k:02d}.5") for k in range(40) for tid in (7, 1262)
    ]
    on, hits = _same_both_ways(scanner, _block(*events))
    assert hits >= len(events) - 4
    assert len(on["names"]) == 1


def test_a_later_name_member_replaces_a_taken_one(scanner: Any) -> None:
    """A name taken from its slot, then a second "name" member (the general loop): msgspec keeps the last."""
    first = _row('"' + "q" * 40 + '"')
    for later in (
        ',"name":"other"',
        ',"name":null',
        ',"name" :null',
        ',"name" : "other"',
        ',"name":' + '"' + "q" * 40 + '"',
    ):
        again = first.replace("\n  }", later + "\n  }")
        _same_both_ways(scanner, _block(first, again, first))
        _same_both_ways(scanner, _block(first, first, again, again, first))


def test_a_name_near_the_end_of_the_block(scanner: Any) -> None:
    """The block's last bytes: a name with fewer than 64 bytes after its quote is scanned as before."""
    name = '"' + "r" * 40 + '"'
    for cut in range(0, 80):
        text = _block(_row(name), _row(name))
        _same_both_ways(scanner, text[: len(text) - cut])


def test_pieces_keep_their_slots(scanner: Any) -> None:
    """Several pieces: a slot learnt in the first piece takes a name in the second (both pieces held)."""
    name = '"' + "s" * 50 + '"'
    one = ("  " + _row(name)).encode()
    two = ("  " + _row(name, ts="1712195495519699.5")).encode()
    on, hits = _same_both_ways(scanner, one, two)
    assert hits == 1


def test_profiler_span_names_are_not_learnt(scanner: Any) -> None:
    """The profiler's own span (category "Trace") makes no row and codes no name: a later row with its name is
    coded on its own."""
    name = '"' + "t" * 40 + '"'
    _same_both_ways(scanner, _block(_row(name, cat="Trace"), _row(name), _row(name)))


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_real_traces(scanner: Any, path: Path) -> None:
    """Every block of each real trace (cut as the reader cuts them, small blocks) alike both ways."""
    data = gzip.decompress(path.read_bytes())
    start = data.find(b"[", data.find(b'"traceEvents"')) + 1
    end = data.rfind(b"]")
    events = data[start:end]
    separator = b"\n  },\n  {" if b"\n  },\n  {" in events else b"},{"
    cuts = [0]
    while cuts[-1] < len(events):
        cut = events.find(separator, cuts[-1] + 200_000)
        cuts.append(len(events) if cut < 0 else cut + separator.index(b",") + 1)
    taken = 0
    for a, b in zip(cuts, cuts[1:], strict=False):
        piece = events[a:b].strip().rstrip(b",")
        if piece:
            _, hits = _same_both_ways(scanner, b"[" + piece + b"]")  # (None both ways where a block declines)
            taken += hits
    print(path.name, "names taken", taken)
