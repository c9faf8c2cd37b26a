"""Synchronization stalls: blocking host syncs, the `.item()` / `.cpu()` pattern, stream and event waits.

Definitions (docs/analyses.md, "sync"):
    blocking sync   = runtime/driver call matching names.is_blocking_sync (cuda/hip/cu *Synchronize,
                      synchronous memcpy), or a framework's wait (a Python frame matching names.is_framework_wait:
                      JAX's block_until_ready, device_get, Array._value; outermost per thread); time = summed
                      call durations
    per step        = a call belongs to the step whose window contains its start
    item pattern    = a device-to-host copy of fewer than ITEM_MAX_BYTES bytes whose launch call is itself a
                      synchronous memcpy, or whose launch call is followed on the same thread by a blocking
                      sync as the next runtime/driver call (PyTorch `.item()`, `.cpu()`, `print(tensor)`);
                      wait_ns = summed durations of those blocking calls (each call counted once)
    gpu waits       = gpu_sync rows per sync_kind (count, summed duration) and *StreamWaitEvent calls
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import intervals
from ..arrow_read import arrow_codes
from ..event_names import strip_api_suffix
from ..trace import ALL_KINDS, CPU_OP, DRIVER, GPU_SYNC, PYTHON, RUNTIME, Trace
from ..values import dense_codes
from .api_call_columns import call_columns
from .columns import (
    Table,
    event_columns,
    thread_key,
    thread_time_positions,
)
from .frame_free import sort_values_order, text_groups
from .grouping import grouped, sum_per_slot
from .kinds import kind_mask
from .launch import launch_pairs
from .names import (
    code_mask,
    code_masks,
    dictionary_bits,
    is_blocking_sync,
    is_framework_wait,
    is_sync_copy,
    rows_named,
)
from .step_arrays import StepWindows, step_window_arrays
from .steps import STEP_LIMIT
from .thread_codes import THREAD_RUNS_SHARE, dense_thread_codes, thread_run_heads

try:  # optional: built at install time where a C compiler is there
    from . import _op_tree as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# Threads the compiled rows' thread codes take at most (its codes are bytes).
COMPILED_THREADS = 126

ITEM_MAX_BYTES = 64 * 1024
# the API calls' kind codes, in code order (the compiled walk's two codes)
_CALL_KINDS = (ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER))
TOP_N = 10
_STREAM_WAIT = re.compile(r"^(cuda|hip|cu)StreamWaitEvent$")


def _run_thread_codes(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``dense_codes(thread_key(pid, tid))``. Calls in time order come in runs on one thread (1,768 runs in the
    521K calls of the 406 MB Kineto tile): the key of each run's first call coded and the codes repeated over
    the runs, not a key built and searched per call; calls that change thread often are coded one by one."""
    if pid.size < 2:
        return dense_codes(thread_key(pid, tid))
    starts = thread_run_heads(pid, tid)
    if starts.size > THREAD_RUNS_SHARE * pid.size:
        return dense_codes(thread_key(pid, tid))
    codes, keys = dense_codes(thread_key(pid[starts], tid[starts]))
    return np.repeat(codes, np.diff(starts, append=pid.size)), keys


def row_thread_codes(pid: Any, tid: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``dense_codes(thread_key(pid[rows], tid[rows]))`` as int8 codes (and the sorted keys) by the compiled pass
    (``_op_tree.c`` ``row_thread_codes``: pid and tid read at the rows, each row's thread found among the few seen,
    no pid, tid and key gathered per row: 521K calls on the 406 MB Kineto tile); None where it does not apply (no
    such build, thread codes or other column types, more than COMPILED_THREADS threads)."""
    if not (
        hasattr(_compiled, "row_thread_codes")
        and all(isinstance(a, np.ndarray) and a.flags.c_contiguous for a in (pid, tid, rows))
        and pid.dtype in (np.int32, np.int64)
        and tid.dtype in (np.int32, np.int64)
        and rows.dtype in (np.int32, np.int64)
        and rows.size
    ):
        return None
    codes, keys, found = (
        np.empty(rows.size, np.int8),
        np.empty(COMPILED_THREADS, np.int64),
        np.zeros(1, np.int64),
    )
    if _compiled.row_thread_codes(pid, tid, rows, codes, keys, found):
        return None
    return codes, keys[: int(found[0])].copy()


def _api_calls(trace: Trace) -> tuple[Table, np.ndarray]:
    """(the runtime and driver calls: name code, start, event row, thread code, blocking, stream wait; the thread
    keys (sorted) the thread codes index)."""
    cols = event_columns(trace)
    # thread ids (a Kineto trace): rows, names, starts and thread codes by one compiled walk where it applies
    fused = call_columns(cols.kind, _CALL_KINDS, cols.name, cols.start, cols.pid, cols.tid)
    if fused is not None:
        rows, name, start, thread, thread_keys = fused
        return _call_table(cols, rows, name, start, thread), thread_keys
    # Row positions, not the mask: gathers by index cost ~1/3 of gathers by a table-long mask (41M rows).
    api = np.flatnonzero(kind_mask(cols.kind, (RUNTIME, DRIVER)))  # one run of kind codes: one pass
    name = cols.name[api]
    # one code per (pid, tid), as narrow as the threads allow: what the item pattern reads of them (a byte a call
    # for a handful of threads, not an int64 key)
    coded = dense_thread_codes(cols.pid, cols.tid, api)  # from the thread codes where held (Nsight)
    if coded is None:  # thread ids (a Kineto trace): read at the calls by the compiled pass where it applies
        coded = row_thread_codes(cols.pid, cols.tid, api)
    codes, thread_keys = _run_thread_codes(cols.pid[api], cols.tid[api]) if coded is None else coded
    thread = codes.astype(
        np.int8 if thread_keys.size <= 128 else np.int32 if thread_keys.size < 2**31 else np.int64, copy=False
    )
    del codes, coded
    # the event rows (int32 below 2^31): the ends are read at the few calls that need them
    rows = api.astype(np.int32) if cols.kind.size < 2**31 else api
    return _call_table(cols, rows, name, cols.start[api], thread), thread_keys


def _call_table(
    cols: Any, rows: np.ndarray, name: np.ndarray, start: np.ndarray, thread: np.ndarray
) -> Table:
    """The calls' table of :func:`_api_calls`, with the name tests (blocking, stream wait)."""
    # both tests from one look at the names in use and one gather
    blocking, stream_wait = code_masks(
        name, cols.names, (is_blocking_sync, lambda n: bool(_STREAM_WAIT.match(strip_api_suffix(n))))
    )
    return Table(
        {
            "name": name,
            "start": start,
            "row": rows,
            "thread": thread,
            "blocking": blocking,
            "stream_wait": stream_wait,
        }
    )


def _ends(trace: Trace, calls: Table) -> np.ndarray:
    """The end of each of the (selected) calls."""
    return event_columns(trace).end[calls["row"]]


def _step_index(starts: np.ndarray, windows: StepWindows) -> np.ndarray:
    """Index of the step containing each time (-1 when none); steps sorted by start."""
    if len(windows) == 0:
        return np.full(starts.size, -1)
    return intervals.running_at(windows.start, windows.end, starts)


def item_pattern(trace: Trace, calls: Table, thread_keys: np.ndarray) -> dict[str, Any]:
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    small = pairs[
        pairs["matched"] & pairs["is_dtoh"] & (pairs["bytes"] >= 0) & (pairs["bytes"] < ITEM_MAX_BYTES)
    ]
    empty = {
        "count": 0,
        "sync_calls": 0,
        "wait_ns": 0,
        "max_bytes": ITEM_MAX_BYTES,
        "top_ops": [],
        "per_step": [],
        "by_device": {},
    }
    if small.empty:
        return empty
    # The next runtime/driver call on the thread that starts at or after the copy's launch call ends.
    copy_key = thread_key(small["pid"], small["tid"])
    call, found = _next_calls(calls, thread_keys, copy_key, small["launch_end"])
    followed = found.copy()
    followed[found] = calls["blocking"][call[found]]
    self_sync = code_mask(small["launch_name"], cols.names, is_sync_copy)
    hit = small[followed | self_sync]
    waited = np.unique(call[followed])
    wait_ns = int((_ends(trace, calls[waited]) - calls["start"][waited]).sum())
    # Self-synchronous copies: the launch call itself is the wait (one call may move several copies).
    self_rows = np.flatnonzero(self_sync)
    _, first = np.unique(small["correlation_id"][self_rows], return_index=True)
    self_calls = small[self_rows[first]]
    wait_ns += int((self_calls["launch_end"] - self_calls["launch_start"]).sum())
    top = _op_names_by_external_id(trace, hit["external_id"])
    steps = step_window_arrays(trace)
    per_step = np.bincount(_step_index(hit["start"], steps) + 1, minlength=len(steps) + 1)[1:]
    return {
        "count": int(len(hit)),
        "sync_calls": int(len(waited) + len(self_calls)),
        "wait_ns": wait_ns,
        "max_bytes": ITEM_MAX_BYTES,
        "top_ops": top,
        "per_step": [int(x) for x in per_step[:STEP_LIMIT]],
        # per GPU (the copies' devices): a sentence naming one GPU counts its own reads
        "by_device": {
            str(int(d)): int(n) for d, n in zip(*np.unique(hit["device"], return_counts=True), strict=True)
        },
    }


def _next_calls(
    calls: Table, thread_keys: np.ndarray, copy_key: np.ndarray, after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(call, found) per copy: the first call (in start order, ties in row order) on the copy's thread (its key in
    ``copy_key``) starting at or after ``after``; found is False where there is none (call is then meaningless).

    The calls of the few threads that launch such copies are searched one thread at a time: no (thread, time)
    position and order of every call of the trace (8.8M calls of a training export: ~0.3 GB at once)."""
    copy_threads = np.flatnonzero(np.isin(thread_keys, copy_key))
    if copy_threads.size > _FEW_THREADS:  # many threads: one search of every call by (thread, start) position
        return _next_calls_by_position(calls, thread_keys, copy_key, after)
    call_thread, call_start = calls["thread"], calls["start"]
    in_order = call_start.size < 2 or bool((call_start[1:] >= call_start[:-1]).all())
    call = np.zeros(copy_key.size, np.int64)
    found = np.zeros(copy_key.size, bool)
    for code in copy_threads:  # a loop over a few threads
        mine = np.flatnonzero(call_thread == code)  # the thread's calls, in row order
        starts = call_start[mine]
        if not in_order:  # by start, ties in row order
            order = np.argsort(starts, kind="stable")
            mine, starts = mine[order], starts[order]
            del order
        copies = np.flatnonzero(copy_key == thread_keys[code])
        at = np.searchsorted(starts, after[copies], side="left")
        hit = at < mine.size
        found[copies] = hit
        call[copies[hit]] = mine[at[hit]]
        del mine, starts
    return call, found


# _next_calls searches the calls thread by thread up to this many threads with copies.
_FEW_THREADS = 16


def _next_calls_by_position(
    calls: Table, thread_keys: np.ndarray, copy_key: np.ndarray, after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_next_calls` by a binary search in the calls sorted by (thread, start) (a merge_asof copied and
    sorted every call of the trace)."""
    call_key = thread_keys[calls["thread"]]
    call_pos, copy_pos = thread_time_positions([(call_key, [calls["start"]]), (copy_key, [after])])
    by_position = _by_position(call_key, call_pos, calls["start"])
    call_pos = call_pos[by_position]  # in (thread, start) order; the unordered positions let go
    at = np.searchsorted(call_pos, copy_pos, side="left")
    del call_pos, copy_pos
    found = at < by_position.size
    call = by_position[np.minimum(at, max(by_position.size - 1, 0))] if by_position.size else at
    found &= (call_key[call] == copy_key) if by_position.size else found
    return call, found


def _by_position(key: np.ndarray, positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The calls ordered by their (thread, start) ``positions``, equal ones in row order (as merge_asof's stable
    sort): ``np.argsort(positions, kind="stable")``. Calls in start order (the event table is) are in that order
    once grouped by thread (``key``) stably, which needs no sort of the 8.8M calls of a training export."""
    if starts.size and bool((starts[1:] >= starts[:-1]).all()):
        return grouped(key)[0]
    return np.argsort(positions, kind="stable")


def _op_names_by_external_id(trace: Trace, external_ids: np.ndarray) -> list[dict[str, Any]]:
    """The framework ops (cpu_op rows) that share these external ids, most frequent first."""
    cols = event_columns(trace)
    ops = cols.of_kind(CPU_OP) & (cols.external_id >= 0)
    ids, first = np.unique(cols.external_id[ops], return_index=True)
    names = cols.name[ops][first]
    wanted = external_ids[external_ids >= 0]
    pos = np.searchsorted(ids, wanted)
    ok = (
        (pos < ids.size) & (ids[np.minimum(pos, max(ids.size - 1, 0))] == wanted)
        if ids.size
        else np.zeros(0, bool)
    )
    codes = names[pos[ok]]
    codes = codes[codes >= 0]
    if codes.size == 0:
        return []
    uniq, counts = np.unique(codes, return_counts=True)
    order = np.lexsort((uniq, -counts))[:TOP_N]
    return [{"name": str(cols.names[uniq[i]]), "count": int(counts[i])} for i in order]


def framework_waits(trace: Trace) -> np.ndarray:
    """The rows of the Python frames in which the host waits for device values (``names.is_framework_wait``: JAX's
    block_until_ready, device_get, Array._value), the outermost of nested ones on a thread only (jax.block_until_ready
    runs Array.block_until_ready): each wait counted once. Ascending."""
    cols = event_columns(trace)
    found = rows_named(cols.name, dictionary_bits(cols.names, (is_framework_wait,)) != 0)
    if found is None:
        return np.zeros(0, np.int64)
    rows = np.flatnonzero(found & kind_mask(cols.kind, (PYTHON,)))
    if rows.size < 2:
        return rows
    key = thread_key(cols.pid[rows], cols.tid[rows])
    start, end = cols.start[rows], cols.end[rows]
    order = np.lexsort((-end, start, key))  # per thread by start, the longer of equal starts first
    outer = np.ones(rows.size, bool)
    _, first = np.unique(key[order], return_index=True)
    for lo, hi in zip(first, [*first[1:], order.size], strict=True):  # a loop over the threads (a few)
        mine = order[lo:hi]
        before = np.maximum.accumulate(end[mine])  # the latest end of the frames starting no later
        outer[mine[1:]] = start[mine[1:]] >= before[:-1]
    return np.sort(rows[outer])


def sync_stats(trace: Trace) -> dict[str, Any]:
    calls, thread_keys = _api_calls(trace)
    blocking = calls[calls["blocking"]]
    cols = event_columns(trace)
    waits = framework_waits(trace)
    # the blocking calls, then the framework's waits (Python frames): what the host blocked in
    blocking_names = np.concatenate([np.asarray(blocking["name"], np.int64), cols.name[waits]])
    blocking_starts = np.concatenate([blocking["start"], cols.start[waits]])
    dur = np.concatenate([_ends(trace, blocking) - blocking["start"], cols.end[waits] - cols.start[waits]])
    names = cols.names
    # groupby("name")["dur"].agg(["count", "sum"]).sort_values("sum", ascending=False).head(TOP_N)
    group, by_name = text_groups(blocking_names, names)
    named = group >= 0
    name_count = np.bincount(group[named], minlength=by_name.size)
    name_sum = sum_per_slot(group[named], dur[named].astype(np.int64), by_name.size)
    top = sort_values_order(name_sum, ascending=False)[:TOP_N]
    steps = step_window_arrays(trace)
    idx = _step_index(blocking_starts, steps)
    per_step_count = np.bincount(idx + 1, minlength=len(steps) + 1)[1:]
    per_step_ns = np.bincount(idx + 1, weights=dur, minlength=len(steps) + 1)[1:]
    gpu_waits = _gpu_waits(trace, np.flatnonzero(cols.of_kind(GPU_SYNC)))
    stream_wait_calls = int(calls["stream_wait"].sum())
    return {
        "blocking": {
            "count": int(dur.size),
            "total_ns": int(dur.sum()),
            "by_name": [
                {"name": by_name[i], "count": int(name_count[i]), "total_ns": int(name_sum[i])} for i in top
            ],
        },
        "per_step": [
            {"step": int(s), "count": int(c), "total_ns": int(round(t))}
            for s, c, t in zip(steps.step[:STEP_LIMIT], per_step_count, per_step_ns, strict=False)
        ],
        "per_step_mean": (
            {"count": float(per_step_count.mean()), "total_ns": float(per_step_ns.mean())}
            if len(steps)
            else None
        ),
        "item_pattern": item_pattern(trace, calls, thread_keys),
        "gpu_waits": gpu_waits,
        "stream_wait_event_calls": stream_wait_calls,
    }


def _gpu_waits(trace: Trace, rows: np.ndarray) -> list[dict[str, Any]]:
    """Count and summed duration of the GPU sync rows ``rows`` per sync kind ("unknown" where none), in kind order:
    the kinds as dictionary codes, counted and summed per code (no Python string per row, no groupby)."""
    if rows.size == 0:
        return []
    cols = event_columns(trace)
    # the kinds as text, "unknown" where null (a cast to string and fill_null), one label per distinct text
    codes, values = arrow_codes(trace.take("sync_kind", rows))
    texts = [*("unknown" if v is None else str(v) for v in values), "unknown"]  # the last: code -1 (null)
    labels = list(dict.fromkeys(texts))
    codes = np.array([labels.index(t) for t in texts], np.int64)[codes]
    duration = cols.end[rows] - cols.start[rows]
    count = np.bincount(codes, minlength=len(labels))
    total = sum_per_slot(codes, duration, len(labels))
    return [
        {"sync_kind": labels[i], "count": int(count[i]), "total_ns": int(total[i])}
        for i in sorted(np.flatnonzero(count), key=lambda i: labels[i])  # a loop over the few kinds
    ]


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return sync_stats(trace)
