"""Gap attribution: for every idle gap of a GPU, what the host threads feeding it were doing.

Definitions (docs/analyses.md, "attribution"):
    feeding threads = host threads whose runtime/driver calls launched work onto the device (joined by
                      correlation_id); when none are known, the threads that made kernel/graph launch calls (of
                      the processes owning the device's GPU rows, where known); else every host thread of those
                      processes; when those are unknown too, every host thread
    host categories = names.host_category: sync > input > launch > cpu (priority order)
    split of a gap  = for each category c in priority order, the part of the gap's host part covered by the union
                      of the feeding threads' rows of category c and not by any earlier category; `nothing` = the
                      rest of the host part; the gap's queued part (queued_parts.py: after its next op's launch
                      call returned, + QUEUED_AFTER_NS) is `queued` for a graph launch's op, `launch` for an op
                      launched one by one. The parts sum exactly to the gap length, so the causes sum to idle_ns.
    sync echo       = the idle a blocking call leaves behind it: while the host waited for W ns of GPU work it
                      queued nothing, so after the call returns, up to W ns of idle during which the thread ran
                      launch or cpu rows (work it could have queued while waiting) counts as `sync`, not
                      launch/cpu (from a synchronous copy: as `sync_copy_ns` too)
    sync_copy_ns    = the part of `sync` covered only by synchronous memcpy calls (not by other syncs) and their
                      echo
    after_sync      = gaps that begin while a feeding thread is blocked in a sync call (the queue drained)
    late_launch     = gaps whose next GPU op's launch call ended after the gap began (HTA's "host wait")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import intervals, values
from ..trace import DRIVER, GPU_ACTIVITY_KINDS, RUNTIME, Trace
from .coded import CodedInts
from .columns import (
    DeviceBusy,
    EventColumns,
    busy_gpu_equivalents,
    device_busy,
    event_columns,
    memo,
    thread_key,
)
from .host_split import split_gaps
from .kept_runs import kept_thread_runs
from .late_launch import late_flags
from .launch import launch_pairs
from .names import (
    CAUSES,
    HOST_CATEGORY_PRIORITY,
    LAUNCH,
    QUEUED,
    STARTUP,
    SYNC,
    code_mask,
    is_kernel_launch,
    is_sync_copy,
)
from .queued_parts import QUEUED_AFTER_NS as QUEUED_AFTER_NS  # (the rule's constant, read as attribution's)
from .queued_parts import host_part_ends
from .startup import host_categories, one_time_work
from .thread_codes import THREAD_RUNS_SHARE, launched_threads, thread_run_heads
from .topk import largest_first

LARGEST_GAPS = 10
# The idle causes an attribution reports: the host categories' split and `nothing`, then the queued gaps.
IDLE_CAUSES: tuple[str, ...] = (*CAUSES, QUEUED)


@dataclass(frozen=True)
class ThreadTable:
    """The host rows' threads, one per thread code (numpy, not a frame: the analysis runs without pandas)."""

    pid: np.ndarray
    tid: np.ndarray

    def __len__(self) -> int:
        return int(self.pid.size)


@dataclass
class HostRows:
    """Host rows that count as activity, with their category and a dense thread code.

    Times and names are read from the event columns on demand (``starts(mask)``, ...): keeping copies for
    the tens of millions of NVTX ranges of a training export cost ~0.7 GB for the whole analysis.
    """

    cols: EventColumns
    row: np.ndarray  # event rows
    category: np.ndarray  # int8 index into HOST_CATEGORY_PRIORITY
    thread: np.ndarray  # code into `threads`: int8 for fewer than 128 threads, else int16, int32 or int64
    sync_copy: np.ndarray  # bool: a synchronous memcpy call
    threads: ThreadTable  # pid and tid per thread code

    def starts(self, mask: np.ndarray | None = None) -> np.ndarray:
        return self.cols.start[self.row if mask is None else self.row[mask]]

    def ends(self, mask: np.ndarray | None = None) -> np.ndarray:
        return self.cols.end[self.row if mask is None else self.row[mask]]

    def names(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Codes into ``event_columns(trace).names``."""
        return self.cols.name[self.row if mask is None else self.row[mask]]


def host_rows(trace: Trace) -> HostRows:
    def compute() -> HostRows:
        cols = event_columns(trace)
        base, startup_rows = host_categories(trace), one_time_work(trace).rows
        row_type = np.int32 if cols.start.size < 2**31 else np.int64
        # the rows, their categories and their threads' runs in one compiled pass over the event rows (no gathers of
        # pid and tid at every host row), where built and the columns are plain arrays (not Nsight's thread codes)
        passed = kept_thread_runs(
            base, startup_rows, HOST_CATEGORY_PRIORITY.index(STARTUP), cols.pid, cols.tid, row_type
        )
        if passed is None:
            keep, cat = _kept_rows(base, startup_rows, row_type)
            runs = None
        else:
            keep, cat, runs = passed
        del base, startup_rows, passed
        # (any row of each thread gives its pid/tid: its first)
        codes, first = _thread_codes(cols, keep) if runs is None else _run_thread_codes(cols, keep, runs)
        # The name test at the sync rows only (a few of the host rows).
        sync_rows = np.flatnonzero(cat == HOST_CATEGORY_PRIORITY.index(SYNC))
        sync_copy = np.zeros(cat.size, bool)
        sync_copy[sync_rows] = code_mask(cols.name[keep[sync_rows]], cols.names, is_sync_copy)
        del sync_rows
        return HostRows(
            cols=cols,
            row=keep,
            category=cat,
            thread=codes,
            sync_copy=sync_copy,
            threads=ThreadTable(cols.pid[keep[first]], cols.tid[keep[first]]),
        )

    return memo(trace, "host_rows", compute)


# Host rows handled at once by _kept_rows and _thread_codes (a few MiB of temporaries each).
HOST_BLOCK = 1 << 21


def _kept_rows(base: np.ndarray, startup_rows: np.ndarray, row_type: type) -> tuple[np.ndarray, np.ndarray]:
    """(``np.flatnonzero(category >= 0)`` as ``row_type``, the categories there) of ``category``: the host
    categories ``base`` with STARTUP at the one-time rows ``startup_rows`` (ascending), a block of rows at a time:
    no int64 positions of every host row (12.8M on the x1512 export), and no copy of ``base`` (a byte per event
    row) to set the one-time rows' category in: each block's own copy, where it holds some."""
    # where each block's one-time rows begin among them
    bounds = np.searchsorted(startup_rows, np.arange(0, base.size + HOST_BLOCK, HOST_BLOCK))
    startup = base.dtype.type(HOST_CATEGORY_PRIORITY.index(STARTUP))

    def category(i: int, lo: int) -> np.ndarray:
        block = base[lo : lo + HOST_BLOCK]
        if bounds[i + 1] > bounds[i]:
            block = block.copy()
            block[startup_rows[bounds[i] : bounds[i + 1]] - lo] = startup
        return block

    blocks = range(0, base.size, HOST_BLOCK)
    count = sum(int(np.count_nonzero(category(i, lo) >= 0)) for i, lo in enumerate(blocks))
    rows: np.ndarray = np.empty(count, row_type)
    cat, at = np.empty(count, base.dtype), 0
    for i, lo in enumerate(blocks):  # a loop over blocks of rows
        block = category(i, lo)
        found = np.flatnonzero(block >= 0)
        cat[at : at + found.size] = block[found]
        found += lo
        rows[at : at + found.size] = found
        at += found.size
        del found
    return rows, cat


def _thread_codes(cols: EventColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each row's thread code: ``dense_codes(thread_key(pid, tid))``'s codes at the rows, in the narrowest type;
    per code, the position of its first row), a block of rows at a time: each block's keys numbered by hashing,
    then those numbers mapped to the sorted distinct keys (no int64 key and intp code of every row at once); where
    pid and tid are held as one set of thread codes (an Nsight export's), by those codes (:func:`_coded_thread_codes`).
    """
    if (
        isinstance(cols.pid, CodedInts)
        and isinstance(cols.tid, CodedInts)
        and cols.pid.codes is cols.tid.codes
    ):
        return _coded_thread_codes(cols.pid, cols.tid, rows)
    local = np.empty(rows.size, np.int32)
    uniques, local_firsts = [], []
    for lo in range(0, rows.size, HOST_BLOCK):  # a loop over blocks of rows
        block = rows[lo : lo + HOST_BLOCK]
        code, seen, at = pair_first_seen_codes(cols.pid[block], cols.tid[block])
        local[lo : lo + block.size] = code
        uniques.append(np.asarray(seen, np.int64))
        local_firsts.append(at + lo)
        del block, code
    keys = np.sort(np.unique(np.concatenate([np.zeros(0, np.int64), *uniques])))
    codes: np.ndarray = np.empty(rows.size, _narrowest_code_type(keys.size))
    first = np.full(keys.size, -1, np.int64)
    for i, lo in enumerate(range(0, rows.size, HOST_BLOCK)):  # the blocks again: their numbers mapped
        to_key = np.searchsorted(keys, uniques[i])
        # the few keys' codes narrowed first: one gather writes the rows' narrow codes
        np.take(
            to_key.astype(codes.dtype),
            local[lo : lo + HOST_BLOCK],
            out=codes[lo : lo + HOST_BLOCK],
            mode="clip",
        )
        here = np.full(keys.size, -1, np.int64)
        here[to_key] = local_firsts[i]  # each key's first row in the block (a key once per block)
        first = np.where(first >= 0, first, here)
    return codes, first


def _run_thread_codes(
    cols: EventColumns, rows: np.ndarray, runs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_thread_codes` of the rows from where their runs of one thread begin (``runs``, positions ascending,
    the first 0: :func:`.kept_runs.kept_thread_runs`): a key built at each run's first row, the runs' keys hashed,
    their codes into the sorted distinct keys repeated over the runs."""
    at = rows[runs]
    run_code, seen = values.first_seen_codes(thread_key(cols.pid[at], cols.tid[at]))
    del at
    seen = np.asarray(seen, np.int64)
    keys = np.sort(seen)  # (distinct already)
    to_key = np.searchsorted(keys, seen)
    first = np.full(keys.size, -1, np.int64)
    first_run = np.empty(seen.size, np.int64)
    first_run[run_code[::-1]] = runs[::-1]  # the last write, each key's first run, stays
    first[to_key] = first_run
    # the few keys' codes narrowed first: the repeat writes the rows' narrow codes
    codes = np.repeat(
        to_key.astype(_narrowest_code_type(keys.size))[run_code], np.diff(runs, append=rows.size)
    )
    return codes, first


def first_seen_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(``pd.factorize(key)``'s codes and distinct keys, in order of first appearance; each distinct key's first
    position). Host rows in time order come in long runs on one thread (2,243 runs in the 1.3M host rows of the
    406 MB Kineto tile): only each run's key is hashed and the codes repeated over the runs, not a hash of every
    row's key; keys that change often are hashed one by one."""
    if key.size == 0:
        return np.zeros(0, np.intp), np.zeros(0, key.dtype), np.zeros(0, np.int64)
    change = np.flatnonzero(key[1:] != key[:-1])
    if change.size > THREAD_RUNS_SHARE * key.size:  # keys that change often: hashed one by one
        code, seen = values.first_seen_codes(key)
        at = np.empty(len(seen), np.int64)
        at[code[::-1]] = np.arange(key.size - 1, -1, -1)  # the last write, each code's first position, stays
        return code, seen, at
    run_starts = np.empty(change.size + 1, np.int64)
    run_starts[0] = 0
    np.add(change, 1, out=run_starts[1:])
    del change
    return _run_codes(key[run_starts], run_starts, key.size)


def _run_codes(
    run_keys: np.ndarray, run_starts: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`first_seen_codes` of ``size`` keys constant over each run (``run_starts``: int64, the first 0,
    ascending; ``run_keys``: each run's key): the runs' keys hashed, their codes repeated over the runs."""
    run_code, seen = values.first_seen_codes(run_keys)
    at = np.empty(len(seen), np.int64)
    at[run_code[::-1]] = run_starts[::-1]  # the last write, each code's first run, stays
    # int32 codes (a thread count fits): the repeat writes half the bytes of intp codes
    return np.repeat(run_code.astype(np.int32), np.diff(run_starts, append=size)), seen, at


def pair_first_seen_codes(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``first_seen_codes(thread_key(pid, tid))``, with the key built at each run's first row only: the runs found
    by comparing pid and tid themselves (two comparisons a row, not a key of every row built first: 1.3M host rows
    in 2,243 runs on the 406 MB Kineto tile). Runs of equal (pid, tid) split the runs of equal keys at most
    further (two pairs can share a key), which changes neither the codes nor the first positions."""
    if pid.size == 0:
        return first_seen_codes(thread_key(pid, tid))
    run_starts = thread_run_heads(pid, tid)
    if run_starts.size > THREAD_RUNS_SHARE * pid.size:  # keys that change often: hashed one by one
        return first_seen_codes(thread_key(pid, tid))
    return _run_codes(thread_key(pid[run_starts], tid[run_starts]), run_starts, pid.size)


def _coded_thread_codes(pid: CodedInts, tid: CodedInts, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_thread_codes` where pid and tid are held as the same thread codes into their tables: each row's code
    read (a byte or two), the keys built per table entry (a handful of threads), not per row, and no hashing;
    codes mapped to the sorted distinct keys of the threads the rows are on through a table."""
    table_keys = thread_key(np.asarray(pid.table), np.asarray(tid.table))  # one per thread code
    local = np.empty(rows.size, pid.codes.dtype)
    present = np.zeros(table_keys.size, bool)
    for lo in range(0, rows.size, HOST_BLOCK):  # a loop over blocks of rows
        block = pid.codes[rows[lo : lo + HOST_BLOCK]]
        local[lo : lo + block.size] = block
        present[block] = True
        del block
    keys = np.unique(table_keys[present])  # sorted (two thread codes may share a key: then one code)
    to_code = np.searchsorted(keys, table_keys)
    np.minimum(to_code, max(keys.size - 1, 0), out=to_code)  # (the codes of no row: any code, never read)
    to_code = to_code.astype(_narrowest_code_type(keys.size))
    codes: np.ndarray = to_code[local]
    del local
    first = np.full(keys.size, -1, np.int64)
    for lo in range(0, rows.size, HOST_BLOCK):  # each code's first row, a block at a time
        block = codes[lo : lo + HOST_BLOCK]
        here = np.full(keys.size, -1, np.int64)
        here[block[::-1]] = np.arange(
            lo + block.size - 1, lo - 1, -1
        )  # the last write: the block's first row
        first = np.where(first >= 0, first, here)
    return codes, first


def _narrowest_code_type(count: int) -> type:
    """The narrowest signed integer type holding codes 0..count-1 (the thread codes of the host rows, held from
    the attribution to the diagnosis: a byte a row for a handful of threads, not four)."""
    for dtype in (np.int8, np.int16, np.int32):
        if count <= np.iinfo(dtype).max + 1:
            return dtype
    return np.int64


def thread_codes(rows: HostRows, pids: np.ndarray, tids: np.ndarray) -> np.ndarray:
    """Codes of the given (pid, tid) pairs among the host rows' threads (threads without rows are dropped)."""
    known = thread_key(rows.threads.pid, rows.threads.tid)
    return np.flatnonzero(np.isin(known, values.distinct(thread_key(pids, tids))))


def feeding_threads(trace: Trace, device: int) -> tuple[np.ndarray, str]:
    """Thread codes feeding ``device`` and how they were found: "correlation", "launch_calls", "process" or
    "all"."""
    rows = host_rows(trace)
    pairs = launch_pairs(trace)
    on_device = (pairs["device"] == device) & pairs["matched"]
    if on_device.any():
        codes = thread_codes(rows, *launching_threads(trace, on_device))
        if codes.size:
            return codes, "correlation"
    cols = event_columns(trace)
    gpu = cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device == device)
    pids = np.unique(cols.pid[gpu])
    pids = pids[pids >= 0]
    # No correlation id ties a call to this device's ops: the threads that made kernel launch calls (of its
    # processes, where the GPU rows name them) launched them. A monitor or loader thread that never launches is no
    # feeding thread: counted as one, its frames made a GPU idle under it "launch overhead".
    launchers = _launch_call_threads(trace, rows, pids)
    if launchers.size:
        return launchers, "launch_calls"
    if pids.size:
        codes = np.flatnonzero(np.isin(rows.threads.pid, pids))
        if codes.size:
            return codes, "process"
    return np.arange(len(rows.threads)), "all"


def _launch_call_threads(trace: Trace, rows: HostRows, pids: np.ndarray) -> np.ndarray:
    """Thread codes (among the host rows') of the kernel and graph launch calls, of the processes ``pids`` where
    some are given."""
    cols = event_columns(trace)
    api = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER))
    if api.size == 0:
        return np.zeros(0, np.int64)
    api = api[code_mask(cols.name[api], cols.names, is_kernel_launch)]
    if pids.size:
        api = api[np.isin(cols.pid[api], pids)]
    if api.size == 0:
        return np.zeros(0, np.int64)
    return thread_codes(rows, cols.pid[api], cols.tid[api])


def launching_threads(trace: Trace, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pids, tids) of the launch calls of the GPU ops ``ops`` (a mask over ``launch_pairs``, matched ops only):
    what :func:`thread_codes` reads of them. Where pid and tid are held as the same thread codes (an Nsight
    export's), each thread once: the calls' codes read (a byte or two each) and marked, not two values gathered
    and a key hashed per op (millions per device at x1512); else each thread once by the compiled pass
    (:func:`.thread_codes.launched_threads`), or every op's where it is not built."""
    pairs = launch_pairs(trace)
    cols = event_columns(trace)
    pid, tid = cols.pid, cols.tid
    if isinstance(pid, CodedInts) and isinstance(tid, CodedInts) and pid.codes is tid.codes:
        present = np.zeros(pid.table.size, bool)
        present[pid.codes[pairs["launch_row"][ops]]] = True
        used = np.flatnonzero(present)
        return np.asarray(pid.table)[used], np.asarray(tid.table)[used]
    # else each launching thread once by one pass at the ops' launch rows (no gathers of every op's pid and tid)
    found = launched_threads(ops, pairs["launch_row"], pid, tid)
    if found is not None:
        return found
    picked = pairs[ops]
    return picked["pid"], picked["tid"]


def _late_launch(trace: Trace, busy: DeviceBusy) -> np.ndarray:
    """Per gap: the earliest op starting at the gap's end was launched (call end) after the gap began."""
    pairs = launch_pairs(trace)
    on = pairs["device"] == busy.device
    count = np.count_nonzero(on)
    if count == 0:
        return np.zeros(busy.gap_ends.size, bool)
    # every op on this device (a single-GPU trace): their starts read whole, no positions selected
    on_device = None if count == on.size else np.flatnonzero(on)
    del on
    # gathered at those ops only (launch_pairs: held lean)
    op_start = pairs["start"] if on_device is None else pairs[on_device]["start"]
    return late_flags(
        op_start,
        on_device,
        pairs["matched"],
        pairs["launch_row"],
        event_columns(trace).end,
        busy.gap_starts,
        busy.gap_ends,
    )


def device_attribution(trace: Trace, busy: DeviceBusy, largest: int = LARGEST_GAPS) -> dict[str, Any]:
    rows = host_rows(trace)
    threads, source = feeding_threads(trace, busy.device)
    gs, ge = busy.gap_starts, busy.gap_ends
    lengths = ge - gs
    top = largest_first(lengths, largest)
    late = _late_launch(trace, busy)
    # A gap that began with its next op already handed over is not the host's once the GPU had time to start that op
    # (QUEUED_AFTER_NS): not split among the host's categories (a host blocked in a synchronize while the GPU ran its
    # queue is not what stalled it). That part is `queued` inside a graph replay, launch overhead's (`launch`) between
    # ops launched one by one (CUDA graphs and fusion shorten the GPU's per-kernel gaps). The host's part of each gap
    # is [start, host_end): the whole gap for the others.
    host_end, from_graph = host_part_ends(trace, busy, late)
    ahead_lengths = ge - host_end
    queued_lengths = np.where(from_graph, ahead_lengths, 0)
    launched_lengths = ahead_lengths - queued_lengths
    split_at = np.flatnonzero(host_end > gs) if bool(ahead_lengths.any()) else None
    if split_at is None:
        split = split_gaps(gs, ge, rows, threads, (busy.busy_starts, busy.busy_ends), top)
        top_rows = np.arange(top.size)
        in_sync_idle = int(lengths[split.starts_in_sync].sum())
    else:
        kept_top = host_end[top] > gs[top]
        split = split_gaps(
            gs[split_at],
            host_end[split_at],
            rows,
            threads,
            (busy.busy_starts, busy.busy_ends),
            np.searchsorted(split_at, top[kept_top]),
        )
        top_rows = np.cumsum(kept_top) - 1
        top_rows[~kept_top] = -1
        in_sync_idle = int(lengths[split_at[split.starts_in_sync]].sum())
    # The gaps' `nothing` parts, which the diagnosis reads: kept (few intervals), not the threads' whole activity.
    memo(trace, _unexplained_key(busy.device), lambda: split.unexplained)
    queued, queued_ns = queued_lengths > 0, int(queued_lengths.sum())
    launched_ns = int(launched_lengths.sum())
    totals = {c: int(split.totals[i]) for i, c in enumerate(CAUSES)}
    totals[LAUNCH] += launched_ns
    return {
        "device": busy.device,
        "idle_ns": int(lengths.sum()),
        "gap_count": int(lengths.size),
        "feeding_threads": [
            [int(p), int(t)]
            for p, t in zip(rows.threads.pid[threads], rows.threads.tid[threads], strict=True)
        ][:64],
        "feeding_thread_count": int(threads.size),
        "feeding_threads_from": source,
        "by_cause": {**totals, QUEUED: queued_ns},
        "sync_copy_ns": split.sync_copy_ns,
        "after_sync": {"count": int(split.starts_in_sync.sum()), "idle_ns": in_sync_idle},
        "late_launch": {"count": int(late.sum()), "idle_ns": int(lengths[late].sum())},
        "queued": {"count": int(queued.sum()), "idle_ns": queued_ns},
        # the part of by_cause.launch the GPU idled with its next op (launched one by one) already handed over
        "queued_launch": {"count": int(np.count_nonzero(launched_lengths)), "idle_ns": launched_ns},
        "largest": [
            {
                "start_ns": int(gs[i]),
                "duration_ns": int(lengths[i]),
                "by_cause": _gap_by_cause(
                    split.chosen, int(top_rows[k]), int(queued_lengths[i]), int(launched_lengths[i])
                ),
            }
            for k, i in enumerate(top)
        ],
    }


def _gap_by_cause(chosen: np.ndarray, row: int, queued: int, launched: int) -> dict[str, int]:
    """One of the largest gaps' split: its host part's row of the host split (row -1: it has none), its `queued`
    part, and its part before an op launched one by one the GPU already had (counted as `launch`)."""
    host = {c: (int(chosen[row, j]) if row >= 0 else 0) for j, c in enumerate(CAUSES)}
    host[LAUNCH] += launched
    return {**host, QUEUED: queued}


def thread_row_mask(trace: Trace, threads: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """Boolean per event row: the row is on one of the given host-row threads (codes from ``feeding_threads``).
    With ``among`` (event rows), only those rows are tested (the others are False): the few one-time rows, not
    every row of the trace."""
    rows = host_rows(trace)
    cols = event_columns(trace)
    keys = thread_key(rows.threads.pid[threads], rows.threads.tid[threads])
    if among is None:
        return np.isin(thread_key(cols.pid, cols.tid), keys)
    out = np.zeros(cols.pid.size, bool)
    out[among[np.isin(thread_key(cols.pid[among], cols.tid[among]), keys)]] = True
    return out


def _unexplained_key(device: int) -> str:
    return f"unexplained_intervals/{device}"


def unexplained_intervals(trace: Trace, busy: DeviceBusy) -> tuple[np.ndarray, np.ndarray]:
    """The parts of a device's gaps that no host activity of its feeding threads covers (`nothing`); kept by
    :func:`device_attribution`, which has that activity at hand."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        rows = host_rows(trace)
        threads, _ = feeding_threads(trace, busy.device)
        chosen = np.zeros(len(rows.threads), bool)
        chosen[threads] = True
        mine = chosen[rows.thread]
        activity = intervals.merge(rows.starts(mine), rows.ends(mine))
        # the gaps' host parts (their rest, the GPU's queue, is no host activity's)
        host_end, _ = host_part_ends(trace, busy, _late_launch(trace, busy))
        kept = host_end > busy.gap_starts
        return intervals.subtract(busy.gap_starts[kept], host_end[kept], *activity)

    return memo(trace, _unexplained_key(busy.device), compute)


def gap_attribution(trace: Trace) -> dict[str, Any]:
    devices = [device_attribution(trace, b) for b in device_busy(trace).values()]
    totals = {c: sum(d["by_cause"][c] for d in devices) for c in IDLE_CAUSES}
    gpus = busy_gpu_equivalents(device_busy(trace)) if devices else 0.0  # GPU-time weighted per GPU
    return {
        "priority": list(IDLE_CAUSES),
        "devices": devices,
        "total_by_cause": totals,
        "mean_by_cause": {c: (totals[c] / gpus if gpus else 0.0) for c in IDLE_CAUSES},
        "sync_copy_ns": sum(d["sync_copy_ns"] for d in devices),
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    from .feeding_names import feeding_name_sums  # (a module of its own that reads this one's host rows)

    found = gap_attribution(trace)
    feeding_name_sums(trace)  # (while the host rows are held: the diagnosis reads it)
    return found
