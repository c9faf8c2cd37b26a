"""The Kineto reader's smaller first blocks (kineto/split.py's ``first_bytes``, reader.FIRST_BLOCK_BYTES): the
pieces cut are the same text as without them, and a read gives the same table, in every layout, for any first
size (below, at and above the block size), where the event list begins after the first blocks, and for tiny
files; the blocks' buffers are never overwritten while a piece refers to them."""

from __future__ import annotations

import gzip
import json
from collections import deque
from pathlib import Path

import pytest

from tracelens.errors import InputError
from tracelens.ingest.kineto import reader, split
from tracelens.ingest.kineto.split import EventsText, split_stream

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEMO = FIXTURES / "demo.pt.trace.json.gz"


class _NoProgress:
    def advance(self, amount: int) -> None:
        pass


def _event(i: int) -> dict[str, object]:
    return {
        "ph": "X",
        "cat": ("kernel", "cuda_runtime", "cpu_op", "user_annotation")[i % 4],
        "name": "cudaLaunchKernel" if i % 4 == 1 else ("ProfilerStep#3" if i == 6 else f"op{i % 13}"),
        "pid": 1 + i % 2,
        "tid": 7,
        "ts": 10 + (i * 7919) % 4001,
        "dur": 3 + i % 5,
        "args": {"correlation": i // 2, "External id": i},
    }


def _kineto_text(events: int, header: str = "") -> bytes:
    """A document as Kineto writes it (each event at two spaces of indentation), ``header`` members first."""
    texts = ["  {\n    " + json.dumps(_event(i))[1:-1] + "\n  }" for i in range(events)]
    return (
        '{\n  "schemaVersion": 1,' + header + '\n  "traceEvents": [\n' + ",\n".join(texts) + "\n  ]\n}\n"
    ).encode()


def _files(tmp_path: Path) -> list[Path]:
    """Kineto's layout (gzipped and plain), the event list beginning late (a long first member), minified (cut at
    top-level commas), a bare list, a document of one event and one without events."""
    demo = json.loads(gzip.open(DEMO).read())
    made = {
        "kineto.json.gz": gzip.compress(_kineto_text(600)),
        "kineto.json": _kineto_text(600),
        "late.json.gz": gzip.compress(_kineto_text(300, '\n  "note": "' + "x" * 20000 + '",')),
        "minified.json.gz": gzip.compress(json.dumps(demo, separators=(",", ":")).encode()),
        "bare.json": json.dumps(demo["traceEvents"], indent=2).encode(),
        "one.json.gz": gzip.compress(_kineto_text(1)),
        "none.json": _kineto_text(0),
    }
    paths = [DEMO]
    for name, data in made.items():
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def _pieces(path: Path, block_bytes: int, buffers: int, first_bytes: int) -> list[tuple[str, bytes, int]]:
    """The pieces as text, each checked unchanged until ``buffers - 1`` later events pieces have been yielded."""
    out: list[tuple[str, bytes, int]] = []
    window: deque[tuple[EventsText, bytes]] = deque()
    for kind, payload, shift in split_stream(path, _NoProgress(), block_bytes, buffers, first_bytes):
        text = payload.joined() if isinstance(payload, EventsText) else bytes(payload)
        out.append((kind, text, shift))
        for held, as_yielded in window:
            assert held.joined() == as_yielded
        if kind == "events" and buffers:
            window.append((payload, text))
            if len(window) > buffers - 1:
                window.popleft()
    return out


def _events(pieces: list[tuple[str, bytes, int]]) -> list[object]:
    """Every event of the pieces, in order (the rest's included)."""
    events = [e for kind, text, _ in pieces if kind == "events" for e in json.loads(text)]
    rest = json.loads(pieces[-1][1])
    return events + (rest if isinstance(rest, list) else rest["traceEvents"])


@pytest.mark.parametrize("block_bytes", [4096, 1 << 16])
@pytest.mark.parametrize("buffers", [0, 3])
@pytest.mark.parametrize("first_bytes", [1, 100, 1000, 4096, 1 << 20])
def test_smaller_first_blocks_cut_the_same_text(
    tmp_path: Path, block_bytes: int, buffers: int, first_bytes: int
) -> None:
    for path in _files(tmp_path):
        plain = _pieces(path, block_bytes, buffers, 0)
        ramped = _pieces(path, block_bytes, buffers, first_bytes)
        assert _events(ramped) == _events(plain), path.name
        assert ramped[0][0] == plain[0][0] and ramped[-1][0] == "rest", path.name
        if plain[0][0] == "header":
            assert ramped[0][1] == plain[0][1], path.name
        # each piece's shift still places its text in the file's JSON text
        whole = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
        for kind, text, shift in ramped:
            if kind == "events" and text != b"[]":
                first = text.index(b"{")
                assert whole[first + shift : first + shift + 64] == text[first : first + 64], path.name


def test_first_sizes_double_below_the_block() -> None:
    assert split._first_sizes(1000, 100) == (100, 200, 400, 800)
    assert split._first_sizes(1000, 0) == ()
    assert split._first_sizes(1000, 1000) == ()
    assert split._first_sizes(1000, 999) == (999,)


def test_the_first_blocks_buffers_are_donated_with_the_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    donated: list[object] = []
    monkeypatch.setattr(split, "donate_pages", donated.append)
    pieces = list(split_stream(DEMO, _NoProgress(), 1 << 16, 3, 4096))
    assert pieces[-1][0] == "rest"
    assert len(donated) >= 4  # (the ring's three buffers and the first blocks' own: 4 KiB .. 32 KiB)
    assert sorted(len(b) for b in donated)[:4] == [4096, 8192, 16384, 32768]  # type: ignore[arg-type]


@pytest.mark.parametrize("first_bytes", [64, 1000, 8192, 1 << 20])
@pytest.mark.parametrize("budget", [1, 2, 3])
def test_reads_with_smaller_first_blocks_give_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_bytes: int, budget: int
) -> None:
    monkeypatch.setattr(reader, "BLOCK_BYTES", 8192)  # many blocks, several in flight
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 4096)
    monkeypatch.setattr(reader, "thread_budget", lambda: budget)
    for path in _files(tmp_path):
        if path.name == "none.json":  # no events: the same error either way
            for size in (0, first_bytes):
                monkeypatch.setattr(reader, "FIRST_BLOCK_BYTES", size)
                with pytest.raises(InputError, match="trace has no events"):
                    reader.read(path)
            continue
        monkeypatch.setattr(reader, "FIRST_BLOCK_BYTES", 0)
        plain = reader.read(path)
        monkeypatch.setattr(reader, "FIRST_BLOCK_BYTES", first_bytes)
        ramped = reader.read(path)
        assert ramped.events.equals(plain.events), path.name
        assert ramped.devices == plain.devices, path.name
        assert ramped.metadata == plain.metadata, path.name


@pytest.mark.parametrize("background", [True, False])
@pytest.mark.parametrize("first_bytes", [0, 1000])
def test_ring_pages_mapped_by_a_thread_give_the_same_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, background: bool, first_bytes: int
) -> None:
    """The ring's later buffers mapped without their pages, which a thread of their own maps in (or the first
    writes, ``BACKGROUND_PAGES`` False) while the first is read into: the same pieces, in every layout."""
    from tracelens import memory

    monkeypatch.setattr(memory, "_HUGE_PAGE", 1)  # mappings at every size (page_buffer)
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "0")
    monkeypatch.setattr(split, "BACKGROUND_PAGES", background)
    for path in _files(tmp_path):
        assert _events(_pieces(path, 8192, 3, first_bytes)) == _events(_pieces(path, 8192, 0, 0)), path.name


def test_the_mapping_thread_ends_before_the_pages_are_donated(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from tracelens import memory

    monkeypatch.setattr(memory, "_HUGE_PAGE", 1)
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "0")
    monkeypatch.setattr(split, "BACKGROUND_PAGES", True)
    release = threading.Event()
    populated: list[object] = []

    def slow_populate(buffer: object) -> bool:
        release.wait(5)
        populated.append(buffer)
        return True

    def donate(buffer: object) -> int:
        assert len(populated) == 2  # the ring's two later buffers, both done
        return 0

    monkeypatch.setattr(split, "populate_pages", slow_populate)
    monkeypatch.setattr(split, "donate_pages", donate)
    stream = split_stream(DEMO, _NoProgress(), 1 << 16, 3)
    kinds = [next(stream)[0]]
    release.set()  # the thread ends only now, while the stream goes on
    kinds += [kind for kind, _, _ in stream]
    assert kinds[-1] == "rest" and len(populated) == 2
