"""How much of each of a few intervals lies inside a union of many disjoint sorted intervals, reading only the
union intervals that reach into them: the startup rule long_launch's idle time of its long launch calls (170 on the
406 MB Kineto tile) inside the device's gaps (207K), where ``intervals.overlap_with_union`` copies and sums every
gap (~1 ms) for them."""

from __future__ import annotations

import numpy as np

from .. import intervals

# Pieces (an interval's overlap with one union interval) summed one by one up to this many; past it (intervals that
# span many union intervals) intervals.overlap_with_union's cumulative lengths are cheaper.
FEW_PIECES = 1 << 14


def overlap_of_few(
    starts: np.ndarray, ends: np.ndarray, union_starts: np.ndarray, union_ends: np.ndarray
) -> np.ndarray:
    """``intervals.overlap_with_union(starts, ends, union_starts, union_ends)`` (int64 per interval): the union
    intervals reaching into each interval found by two searches, their clipped lengths summed per interval; the
    same integers. Intervals ending before they start, or overlapping more than FEW_PIECES union intervals in all,
    are given to overlap_with_union."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if starts.size == 0 or union_starts.size == 0 or not bool((ends >= starts).all()):
        return intervals.overlap_with_union(starts, ends, union_starts, union_ends)
    union_starts = np.asarray(union_starts, dtype=np.int64)
    union_ends = np.asarray(union_ends, dtype=np.int64)
    # the union intervals ending after the start and starting before the end (disjoint and sorted: both ascend)
    first = np.searchsorted(union_ends, starts, side="right")
    counts = np.maximum(np.searchsorted(union_starts, ends, side="left") - first, 0)
    total = int(counts.sum())
    if total > FEW_PIECES:
        return intervals.overlap_with_union(starts, ends, union_starts, union_ends)
    which = np.repeat(np.arange(starts.size), counts)
    at = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(first, counts)
    piece = np.minimum(union_ends[at], ends[which]) - np.maximum(union_starts[at], starts[which])
    out = np.zeros(starts.size, np.int64)
    np.add.at(out, which, piece)
    return out
