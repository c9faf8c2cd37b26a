"""Columns of a shared :class:`.columns.Table` that are not held as such: gathered from the event columns on each
read, built from the few rows that carry a value, or held in fewer bytes (:class:`.columns.LazyColumn`).

``launch.launch_pairs`` holds one row per GPU op from the attribution section to the diagnosis: 6.6M rows on the
x1512 benchmark export, 479 MiB as 18 materialized columns, of which most are the event columns gathered at the
GPU ops' rows or at their launch calls' rows. Held as those rows (int32) and gathered again on each read (a
gather of 6.6M values: 20-50 ms), it keeps a fifth of that (benchmarks/results/launch_pairs_lean_nlp7.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .columns import EventColumns, LazyColumn


def gathered(cols: EventColumns, name: str, rows: np.ndarray) -> LazyColumn:
    """``getattr(cols, name)[rows]``, gathered on each read (``rows``: event rows, held)."""

    def read(at: np.ndarray | None) -> np.ndarray:
        values: np.ndarray = getattr(cols, name)[rows if at is None else rows[at]]
        return values

    return LazyColumn(rows.size, read, (rows,))


def gathered_where(cols: EventColumns, name: str, rows: np.ndarray, on: np.ndarray, fill: Any) -> LazyColumn:
    """``getattr(cols, name)[rows]`` where ``on``, ``fill`` elsewhere, in the event column's type, gathered on
    each read (``rows``, ``on``: held; ``rows`` elsewhere than ``on`` is any event row or -1, read and
    overwritten)."""

    def read(at: np.ndarray | None) -> np.ndarray:
        values: np.ndarray = getattr(cols, name)[rows if at is None else rows[at]]
        np.putmask(values, ~(on if at is None else on[at]), fill)
        return values

    return LazyColumn(rows.size, read, (rows, on))


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
