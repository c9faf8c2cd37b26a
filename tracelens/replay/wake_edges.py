"""The replay graph's wake edges: a host thread that sat idle (a long gap that its own framework ops and Python
frames hardly cover) resumes after the latest point another thread recorded in that time, and so does each
thread's first call (:func:`wake_edges`; PyTorch's autograd thread after the main thread). The gaps' coverage is
found for a few threads in one pass by the compiled helper, else thread by thread or by one join of every thread's
rows."""

from __future__ import annotations

import numpy as np

from .. import intervals
from ..analyses.columns import EventColumns, thread_key, thread_time_positions
from ..trace import CPU_OP, PYTHON
from .points import NONE, kind_code

IDLE_GAP_NS = 50_000  # a host thread's gap this long with
IDLE_COVERED = 0.1  # less than this share covered by its own ops/frames was a wait for another thread
WAKE_THREAD_LOOP = 16  # threads with idle gaps up to which each one's coverage is found on its own


def wake_edges(
    cols: EventColumns,
    cs: np.ndarray,
    ce: np.ndarray,
    call_thread: np.ndarray,
    thread_keys: np.ndarray,
    first_call: np.ndarray,
    host_lag: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges into the start of each call that follows an idle gap (>= IDLE_GAP_NS, less than IDLE_COVERED of it
    covered by the thread's own ops or Python frames), and into each thread's first call, from the latest host
    point recorded on another thread before it (inside the gap); such a gap's chain lag becomes its covered part
    (``host_lag`` is modified in place). A thread's first call with such an edge is no longer anchored."""
    empty = np.zeros(0, np.int64)
    n = cs.size
    if n == 0 or thread_keys.size < 2:
        return empty, empty, empty
    # the calls after a long gap on their thread (a thread's first call has none); the previous call's end read at
    # those calls only (no call-sized array of previous ends and gaps)
    after = np.flatnonzero(cs[1:] - ce[:-1] >= IDLE_GAP_NS) + 1
    middle = after[~first_call[after]]
    del after
    middle_prev_end = ce[middle - 1]
    covered = np.zeros(middle.size, np.int64)
    keys = thread_keys[call_thread[middle]]
    waiting = np.unique(keys)
    # a few threads with idle gaps: all their coverage in one pass over the rows by the compiled helper
    found = (
        _covered_natively(cols, waiting, keys, middle_prev_end, cs[middle])
        if middle.size and waiting.size <= WAKE_THREAD_LOOP
        else None
    )
    if found is not None:
        covered = found
    elif middle.size:
        is_own = cols.of_kind(CPU_OP, PYTHON)
        halves = _thread_key_halves(cols) if waiting.size <= WAKE_THREAD_LOOP else []
        # rows on a known thread only (tid >= 0): implied where each thread's rows are found by its tid itself (a
        # tid column whose values fit in 32 bits, compared as they are, and the threads' tids not negative)
        if not (halves and halves[0][2] and all(_low_half(int(key)) >= 0 for key in waiting)):
            is_own &= cols.tid >= 0
        if waiting.size <= WAKE_THREAD_LOOP:
            # a few threads with idle gaps: each one's own rows are in time order already, so their union needs
            # no sort (the join of every thread's rows below sorts them all); each thread's rows found by a
            # comparison per column (no key per row)
            for key in waiting:  # a loop over threads
                own = _of_thread_key(halves, is_own, int(key))
                at = keys == key
                covered[at] = _covered_by_rows(cols, own, middle_prev_end[at], cs[middle[at]])
        else:
            own = np.flatnonzero(is_own)
            own_keys = thread_key(cols.pid[own], cols.tid[own])
            lo, hi, os_, oe = thread_time_positions(
                [(keys, [middle_prev_end, cs[middle]]), (own_keys, [cols.start[own], cols.end[own]])]
            )
            us, ue = intervals.merge(os_, oe)
            covered = intervals.overlap_with_union(lo, hi, us, ue)
    if middle.size:
        idle = covered < IDLE_COVERED * (cs[middle] - middle_prev_end)
        middle, covered, middle_prev_end = middle[idle], covered[idle], middle_prev_end[idle]
    heads = np.flatnonzero(first_call)
    candidates = np.concatenate([middle, heads])
    prev_end = np.concatenate([middle_prev_end, np.full(heads.size, NONE, np.int64)])  # per candidate
    covered = np.concatenate([covered, np.zeros(heads.size, np.int64)])
    # the latest host point (call start or end) before each candidate's start, over all threads; of points at
    # one time, the last of [every start..., every end...] (the order of a stable sort of those times)
    latest, index = _latest_point_before(cs, ce, heads, cs[candidates])
    owner = np.where(index >= n, index - n, np.maximum(index, 0))
    ok = (index >= 0) & (latest > prev_end) & (call_thread[owner] != call_thread[candidates])
    candidates, covered, latest, owner, index = (
        candidates[ok],
        covered[ok],
        latest[ok],
        owner[ok],
        index[ok],
    )
    middle_ok = ~first_call[candidates]
    host_lag[2 * candidates[middle_ok]] = covered[middle_ok]
    return (
        (2 * owner + (index >= n)).astype(np.int64),
        (2 * candidates).astype(np.int64),
        (cs[candidates] - latest).astype(np.int64),
    )


def _covered_natively(
    cols: EventColumns, waiting: np.ndarray, keys: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray | None:
    """How much of each idle gap [lo, hi) (of the thread whose key is in ``keys``; ``waiting``: those keys, sorted
    and distinct) the thread's own framework ops and Python frames (rows on a known thread) cover: for every thread
    in one pass over the rows by the compiled helper; None where it was not built or the columns are not plain
    integer arrays (then a mask and a pass per thread, the reference)."""
    from .engine import native_solver  # imported here: engine imports graph, which imports this module

    solver = native_solver()
    pid, tid = cols.pid, cols.tid
    if not (
        solver is not None
        and isinstance(pid, np.ndarray)
        and isinstance(tid, np.ndarray)
        and pid.dtype.kind == "i"
        and tid.dtype.kind == "i"
        and pid.itemsize in (4, 8)
        and tid.itemsize in (4, 8)
        and cols.kind.dtype == np.int8
        and cols.start.dtype == np.int64
        and cols.end.dtype == np.int64
    ):
        return None
    own_kind = np.zeros(256, np.uint8)
    own_kind[[kind_code(CPU_OP), kind_code(PYTHON)]] = 1
    # the gaps thread by thread (the calls are in (thread, time) order: already so, the sort keeps them)
    thread = np.searchsorted(waiting, keys)
    order = np.argsort(thread, kind="stable")
    gap_from = np.zeros(waiting.size + 1, np.int64)
    np.cumsum(np.bincount(thread, minlength=waiting.size), out=gap_from[1:])
    out = np.empty(keys.size, np.int64)
    if (
        solver.thread_union_overlap(  # type: ignore[attr-defined]
            np.ascontiguousarray(cols.kind),
            own_kind,
            np.ascontiguousarray(tid),
            np.ascontiguousarray(pid),
            np.ascontiguousarray(cols.start),
            np.ascontiguousarray(cols.end),
            np.ascontiguousarray(waiting, np.int64),
            gap_from,
            np.ascontiguousarray(lo[order], np.int64),
            np.ascontiguousarray(hi[order], np.int64),
            out,
        )
        != 0
    ):
        return None
    covered = np.empty(keys.size, np.int64)
    covered[order] = out
    return covered


def _covered_by_rows(cols: EventColumns, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How much of each gap [lo, hi) (in time order, one thread's) the union of the event rows of the mask ``rows``
    covers: in one pass over the rows by the compiled helper where it was built and the rows are in start order
    (the event table is), else by :func:`intervals.merge` and :func:`intervals.overlap_with_union`; the same."""
    # imported here: engine imports graph, which imports this module (and tests swap the helper by its
    # name there)
    from .engine import native_solver

    solver = native_solver()
    if solver is not None and cols.start.dtype == np.int64 and cols.end.dtype == np.int64:
        out = np.empty(lo.size, np.int64)
        if (
            solver.union_overlap(  # type: ignore[attr-defined]
                np.ascontiguousarray(rows, dtype=bool).view(np.uint8),
                np.ascontiguousarray(cols.start),
                np.ascontiguousarray(cols.end),
                np.ascontiguousarray(lo, np.int64),
                np.ascontiguousarray(hi, np.int64),
                out,
            )
            == 0
        ):
            return out
    mine = np.flatnonzero(rows)
    us, ue = intervals.merge(cols.start[mine], cols.end[mine])
    return intervals.overlap_with_union(lo, hi, us, ue)


def _thread_key_halves(cols: EventColumns) -> list[tuple[np.ndarray, int, bool]]:
    """The tid and pid columns as :func:`thread_key` packs them (tid the low 32 bits, pid the high): each with its
    shift in the key and whether its values fit in 32 bits (then compared as they are)."""
    out = []
    for column, shift in ((cols.tid, 0), (cols.pid, 32)):
        fits = column.dtype.kind == "i" and (
            column.dtype.itemsize <= 4
            or column.size == 0
            or (-(2**31) <= int(column.min()) and int(column.max()) < 2**31)
        )
        out.append((column, shift, fits))
    return out


def _low_half(key: int) -> int:
    """The tid a :func:`thread_key` holds in its low 32 bits, read as signed (as a 32-bit tid column holds it)."""
    half = key & 0xFFFFFFFF
    return half - (1 << 32) if half >= 1 << 31 else half


def _of_thread_key(halves: list[tuple[np.ndarray, int, bool]], among: np.ndarray, key: int) -> np.ndarray:
    """``among & (thread_key(pid, tid) == key)`` without a key per row: each column against its half of the key
    (the low 32 bits of the value, which are the value itself, read as signed, where it fits in 32 bits)."""
    mask = among.copy()
    for column, shift, fits in halves:
        half = (key >> shift) & 0xFFFFFFFF
        if fits:
            mask &= column == (half - (1 << 32) if half >= 1 << 31 else half)
        else:
            mask &= (column & 0xFFFFFFFF) == half
    return mask


def _latest_point_before(
    cs: np.ndarray, ce: np.ndarray, heads: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each time in ``t``: (the latest call start or end before it, over every thread; its index in
    [starts..., ends...], the larger of equal times; -1: none). Calls are stored thread by thread (``heads``: each
    thread's first call), in time order within a thread, where both starts and ends ascend (outer calls), so each
    thread's latest start and end are two binary searches: a loop over threads, no sort of every point (with
    many threads and many times, one stable sort of every point instead: the same answer)."""
    n = cs.size
    if heads.size * t.size > 8 * n + 1024:
        times = np.concatenate([cs, ce])
        order = np.argsort(times, kind="stable")
        at = np.searchsorted(times[order], t, side="left") - 1
        index = np.where(at >= 0, order[np.maximum(at, 0)], -1)
        return np.where(at >= 0, times[np.maximum(index, 0)], NONE), index
    best_time = np.full(t.size, NONE, np.int64)
    best_index = np.full(t.size, -1, np.int64)
    for a, b in zip(heads.tolist(), np.append(heads[1:], n).tolist(), strict=True):  # a loop over threads
        for times, offset in ((cs, 0), (ce, n)):
            k = np.searchsorted(times[a:b], t, side="left") - 1
            has = k >= 0
            k = np.maximum(k, 0) + a
            found, index = times[k], k + offset
            better = has & ((found > best_time) | ((found == best_time) & (index > best_index)))
            best_time[better] = found[better]
            best_index[better] = index[better]
    return best_time, best_index
