"""attribution's fast paths give what the code they replaced gives (speed lives in benchmarks/).

- split_gap_rows (what device_attribution reads of a device's gaps: each cause's total, the largest gaps' rows,
  the sync-copy total, the gaps starting in a sync, the `nothing` intervals; no per-gap matrix) against the
  per-gap matrix of the previous split_disjoint_windows (copied below) reduced as device_attribution reduced it.
- split_disjoint_windows (now the same steps measured per window) against that copy.
- _merge_rows, _merge_level, _join_touching (the unions of rows / holes that need no merge, or merged by masks) against
  intervals.merge; window_split.cut (one end of the window read, not both) and window_split.union (masks, not
  index arrays) against copies of their previous code;
  window_split.totals against window_split.coverage.

The generated cases are test_window_split's (sorted disjoint windows, touching and zero-length ones, syncs that
wait and leave an echo, synchronous copies).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_window_split import _inputs, cases, echo_cases
from tracelens import intervals
from tracelens.analyses import host_split, window_split
from tracelens.analyses.names import CAUSES, HOST_CATEGORY_PRIORITY, INPUT, SYNC
from tracelens.analyses.topk import largest_first


def reference_split_disjoint_windows(
    starts: np.ndarray,
    ends: np.ndarray,
    cat: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    copy: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """host_split.split_disjoint_windows before the fast paths (per-window coverage after every step)."""
    _sync_echo, union_of = host_split._sync_echo, host_split.union_of
    n = starts.size
    levels = len(HOST_CATEGORY_PRIORITY)
    sync_level = HOST_CATEGORY_PRIORITY.index(SYNC)
    input_level = HOST_CATEGORY_PRIORITY.index(INPUT)
    # column-major: each column is written, and summed by the caller, in one contiguous pass
    out = np.zeros((len(CAUSES), n), np.int64).T
    present = np.bincount(cat, minlength=levels)
    level_pieces = []
    for level in range(levels):
        if present[level] == 0:
            level_pieces.append(window_split.empty())
            continue
        ls, le = (s, e) if present[level] == cat.size else (s[cat == level], e[cat == level])
        level_pieces.append(window_split.cut(*intervals.merge(ls, le), starts, ends))
        del ls, le
    sync_rows = cat == sync_level
    covered_before = np.zeros(n, np.int64)
    echo_copy = np.zeros(n, np.int64)
    union = before_sync = window_split.empty()
    covered_through_sync = covered_before
    for level, pieces in enumerate(level_pieces):
        if level == sync_level:
            before_sync = union
        if pieces[0].size:
            union = window_split.union(union, pieces)
            covered = window_split.coverage(union, n)
        else:
            covered = covered_before
        np.subtract(covered, covered_before, out=out[:, level])
        covered_before = covered
        if level == sync_level:
            covered_through_sync = covered
        if level == input_level and busy is not None and sync_rows.any():
            # as in split_any_windows: the echo claims only launch and cpu rows' time
            host_work = union_of(level_pieces[level + 1 :])
            # host work inside the windows less the union: its parts in the union's holes (host work searched
            # in them: far fewer of it than of them)
            eligible = intervals.intersect(*host_work[:2], *window_split.holes(union))
            for copies in (False, True):
                pick = sync_rows & (copy == copies)
                echo = window_split.intersect(host_work, *_sync_echo(s[pick], e[pick], busy, eligible))
                if echo[0].size == 0:  # nothing changes
                    continue
                union = window_split.union(union, echo)
                covered = window_split.coverage(union, n)
                gained = covered - covered_before
                out[:, sync_level] += gained
                if copies:
                    echo_copy = gained
                covered_before = covered
    out[:, -1] = (ends - starts) - covered_before
    copy_rows = sync_rows & copy
    if copy_rows.any():
        other_sync = sync_rows & ~copy
        not_copies = window_split.union(
            before_sync, window_split.cut(*intervals.merge(s[other_sync], e[other_sync]), starts, ends)
        )
        sync_copy = covered_through_sync - window_split.coverage(not_copies, n) + echo_copy
    else:  # the other syncs cover all the sync level covers, and no copy leaves an echo
        sync_copy = np.zeros(n, np.int64)
    # a window starts in a sync where a sync piece of it begins at its start
    sync_s, _, sync_w = level_pieces[sync_level]
    starts_in_sync = np.zeros(n, bool)
    starts_in_sync[sync_w[sync_s == starts[sync_w]]] = True
    extra = {"sync_copy": sync_copy, "starts_in_sync": starts_in_sync & (ends > starts)}
    if busy is not None:
        # the echoes lie inside later levels' rows, so the final union is the threads' whole activity
        # (without any activity, the windows as they are: intervals.subtract's answer)
        extra["unexplained"] = (
            intervals.merge(*window_split.complement(union, starts, ends))
            if union[0].size
            else (starts.copy(), ends.copy())
        )
    return out, extra


def reference_gap_split(ws, we, cat, s, e, copy, busy, which) -> tuple:
    """What device_attribution read of priority_split's answer before split_gaps."""
    if window_split.disjoint_windows(ws, we) and bool((e >= s).all()):
        split, extra = reference_split_disjoint_windows(ws, we, cat, s, e, copy, busy)
    else:
        split, extra = host_split.split_any_windows(ws, we, cat, s, e, copy, busy)
    return (
        [int(split[:, i].sum()) for i in range(len(CAUSES))],
        [[int(split[i, j]) for j in range(len(CAUSES))] for i in which],
        int(extra["sync_copy"].sum()),
        extra["starts_in_sync"].tolist(),
        [v.tolist() for v in extra["unexplained"]],
    )


def gap_busy(case: dict) -> tuple:
    """The case's inputs with a busy union (the attribution's gaps always have one)."""
    ws, we, cat, s, e, copy, busy = _inputs(case)
    if busy is None:
        busy = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return ws, we, cat, s, e, copy, busy


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(case=st.one_of(cases(), echo_cases()), largest=st.integers(0, 4))
def test_split_gap_rows_equals_the_reduced_per_gap_split(case: dict, largest: int) -> None:
    ws, we, cat, s, e, copy, busy = gap_busy(case)
    which = largest_first(we - ws, largest)
    fast = host_split.split_gap_rows(ws, we, cat, s, e, copy, busy, which)
    totals, chosen, sync_copy, starts_in_sync, unexplained = reference_gap_split(
        ws, we, cat, s, e, copy, busy, which
    )
    assert fast.totals.tolist() == totals
    assert fast.chosen.tolist() == chosen
    assert fast.sync_copy_ns == sync_copy
    assert fast.starts_in_sync.tolist() == starts_in_sync
    assert [v.tolist() for v in fast.unexplained] == unexplained


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(case=st.one_of(cases(), echo_cases()))
def test_split_disjoint_windows_equals_the_previous_code(case: dict) -> None:
    ws, we, cat, s, e, copy, busy = _inputs(case)
    if not bool((e >= s).all()):
        return
    fast, fast_extra = host_split.split_disjoint_windows(ws, we, cat, s, e, copy, busy)
    ref, ref_extra = reference_split_disjoint_windows(ws, we, cat, s, e, copy, busy)
    assert fast.tolist() == ref.tolist()
    assert fast_extra.keys() == ref_extra.keys()
    for key, value in ref_extra.items():
        got = fast_extra[key]
        if isinstance(value, tuple):
            assert [v.tolist() for v in got] == [v.tolist() for v in value], key
        else:
            assert got.tolist() == value.tolist(), key


@st.composite
def rows(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Rows that do not end before they start, in start order or not, touching, overlapping or apart."""
    pairs = draw(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=20))
    if draw(st.booleans()):
        pairs.sort()
    s = np.asarray([p[0] for p in pairs], np.int64)
    return s, s + np.asarray([p[1] for p in pairs], np.int64)


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(r=rows())
def test_merge_rows_equals_intervals_merge(r: tuple[np.ndarray, np.ndarray]) -> None:
    got = host_split._merge_rows(*r)
    want = intervals.merge(*r)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(r=rows(), picks=st.lists(st.booleans(), min_size=20, max_size=20))
def test_merge_level_equals_intervals_merge_of_the_levels_rows(
    r: tuple[np.ndarray, np.ndarray], picks: list[bool]
) -> None:
    order = np.argsort(r[0], kind="stable")  # rows in start order, as _merge_level takes them
    s, e = r[0][order], r[1][order]
    in_level = np.asarray(picks[: s.size], bool)
    if not in_level.any():
        return
    got = host_split._merge_level(s, e, in_level)
    want = intervals.merge(s[in_level], e[in_level])
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(gaps=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5)), max_size=20))
def test_join_touching_equals_intervals_merge(gaps: list[tuple[int, int]]) -> None:
    # sorted, disjoint, nonempty intervals: each a distance (0: touching) after the previous one's end
    s, e, at = [], [], 0
    for distance, length in gaps:
        s.append(at + distance)
        e.append(at + distance + length)
        at = e[-1]
    a, b = np.asarray(s, np.int64), np.asarray(e, np.int64)
    got = host_split._join_touching(a, b)
    assert [g.tolist() for g in got] == [w.tolist() for w in intervals.merge(a, b)]


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(case=st.one_of(cases(), echo_cases()), picks=st.lists(st.integers(0, 20), max_size=5))
def test_totals_equal_the_coverage_summed_and_read(case: dict, picks: list[int]) -> None:
    ws, we, cat, s, e, _, _ = _inputs(case)
    n = ws.size
    pieces = window_split.cut(*intervals.merge(s, e), ws, we)
    which = np.asarray([p for p in picks if p < n], np.int64)
    got = window_split.totals(pieces, which)
    coverage = window_split.coverage(pieces, n)
    assert got.tolist() == [int(coverage.sum())] + coverage[which].tolist()


# --- window_split.cut and window_split.union against the code they replaced --------------------------------


def reference_cut(union_starts, union_ends, ws, we) -> window_split.Pieces:
    """window_split.cut before the fast paths (both ends of the window found read back)."""
    n = ws.size
    if union_starts.size == 0 or n == 0:
        return window_split.empty()
    # the first window ending after each interval's start: the interval reaches into it if that window starts
    # before the interval ends (most launches of a GPU-bound host do not: they run while the GPU is busy), and
    # into later windows too if it ends after that one (a long sync spanning many gaps)
    first = intervals.search_sorted(we, union_starts, side="right")
    np.minimum(first, n - 1, out=first)  # past the last window: reaches none, as the test below finds
    reaches = ws[first] < union_ends
    reaches &= we[first] > union_starts
    which = np.flatnonzero(reaches)
    del reaches
    us, ue, window = union_starts[which], union_ends[which], first[which]
    del first, which
    wider = np.flatnonzero(ue > we[window])
    if wider.size:  # each of those interval's pieces in the windows it reaches: one per window
        counts = np.ones(us.size, np.int64)
        counts[wider] = np.searchsorted(ws, ue[wider], side="left") - window[wider]
        which = np.repeat(np.arange(us.size), counts)
        window = np.repeat(window - (np.cumsum(counts) - counts), counts)
        window += np.arange(window.size)
        us, ue = us[which], ue[which]
        del which
    s = np.maximum(us, ws[window])
    e = np.minimum(ue, we[window])
    keep = e > s  # a zero-length interval, or window, gives none
    if not keep.all():
        return s[keep], e[keep], window[keep]
    return s, e, window


def reference_union(a: window_split.Pieces, b: window_split.Pieces) -> window_split.Pieces:
    """window_split.union before the fast paths (index arrays for the interleave and the merged pieces)."""
    if a[0].size == 0:
        return b
    if b[0].size == 0:
        return a
    if b[0].size > a[0].size:
        a, b = b, a
    # the two sorted lists interleaved: each of b's pieces goes after the pieces of a starting at or before it
    # (a search of the shorter list in the longer, not a sort of both)
    size = a[0].size + b[0].size
    at_b = np.searchsorted(a[0], b[0], side="right")
    at_b += np.arange(b[0].size)
    from_a = np.ones(size, bool)
    from_a[at_b] = False
    at_a = np.flatnonzero(from_a)
    del from_a
    s, e, w = (np.empty(size, np.int64) for _ in range(3))
    for out, x, y in ((s, a[0], b[0]), (e, a[1], b[1]), (w, a[2], b[2])):
        out[at_a] = x
        out[at_b] = y
    del at_a, at_b
    reach = np.maximum.accumulate(e, out=e)
    # a new merged piece begins past every end seen so far, or in another window (windows may touch)
    new = np.empty(size, bool)
    new[0] = True
    np.greater(s[1:], reach[:-1], out=new[1:])
    new[1:] |= w[1:] != w[:-1]
    first = np.flatnonzero(new)
    del new
    last = np.empty_like(first)
    np.subtract(first[1:], 1, out=last[:-1])
    last[-1] = size - 1
    return s[first], reach[last], w[first]


@st.composite
def windows_and_unions(draw: st.DrawFn) -> tuple:
    """Sorted windows that do not overlap (touching and zero-length ones on purpose) and two merged unions."""
    bounds = sorted(draw(st.lists(st.integers(0, 80), min_size=0, max_size=14)))
    pairs, at = [], 0
    while at + 1 < len(bounds):
        pairs.append((bounds[at], bounds[at + 1]))
        at += draw(st.sampled_from([1, 2]))
    ws = np.asarray([p[0] for p in pairs], np.int64)
    we = np.asarray([p[1] for p in pairs], np.int64)
    unions = []
    for _ in range(2):
        s, e = draw(rows())
        unions.append(intervals.merge(s, e))
    return ws, we, unions


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(case=windows_and_unions())
def test_cut_and_union_equal_the_previous_code(case: tuple) -> None:
    ws, we, (u1, u2) = case
    a, b = window_split.cut(*u1, ws, we), window_split.cut(*u2, ws, we)
    for got, want in ((a, reference_cut(*u1, ws, we)), (b, reference_cut(*u2, ws, we))):
        assert [g.tolist() for g in got] == [w.tolist() for w in want]
    for x, y in ((a, b), (b, a), (a, a)):
        assert [g.tolist() for g in window_split.union(x, y)] == [w.tolist() for w in reference_union(x, y)]


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(case=windows_and_unions(), chunk=st.integers(1, 4))
def test_cut_compared_a_few_intervals_at_a_time_equals_the_previous_code(case: tuple, chunk: int) -> None:
    # window_split.cut compares the intervals with their windows a chunk at a time: chunks of 1-4 intervals here
    ws, we, (u1, _) = case
    saved = window_split._CHUNK
    window_split._CHUNK = chunk
    try:
        got = window_split.cut(*u1, ws, we)
    finally:
        window_split._CHUNK = saved
    assert [g.tolist() for g in got] == [w.tolist() for w in reference_cut(*u1, ws, we)]
