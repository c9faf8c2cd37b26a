"""The host rows of some threads, each category's union cut into a device's gaps, in one compiled pass over the
rows (``_merge_search.cut_levels``) for :func:`.host_split.split_gaps`.

The numpy path (``host_split``) first gathers every chosen row's start and end from the event columns (two int64
arrays of the 8.8M host rows of the x1512 export, for each device), then per category selects its rows, merges
them and cuts the union into the gaps, each step a full-length temporary. The pass here reads each row's times
where it stands, merges every category's rows as they come and cuts each merged interval into the gaps at once:
only the pieces inside the gaps are written (most host rows of a GPU-bound trace lie outside them). The pieces
are those of ``window_split.cut(*intervals.merge(s, e), starts, ends)``: the same figures; where a row ends
before it starts or a category's rows are not in start order, the pass declines and the numpy path runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import intervals
from . import window_split
from .names import HOST_CATEGORY_PRIORITY, SYNC

if TYPE_CHECKING:
    from .attribution import HostRows

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


class LevelCut(NamedTuple):
    """Each host category's union cut into the windows (HOST_CATEGORY_PRIORITY order), and the chosen threads'
    sync rows: start, end, whether a synchronous copy (few)."""

    pieces: list[window_split.Pieces]
    sync_starts: np.ndarray
    sync_ends: np.ndarray
    sync_copies: np.ndarray


class RowPass(NamedTuple):
    """The host rows' arguments of the compiled level passes (``cut_levels``, ``level_coverage``), in their order:
    the event times (read where they stand), the rows, their categories and thread codes, the chosen threads (None:
    every thread) and the number of levels."""

    start: np.ndarray
    end: np.ndarray
    row: np.ndarray
    category: np.ndarray
    thread: np.ndarray
    chosen: np.ndarray | None
    levels: int


def row_pass(rows: HostRows, thread_set: np.ndarray) -> RowPass | None:
    """The arguments of a level pass over the threads' (codes ``thread_set``) host rows; None where the event
    times are not plain int64 arrays (the numpy paths then)."""
    start, end = rows.cols.start, rows.cols.end
    if not all(
        isinstance(a, np.ndarray) and a.dtype == np.int64 and a.flags.c_contiguous for a in (start, end)
    ):
        return None
    chosen = np.zeros(len(rows.threads), bool)
    chosen[thread_set] = True
    return RowPass(
        start,
        end,
        np.ascontiguousarray(rows.row),
        np.ascontiguousarray(rows.category, np.int8),
        np.ascontiguousarray(rows.thread),
        None if chosen.all() else chosen,
        len(HOST_CATEGORY_PRIORITY),
    )


def available() -> bool:
    """Whether the compiled pass is built."""
    return _compiled is not None and hasattr(_compiled, "cut_levels")


def cut_thread_levels(
    starts: np.ndarray, ends: np.ndarray, rows: HostRows, thread_set: np.ndarray
) -> LevelCut | None:
    """The threads' (codes ``thread_set``) host rows cut into the sorted disjoint windows [starts, ends) per
    category, or None where the compiled pass is absent, the event times are not plain int64 arrays, a chosen row
    ends before it starts, or a category's rows are not in start order."""
    args = row_pass(rows, thread_set) if available() else None
    if args is None:
        return None
    found = _compiled.cut_levels(
        *args, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64)
    )
    if found is None:
        return None
    cut, counts = found
    pieces: list[window_split.Pieces] = []
    for level, count in enumerate(counts):
        if count == 0:
            pieces.append(window_split.empty())
            continue
        # the pass's own arrays handed over (no copy of the ~300K pieces into fresh pages)
        s, e, w = (np.frombuffer(b, np.int64) for b in _compiled.take_level(cut, level))
        pieces.append((s, e, w))
    del cut
    # the sync rows (a few of the host rows): found by their category, then their thread
    sync = np.flatnonzero(rows.category == HOST_CATEGORY_PRIORITY.index(SYNC))
    if args.chosen is not None:
        sync = sync[args.chosen[rows.thread[sync]]]
    at = rows.row[sync]
    return LevelCut(pieces, args.start[at], args.end[at], rows.sync_copy[sync])


def _int64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, np.int64)


def union(a: window_split.Pieces, b: window_split.Pieces) -> window_split.Pieces:
    """``window_split.union(a, b)`` by one compiled merge of the two lists (the numpy one interleaves them by
    searches and masks, then marks and gathers the merged pieces: a dozen temporaries as long as both)."""
    if a[0].size == 0:
        return b
    if b[0].size == 0:
        return a
    if not available():
        return window_split.union(a, b)
    a_s, a_e, a_w, b_s, b_e, b_w = (_int64(x) for x in (*a, *b))
    # one pass into the pass's own arrays (as long as both lists, shrunk), handed over: no counting pass first
    s, e, w = (np.frombuffer(x, np.int64) for x in _compiled.union_taken(a_s, a_e, a_w, b_s, b_e, b_w))
    return s, e, w


def complement(pieces: window_split.Pieces, ws: np.ndarray, we: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``window_split.complement(pieces, ws, we)`` by one compiled pass over the windows and the pieces."""
    if not available():
        return window_split.complement(pieces, ws, we)
    s, e, w, window_starts, window_ends = (_int64(x) for x in (*pieces, ws, we))
    count = _compiled.complement_pieces(s, e, w, window_starts, window_ends, None, None)
    out = (np.empty(count, np.int64), np.empty(count, np.int64))
    _compiled.complement_pieces(s, e, w, window_starts, window_ends, *out)
    return out


def intersect(a: window_split.Pieces, b_starts: np.ndarray, b_ends: np.ndarray) -> window_split.Pieces | None:
    """``window_split.intersect(a, b_starts, b_ends)`` (the pieces' parts inside sorted disjoint intervals) by one
    compiled walk through both lists (the numpy one searches twice per piece, then repeats and gathers every pair:
    the launch and cpu work of the 406 MB Kineto tile's gaps, 160K pieces, against the holes of the union before
    them); None where the pass is absent or the pieces' starts or the intervals do not ascend."""
    if not available() or not hasattr(_compiled, "intersect_pieces"):
        return None
    s, e, w, other_s, other_e = (_int64(x) for x in (*a, b_starts, b_ends))
    count = _compiled.intersect_pieces(s, e, w, other_s, other_e, None, None, None)
    if count < 0:
        return None
    out = (np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count, np.int64))
    _compiled.intersect_pieces(s, e, w, other_s, other_e, *out)
    return out


def union_cover_available() -> bool:
    """Whether :func:`union_cover`'s compiled pass is built."""
    return available() and hasattr(_compiled, "union_cover")


def union_cover(
    a: window_split.Pieces,
    b: window_split.Pieces,
    which: np.ndarray,
    windows: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None] | None:
    """``window_split.totals(union(a, b), which)`` and, with ``windows`` (the sorted disjoint windows the pieces lie
    in), ``complement(union(a, b), *windows)``, by the compiled pass without the union built (a device's gaps: the
    union of the launch and cpu levels' 160K pieces, only measured and its holes taken). None where the pass is
    absent or a piece's window is outside the windows (the caller builds the union then)."""
    if not union_cover_available():
        return None
    which = np.asarray(which, np.int64)
    order = np.argsort(which, kind="stable")
    which_sorted, slots = _int64(which[order]), _int64(order)
    a_s, a_e, a_w, b_s, b_e, b_w = (_int64(x) for x in (*a, *b))
    totals = np.empty(1 + which.size, np.int64)
    if windows is None:
        _compiled.union_cover(
            a_s, a_e, a_w, b_s, b_e, b_w, which_sorted, slots, totals, None, None, None, None
        )
        return totals, None
    ws, we = _int64(windows[0]), _int64(windows[1])
    # the holes written in the same pass into the pass's own arrays, handed over: no counting pass first
    taken = _compiled.union_cover_taken(a_s, a_e, a_w, b_s, b_e, b_w, which_sorted, slots, totals, ws, we)
    if taken is None:
        return None
    return totals, (np.frombuffer(taken[0], np.int64), np.frombuffer(taken[1], np.int64))


def echo_passes_available() -> bool:
    """Whether the compiled passes of the sync echo's figures (:func:`echo_spans`, :func:`clipped_totals`) are
    built."""
    return available() and hasattr(_compiled, "clipped_totals")


def clipped_totals(
    pieces: window_split.Pieces,
    minus: window_split.Pieces,
    clip: tuple[np.ndarray, np.ndarray],
    inside: bool,
    which: np.ndarray,
) -> np.ndarray | None:
    """``window_split.totals`` of the pieces less the times of ``minus``, then inside the sorted disjoint intervals
    ``clip`` (``inside``) or outside them, by one compiled walk, nothing built: what the echo (the host work in the
    echoes' spans) adds to the levels before it, and what the launch level adds to both. None where the pass is
    absent or a list is out of order."""
    if not echo_passes_available():
        return None
    which = np.asarray(which, np.int64)
    order = np.argsort(which, kind="stable")
    totals = np.empty(1 + which.size, np.int64)
    s, e, w, minus_s, minus_e, clip_s, clip_e, which_sorted, slots = (
        _int64(x) for x in (*pieces, *minus[:2], *clip, which[order], order)
    )
    if not _compiled.clipped_totals(
        s, e, w, minus_s, minus_e, clip_s, clip_e, inside, which_sorted, slots, totals
    ):
        return None
    return totals


def _measure_before(
    union: tuple[np.ndarray, np.ndarray],
    minus: tuple[np.ndarray, np.ndarray],
    queries: np.ndarray,
    inverse: bool,
) -> tuple[np.ndarray, bool] | None:
    """``_compiled.measure_before`` of queries in any order: (the answers, whether ``union`` less ``minus`` is not
    empty), or None where a list is out of order."""
    order = np.argsort(queries, kind="stable")
    found = np.empty(queries.size, np.int64)
    s, e, minus_s, minus_e, sorted_queries = (_int64(x) for x in (*union, *minus, queries[order]))
    status = _compiled.measure_before(s, e, minus_s, minus_e, sorted_queries, inverse, found)
    if status < 0:
        return None
    out = np.empty(queries.size, np.int64)
    out[order] = found
    return out, status > 0


def echo_spans(
    host_work: window_split.Pieces,
    before: window_split.Pieces,
    sync_starts: np.ndarray,
    sync_ends: np.ndarray,
    busy: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per sync row: where its echo ends and whether it has one (``host_split._sync_echo``'s ``spent`` and ``keep``,
    the eligible time being the host work less the levels ``before``), each row's figures once for all rows (the
    echo's rows are picked from them), by compiled walks through the busy intervals and the host work as far as the
    rows reach: no cumulative sums of the whole lists, no eligible list built. None where the passes are absent, a
    row ends before it starts, or a list is out of order (``_sync_echo`` then)."""
    if not echo_passes_available() or not bool((sync_ends >= sync_starts).all()):
        return None
    n = sync_starts.size
    no_time = np.zeros(0, np.int64)
    # the device's busy time in each row: measured before its end less before its start
    busy_before = _measure_before(busy, (no_time, no_time), np.concatenate([sync_starts, sync_ends]), False)
    if busy_before is None:
        return None
    waited = busy_before[0][n:] - busy_before[0][:n]
    eligible = (host_work[0], host_work[1])
    found = _measure_before(eligible, before[:2], sync_ends, False)
    if found is None:
        return None
    if not found[1]:  # no eligible time: no echo
        return sync_ends, np.zeros(n, bool)
    spent = _measure_before(eligible, before[:2], found[0] + waited, True)
    assert spent is not None
    return spent[0], (waited > 0) & (spent[0] > sync_ends)


def clipped(
    pieces: window_split.Pieces,
    minus: window_split.Pieces,
    clip: tuple[np.ndarray, np.ndarray],
    inside: bool,
    which: np.ndarray,
) -> np.ndarray:
    """:func:`clipped_totals` where the pass is known built and the lists in order (canonical pieces, merged
    spans)."""
    totals = clipped_totals(pieces, minus, clip, inside, which)
    assert totals is not None
    return totals


def measured_echoes(
    before: window_split.Pieces,
    host_work: window_split.Pieces,
    spans: tuple[np.ndarray, np.ndarray],
    sync_ends: np.ndarray,
    sync_copies: np.ndarray,
    which: np.ndarray,
    covered_before: np.ndarray,
    sync_column: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """``host_split._split_pieces``' echo steps with the echoes measured, not built (the echo: the host work in the
    echoes' spans, ~155K pieces on the 406 MB Kineto tile, then its union with the levels ``before``): the spans
    from :func:`echo_spans` (``spans``: each sync row's echo end and whether it has one); the union of ``before``
    and the echo covers what ``before`` covers (``covered_before``) and the host work less ``before`` in the spans
    (:func:`clipped_totals`). Adds the gains to ``sync_column``; returns (the covered totals, the synchronous
    copies' gain, the echoes' merged spans or None without any)."""
    spent, keep = spans
    through_before = covered_before
    echo_copy = np.zeros_like(covered_before)
    clip_starts = clip_ends = None
    for copies in (False, True):  # the other blocking calls' echoes first, then the synchronous copies'
        pick = keep & (sync_copies == copies)
        if not pick.any():
            continue
        # the spans so far (a union: both kinds' echoes once the copies' are added)
        new_starts, new_ends = sync_ends[pick], spent[pick]
        if clip_starts is not None and clip_ends is not None:
            new_starts, new_ends = (
                np.concatenate([clip_starts, new_starts]),
                np.concatenate([clip_ends, new_ends]),
            )
        clip_starts, clip_ends = intervals.merge(new_starts, new_ends)
        covered = through_before + clipped(host_work, before, (clip_starts, clip_ends), True, which)
        gained = covered - covered_before
        sync_column += gained
        if copies:
            echo_copy = gained
        covered_before = covered
    clip = None if clip_starts is None or clip_ends is None else (clip_starts, clip_ends)
    return covered_before, echo_copy, clip
