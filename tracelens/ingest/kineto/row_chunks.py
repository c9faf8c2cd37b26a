"""The blocks' row columns (start and duration as int64, the four ids as int32 while they fit: NARROW_KEYS), and the
float columns of their GPU rows and launches, as slices of shared arrays (chunks), one per key, instead of an array
per block.

Why: the table build joins each key's block columns and frees them. Arrays per block (~240 KB each) are freed to
the C heap, whose pages the build's big arrays cannot take, so it faulted in ~75 MiB of fresh pages while
~75 MiB of block columns were freed. A 4 MiB array is a big array (memory.reusing_array_pages): it is freed
whole once its key is joined, and the build's next arrays take its pages (measured on the 406 MB tile:
finish's fresh pages 74 -> 8 MiB, its CPU -15%; benchmarks/results/kpg11.md).

A chunk is sized for the rest of the trace (its JSON size at the items per byte of the blocks so far, a few
percent over; pages are only mapped where items are written), and the reader takes each block's slices in file
order where it can (on the one scan worker of a gzipped file, as each block's scan ends: :func:`reserved`): then
a key's blocks are consecutive slices of one chunk, and the table build reads them joined as a view of it
(appended.py) instead of copying them into a joined array (19 keys, ~16 ms of copies at the 406 MB tile, the
starts' and the launches' on the build's critical path: benchmarks/results/kld15.md). Blocks in another order
(several scan workers) or arrays of their own are still joined by a copy.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

# The keys chunked: the table's int64 row columns, the bulk of the blocks' memory (48 of ~75 bytes a row).
CHUNKED_KEYS = frozenset(("start", "duration", "pid", "tid", "correlation", "external_id"))
# Of them, the ids the reader's slots hold as int32 (native.CHUNK_SLOTS): Kineto's pids, tids, correlation and
# external ids fit, and a row chunk is a fresh page per 1,024 rows instead of 512 (~6K fewer page faults at the
# 406 MB tile, ~1.5 us each on a ballooned VM: benchmarks/results/kcol18.md). So do the durations (int64 ns, up to
# 2.1 s in int32: kernels, ops and runtime calls; ~1.5K fewer faults there: benchmarks/results/kblk28.md). A block
# with a value beyond int32 (an id, a profiler step's duration) writes that column as an int64 array of its own,
# and the read's next blocks take int64 slots for it (RowChunks.widen); the table build widens the joined columns
# (a view, or a copy where blocks differ) as it puts them in table order (Appended.pop_taken).
NARROW_KEYS = frozenset(("pid", "tid", "correlation", "external_id", "duration"))
# A chunk: the page cache's smallest array (memory.reusing_array_pages serves arrays from 4 MiB on).
CHUNK_ROWS = 2**19
# Chunked only for traces whose columns fill chunks (below, a chunk mostly empty per key: where huge pages pay,
# 2 MiB resident per key for a small trace): ~270 bytes of JSON a row, so ~250k rows from here.
MIN_JSON_BYTES = 64 * 2**20
# A chunk sized for the rows still to come holds this much more than their estimate (the rows per JSON byte of the
# blocks so far): what is left unused at the end is a few percent of a key's pages, never written (not resident).
ROWS_MARGIN = 1.08


# A key the reader takes slices of for each block (reserve): its dtype, what it holds a value per ("row", "gpu":
# per GPU row, "launch": per launch) and how many values per item (grid and block: 3).
Slot = tuple[str, type, str, int]
ROW_SLOTS: tuple[Slot, ...] = tuple((key, np.int64, "row", 1) for key in sorted(CHUNKED_KEYS))


class RowChunks:
    """Hands out each key's block columns as consecutive slices of its current chunk (a new chunk when it is
    full); thread-safe: the workers prepare blocks at once, in any order (the table joins them in block order).

    ``json_bytes``: the trace's JSON size; blocks reserved with their JSON size (:meth:`reserve`) then size each
    new chunk for the items still to come (all of the trace's at the first block), else chunks are CHUNK_ROWS."""

    def __init__(self, json_bytes: int = 0) -> None:
        self.json_bytes = json_bytes
        # a new chunk's items, by what its key counts ("row", "gpu", "launch")
        self.sizes: dict[str, int] = {}
        self._lock = threading.Lock()
        self._current: dict[str, tuple[np.ndarray, int]] = {}
        # the reserved blocks' items by what they count, and their JSON bytes
        self._counts: dict[str, int] = {}
        self._text = 0
        self._wide: set[str] = set()  # keys of int32 slots found holding a value beyond int32 (widen)

    @property
    def chunk_rows(self) -> int:
        """A new row chunk's rows."""
        return self.sizes.get("row", CHUNK_ROWS)

    def column(self, key: str, rows: int) -> np.ndarray:
        """An uninitialized int64 column of ``rows`` rows for ``key``."""
        with self._lock:
            return self._take(key, rows, np.int64, "row", 1)

    def reserve(
        self, counts: dict[str, int], text_bytes: int, slots: tuple[Slot, ...] = ROW_SLOTS
    ) -> dict[str, np.ndarray]:
        """Each of ``slots``' uninitialized column for a block of ``counts`` items (by what they count) and
        ``text_bytes`` bytes of JSON, all taken at once."""
        with self._lock:
            self._text += text_bytes
            for per, count in counts.items():
                self._counts[per] = self._counts.get(per, 0) + count
                if self.json_bytes > 0 and self._text > 0:  # the items to come at the items per byte so far
                    left = max(0, self.json_bytes - self._text) * self._counts[per] / self._text
                    self.sizes[per] = max(CHUNK_ROWS, count + int(left * ROWS_MARGIN))
            return {
                key: self._take(key, counts[per], self._dtype(key, dtype), per, width)
                for key, dtype, per, width in slots
            }

    def widen(self, keys: list[str]) -> None:
        """``keys``' slots are int64 from now on (a block held an id beyond the int32 of its slot)."""
        with self._lock:
            self._wide.update(keys)

    def _dtype(self, key: str, dtype: type) -> type:
        return np.int64 if key in self._wide else dtype

    def taken(self, key: str, values: np.ndarray, slot: Slot) -> np.ndarray:
        """``values`` (a block's column of ``key``) copied into the key's next slice, where they fit its ``slot``
        (of their dtype, or int64 values an int32 slot holds)."""
        _, dtype, per, width = slot
        dtype = self._dtype(key, dtype)
        if values.shape[1:] != (() if width == 1 else (width,)):
            return values
        if values.dtype != dtype and not _fits_int32(values, dtype):
            return values
        with self._lock:
            into = self._take(key, values.shape[0], dtype, per, width)
        into[...] = values
        return into

    def close(self) -> None:
        """No more columns: the current chunks are no longer held here (the worker threads' contexts may keep this
        object), so each is freed with its last slice, as the table build joins its key."""
        with self._lock:
            self._current.clear()

    def _take(self, key: str, items: int, dtype: type, per: str, width: int) -> np.ndarray:
        size = self.sizes.get(per, CHUNK_ROWS)
        row = () if width == 1 else (width,)
        if items > size // 4:  # a block this big is an array of its own (no chunk left mostly empty)
            return np.empty((items, *row), dtype)
        chunk, used = self._current.get(key, (None, 0))
        if chunk is None or chunk.dtype != dtype or used + items > chunk.shape[0]:
            chunk, used = np.empty((size, *row), dtype), 0
        self._current[key] = (chunk, used + items)
        return chunk[used : used + items]


def _fits_int32(values: np.ndarray, dtype: type) -> bool:
    """Whether ``values`` (int64) go into an int32 ``dtype`` slot unchanged."""
    if values.dtype != np.int64 or dtype is not np.int32:
        return False
    info = np.iinfo(np.int32)
    return values.size == 0 or (int(values.min()) >= info.min and int(values.max()) <= info.max)


_CURRENT: contextvars.ContextVar[RowChunks | None] = contextvars.ContextVar("row_chunks", default=None)


def current() -> RowChunks | None:
    """The chunks of the read in progress (seen by its worker threads: their tasks run in a copy of the
    reader's context, threads._ContextPool), or None: block columns are arrays of their own."""
    return _CURRENT.get()


@contextlib.contextmanager
def row_chunks(json_bytes: int) -> Iterator[None]:
    """Within: blocks prepared take their int64 row columns from shared chunks, for a trace of ``json_bytes``
    of JSON big enough to fill them. The chunks are released with their last slice."""
    chunks = RowChunks(json_bytes) if json_bytes >= MIN_JSON_BYTES else None
    token = _CURRENT.set(chunks)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        if chunks is not None:
            chunks.close()


def reserved(
    counts: dict[str, int], text_bytes: int, slots: tuple[Slot, ...] = ROW_SLOTS
) -> dict[str, np.ndarray] | None:
    """Each of ``slots``' slice for a block of ``counts`` items (``text_bytes`` of JSON), taken now (None: no
    chunks in this read). The reader takes them as each block's scan ends, in file order where one worker scans
    (the block's columns are written into them later, by whichever thread makes them)."""
    chunks = _CURRENT.get()
    return None if chunks is None else chunks.reserve(counts, text_bytes, slots)


def in_chunks(block: dict[str, Any], slots: tuple[Slot, ...] = ROW_SLOTS) -> dict[str, Any]:
    """``block``'s columns of ``slots`` copied into the chunks' next slices (the document's rest, made after the
    other blocks: its items follow theirs in the chunks, so the keys' joined columns stay one view)."""
    chunks = _CURRENT.get()
    if chunks is None or "kind" not in block:
        return block
    for slot in slots:
        values = block.get(slot[0])
        if isinstance(values, np.ndarray):
            block[slot[0]] = chunks.taken(slot[0], values, slot)
    return block
