"""The native Kineto scanner's cache of str objects (``tracelens/ingest/_kineto_scan.c``, cached_span_text): the
categories, names and sync kinds of a block given as the str objects of the same texts decoded before (kept across
calls), not decoded again. Each case scans the same blocks with the cache off (every text decoded, the reference)
and on, twice, and requires the scanner's whole output (columns, codes, the distinct texts in their order, counts,
or the decline) to be the same; the second scan takes its plain texts from the cache (the same objects).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from conftest import fixture_path
from test_kineto_native import needs_scanner, plain_output

from tracelens.ingest import kineto
from tracelens.ingest.kineto import native as native_engine

pytestmark = needs_scanner


@pytest.fixture
def scanner() -> Iterator[Any]:
    module = kineto._kineto_scan
    module._text_cache(True)
    yield module
    module._text_cache(True)


def _scan(module: Any, text: bytes) -> Any:
    return module.scan_events((text,), native_engine.to_number, msgspec.json.decode)


def _same_with_and_without(module: Any, text: bytes) -> tuple[Any, Any, int]:
    """The block scanned with the cache off, then twice with it on (emptied first): the two scans' raw outputs
    (the first filling the cache, the second reading it) and how many texts the second took from it."""
    module._text_cache(False)
    reference = plain_output(_scan(module, text))
    module._text_cache(True)  # (emptied: the first scan fills it)
    first = _scan(module, text)
    second = _scan(module, text)
    hits = module._text_cache(True)
    assert plain_output(first) == reference
    assert plain_output(second) == reference
    return first, second, hits


def _event(name: str, cat: str = "cpu_op", sync: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"External id": 3}
    if sync is not None:
        args["cuda_sync_kind"] = sync
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 2, "ts": 10.5, "dur": 1.0, "args": args}


NAMES = [
    "aten::mm",
    "",
    "é non-ASCII ü",
    'with "quote" and \\ backslash',  # escaped in JSON: decoded each time, not cached
    "tab\tnewline\n",
    "x" * 1024,  # the longest cached
    "y" * 1025,  # too long to be cached
    "cudaLaunchKernel",
    "ProfilerStep#3",
]


def test_texts_of_every_kind_are_the_reference_and_plain_ones_shared(scanner: Any) -> None:
    events = [_event(name) for name in NAMES]
    events += [_event("cudaStreamSynchronize", "cuda_sync", "stream_synchronize"), _event("k", "kernel")]
    text = json.dumps(events, ensure_ascii=False).encode()
    first, second, hits = _same_with_and_without(scanner, text)
    assert hits > 0
    for key in ("names", "categories", "sync_kinds"):
        for a, b in zip(first[key], second[key], strict=True):
            escaped = json.dumps(a, ensure_ascii=False)[1:-1] != a
            cached = not escaped and len(a.encode()) <= 1024
            assert (a is b) == cached, (key, a)


def test_json_escapes_of_a_cached_text_decode_to_the_same_value(scanner: Any) -> None:
    # "é" written plain and as \u00e9: the same str from either, the escaped one not read from the cache
    plain = json.dumps([_event("café")], ensure_ascii=False).encode()
    escaped = json.dumps([_event("café")], ensure_ascii=True).encode()
    scanner._text_cache(True)
    assert _scan(scanner, plain)["names"] == ["café"]
    assert _scan(scanner, escaped)["names"] == ["café"]
    _same_with_and_without(scanner, escaped)


def test_more_texts_than_the_cache_holds(scanner: Any) -> None:
    # past 4096 texts the cache is emptied and filled again: every scan still the reference
    text = json.dumps([_event(f"op_{i}") for i in range(5000)]).encode()
    _same_with_and_without(scanner, text)
    _same_with_and_without(scanner, json.dumps([_event(f"op_{i}") for i in range(4990, 5010)]).encode())


def test_invalid_utf8_declines_either_way(scanner: Any) -> None:
    text = b'[{"ph":"X","cat":"cpu_op","name":"bad \xff byte","pid":1,"tid":2,"ts":1,"dur":1}]'
    scanner._text_cache(False)
    assert _scan(scanner, text) is None
    scanner._text_cache(True)
    assert _scan(scanner, text) is None
    assert _scan(scanner, text) is None


@pytest.mark.parametrize("name", ["gpu/resnet18_train_cuda.pt.trace.json.gz", "demo.pt.trace.json.gz"])
def test_a_real_trace_in_blocks(scanner: Any, name: str) -> None:
    data = gzip.decompress(fixture_path(name).read_bytes())
    scanned = native_engine.scan_document(data)
    assert scanned is not None
    # the document's event list cut in blocks at event boundaries, each scanned with and without the cache
    start = data.index(b"[", data.index(b'"traceEvents"')) + 1
    events = data[start:]
    cut = [0]
    while cut[-1] < len(events):
        at = scanner.last_event_boundary(events[: cut[-1] + 64 * 1024])
        if at <= cut[-1] or cut[-1] + 64 * 1024 >= len(events):
            break
        cut.append(at + 1)
    pieces = [events[a:b] for a, b in zip(cut, cut[1:], strict=False)]
    assert len(pieces) >= 2
    for piece in pieces:
        _same_with_and_without(scanner, b"[" + piece.rstrip().rstrip(b",") + b"]")
