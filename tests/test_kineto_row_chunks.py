"""The blocks' int64 row columns as slices of shared chunks (kineto/row_chunks.py): slices never overlap, a block
too big for a chunk gets its own array, small traces are not chunked, and a read with chunks gives the same table
as one without."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracelens import load
from tracelens.ingest.kineto import row_chunks
from tracelens.ingest.kineto.blocks import scanner

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_slices_are_disjoint_and_a_full_chunk_starts_another() -> None:
    chunks = row_chunks.RowChunks()
    quarter = row_chunks.CHUNK_ROWS // 4
    sizes = [0, 1, 1000, quarter, quarter, quarter, quarter, 7]
    taken = [chunks.column("start", n) for n in sizes]
    for value, column in enumerate(taken):
        column[:] = value
    for value, (column, n) in enumerate(zip(taken, sizes, strict=True)):
        assert column.dtype == np.int64 and column.size == n
        assert (column == value).all()  # no later slice wrote over it
    bases = {id(c.base) for c in taken if c.size}
    assert len(bases) == 2  # the fourth quarter did not fit after the first 1001 rows: a second chunk
    other = chunks.column("pid", 5)
    assert other.base is not taken[1].base  # a chunk per key


def test_a_block_bigger_than_a_quarter_chunk_is_an_array_of_its_own() -> None:
    column = row_chunks.RowChunks().column("start", row_chunks.CHUNK_ROWS // 4 + 1)
    assert column.base is None and column.size == row_chunks.CHUNK_ROWS // 4 + 1


def test_only_big_traces_are_chunked() -> None:
    with row_chunks.row_chunks(row_chunks.MIN_JSON_BYTES - 1):
        assert row_chunks.current() is None
    with row_chunks.row_chunks(row_chunks.MIN_JSON_BYTES):
        assert isinstance(row_chunks.current(), row_chunks.RowChunks)
    assert row_chunks.current() is None


@pytest.mark.skipif(scanner() is None, reason="the native scanner is not built")
def test_a_read_with_chunks_gives_the_table_of_one_without(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "demo.pt.trace.json.gz"
    without = load(path, engine="native")
    monkeypatch.setattr(row_chunks, "MIN_JSON_BYTES", 0)
    monkeypatch.setattr(row_chunks, "CHUNK_ROWS", 64)  # many chunks, blocks across their ends
    taken: list[int] = []
    real = row_chunks.RowChunks.column

    def counting(self: row_chunks.RowChunks, key: str, rows: int) -> np.ndarray:
        taken.append(rows)
        return real(self, key, rows)

    monkeypatch.setattr(row_chunks.RowChunks, "column", counting)
    real_reserve = row_chunks.RowChunks.reserve

    def counting_reserve(
        self: row_chunks.RowChunks, counts: dict[str, int], text_bytes: int, *slots: Any
    ) -> dict[str, np.ndarray]:
        taken.append(counts["row"])  # (the slices the reader takes as each block's scan ends)
        return real_reserve(self, counts, text_bytes, *slots)

    monkeypatch.setattr(row_chunks.RowChunks, "reserve", counting_reserve)
    with_chunks = load(path, engine="native")
    assert taken  # the chunks were used
    assert with_chunks.events.equals(without.events) and with_chunks.devices.equals(without.devices)
