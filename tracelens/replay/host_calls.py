"""The replay graph's host calls and their points, and the GPU ops' launch calls: the outermost host API rows and
step markers on each thread (:func:`host_calls`), their start and end points written into the graph's point arrays
(:func:`host_points`: host gaps and durations as lags, each thread's first start anchored), which launch matches
to keep (:func:`plausible_launch`), and each op's launch call with its start and offset in its outer call
(:func:`launch_calls`). Each one by the compiled helper where it was built, else with numpy (the reference)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analyses.columns import EventColumns, Table, thread_key
from ..analyses.thread_codes import THREAD_RUNS_SHARE, thread_run_heads
from ..trace import STEP
from ..values import dense_codes
from .points import HOST_END, HOST_START, NONE, kind_code

FEW_RUNS = 64  # runs (threads) up to which a segmented running max is one accumulate per run


def _thread_time_order(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``np.lexsort((-end, start, thread))``: by thread, then start, the longest first, then row. Rows already in
    start order (the event table is) need only a stable sort by thread (a radix sort of 16-bit codes) where no two
    rows of a thread start together; otherwise the lexsort."""
    if (
        start.size > 1
        and int(thread.max(initial=0)) < 2**16
        and int(thread.min(initial=0)) >= 0
        and bool((start[1:] >= start[:-1]).all())
    ):
        order = np.argsort(thread.astype(np.uint16), kind="stable")
        t, st = thread[order], start[order]
        if not ((t[1:] == t[:-1]) & (st[1:] == st[:-1])).any():
            return order
    return np.lexsort((-end, start, thread))


def _thread_keys_at(cols: EventColumns, rows: np.ndarray) -> np.ndarray:
    """``thread_key(cols.pid[rows], cols.tid[rows])``: ids held as int64 whose values fit in 32 bits (a Kineto trace's
    tids) narrowed first, so that thread_key packs two int32 halves (one array) instead of shifting int64 copies."""
    pid, tid = cols.pid[rows], cols.tid[rows]
    if isinstance(pid, np.ndarray) and isinstance(tid, np.ndarray) and pid.size:
        pid, tid = (_narrowed(ids) for ids in (pid, tid))
    return thread_key(pid, tid)


def _thread_codes_at(cols: EventColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``dense_codes(_thread_keys_at(cols, rows))`` (each row's rank among the rows' sorted distinct thread keys, as
    int64; those keys). Rows in time order come in long runs on one thread: where the runs are few, the keys are
    built and ranked at each run's first row only and the codes repeated over the runs (no key per row)."""
    pid, tid = cols.pid[rows], cols.tid[rows]
    if isinstance(pid, np.ndarray) and isinstance(tid, np.ndarray) and rows.size > 1:
        heads = thread_run_heads(pid, tid)
        del pid, tid
        if heads.size <= THREAD_RUNS_SHARE * rows.size:
            codes, keys = dense_codes(_thread_keys_at(cols, rows[heads]))
            return np.repeat(codes.astype(np.int64), np.diff(heads, append=rows.size)), keys
    codes, keys = dense_codes(_thread_keys_at(cols, rows))
    return codes.astype(np.int64, copy=False), keys


def _narrowed(ids: np.ndarray) -> np.ndarray:
    """Signed integer ids as int32 where every value fits (the same values), else as they are."""
    if ids.dtype.kind != "i" or ids.dtype.itemsize <= 4:
        return ids
    if -(2**31) <= int(ids.min()) and int(ids.max()) < 2**31:
        return ids.astype(np.int32)
    return ids


def _run_heads(keys: np.ndarray) -> np.ndarray:
    """First index of each run of equal consecutive keys, per element."""
    new = np.ones(keys.size, bool)
    new[1:] = keys[1:] != keys[:-1]
    return np.maximum.accumulate(np.where(new, np.arange(keys.size), 0))


@dataclass
class HostCalls:
    """The host calls of a graph: the outermost of the host API rows and step markers on each thread (a row is
    nested where an earlier row of its thread, in (thread, start, longest first, row) order, ends at or after its
    end). Per row (in the rows' order): ``call_of``, its outer call's index (calls numbered thread by thread in
    time order); per call: its event row, thread code, start and end (a step marker ends where it starts). (A
    row's offset in its call, its start - the call's start, is read where needed: at the launch rows.)"""

    call_of: np.ndarray
    call_row: np.ndarray
    call_thread: np.ndarray
    call_start: np.ndarray
    call_end: np.ndarray


def host_calls(cols: EventColumns, api: np.ndarray, thread: np.ndarray, n_threads: int) -> HostCalls:
    """:class:`HostCalls` of the event rows ``api`` (ascending) on threads ``thread`` (codes below ``n_threads``):
    in one pass by the compiled helper where it was built and the rows' starts ascend (the event table's order),
    else :func:`host_calls_by_numpy`; the same arrays."""
    from .engine import native_solver  # imported here: engine imports graph, which imports this module

    solver = native_solver()
    n = api.size
    if (
        solver is not None
        and n
        and cols.start.dtype == np.int64
        and cols.end.dtype == np.int64
        and cols.kind.dtype == np.int8
    ):
        call_of, call_row, call_thread, call_start, call_end = (np.empty(n, np.int64) for _ in range(5))
        n_calls = solver.host_calls(  # type: ignore[attr-defined]
            np.ascontiguousarray(api, np.int64),
            np.ascontiguousarray(thread, np.int64),
            np.ascontiguousarray(cols.start),
            np.ascontiguousarray(cols.end),
            np.ascontiguousarray(cols.kind).view(np.uint8),
            call_of,
            np.zeros(0, np.int64),  # (no offsets written)
            call_row,
            call_thread,
            call_start,
            call_end,
            kind_code(STEP),
            n_threads,
        )
        if n_calls >= 0:
            # (every row an outer call, as in most traces: the arrays as they are, no copies)
            per_call = (call_row, call_thread, call_start, call_end)
            return HostCalls(call_of, *(a if n_calls == n else a[:n_calls].copy() for a in per_call))
    return host_calls_by_numpy(cols, api, thread)


def host_calls_by_numpy(cols: EventColumns, api: np.ndarray, thread: np.ndarray) -> HostCalls:
    """:func:`host_calls` with numpy: the path without the compiled helper, and its reference."""
    marker = cols.kind[api] == kind_code(STEP)
    s = cols.start[api]
    e = np.where(marker, s, cols.end[api])
    order = _thread_time_order(thread, s, e)
    thread, s, e = thread[order], s[order], e[order]
    head = _run_heads(thread)
    prev_end = np.full(api.size, NONE, np.int64)
    if api.size:
        # running max of ends within each thread, shifted by one: what the call starts inside of
        run_end = _segmented_max_accumulate(e, head)
        prev_end[1:] = run_end[:-1]
        prev_end[head == np.arange(api.size)] = NONE
    outer = ~(prev_end >= e)  # not inside an earlier call on the thread
    # the outer call each nested one lies in: the last outer call at or before it on its thread
    outer_index = np.cumsum(outer) - 1
    calls = np.flatnonzero(outer)
    cs = s[calls]
    call_of = np.empty(api.size, np.int64)
    call_of[order] = outer_index
    return HostCalls(call_of, api[order[calls]], thread[calls].astype(np.int64), cs, e[calls])


def host_calls_by_thread_runs(cols: EventColumns, api: np.ndarray) -> tuple[HostCalls, np.ndarray] | None:
    """(:func:`host_calls` of the rows ``api`` (ascending) on their threads, the threads' keys: as
    ``_thread_codes_at`` gives them) where the compiled helper was built and the rows come in few runs of one
    thread (THREAD_RUNS_SHARE): the runs found by reading pid and tid at the rows, the keys built and ranked at each
    run's first row, the calls walked thread by thread through the runs (no per-row thread codes, no gathered pid
    and tid, no per-row order); None otherwise (then row by row)."""
    runs = _thread_runs(cols, api)
    if runs is None:
        return None
    solver, rows, heads, run_thread, keys = runs
    n = rows.size
    call_of, call_row, call_thread, call_start, call_end = (np.empty(n, np.int64) for _ in range(5))
    n_calls = solver.host_calls_by_runs(
        rows,
        heads,
        run_thread,
        np.ascontiguousarray(cols.start),
        np.ascontiguousarray(cols.end),
        np.ascontiguousarray(cols.kind).view(np.uint8),
        call_of,
        call_row,
        call_thread,
        call_start,
        call_end,
        kind_code(STEP),
        int(keys.size),
    )
    if n_calls < 0:  # starts out of order, or many rows of a thread at one start: row by row
        return host_calls(cols, api, np.repeat(run_thread, np.diff(heads, append=n)), int(keys.size)), keys
    per_call = (call_row, call_thread, call_start, call_end)
    return HostCalls(call_of, *(a if n_calls == n else a[:n_calls].copy() for a in per_call)), keys


def _thread_runs(
    cols: EventColumns, api: np.ndarray
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(the compiled helper, the rows ``api`` as int64, the first position of each run of rows of one thread,
    each run's thread code, the threads' keys) where the helper was built, the columns are plain integer arrays and
    the runs are few (THREAD_RUNS_SHARE of the rows); else None."""
    from .engine import native_solver  # imported here: engine imports graph, which imports this module

    solver = native_solver()
    room = int(THREAD_RUNS_SHARE * api.size)
    pid, tid = cols.pid, cols.tid
    if (
        solver is None
        or room < 1
        or not all(
            isinstance(a, np.ndarray) and a.dtype.kind == "i" and a.dtype.itemsize in (4, 8)
            for a in (pid, tid)
        )
        or cols.start.dtype != np.int64
        or cols.end.dtype != np.int64
        or cols.kind.dtype != np.int8
    ):
        return None
    rows = np.ascontiguousarray(api, np.int64)
    heads = np.empty(room, np.int64)
    count = solver.thread_runs_at(  # type: ignore[attr-defined]
        rows, np.ascontiguousarray(pid), np.ascontiguousarray(tid), heads
    )
    if count < 0:  # more runs than THREAD_RUNS_SHARE of the rows
        return None
    heads = heads[:count]
    codes, keys = dense_codes(_thread_keys_at(cols, rows[heads]))
    return solver, rows, heads, codes.astype(np.int64), keys


@dataclass
class HostPoints:
    """The host part of a graph's points, written into whole point arrays (room for ``n_ops`` GPU ops' two points
    each after the host points): per call ``c``, its start and end at points ``2c`` and ``2c + 1`` (``time``,
    ``lag``: the host gap before the start, 0 on its thread's first call and never negative, then its duration;
    ``anchor``: a thread's first start keeps its time, the rest NONE; ``chain``: its thread; ``row``; ``kind``;
    ``chain_first``: the thread's first start). ``calls``: the host calls, their ``call_start`` and ``call_end``
    views of ``time`` (no arrays of their own); ``first_call`` (a view of ``chain_first``) and ``call_is_marker``
    per call."""

    calls: HostCalls
    thread_keys: np.ndarray
    time: np.ndarray
    lag: np.ndarray
    anchor: np.ndarray
    chain: np.ndarray
    row: np.ndarray
    kind: np.ndarray
    chain_first: np.ndarray
    first_call: np.ndarray
    call_is_marker: np.ndarray


def host_points(cols: EventColumns, api: np.ndarray, n_ops: int) -> HostPoints:
    """:class:`HostPoints` of the host rows ``api`` (ascending): the calls and their points in one walk by the
    compiled helper where the rows come in few runs of one thread (:func:`host_points_by_thread_runs`), else
    the calls found (:func:`host_calls_by_thread_runs` or row by row) and their points written with numpy; the
    same arrays."""
    native = host_points_by_thread_runs(cols, api, n_ops)
    if native is not None:
        return native
    by_runs = host_calls_by_thread_runs(cols, api)
    if by_runs is None:
        thread, thread_keys = _thread_codes_at(cols, api)
        hosts = host_calls(cols, api, thread, int(thread_keys.size))
        del thread
    else:
        hosts, thread_keys = by_runs
    return host_points_by_numpy(cols, hosts, thread_keys, n_ops)


PointArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _point_arrays(n_points: int, n_rows: int) -> PointArrays:
    """Empty point arrays (time, lag, anchor, chain, row, kind, chain_first: all False) of ``n_points``; chains and
    event rows as int32 where every event row of ``n_rows`` fits (the chains are fewer): 8 bytes a point less."""
    index_type = np.int32 if n_rows < 2**31 else np.int64
    time, lag, anchor = (np.empty(n_points, np.int64) for _ in range(3))
    chain, row = np.empty(n_points, index_type), np.empty(n_points, index_type)
    return time, lag, anchor, chain, row, np.empty(n_points, np.int8), np.zeros(n_points, bool)


def host_points_by_numpy(
    cols: EventColumns, hosts: HostCalls, thread_keys: np.ndarray, n_ops: int
) -> HostPoints:
    """:func:`host_points` of the calls ``hosts`` with numpy: the path without the compiled walk, and its
    reference."""
    cs, ce, call_thread, call_row = hosts.call_start, hosts.call_end, hosts.call_thread, hosts.call_row
    n_calls = call_row.size
    n_host = 2 * n_calls
    points = _point_arrays(n_host + 2 * n_ops, cols.kind.size)
    time, lag, anchor, chain, row, kind, chain_first = points
    host_time, host_chain, host_lag = time[:n_host], chain[:n_host], lag[:n_host]
    host_anchor, host_row, host_first = anchor[:n_host], row[:n_host], chain_first[:n_host]
    host_time[0::2], host_time[1::2] = cs, ce
    host_chain[0::2], host_chain[1::2] = call_thread, call_thread
    kind[:n_host:2], kind[1:n_host:2] = HOST_START, HOST_END
    host_row[0::2], host_row[1::2] = call_row, call_row
    # the lags written in place (no call-sized temporaries): a call's duration, and the host gap before it (its
    # start - the previous call's end, 0 at a thread's first call, never negative)
    np.subtract(ce, cs, out=host_lag[1::2])
    gap = host_lag[0::2]
    if n_calls:
        gap[0] = 0
        np.subtract(cs[1:], ce[:-1], out=gap[1:])
    first_call = host_first[0::2]
    first_call[:] = True
    first_call[1:] = call_thread[1:] != call_thread[:-1]
    gap[first_call] = 0
    np.maximum(gap, 0, out=gap)
    host_anchor[:] = NONE
    np.copyto(host_anchor[0::2], cs, where=first_call)
    call_is_marker = cols.kind[call_row] == kind_code(STEP)
    return HostPoints(
        _calls_of_points(hosts.call_of, points, n_calls), thread_keys, *points, first_call, call_is_marker
    )


def host_points_by_thread_runs(cols: EventColumns, api: np.ndarray, n_ops: int) -> HostPoints | None:
    """:func:`host_points` in one walk of the compiled helper through the rows' runs of one thread (as
    :func:`host_calls_by_thread_runs` walks them) that writes each call's points as it finds the call; None where
    the runs are not few or the walk declines (then the calls are found first, their points written after)."""
    runs = _thread_runs(cols, api)
    if runs is None:
        return None
    solver, rows, heads, run_thread, keys = runs
    if not hasattr(solver, "host_points_by_runs"):  # pragma: no cover - a build older than the walk's points
        return None
    n = rows.size
    # room for every row an outer call (as in most traces); fewer: the points moved to arrays of their size below
    points = _point_arrays(2 * n + 2 * n_ops, cols.kind.size)
    time, lag, anchor, chain, row, kind, chain_first = points
    call_of = np.empty(n, np.int64)
    call_is_marker = np.empty(n, bool)
    unused = np.zeros(0, np.int64)
    n_calls = solver.host_points_by_runs(
        rows,
        heads,
        run_thread,
        np.ascontiguousarray(cols.start),
        np.ascontiguousarray(cols.end),
        np.ascontiguousarray(cols.kind).view(np.uint8),
        call_of,
        unused,  # (call rows and threads: the points' rows and chains instead)
        unused,
        unused,  # (call starts and ends: the points' times instead)
        unused,
        kind_code(STEP),
        int(keys.size),
        time,
        lag,
        anchor,
        chain,
        row,
        kind.view(np.uint8),
        chain_first.view(np.uint8),
        call_is_marker.view(np.uint8),
        HOST_START,
        HOST_END,
    )
    if n_calls < 0:  # starts out of order, or many rows of a thread at one start
        return None
    if n_calls < n:  # nested rows: the calls and their points cut to size
        n_host = 2 * n_calls
        moved = _point_arrays(n_host + 2 * n_ops, cols.kind.size)
        for into, written in zip(moved, points, strict=True):
            into[:n_host] = written[:n_host]
        points = moved
        call_is_marker = call_is_marker[:n_calls].copy()
    return HostPoints(
        _calls_of_points(call_of, points, n_calls),
        keys,
        *points,
        points[6][0 : 2 * n_calls : 2],
        call_is_marker,
    )


def _calls_of_points(call_of: np.ndarray, points: PointArrays, n_calls: int) -> HostCalls:
    """The host calls as views of their points (call ``c``'s start point ``2c``, end ``2c + 1``): starts and ends
    of the points' times, rows of their rows, threads of their chains (int32 where the points' rows and chains
    are): no call-sized arrays of their own."""
    time, _, _, chain, row = points[:5]
    n_host = 2 * n_calls
    return HostCalls(call_of, row[0:n_host:2], chain[0:n_host:2], time[0:n_host:2], time[1:n_host:2])


def launch_calls(
    found: np.ndarray,
    at: np.ndarray,
    launch_row: np.ndarray,
    call_of: np.ndarray,
    start: np.ndarray,
    call_start: np.ndarray,
    call_start_step: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per GPU op: (its launch call, ``call_of[at]``, -1 where not ``found``; that call's start, the launch row's
    ``start``, NONE where not found; its offset in the call, that start - call ``c``'s start
    ``call_start[c * call_start_step]`` (2: the host points' times, a call's start and end in turn), 0 where not
    found). ``at``: each op's launch row's position among the host rows (found: that row is its launch row). In
    one pass by the compiled helper where it was built (no gathers into op-sized temporaries), else numpy."""
    from .engine import native_solver  # imported here: engine imports graph, which imports this module

    solver = native_solver()
    n = found.size
    if (
        solver is not None
        and call_of.size
        and start.dtype == np.int64
        and launch_row.dtype.itemsize in (4, 8)
    ):
        op_launch_call, op_launch_start, op_offset = (np.empty(n, np.int64) for _ in range(3))
        solver.launch_calls(  # type: ignore[attr-defined]
            np.ascontiguousarray(found, bool).view(np.uint8),
            np.ascontiguousarray(at, np.int64),
            np.ascontiguousarray(launch_row),
            np.ascontiguousarray(call_of, np.int64),
            np.ascontiguousarray(start),
            np.ascontiguousarray(call_start, np.int64),
            NONE,
            op_launch_call,
            op_launch_start,
            op_offset,
            call_start_step,
        )
        return op_launch_call, op_launch_start, op_offset
    return launch_calls_by_numpy(found, at, launch_row, call_of, start, call_start[::call_start_step])


def launch_calls_by_numpy(
    found: np.ndarray,
    at: np.ndarray,
    launch_row: np.ndarray,
    call_of: np.ndarray,
    start: np.ndarray,
    call_start: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`launch_calls` with numpy: the path without the compiled helper, and its reference."""
    if call_of.size == 0:  # no host row: nothing found
        return (
            np.full(found.size, -1, np.int64),
            np.full(found.size, NONE, np.int64),
            np.zeros(found.size, np.int64),
        )
    op_launch_call = np.where(found, call_of[at], -1)
    op_launch_start = np.where(found, start[np.where(found, launch_row, 0)], NONE)
    op_offset = np.where(found, op_launch_start - call_start[np.maximum(op_launch_call, 0)], 0)
    return op_launch_call, op_launch_start, op_offset


def _segmented_max_accumulate(values: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Running max of ``values`` within runs (``head``: each element's run start index), by one accumulate over
    values shifted per run above everything before it."""
    if values.size == 0:
        return values.copy()
    is_head = head == np.arange(values.size)
    starts = np.flatnonzero(is_head)
    if starts.size <= FEW_RUNS and starts[0] == 0:  # few runs (threads): one running max per run's slice
        out = np.empty(values.size, np.int64)
        stops = [*starts[1:].tolist(), values.size]
        for a, b in zip(starts.tolist(), stops, strict=True):  # a loop over runs
            np.maximum.accumulate(values[a:b], out=out[a:b])
        return out
    run = np.cumsum(is_head) - 1
    lo, hi = int(values.min()), int(values.max())
    width = hi - lo + 1
    if width * (int(run[-1]) + 1) < 2**62:
        shifted = (values - lo) + run * width
        return np.maximum.accumulate(shifted) - run * width + lo
    out = values.copy()  # too wide to pack: a loop over runs
    for start in np.unique(head):
        stop = start + int((head == start).sum())
        out[start:stop] = np.maximum.accumulate(values[start:stop])
    return out


def plausible_launch(
    cols: EventColumns, op_row: np.ndarray, pairs: Table, found: np.ndarray, op_end: np.ndarray
) -> np.ndarray:
    """Launch matches to keep: correlation ids are per process (an Nsight export of several processes repeats
    them), so where the GPU ops carry their process (most matched ops share their call's pid) the pids must
    agree; and a call that starts after its op ended did not launch it."""
    ok = ~found | (pairs["launch_start"] <= op_end)
    op_pid = cols.pid[op_row]
    same = found & (op_pid == pairs["pid"])
    if found.any() and same.sum() >= 0.9 * found.sum():
        ok &= ~found | same
    return ok
