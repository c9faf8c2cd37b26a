"""The blocks' int64 row columns (start, duration and the four ids) as slices of shared 4 MiB arrays, one set per
key, instead of an array per block.

Why: the table build joins each key's block columns and frees them. Arrays per block (~240 KB each) are freed to
the C heap, whose pages the build's big arrays cannot take, so it faulted in ~75 MiB of fresh pages while
~75 MiB of block columns were freed. A 4 MiB array is a big array (memory.reusing_array_pages): it is freed
whole once its key is joined, and the build's next arrays take its pages (measured on the 406 MB tile:
finish's fresh pages 74 -> 8 MiB, its CPU -15%; benchmarks/results/kpg11.md).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

import numpy as np

# The keys chunked: the table's int64 row columns, the bulk of the blocks' memory (48 of ~75 bytes a row).
CHUNKED_KEYS = frozenset(("start", "duration", "pid", "tid", "correlation", "external_id"))
# A chunk: the page cache's smallest array (memory.reusing_array_pages serves arrays from 4 MiB on).
CHUNK_ROWS = 2**19
# Chunked only for traces whose columns fill chunks (below, a chunk mostly empty per key: where huge pages pay,
# 2 MiB resident per key for a small trace): ~270 bytes of JSON a row, so ~250k rows from here.
MIN_JSON_BYTES = 64 * 2**20


class RowChunks:
    """Hands out each key's block columns as consecutive slices of its current chunk (a new chunk when it is
    full); thread-safe: the workers prepare blocks at once, in any order (the table joins them in block order)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: dict[str, tuple[np.ndarray, int]] = {}

    def column(self, key: str, rows: int) -> np.ndarray:
        """An uninitialized int64 column of ``rows`` rows for ``key``."""
        if rows > CHUNK_ROWS // 4:  # a block this big is an array of its own (no chunk left mostly empty)
            return np.empty(rows, np.int64)
        with self._lock:
            chunk, used = self._current.get(key, (None, 0))
            if chunk is None or used + rows > chunk.size:
                chunk, used = np.empty(CHUNK_ROWS, np.int64), 0
            self._current[key] = (chunk, used + rows)
        return chunk[used : used + rows]


_CURRENT: contextvars.ContextVar[RowChunks | None] = contextvars.ContextVar("row_chunks", default=None)


def current() -> RowChunks | None:
    """The chunks of the read in progress (seen by its worker threads: their tasks run in a copy of the
    reader's context, threads._ContextPool), or None: block columns are arrays of their own."""
    return _CURRENT.get()


@contextlib.contextmanager
def row_chunks(json_bytes: int) -> Iterator[None]:
    """Within: blocks prepared take their int64 row columns from shared chunks, for a trace of ``json_bytes``
    of JSON big enough to fill them. The chunks are released with their last slice."""
    token = _CURRENT.set(RowChunks() if json_bytes >= MIN_JSON_BYTES else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)
