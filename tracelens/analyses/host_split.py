"""The priority split of windows among the host categories (docs/analyses.md, "attribution"): for each category
in priority order (sync > input > launch > cpu, with each blocking call's echo ranked after input), the part of
each window covered by the union of the threads' rows of that category and not by an earlier one; `nothing` is
the rest, so a window's parts sum exactly to its length.

The gap attribution (:mod:`.attribution`) splits each device's idle gaps this way, the step breakdown
(:mod:`.steps`) its step windows, the input-pipeline diagnosis one step. Sorted disjoint windows (a device's
gaps) go through :func:`split_disjoint_windows` / :func:`split_gaps` on the rows cut into them, any other
windows through :func:`split_any_windows`; both give the same figures on disjoint windows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals
from . import level_cut, window_split
from .names import CAUSES, HOST_CATEGORY_PRIORITY, INPUT, SYNC

if TYPE_CHECKING:
    from .attribution import HostRows


def _sync_echo(
    s: np.ndarray,
    e: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray],
    eligible: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Each blocking call's echo: from its end until W ns of ``eligible`` time have passed, W being the GPU busy
    time inside the call. Returns the echoes' union.

    Why W: a host that had not waited would have spent those W ns queueing what it did after the call, so at
    most W ns of the idle that follows can be won back by removing the wait (the launch-bound case: the GPU
    ran little while the host waited, W is small, and the idle stays launch overhead). Echoes of successive
    calls may overlap; their union claims at most the sum of their W (the host's lead, had none waited).
    """
    if s.size == 0 or eligible[0].size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    waited = intervals.overlap_with_union(s, e, *busy)
    # The instant by which another W ns of eligible time have passed after the call's end.
    spent = intervals.time_covered(intervals.covered_before(e, *eligible) + waited, *eligible)
    keep = (waited > 0) & (spent > e)
    return intervals.merge(e[keep], spent[keep])


def priority_split(
    starts: np.ndarray,
    ends: np.ndarray,
    rows: HostRows,
    thread_set: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Split each window [start, end) among the host categories by priority, plus `nothing`.

    With ``busy`` (the device's merged busy intervals; the windows are then its gaps), each blocking call's
    echo (``_sync_echo``) ranks after `input` and counts as `sync`.
    Returns (matrix of shape (n, len(CAUSES)) in CAUSES order, extra per-window arrays: sync_copy, starts_in_sync;
    and with ``busy``, ``unexplained``: the windows' parts that no row of the threads covers (`nothing`), as
    ``intervals.subtract`` gives them).
    Rows of the matrix sum exactly to end - start.

    A device's gaps (sorted windows that do not overlap) are split on the rows cut into them
    (:func:`split_disjoint_windows`): most host rows of a GPU-bound trace fall outside them, so the cut leaves
    few. Other windows (steps, which hold nearly every row) by :func:`split_any_windows`. Both give the same
    figures on disjoint windows.
    """
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    cat, s, e, copy = _thread_rows(rows, thread_set)
    if busy is not None and window_split.disjoint_windows(starts, ends) and bool((e >= s).all()):
        return split_disjoint_windows(starts, ends, cat, s, e, copy, busy)
    return split_any_windows(starts, ends, cat, s, e, copy, busy)


def _thread_rows(
    rows: HostRows, thread_set: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The host rows of the given threads: (category, start, end, synchronous copy)."""
    chosen = np.zeros(len(rows.threads), bool)
    chosen[thread_set] = True
    if chosen.all():  # every thread (a single-GPU trace's feeding threads): no selection to copy
        return (
            rows.category,
            gather(rows.cols.start, rows.row),
            gather(rows.cols.end, rows.row),
            rows.sync_copy,
        )
    codes = np.flatnonzero(chosen)
    if codes.size <= _FEW_THREADS:  # a comparison per thread: no intp copy of every row's thread code
        mine = rows.thread == codes[0]
        for code in codes[1:]:  # a loop over a few threads
            mine |= rows.thread == code
    else:
        mine = chosen[rows.thread]
    del codes
    # boolean selections (no index array of the rows picked), their event rows read once for both times
    at = rows.row[mine]
    return rows.category[mine], gather(rows.cols.start, at), gather(rows.cols.end, at), rows.sync_copy[mine]


# _thread_rows tests each row's thread against the chosen ones by comparisons up to this many of them.
_FEW_THREADS = 8

# gather reads this many positions at a time.
GATHER_CHUNK = 1 << 20


def gather(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``values[at]``, the positions (int32, the host rows' event rows) converted to numpy's index type a chunk at a
    time: not an int64 copy of millions of positions beside the result."""
    if at.dtype == np.intp or at.size <= GATHER_CHUNK:
        return values[at]
    out = np.empty(at.size, values.dtype)
    for lo in range(0, at.size, GATHER_CHUNK):  # a loop over chunks of positions
        out[lo : lo + GATHER_CHUNK] = values[at[lo : lo + GATHER_CHUNK]]
    return out


def split_disjoint_windows(
    starts: np.ndarray,
    ends: np.ndarray,
    cat: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    copy: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """:func:`priority_split` of sorted windows that do not overlap, on the host rows (``cat``, ``s``, ``e``,
    ``copy``: category, start, end, synchronous copy; ends not before starts) cut into the windows once."""
    n = starts.size
    out, sync_copy, starts_in_sync, unexplained = _split_disjoint(
        starts, ends, [cat, s, e, copy], busy, lambda pieces: window_split.coverage(pieces, n), ends - starts
    )
    extra: dict[str, Any] = {"sync_copy": sync_copy, "starts_in_sync": starts_in_sync}
    if unexplained is not None:
        extra["unexplained"] = unexplained
    return out, extra


@dataclass
class GapSplit:
    """What the attribution reads of the split of a device's gaps: each cause's total over all gaps, the split
    of a few chosen gaps, the sync-copy total, the gaps starting in a sync, and the `nothing` intervals."""

    totals: np.ndarray  # int64 per cause (CAUSES order): the column sums of priority_split's matrix
    chosen: np.ndarray  # (len(which), len(CAUSES)): the matrix's rows of the chosen gaps
    sync_copy_ns: int
    starts_in_sync: np.ndarray  # bool per gap
    unexplained: tuple[np.ndarray, np.ndarray]


def split_gaps(
    starts: np.ndarray,
    ends: np.ndarray,
    rows: HostRows,
    thread_set: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray],
    which: np.ndarray,
) -> GapSplit:
    """The sums of :func:`priority_split`'s figures over a device's gaps (with ``busy``), and its rows at the gaps
    ``which`` (the largest), without its per-gap matrix: on sorted disjoint gaps each step's covered length is
    summed over the union's pieces (and read at the chosen gaps), not spread over every gap (millions of them,
    most with no host activity at all in a GPU-bound trace)."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if window_split.disjoint_windows(starts, ends):
        # the rows' times read where they stand, each category merged and cut into the gaps in one compiled pass
        # (level_cut): no gathered copy of the rows' times, no full-length temporaries per category
        cut = level_cut.cut_thread_levels(starts, ends, rows, thread_set)
        if cut is not None:
            return _gap_split(starts, ends, cut, busy, np.asarray(which, np.int64))
    # the threads' rows handed over in a list the split empties once it has cut them into the gaps: they are let
    # go before the unions of the pieces are built (the host rows of a device's threads: millions)
    return _split_gap_rows(starts, ends, list(_thread_rows(rows, thread_set)), busy, which)


def split_gap_rows(
    starts: np.ndarray,
    ends: np.ndarray,
    cat: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    copy: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray],
    which: np.ndarray,
) -> GapSplit:
    """:func:`split_gaps` on the threads' host rows (``cat``, ``s``, ``e``, ``copy``: category, start, end,
    synchronous copy, as :func:`split_any_windows` takes them)."""
    return _split_gap_rows(starts, ends, [cat, s, e, copy], busy, which)


def _split_gap_rows(
    starts: np.ndarray,
    ends: np.ndarray,
    thread_rows: list[np.ndarray],
    busy: tuple[np.ndarray, np.ndarray],
    which: np.ndarray,
) -> GapSplit:
    """:func:`split_gap_rows` of the rows in ``thread_rows`` ([category, start, end, synchronous copy]), which
    it empties (the caller's references to them dropped: freed once split)."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    which = np.asarray(which, np.int64)
    s, e = thread_rows[1], thread_rows[2]
    in_order = bool((e >= s).all())
    del s, e
    if window_split.disjoint_windows(starts, ends) and in_order:
        return _gap_split(starts, ends, _cut_rows(starts, ends, thread_rows), busy, which)
    cat, s, e, copy = thread_rows
    thread_rows.clear()
    split, extra = split_any_windows(starts, ends, cat, s, e, copy, busy)
    return GapSplit(
        split.sum(axis=0),
        split[which],
        int(extra["sync_copy"].sum()),
        extra["starts_in_sync"],
        extra["unexplained"],
    )


def _gap_split(
    starts: np.ndarray,
    ends: np.ndarray,
    cut: level_cut.LevelCut,
    busy: tuple[np.ndarray, np.ndarray],
    which: np.ndarray,
) -> GapSplit:
    """:func:`split_gaps` of the rows cut into the sorted disjoint gaps (``cut``)."""
    lengths = ends - starts
    window_measure = np.concatenate([[lengths.sum()], lengths[which]])
    del lengths
    out, sync_copy, starts_in_sync, unexplained = _split_pieces(
        starts, ends, cut, busy, lambda pieces: window_split.totals(pieces, which), window_measure, which
    )
    assert unexplained is not None
    return GapSplit(out[0], out[1:], int(sync_copy[0]), starts_in_sync, unexplained)


def _split_disjoint(
    starts: np.ndarray,
    ends: np.ndarray,
    thread_rows: list[np.ndarray],
    busy: tuple[np.ndarray, np.ndarray] | None,
    measure: Callable[[window_split.Pieces], np.ndarray],
    window_measure: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """The split of sorted disjoint windows, each union's covered length taken by ``measure`` (a vector: per window
    for :func:`split_disjoint_windows`, summed and at a few windows for :func:`split_gaps`; ``window_measure``:
    the windows' own lengths so taken). Returns (matrix of shape (len(window_measure), len(CAUSES)), sync_copy,
    starts_in_sync per window, the `nothing` intervals with ``busy``, else None). ``thread_rows``: [category, start,
    end, synchronous copy] of the host rows (ends not before starts), emptied here: once cut into the windows
    only the sync rows' times are kept, and the rows are freed where the caller holds them no longer."""
    return _split_pieces(starts, ends, _cut_rows(starts, ends, thread_rows), busy, measure, window_measure)


def _cut_rows(starts: np.ndarray, ends: np.ndarray, thread_rows: list[np.ndarray]) -> level_cut.LevelCut:
    """The host rows ``thread_rows`` ([category, start, end, synchronous copy], ends not before starts; emptied
    here) cut into the sorted disjoint windows per category, as :func:`.level_cut.cut_thread_levels` gives them."""
    cat, s, e, copy = thread_rows
    thread_rows.clear()
    levels = len(HOST_CATEGORY_PRIORITY)
    sync_level = HOST_CATEGORY_PRIORITY.index(SYNC)
    level_pieces = []
    in_start_order = s.size < 2 or bool((s[1:] >= s[:-1]).all())
    for level in range(levels):
        rows_of_level = cat == level
        if level == sync_level:  # few rows: their positions, not a mask over every row
            sync_rows = np.flatnonzero(rows_of_level)
        present = np.count_nonzero(rows_of_level)
        if present == 0:
            level_pieces.append(window_split.empty())
            continue
        if present == cat.size:
            merged = _merge_rows(s, e)
        elif in_start_order and 2 * present > cat.size:  # most rows: merged in place, not copied out first
            merged = _merge_level(s, e, rows_of_level)
        else:
            merged = _merge_rows(s[rows_of_level], e[rows_of_level])
        del rows_of_level
        level_pieces.append(window_split.cut(*merged, starts, ends))
        del merged
    # the sync rows' times (few) are all that is read of the rows from here
    return level_cut.LevelCut(level_pieces, s[sync_rows], e[sync_rows], copy[sync_rows])


def _split_pieces(
    starts: np.ndarray,
    ends: np.ndarray,
    cut: level_cut.LevelCut,
    busy: tuple[np.ndarray, np.ndarray] | None,
    measure: Callable[[window_split.Pieces], np.ndarray],
    window_measure: np.ndarray,
    which: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """:func:`_split_disjoint` of the rows cut into the windows (``cut``; its list of pieces emptied once read, the
    launch level's millions let go before the complement of the union is built). With ``which`` (``measure`` is
    then ``window_split.totals`` at those windows, and ``busy`` given) the last two levels' unions are measured by
    the compiled pass, not built (:func:`.level_cut.union_cover`), and so are the sync echoes and their unions
    with the levels before (:func:`.level_cut.echo_spans`, :func:`.level_cut.measured_echoes`)."""
    level_pieces = cut.pieces
    sync_starts, sync_ends, sync_copies = cut.sync_starts, cut.sync_ends, cut.sync_copies
    del cut
    n = starts.size
    m = window_measure.size
    sync_level = HOST_CATEGORY_PRIORITY.index(SYNC)
    input_level = HOST_CATEGORY_PRIORITY.index(INPUT)
    # column-major: each column is written, and summed by the caller, in one contiguous pass
    out = np.zeros((len(CAUSES), m), np.int64).T
    covered_before = np.zeros(m, np.int64)
    echo_copy = np.zeros(m, np.int64)
    union = before_sync = window_split.empty()
    covered_through_sync = covered_before
    # fused: the union through launch only measured, the final one (the union through input and the echoes, with
    # the host work: launch and cpu) measured and its holes taken, neither built (two unions of ~190K pieces on
    # the 406 MB Kineto tile, written then read once)
    fused = which is not None and len(level_pieces) == input_level + 3 and level_cut.union_cover_available()
    echo = window_split.empty()
    host_work = (
        union_of(level_pieces[input_level + 1 :])
        if fused or (busy is not None and sync_starts.size)
        else echo
    )
    eligible = intervals.merge(np.zeros(0, np.int64), np.zeros(0, np.int64))
    echo_clip = None  # the echoes' spans, where their figures are measured and the echo not built
    for level, pieces in enumerate(level_pieces[: input_level + 1] if fused else level_pieces):
        if level == sync_level:
            before_sync = union
        if pieces[0].size:
            union = level_cut.union(union, pieces)
            covered = measure(union)
        else:
            covered = covered_before
        np.subtract(covered, covered_before, out=out[:, level])
        covered_before = covered
        if level == sync_level:
            covered_through_sync = covered
        spans = None
        if level == input_level and busy is not None and sync_starts.size and fused:
            spans = level_cut.echo_spans(host_work, union, sync_starts, sync_ends, busy)
        if spans is not None:
            assert which is not None
            covered_before, echo_copy, echo_clip = level_cut.measured_echoes(
                union, host_work, spans, sync_ends, sync_copies, which, covered_before, out[:, sync_level]
            )
        elif level == input_level and busy is not None and sync_starts.size:
            # as in split_any_windows: the echo claims only launch and cpu rows' time (host_work)
            # host work inside the windows less the union: its parts in the union's holes (host work searched
            # in them: far fewer of it than of them)
            eligible = _intersect_holes(host_work, union)
            for copies in (False, True):
                pick = sync_copies == copies
                echo = _intersect(host_work, *_sync_echo(sync_starts[pick], sync_ends[pick], busy, eligible))
                if echo[0].size == 0:  # nothing changes
                    continue
                union = level_cut.union(union, echo)
                covered = measure(union)
                gained = covered - covered_before
                out[:, sync_level] += gained
                if copies:
                    echo_copy = gained
                covered_before = covered
    holes = None
    if fused:
        assert which is not None
        launch_level = input_level + 1
        if level_pieces[launch_level][0].size:
            # with echoes: the launch level adds its time outside the union before them and their spans
            covered = (
                _covered(level_cut.union_cover(union, level_pieces[launch_level], which))
                if echo_clip is None
                else covered_before
                + level_cut.clipped(level_pieces[launch_level], union, echo_clip, False, which)
            )
            np.subtract(covered, covered_before, out=out[:, launch_level])
            covered_before = covered
        found = level_cut.union_cover(union, host_work, which, (starts, ends))
        if found is None:  # (pieces outside the windows) the union built
            union = level_cut.union(union, host_work)
            covered = measure(union)
        else:
            covered, holes = found
        np.subtract(covered, covered_before, out=out[:, launch_level + 1])
        covered_before = covered
    final_empty = union[0].size == 0 and (holes is None or host_work[0].size == 0)
    out[:, -1] = window_measure - covered_before
    # only the sync level's pieces are read from here: the other levels' (the launch level's: millions) and the
    # echo's inputs let go before the complement of the union is built
    sync_pieces = level_pieces[sync_level]
    level_pieces.clear()
    del pieces, host_work, echo, eligible
    if sync_copies.any():
        other_sync = ~sync_copies
        not_copies = level_cut.union(
            before_sync,
            window_split.cut(*intervals.merge(sync_starts[other_sync], sync_ends[other_sync]), starts, ends),
        )
        sync_copy = covered_through_sync - measure(not_copies) + echo_copy
    else:  # the other syncs cover all the sync level covers, and no copy leaves an echo
        sync_copy = np.zeros(m, np.int64)
    # a window starts in a sync where a sync piece of it begins at its start
    sync_s, _, sync_w = sync_pieces
    starts_in_sync = np.zeros(n, bool)
    starts_in_sync[sync_w[sync_s == starts[sync_w]]] = True
    starts_in_sync &= ends > starts
    unexplained = None
    if busy is not None:
        # the echoes lie inside later levels' rows, so the final union is the threads' whole activity
        # (without any activity, the windows as they are: intervals.subtract's answer)
        unexplained = (
            (starts.copy(), ends.copy())
            if final_empty
            else _join_touching(*(level_cut.complement(union, starts, ends) if holes is None else holes))
        )
    return out, sync_copy, starts_in_sync, unexplained


def _covered(found: tuple[np.ndarray, Any] | None) -> np.ndarray:
    """The totals of :func:`.level_cut.union_cover` (found: the pass is built)."""
    assert found is not None
    return found[0]


def _intersect(a: window_split.Pieces, b_starts: np.ndarray, b_ends: np.ndarray) -> window_split.Pieces:
    """``window_split.intersect``, by the compiled walk where built (:func:`.level_cut.intersect`)."""
    found = level_cut.intersect(a, b_starts, b_ends)
    return window_split.intersect(a, b_starts, b_ends) if found is None else found


def _intersect_holes(a: window_split.Pieces, union: window_split.Pieces) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the pieces ``a`` in the holes of ``union`` (``intervals.intersect`` of their times with
    ``window_split.holes(union)``), by the compiled walk where built."""
    holes = window_split.holes(union)
    found = level_cut.intersect(a, *holes)
    return intervals.intersect(*a[:2], *holes) if found is None else found[:2]


def _merge_rows(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``intervals.merge`` of rows that do not end before they start: rows in start order, each starting after
    the previous one ends (one thread's launch calls), are their own union (one comparison, not a merge)."""
    s = np.asarray(s, np.int64)
    e = np.asarray(e, np.int64)
    if s.size < 2 or bool((s[1:] > e[:-1]).all()):
        return s, e
    if bool((s[1:] < s[:-1]).any()):  # not in start order: the general merge sorts them
        return intervals.merge(s, e)
    # intervals.merge's steps, the groups' first and last rows picked by masks (no index arrays: the launch
    # rows of a device's threads are millions)
    reach = np.maximum.accumulate(e)
    first = np.empty(s.size, bool)
    first[0] = True
    np.greater(s[1:], reach[:-1], out=first[1:])
    merged_s = s[first]
    last = np.empty(s.size, bool)  # each group ends where the next begins, the last at the end
    last[:-1] = first[1:]
    last[-1] = True
    del first
    return merged_s, reach[last]


def _merge_level(s: np.ndarray, e: np.ndarray, in_level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``intervals.merge(s[in_level], e[in_level])`` for rows in start order that do not end before they start,
    without copying the level's rows out (the launch level of a GPU-bound trace: nearly every host row): the
    other rows' ends count as below every time, and a group is begun only by a row of the level."""
    s = np.asarray(s, np.int64)
    reach = np.where(in_level, np.asarray(e, np.int64), np.iinfo(np.int64).min)
    np.maximum.accumulate(reach, out=reach)  # the furthest end of the level's rows so far
    first = np.empty(s.size, bool)
    first[0] = True
    np.greater(s[1:], reach[:-1], out=first[1:])
    first &= in_level
    merged_s = s[first]
    # a group's end is the reach just before the next group begins (no row of the level in between), the last
    # group's the final reach; none before the first group
    last = np.empty(s.size, bool)
    last[:-1] = first[1:]
    last[-1] = True
    last[: int(np.argmax(in_level))] = False
    del first
    return merged_s, reach[last]


def _join_touching(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``intervals.merge`` of sorted, disjoint, nonempty intervals: where none touches the next (gaps touch only
    around a zero-length busy interval), they are their own union."""
    if s.size > 1 and not bool((s[1:] == e[:-1]).any()):
        return s, e
    return intervals.merge(s, e)


def union_of(pieces: list[window_split.Pieces]) -> window_split.Pieces:
    out = window_split.empty()
    for p in pieces:
        out = level_cut.union(out, p)
    return out


def split_any_windows(
    starts: np.ndarray,
    ends: np.ndarray,
    cat: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
    copy: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """:func:`priority_split` of any windows (overlapping, unsorted, ending before they start), on the host rows
    (``cat``, ``s``, ``e``, ``copy``: category, start, end, synchronous copy)."""
    out = np.zeros((starts.size, len(CAUSES)), np.int64)
    covered_before = np.zeros(starts.size, np.int64)
    sync_level = HOST_CATEGORY_PRIORITY.index(SYNC)
    # Each category's rows are merged once; the union through a level is then the previous level's union
    # merged with this one's (unions are far fewer intervals than rows: one sort of the rows in all, not one
    # per level).
    level_unions = [
        intervals.merge(s[cat == level], e[cat == level]) for level in range(len(HOST_CATEGORY_PRIORITY))
    ]
    if busy is not None and (ends >= starts).all():
        # Only the windows' (gaps') part of a union counts (every use below is inside them), so a union that
        # the windows cut smaller is kept cut: a GPU-bound host launches mostly while the GPU runs, and the
        # merges and overlaps below then handle ~1/5 of its millions of launch intervals (one that the
        # windows cut into more pieces, a long sync spanning many gaps, is kept whole).
        windows = intervals.merge(starts, ends)
        for level, union in enumerate(level_unions):
            inside = intervals.intersect(*union, *windows)
            if inside[0].size < union[0].size:
                level_unions[level] = inside
    input_level = HOST_CATEGORY_PRIORITY.index(INPUT)
    sync_rows = cat == sync_level
    copy_rows = sync_rows & copy
    echo_copy = np.zeros(starts.size, np.int64)
    us = ue = np.zeros(0, np.int64)
    for level, (ls, le) in enumerate(level_unions):
        if level == sync_level:
            before_sync = (us, ue)
        us, ue = intervals.merge(np.concatenate([us, ls]), np.concatenate([ue, le]))
        covered = intervals.overlap_with_union(starts, ends, us, ue)
        out[:, level] = covered - covered_before
        covered_before = covered
        if level == sync_level:
            covered_through_sync = covered
        if level == input_level and busy is not None:
            # The echo claims only host work it could have moved into the wait (launch and cpu rows), not
            # untraced time: that may be the host waiting on something else (another rank, the data).
            host_work = intervals.merge(
                np.concatenate([u[0] for u in level_unions[level + 1 :]]),
                np.concatenate([u[1] for u in level_unions[level + 1 :]]),
            )
            eligible = intervals.intersect(
                *intervals.subtract(*intervals.merge(starts, ends), us, ue), *host_work
            )
            # Echoes of the other blocking calls first, then of synchronous copies (their part is memcpy's).
            for copies in (False, True):
                pick = sync_rows & (copy_rows == copies)
                echo = intervals.intersect(*_sync_echo(s[pick], e[pick], busy, eligible), *host_work)
                us, ue = intervals.merge(np.concatenate([us, echo[0]]), np.concatenate([ue, echo[1]]))
                covered = intervals.overlap_with_union(starts, ends, us, ue)
                out[:, sync_level] += covered - covered_before
                if copies:
                    echo_copy = covered - covered_before
                covered_before = covered
    out[:, -1] = (ends - starts) - covered_before
    # The sync column's part covered only by synchronous copies: what the earlier categories and the other
    # syncs do not already cover.
    other_sync = (cat == sync_level) & ~copy
    os_, oe = intervals.merge(s[other_sync], e[other_sync])
    ns, ne = intervals.merge(np.concatenate([before_sync[0], os_]), np.concatenate([before_sync[1], oe]))
    sync_copy = covered_through_sync - intervals.overlap_with_union(starts, ends, ns, ne) + echo_copy
    sync_union = level_unions[sync_level]
    starts_in_sync = intervals.overlap_with_union(starts, starts + 1, *sync_union) > 0
    extra = {"sync_copy": sync_copy, "starts_in_sync": starts_in_sync & (ends > starts)}
    if busy is not None:
        # The echoes lie inside later levels' rows, so the final union is the threads' whole activity.
        extra["unexplained"] = intervals.subtract(starts, ends, us, ue)
    return out, extra
