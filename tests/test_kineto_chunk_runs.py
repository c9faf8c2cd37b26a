"""The blocks' row columns written into one chunk in file order are read joined as a view of it (appended._one_run,
row_chunks.RowChunks.reserve, reader): equal to np.concatenate of them in every case, a view only where the
slices are consecutive in one array, and a read of the native scanner with one worker gives such views and the
same table as one without chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import load
from tracelens.ingest.kineto import appended, row_chunks
from tracelens.ingest.kineto.appended import Appended
from tracelens.ingest.kineto.blocks import scanner
from tracelens.ingest.kineto.native import CHUNK_SLOTS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    parts = Appended()
    for values in arrays:
        parts.add("x", values)
    return parts.pop("x")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=8),
    st.integers(0, 3),
    st.sampled_from(["consecutive", "gap", "swapped", "other_base", "own_array", "strided"]),
)
def test_joined_equals_concatenate_and_is_a_view_only_of_consecutive_slices(
    sizes: list[int], first: int, layout: str
) -> None:
    base = np.arange(100, 100 + first + sum(sizes) + 2 * len(sizes) + 2, dtype=np.int64)
    at, arrays = first, []
    for size in sizes:
        arrays.append(base[at : at + size])
        at += size + (1 if layout == "gap" else 0)
    if layout == "swapped" and len(arrays) > 1:
        arrays[0], arrays[-1] = arrays[-1], arrays[0]
    elif layout == "other_base":
        arrays[-1] = arrays[-1].copy()[:]  # (a view of another array)
    elif layout == "own_array":
        arrays[-1] = np.array(arrays[-1])
    elif layout == "strided":
        arrays[0] = base[first : first + 2 * sizes[0] : 2]
    want = np.concatenate(arrays)
    got = _joined(arrays)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    filled = [a for a in arrays if a.size]
    view = got.base is base
    if len(filled) > 1:  # a view exactly where the filled slices are consecutive, contiguous, of one base
        data = [a.__array_interface__["data"][0] for a in filled]
        consecutive = all(a.base is base and a.flags.c_contiguous for a in filled) and all(
            d + a.nbytes == e for a, d, e in zip(filled, data, data[1:], strict=False)
        )
        assert view == consecutive
        assert (layout == "consecutive") <= consecutive


def test_one_block_and_empty_blocks() -> None:
    chunk = np.arange(10, dtype=np.int64)
    np.testing.assert_array_equal(_joined([chunk[2:5]]), chunk[2:5])
    got = _joined([chunk[2:2], chunk[2:5], chunk[5:5], chunk[5:6]])
    np.testing.assert_array_equal(got, chunk[2:6])
    assert got.base is chunk
    assert appended._one_run([np.arange(3), np.arange(2)]) is None  # arrays of their own: copied


def test_reserved_slices_are_disjoint_in_order_and_sized_for_the_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(row_chunks, "CHUNK_ROWS", 16)
    chunks = row_chunks.RowChunks(json_bytes=10_000_000)
    first = chunks.reserve({"row": 1000}, 100_000)  # 100 bytes a row: ~100k rows to come
    assert set(first) == row_chunks.CHUNKED_KEYS
    assert chunks.chunk_rows >= 100_000 and chunks.chunk_rows <= 100_000 * row_chunks.ROWS_MARGIN + 1000
    second = chunks.reserve({"row": 500}, 50_000)
    for key in row_chunks.CHUNKED_KEYS:
        a, b = first[key], second[key]
        assert a.base is b.base and a.size == 1000 and b.size == 500
        a[:] = 1
        b[:] = 2
        assert (a == 1).all() and (b == 2).all()
        assert _joined([a, b]).base is a.base  # consecutive: read as a view
    assert first["pid"].base is not first["tid"].base  # a chunk per key


def test_a_trace_denser_than_its_first_block_goes_on_in_another_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(row_chunks, "CHUNK_ROWS", 16)
    chunks = row_chunks.RowChunks(json_bytes=1_000_000)
    first = chunks.reserve({"row": 1000}, 500_000)  # 2,000 rows estimated
    size = chunks.chunk_rows
    more = [chunks.reserve({"row": 10_000 // 8}, 60_000)["start"] for _ in range(8)]
    taken = [first["start"], *more]
    assert sum(c.size for c in taken) > size  # past the first chunk
    for value, column in enumerate(taken):
        column[:] = value
    for value, column in enumerate(taken):
        assert (column == value).all()
    np.testing.assert_array_equal(_joined(taken), np.concatenate(taken))


def test_slots_of_other_counts_types_and_widths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(row_chunks, "CHUNK_ROWS", 16)
    slots = (("start", np.int64, "row", 1), ("bytes", np.float64, "gpu", 1), ("grid", np.float64, "gpu", 3))
    chunks = row_chunks.RowChunks(json_bytes=1_000_000)
    blocks = [chunks.reserve({"row": 40, "gpu": n}, 10_000, slots) for n in (4, 0, 7)]
    for value, block in enumerate(blocks):
        assert block["start"].shape == (40,) and block["grid"].shape == (block["bytes"].size, 3)
        assert block["grid"].dtype == np.float64 and block["start"].dtype == np.int64
        for column in block.values():
            column[...] = value
    for key in ("start", "bytes", "grid"):
        taken = [block[key] for block in blocks]
        for value, column in enumerate(taken):
            assert (column == value).all()
        joined = _joined(taken)
        np.testing.assert_array_equal(joined, np.concatenate(taken))
        assert joined.base is blocks[0][key].base  # consecutive rows (of three for grid): one view
    # a column copied in after them (the document's rest) follows them in the chunk; another type is left as is
    rest = np.arange(6, dtype=np.float64).reshape(2, 3)
    moved = chunks.taken("grid", rest, slots[2])
    assert moved.base is blocks[0]["grid"].base
    np.testing.assert_array_equal(moved, rest)
    assert _joined([b["grid"] for b in blocks] + [moved]).base is moved.base
    ints = np.arange(3, dtype=np.int32)
    assert chunks.taken("bytes", ints, slots[1]) is ints


def test_close_releases_the_current_chunks() -> None:
    chunks = row_chunks.RowChunks(json_bytes=row_chunks.MIN_JSON_BYTES)
    column = chunks.reserve({"row": 10}, 1000)["start"]
    chunks.close()
    assert chunks.column("start", 10).base is not column.base  # a new chunk after close


@pytest.mark.skipif(scanner() is None, reason="the native scanner is not built")
def test_a_read_with_chunks_joins_views_and_gives_the_table_of_one_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz"
    without = load(path, engine="native")
    monkeypatch.setattr(row_chunks, "MIN_JSON_BYTES", 0)
    from tracelens.ingest.kineto import reader

    monkeypatch.setattr(reader, "BLOCK_BYTES", 64 * 1024)  # many blocks
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 64 * 1024)
    monkeypatch.setattr(reader, "thread_budget", lambda: 2)  # one scan worker beside this thread (gzip)
    runs: list[bool] = []
    real = appended._one_run

    def recording(blocks: list[np.ndarray]) -> np.ndarray | None:
        found = real(blocks)
        runs.append(found is not None)
        return found

    monkeypatch.setattr(appended, "_one_run", recording)
    with_chunks = load(path, engine="native")
    assert sum(runs) == len(CHUNK_SLOTS)  # each chunked key read as one view
    assert with_chunks.events.equals(without.events) and with_chunks.devices.equals(without.devices)
