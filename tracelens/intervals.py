"""Interval arithmetic on int64 nanosecond arrays, vectorized with numpy.

All functions take half-open intervals [start, end) as two equal-length int64 arrays.
"""

from __future__ import annotations

import numpy as np

try:  # the walk through ascending needles in C (optional: built at install time where a C compiler is there)
    from . import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# Ascending needles are searched this many at a time, each block in the slice of the haystack its first and
# last needle bound (see :func:`search_sorted`).
_SEARCH_BLOCK = 1 << 14
# Haystacks shorter than this are searched by np.searchsorted alone (they fit in cache).
_SEARCH_MIN_HAYSTACK = 64
# Needles that step back fewer than once in this many are searched each from the previous answer (search_near).
_NEAR_RATIO = 8


def search_sorted(haystack: np.ndarray, needles: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(haystack, needles, side=side)`` for a sorted haystack, cheaper where the needles are in
    ascending order (the starts of merged unions, of rows in start order): many more needles than haystack values
    are counted the other way round (each haystack value placed among the needles, a running count giving each
    needle's position); otherwise each block of needles is searched in the slice of the haystack between its
    first and last needle's positions, which stays in cache, instead of in the whole haystack; int32 or int64
    arrays where the compiled helper is built: one walk through both (``_merge_search``), or for needles that
    mostly ascend, :func:`search_near`. Unordered or few needles: ``np.searchsorted`` itself."""
    needles = np.asarray(needles)
    haystack = np.asarray(haystack)
    n = needles.size
    if n < 2 * _SEARCH_BLOCK or haystack.size < _SEARCH_MIN_HAYSTACK:
        return np.searchsorted(haystack, needles, side=side)  # type: ignore[call-overload]
    steps_back = n - 1 - int(np.count_nonzero(needles[1:] >= needles[:-1]))
    if steps_back:
        if walks(haystack, needles) and steps_back * _NEAR_RATIO < n:
            # mostly ascending (runs of ascending needles, one per thread or device): each searched from the
            # previous answer
            return search_near(haystack, needles, side)
        return np.searchsorted(haystack, needles, side=side)  # type: ignore[call-overload]
    if walks(haystack, needles):
        # one walk through both, galloping from each answer to the next (_merge_search.c): 3-4x faster than the
        # blocks below on a device's gaps against its host rows
        out = np.empty(n, np.int64)
        _compiled.search_ascending(_walkable(haystack), _walkable(needles), out, side == "right")
        return out
    if n < 8 * haystack.size:
        return _search_blocks(haystack, needles, side)
    # haystack[first:stop] lies between the first and the last needle; each such value counts for the needles at
    # or after its place among them (side "left": the needles above it; "right": those not below it)
    first = int(np.searchsorted(haystack, needles[0], side=side))  # type: ignore[call-overload]
    stop = int(np.searchsorted(haystack, needles[-1], side=side))  # type: ignore[call-overload]
    if stop - first >= 2 * _SEARCH_BLOCK:
        place = _search_blocks(needles, haystack[first:stop], "right" if side == "left" else "left")
    else:
        place = np.searchsorted(needles, haystack[first:stop], side="right" if side == "left" else "left")
    # ascending: the needles [place[k - 1], place[k]) have first + k haystack values below them
    steps = np.diff(np.concatenate([[0], place, [n]]))
    return np.repeat(np.arange(first, stop + 1, dtype=np.int64), steps)


def search_near(haystack: np.ndarray, needles: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(haystack, needles, side=side)`` for a sorted haystack and needles in any order, each
    searched from the previous one's answer where the compiled helper is built (signed integers): far fewer probes,
    and those in cache, where the needles mostly ascend (the correlation ids of GPU ops in start order against
    the launch calls'), about twice numpy's where they are in random order."""
    needles = np.asarray(needles)
    haystack = np.asarray(haystack)
    if (
        _compiled is None
        or haystack.dtype.kind != "i"
        or needles.dtype.kind != "i"
        or haystack.size < _SEARCH_MIN_HAYSTACK
        or needles.size < 2 * _SEARCH_BLOCK
    ):
        return np.searchsorted(haystack, needles, side=side)  # type: ignore[call-overload]
    out = np.empty(needles.size, np.int64)
    _compiled.search_near(_walkable(haystack), _walkable(needles), out, side == "right")
    return out


def walks(haystack: np.ndarray, needles: np.ndarray) -> bool:
    """Whether :func:`search_sorted` finds ascending ``needles`` (at least ``2 * _SEARCH_BLOCK`` of them) by the
    compiled walk: int32 or int64 arrays, with the extension built."""
    return _compiled is not None and haystack.dtype in _WALKED and needles.dtype in _WALKED


# The integer types the compiled walks read as they are (others are widened to int64 first).
_WALKED = (np.dtype(np.int32), np.dtype(np.int64))


def _walkable(values: np.ndarray) -> np.ndarray:
    """Signed integers as the compiled walks read them: int32 or int64, contiguous."""
    return np.ascontiguousarray(values, values.dtype if values.dtype in _WALKED else np.int64)


def _search_blocks(haystack: np.ndarray, needles: np.ndarray, side: str) -> np.ndarray:
    """``np.searchsorted`` of ascending needles, a block of them at a time in the haystack's slice it spans."""
    out = np.empty(needles.size, np.int64)
    bounds = np.searchsorted(haystack, needles[::_SEARCH_BLOCK], side=side).tolist()  # type: ignore[call-overload]
    bounds.append(haystack.size)
    for block, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):  # blocks of 16384 needles
        at = slice(block * _SEARCH_BLOCK, (block + 1) * _SEARCH_BLOCK)
        out[at] = np.searchsorted(haystack[lo:hi], needles[at], side=side)  # type: ignore[call-overload]
        out[at] += lo
    return out


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint [start, end) pairs (touching intervals are joined)."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if starts.size == 0:
        return starts.copy(), ends.copy()
    if (starts[1:] < starts[:-1]).any():
        order = np.argsort(starts, kind="stable")
        s = starts[order]
        e = np.maximum.accumulate(ends[order])
        del order
    else:  # already in start order (host rows are): no sort, no gathers
        s = starts
        e = np.maximum.accumulate(ends)
    # A new merged interval begins where the start is past every end seen so far.
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    del new
    last = np.empty_like(first)  # each group ends where the next begins, the last at the end
    np.subtract(first[1:], 1, out=last[:-1])
    last[-1] = s.size - 1
    return s[first], e[last]


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length covered by the union of the intervals."""
    s, e = merge(starts, ends)
    return int((e - s).sum())


def gaps(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The holes between merged intervals, inside [first start, last end): (gap_starts, gap_ends)."""
    s, e = merge(starts, ends)
    if s.size < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return e[:-1], s[1:]


def _covered_below(cum: np.ndarray, last_end: np.ndarray, t: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Covered length of a union in (-inf, t), given i = the union intervals starting at or before t: theirs,
    less the part of the last of them at or after t. ``cum[i]``: the length of the first i union intervals;
    ``last_end[i]``: the end of the i-th (i >= 1), and for i = 0 a value below every time. Two gathers per
    time (hot path: tens of millions of host rows)."""
    covered = cum[i]
    above = np.maximum(last_end[i], t)
    above -= t
    covered -= above
    return covered


def _cumulative(union_starts: np.ndarray, union_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cum, last_end) for :func:`_covered_below`."""
    # written in place: one pass each, no concatenated copies (called per union, on millions of intervals)
    cum = np.empty(union_starts.size + 1, np.int64)
    cum[0] = 0
    np.subtract(union_ends, union_starts, out=cum[1:])
    np.cumsum(cum[1:], out=cum[1:])
    last_end = np.empty(union_ends.size + 1, np.int64)
    last_end[0] = np.iinfo(np.int64).min
    last_end[1:] = union_ends
    return cum, last_end


def covered_before(t: np.ndarray, union_starts: np.ndarray, union_ends: np.ndarray) -> np.ndarray:
    """For each time, the length of a union of disjoint sorted intervals that lies before it."""
    t = np.asarray(t, dtype=np.int64)
    if union_starts.size == 0:
        return np.zeros(t.size, dtype=np.int64)
    union_starts = np.asarray(union_starts, dtype=np.int64)
    cum, last_end = _cumulative(union_starts, np.asarray(union_ends, dtype=np.int64))
    return _covered_below(cum, last_end, t, search_sorted(union_starts, t, side="right"))


def time_covered(length: np.ndarray, union_starts: np.ndarray, union_ends: np.ndarray) -> np.ndarray:
    """The inverse of :func:`covered_before`: for each length, the first instant by which that much of the union
    has passed (int64 max where the union is shorter)."""
    length = np.asarray(length, dtype=np.int64)
    if union_starts.size == 0:
        return np.full(length.size, np.iinfo(np.int64).max, np.int64)
    union_starts = np.asarray(union_starts, dtype=np.int64)
    cum, _ = _cumulative(union_starts, np.asarray(union_ends, dtype=np.int64))
    j = np.searchsorted(cum[1:], length, side="left")  # the union interval where the length is reached
    inside = j < union_starts.size
    jj = np.minimum(j, union_starts.size - 1)
    return np.where(inside, union_starts[jj] + (length - cum[jj]), np.iinfo(np.int64).max)


def overlap_with_union(
    starts: np.ndarray, ends: np.ndarray, union_starts: np.ndarray, union_ends: np.ndarray
) -> np.ndarray:
    """For each interval, how much of it lies inside a union of disjoint sorted intervals.

    Uses cumulative covered length so it costs O((n + m) log m), no Python loop.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if starts.size == 0 or union_starts.size == 0:
        return np.zeros(starts.size, dtype=np.int64)
    union_starts = np.asarray(union_starts, dtype=np.int64)
    union_ends = np.asarray(union_ends, dtype=np.int64)
    first = search_sorted(union_starts, starts, side="right")  # the union intervals starting at or before it
    # An interval ending before the next union interval starts overlaps only the one union interval starting at
    # or before its start (most host rows: short against the gaps between union intervals): its overlap is that
    # interval's end clipped to [start, end), one gather; the others read the cumulative covered length at both
    # ends. (The next union start is read in place, not from a copy of the union with a sentinel appended: past
    # the last one, only an interval ending before it starts is one of the others.)
    further = ends >= union_starts.take(first, mode="clip")
    further &= first < union_starts.size
    further |= ends < starts
    # the end of union interval i - 1 at i; none before the first
    last_end = np.empty(union_ends.size + 1, np.int64)
    last_end[0] = np.iinfo(np.int64).min
    last_end[1:] = union_ends
    out = last_end[first]
    np.minimum(out, ends, out=out)
    np.maximum(out, starts, out=out)  # never below the start: no overflow from the sentinel
    out -= starts
    at = np.flatnonzero(further)
    del further
    if at.size:
        cum, _ = _cumulative(union_starts, union_ends)
        s, e, f = starts[at], ends[at], first[at]
        last = search_sorted(union_starts, e, side="right")
        reached = _covered_below(cum, last_end, e, last)
        reached -= _covered_below(cum, last_end, s, f)
        out[at] = reached
    return out


def summed_overlap(
    starts: np.ndarray, ends: np.ndarray, other_starts: np.ndarray, other_ends: np.ndarray
) -> np.ndarray:
    """For each interval, its overlap with each of the other intervals, summed (the others may overlap each
    other: several devices' unions given at once).

    Equals the sum of :func:`overlap_with_union` over disjoint unions whose intervals are the others, in one pass
    over the intervals instead of one per union (:class:`Coverage`, built once for many calls).
    """
    return Coverage(other_starts, other_ends).overlap(starts, ends)


class Coverage:
    """How many of some intervals (overlapping each other or not) cover each instant, and that count's running
    integral; :meth:`overlap` reads it at both ends of other intervals."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        edges = np.concatenate([np.asarray(starts, np.int64), np.asarray(ends, np.int64)])
        steps = np.repeat(np.array([1, -1], np.int64), np.size(starts))
        order = np.argsort(edges, kind="stable")
        self.edges = edges[order]
        del edges
        # slot k + 1 (edge k): how many cover the instants from edge k to the next; slot 0 (before every edge): none
        self.covering = np.zeros(self.edges.size + 1, np.int64)
        np.cumsum(steps[order], out=self.covering[1:])
        del steps, order
        # The count's integral up to t, for t at or after edge k (and before the next), is
        # integral[k] + covering[k] * (t - edges[k]) = base[k + 1] + covering[k + 1] * t, with
        # base = integral - covering * edges: two gathers per time, not three. base is computed and read in
        # wrapping int64 arithmetic: the terms may wrap, the sum is exact wherever the integral fits in int64.
        # Slot 0 gives 0 before the first edge.
        self.base = np.zeros(self.edges.size + 1, np.int64)
        if self.edges.size:
            integral = self.base[1:]
            np.cumsum(self.covering[1:-1] * np.diff(self.edges), out=integral[1:])
            integral -= self.covering[1:] * self.edges

    def overlap(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """For each interval [start, end), its overlap with each of the intervals, summed: the integral of the
        count over it (negated where it ends before it starts, as :func:`overlap_with_union`)."""
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        if starts.size == 0 or self.edges.size == 0:
            return np.zeros(starts.size, dtype=np.int64)
        out = self._integral_at(ends)
        out -= self._integral_at(starts)
        return out

    def _integral_at(self, t: np.ndarray) -> np.ndarray:
        # slot: the edges at or before t (the rows' starts ascend: a search in cache, see search_sorted)
        slot = search_sorted(self.edges, t, side="right")
        value = self.covering[slot]
        value *= t
        value += self.base[slot]
        return value


def clip_total(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> int:
    """Summed (not merged) length of the intervals clipped to [lo, hi)."""
    s = np.clip(np.asarray(starts, np.int64), lo, hi)
    e = np.clip(np.asarray(ends, np.int64), lo, hi)
    return int((e - s).sum())


def intersect(
    starts: np.ndarray, ends: np.ndarray, other_starts: np.ndarray, other_ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of two disjoint sorted unions (``merge`` output), as sorted disjoint pairs.

    Each interval of the first union is paired with the run of the second's intervals it overlaps (two binary
    searches), so the cost is O((n + m) log m + output), no sort of the combined edges.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if starts.size == 0 or other_starts.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first = search_sorted(other_ends, starts, side="right")  # first other interval ending after the start
    stop = search_sorted(other_starts, ends, side="left")  # first other interval starting at or after the end
    counts = np.maximum(stop - first, 0)
    mine = np.repeat(np.arange(starts.size), counts)
    offset = np.arange(mine.size) - np.repeat(np.cumsum(counts) - counts, counts)
    theirs = first[mine] + offset
    s = np.maximum(starts[mine], other_starts[theirs])
    e = np.minimum(ends[mine], other_ends[theirs])
    keep = e > s
    return s[keep], e[keep]


def subtract(
    starts: np.ndarray, ends: np.ndarray, cut_starts: np.ndarray, cut_ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The parts of disjoint sorted intervals not covered by another disjoint sorted union.

    Both inputs are merged unions (``merge`` output). Returns sorted disjoint [start, end) pairs: the
    intersection with the cut's complement (its holes, plus everything before and after it).
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    cut_starts = np.asarray(cut_starts, dtype=np.int64)
    cut_ends = np.asarray(cut_ends, dtype=np.int64)
    if starts.size == 0 or cut_starts.size == 0:
        return starts.copy(), ends.copy()
    lo, hi = min(int(starts[0]), int(cut_starts[0])), max(int(ends[-1]), int(cut_ends[-1]))
    holes_s = np.concatenate([[lo], cut_ends])
    holes_e = np.concatenate([cut_starts, [hi]])
    keep = holes_e > holes_s
    s, e = intersect(starts, ends, holes_s[keep], holes_e[keep])
    return merge(s, e)


# --- the range running at a time ------------------------------------------------------------------------
# One primitive for "which range runs at t" (an op at a launch, a step at a call, a module at a launch, an NCCL
# range at a launch): a binary search over the ranges' starts, then a check of the end. The per-thread (or
# per-device) form packs (thread, time) into one comparable number first
# (:func:`tracelens.analyses.columns.range_running_at`) and calls these on the packed values.


def running_at(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time, the index of the range [start, end) running then: the last range (``starts`` ascending)
    that starts at or before it, if it has not ended by then (start <= t < end); -1 where none.

    On ranges that do not overlap (one nesting level, one thread's outermost ops, steps) that is the one range
    holding t. On nested ranges ordered by (start, longest first) it is the innermost of those starting last."""
    starts = np.asarray(starts, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    at = search_sorted(starts, t, side="right") - 1
    ok = at >= 0
    ok[ok] = t[ok] < np.asarray(ends, dtype=np.int64)[at[ok]]
    return np.where(ok, at, -1)


def reaching_at(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time, among the ranges that start at or before it (``starts`` ascending; ranges may overlap),
    the index of the one reaching furthest (the later one on a tie), if it still runs then; -1 where no range
    holds t. ``reaching_at(...) >= 0`` is "some range holds t"."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    if starts.size == 0:
        return np.full(t.size, -1, np.int64)
    reach = np.maximum.accumulate(ends)
    furthest = np.maximum.accumulate(np.where(ends == reach, np.arange(ends.size), -1))
    at = np.searchsorted(starts, t, side="right") - 1
    safe = np.maximum(at, 0)
    ok = (at >= 0) & (t < reach[safe])
    return np.where(ok, furthest[safe], -1)
