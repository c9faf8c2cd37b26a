"""Kineto blocks inflated into a ring of reused buffers (kineto/split.py, _Ring): the pieces equal those cut
from fresh bytes blocks, and an events piece is not overwritten before ``buffers - 1`` more events pieces have
been yielded (the reader holds at most that many blocks in flight)."""

from __future__ import annotations

import gzip
import json
from collections import deque
from pathlib import Path

import pytest

from tracelens.ingest.kineto.split import EventsText, split_stream

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEMO = FIXTURES / "demo.pt.trace.json.gz"


class _NoProgress:
    def advance(self, amount: int) -> None:
        pass


def _text(payload: EventsText | bytes) -> bytes:
    return payload.joined() if isinstance(payload, EventsText) else bytes(payload)


def _pieces(path: Path, block_bytes: int, buffers: int) -> list[tuple[str, bytes, int]]:
    """The pieces, each checked unchanged until ``buffers - 1`` later events pieces have been yielded."""
    out: list[tuple[str, bytes, int]] = []
    window: deque[tuple[EventsText, bytes]] = deque()
    for kind, payload, shift in split_stream(path, _NoProgress(), block_bytes, buffers):
        text = _text(payload)
        out.append((kind, text, shift))
        for held, as_yielded in window:  # still what it was when yielded
            assert held.joined() == as_yielded
        if kind == "events" and buffers:
            window.append((payload, text))
            if len(window) > buffers - 1:
                window.popleft()
    return out


def _layouts(tmp_path: Path) -> list[Path]:
    """The demo trace as Kineto writes it, minified (cut at top-level commas), and as a bare list."""
    raw = json.loads(gzip.open(DEMO).read())
    minified = tmp_path / "demo_min.json.gz"
    minified.write_bytes(gzip.compress(json.dumps(raw, separators=(",", ":")).encode()))
    bare = tmp_path / "demo_bare.json"
    bare.write_text(json.dumps(raw["traceEvents"], indent=2))
    return [DEMO, minified, bare]


@pytest.mark.parametrize("block_bytes", [333, 4096, 1 << 20])
@pytest.mark.parametrize("buffers", [2, 3, 5])
def test_pieces_from_a_ring_equal_pieces_from_fresh_blocks(
    tmp_path: Path, block_bytes: int, buffers: int
) -> None:
    for path in _layouts(tmp_path):
        fresh = _pieces(path, block_bytes, 0)
        assert _pieces(path, block_bytes, buffers) == fresh, path.name
        # and the pieces are the whole text: the events of every piece are the file's events
        events = [e for kind, text, _ in fresh if kind == "events" for e in json.loads(text)]
        whole = json.loads(gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes())
        listed = whole if isinstance(whole, list) else whole["traceEvents"]
        rest = json.loads(fresh[-1][1])
        rest_events = rest if isinstance(rest, list) else rest["traceEvents"]
        assert events + rest_events == listed, path.name


def test_without_isals_raw_reader_the_gzip_file_fills_the_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracelens.ingest import compression

    fresh = _pieces(DEMO, 4096, 0)
    monkeypatch.setattr(compression, "_RAW_READER", None)  # an isal without it: the GzipFile's readinto
    assert _pieces(DEMO, 4096, 3) == fresh


@pytest.mark.parametrize("huge_pages", ["1", "0"])
@pytest.mark.parametrize("block_bytes", [333, 4096, 1 << 20])
def test_mapped_buffers_give_the_pieces_of_fresh_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int, huge_pages: str
) -> None:
    """The ring's buffers as anonymous mappings (memory.page_buffer, used from 2 MiB up), in huge pages or in
    4 KiB pages as the page policy says, at every block size: the same pieces as from fresh bytes blocks, in
    every layout (their find, rfind and slices cut them)."""
    from tracelens import memory

    monkeypatch.setattr(memory, "_HUGE_PAGE", 1)
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", huge_pages)
    for path in _layouts(tmp_path):
        assert _pieces(path, block_bytes, 3) == _pieces(path, block_bytes, 0), path.name


@pytest.mark.parametrize("huge", [True, False])
def test_block_buffers_are_zeroed_and_sized(huge: bool) -> None:
    from tracelens import memory

    for size in (100, 3 << 20):
        buffer = memory.page_buffer(size, huge)
        assert len(buffer) == size and bytes(buffer[:64]) == bytes(64) and buffer[-1] == 0
        with memoryview(buffer) as view:
            view[:3] = b"abc"
        assert buffer.rfind(b"bc", 0) == 1 and buffer.find(b"c", 0, 10) == 2 and buffer[:2] == b"ab"


def test_the_ring_asks_the_page_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ring's buffers follow memory.huge_pages_pay (asked once per ring), not a choice of their own."""
    from tracelens.ingest.kineto import split

    asked: list[tuple[int, bool]] = []
    monkeypatch.setattr(split, "huge_pages_pay", lambda: False)

    def recording_buffer(size: int, huge: bool) -> bytearray:
        asked.append((size, huge))
        return bytearray(size)

    monkeypatch.setattr(split, "page_buffer", recording_buffer)
    assert _pieces(DEMO, 4096, 3) == _pieces(DEMO, 4096, 0)
    assert asked == [(4096, False)] * 3


def test_the_ring_s_pages_go_to_the_arrays_once_the_stream_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the rest is yielded and the caller asks for more (every events piece done), the ring's buffers are
    handed to the page cache (memory.donate_pages), not before: no piece is read after its pages left."""
    from tracelens.ingest.kineto import split

    donated: list[object] = []
    monkeypatch.setattr(split, "donate_pages", donated.append)
    stream = split_stream(DEMO, _NoProgress(), 4096, 3)
    for kind, _payload, _shift in stream:
        assert not donated
        if kind == "rest":
            break
    assert not donated
    assert next(stream, None) is None
    assert len(donated) == 3
