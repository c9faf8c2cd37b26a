"""Columns of a shared :class:`.columns.Table` that are not held as such: gathered from the event columns on each
read, built from the few rows that carry a value, or held in fewer bytes (:class:`.columns.LazyColumn`).

``launch.launch_pairs`` holds one row per GPU op from the attribution section to the diagnosis: 6.6M rows on the
x1512 benchmark export, 479 MiB as 18 materialized columns, of which most are the event columns gathered at the
GPU ops' rows or at their launch calls' rows. Held as those rows (int32) and gathered again on each read (a
gather of 6.6M values: 20-50 ms), it keeps a fifth of that (benchmarks/results/launch_pairs_lean_nlp7.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .columns import EventColumns, LazyColumn

# Tables of at most this many rows keep each gathered column once read (a few MiB each): the 207K GPU ops of the
# 406 MB Kineto tile had their columns gathered ~50 times over the analysis (62 ms); an Nsight export's millions
# are gathered on each read, as before (their memory is what the lean table saves).
CACHED_ROWS = 1 << 19


# Tables of at most this many rows keep each gathered column once read (a few MiB each): the 207K GPU ops of the
# 406 MB Kineto tile had their columns gathered ~50 times over the analysis (62 ms); an Nsight export's millions
# are gathered on each read, as before (their memory is what the lean table saves).
CACHED_ROWS = 1 << 19


def gathered(cols: EventColumns, name: str, rows: np.ndarray) -> LazyColumn:
    """``getattr(cols, name)[rows]``, gathered on each read (``rows``: event rows, held)."""

    def gather(values: np.ndarray, at: np.ndarray | None) -> np.ndarray:
        out: np.ndarray = values[rows if at is None else rows[at]]
        return out

    return LazyColumn(rows.size, _reader(cols, name, rows.size, gather), (rows,))


def gathered_where(cols: EventColumns, name: str, rows: np.ndarray, on: np.ndarray, fill: Any) -> LazyColumn:
    """``getattr(cols, name)[rows]`` where ``on``, ``fill`` elsewhere, in the event column's type, gathered on
    each read (``rows``, ``on``: held; ``rows`` elsewhere than ``on`` is any event row or -1, read and
    overwritten)."""

    def gather(values: np.ndarray, at: np.ndarray | None) -> np.ndarray:
        out: np.ndarray = values[rows if at is None else rows[at]]
        np.putmask(out, ~(on if at is None else on[at]), fill)
        return out

    return LazyColumn(rows.size, _reader(cols, name, rows.size, gather), (rows, on))


def _reader(
    cols: EventColumns, name: str, size: int, gather: Callable[[np.ndarray, np.ndarray | None], np.ndarray]
) -> Callable[[np.ndarray | None], np.ndarray]:
    """A lazy column's ``read``: ``gather(event column, at)``, a new array each time. The event column is asked
    for on every read (the read noted, refused once released); a table of at most CACHED_ROWS rows keeps its whole
    column from the first read and copies it, or gathers from it at the rows asked for."""
    kept: list[np.ndarray] = []

    def read(at: np.ndarray | None) -> np.ndarray:
        source = getattr(cols, name)
        if size > CACHED_ROWS:
            return gather(source, at)
        if not kept:  # (two threads may both gather it: the same values)
            kept[:] = [gather(source, None)]
        whole = kept[0]
        return whole.copy() if at is None else whole[at]

    return read


def scattered(size: int, positions: np.ndarray, values: np.ndarray, fill: Any, dtype: Any) -> LazyColumn:
    """A column of ``size`` values of ``dtype``: ``fill``, but ``values`` at ``positions`` (a copy's bytes among
    the GPU ops); built on each read."""

    def read(at: np.ndarray | None) -> np.ndarray:
        out: np.ndarray = np.full(size, fill, dtype)
        out[positions] = values
        return out if at is None else out[at]

    return LazyColumn(size, read, (positions, values))


_OFFSET_TYPES = (np.uint8, np.uint16, np.uint32)


def narrowed(values: np.ndarray, dtype: Any = None) -> np.ndarray | LazyColumn:
    """``values.astype(dtype)`` (integers; ``dtype`` default: theirs), held as their offsets from the least one
    in the fewest bytes that hold them (a stream id in one byte, a correlation id in four) and widened on each
    read; as a plain array where that takes as many bytes."""
    dtype = np.dtype(values.dtype if dtype is None else dtype)
    if values.size == 0 or values.strides == (0,) or values.dtype.kind not in "iu" or dtype.kind not in "iu":
        return values.astype(dtype, copy=False)
    lo, hi = int(values.min()), int(values.max())
    small = next((t for t in _OFFSET_TYPES if hi - lo <= np.iinfo(t).max), None)
    if small is None or np.dtype(small).itemsize >= dtype.itemsize:
        return values.astype(dtype, copy=False)
    # the offsets in the small type's modular arithmetic: exact, as each one lies in [0, hi - lo]
    offsets = values.astype(small)
    offsets -= np.array(lo).astype(small)
    base = dtype.type(lo)

    def read(at: np.ndarray | None) -> np.ndarray:
        out = (offsets if at is None else offsets[at]).astype(dtype)
        if lo:
            out += base
        return out

    return LazyColumn(values.size, read, (offsets,))
