"""Covered busy time before each launch's ops (ranges.py's ``_Launches._covered``): the numpy reference and the
compiled walk (``_op_tree.covered_times``) that writes the same three arrays in one pass for launches on one device."""

from __future__ import annotations

import numpy as np

from .. import intervals

try:  # optional: built at install time where a C compiler is there
    from . import _op_tree as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


def time_span(start: np.ndarray, end: np.ndarray) -> tuple[int, int]:
    """(the least, the greatest) of two non-empty columns together: by one compiled pass reading both where
    built and both are int64 (four numpy reductions read each column twice), else numpy's."""
    if (
        _compiled is not None
        and hasattr(_compiled, "time_span")
        and start.dtype == end.dtype == np.int64
        and start.size
        and end.size
    ):
        return _compiled.time_span(np.ascontiguousarray(start), np.ascontiguousarray(end))
    return min(int(start.min()), int(end.min())), max(int(start.max()), int(end.max()))


def covered_times(
    first: np.ndarray,
    last: np.ndarray,
    union_starts: np.ndarray,
    union_ends: np.ndarray,
    steps_dtype: np.dtype,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """For launches all on one device, in thread and launch order: ``covered_before_pair`` of their first op
    starts and last op ends in the device's busy union, and the running count of the places where first or last
    steps back (``steps[k]``: those among the launches before k), by one compiled walk; None where it is not
    built, the arrays are not int64 or the union's total length does not fit (the caller then takes numpy)."""
    if (
        _compiled is None
        or not hasattr(_compiled, "covered_times")
        or any(a.dtype != np.int64 for a in (first, last, union_starts, union_ends))
        or np.dtype(steps_dtype) not in (np.dtype(np.int32), np.dtype(np.int64))
    ):
        return None
    cover_first = np.empty(first.size, np.int64)
    cover_last = np.empty(first.size, np.int64)
    steps = np.empty(first.size, steps_dtype)
    first, last, union_starts, union_ends = (
        np.ascontiguousarray(a) for a in (first, last, union_starts, union_ends)
    )
    if not _compiled.covered_times(first, last, union_starts, union_ends, cover_first, cover_last, steps):
        return None
    return cover_first, cover_last, steps


def union_prefix(union_starts: np.ndarray, union_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cum, last_end) of a union: cum[i] the length of its first i intervals; last_end[i] the end of the i-th
    (below every time for i = 0)."""
    cum = np.zeros(union_starts.size + 1, np.int64)
    np.subtract(union_ends, union_starts, out=cum[1:])  # in place: no temporary of the union's lengths
    np.cumsum(cum[1:], out=cum[1:])
    last_end = np.empty(union_ends.size + 1, np.int64)
    last_end[0] = np.iinfo(np.int64).min
    last_end[1:] = union_ends
    return cum, last_end


def covered_before_pair(
    first: np.ndarray,
    last: np.ndarray,
    union_starts: np.ndarray,
    union_ends: np.ndarray,
    prefix: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``intervals.covered_before`` of ``first`` and of ``last`` (each launch's first op start and last op end)
    in one union, searching the union once for most launches: where no union interval starts in (first, last]
    (a launch's ops inside one busy interval, as a single op always is), last has first's union intervals.
    ``prefix``: the union's :func:`union_prefix`, where the caller holds it for several calls."""
    if union_starts.size == 0:
        return np.zeros(first.size, np.int64), np.zeros(last.size, np.int64)
    first, last = first.astype(np.int64, copy=False), last.astype(np.int64, copy=False)
    cum, last_end = union_prefix(union_starts, union_ends) if prefix is None else prefix
    # the union intervals starting at or before (the launches in thread and time order: ascending runs, one per
    # thread, each searched from the previous answer)
    i = intervals.search_near(union_starts, first, side="right")
    # the last union interval starting at or before first ends at or after last: none starts in (first, last]
    j = i.copy()
    apart = np.flatnonzero((last < first) | (last > last_end[i]))
    j[apart] = np.searchsorted(union_starts, last[apart], side="right")
    out = []
    for t, at in ((first, i), (last, j)):  # the two arrays
        covered = cum[at]
        above = np.maximum(last_end[at], t)  # the part of the last of them at or after t
        above -= t
        covered -= above
        out.append(covered)
    return out[0], out[1]
