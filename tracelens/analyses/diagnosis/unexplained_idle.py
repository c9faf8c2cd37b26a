"""unexplained_idle: GPU idle time that no host activity of the feeding threads covers (``nothing``).

lost_ns = device-mean of ``attribution.devices[].by_cause.nothing``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import intervals
from ...replay.engine import native_solver
from ...trace import ALL_KINDS, ANNOTATION, CPU_OP, DRIVER, OSRT, OVERHEAD, PYTHON, RUNTIME, Trace
from ...units import fmt_ns, fmt_pct
from ...values import distinct
from .. import ops
from ..attribution import unexplained_intervals
from ..coded import CodedInts
from ..columns import EventColumns, device_busy, event_columns
from ..derived import memo, starts_ascending
from ..kinds import kind_mask
from ..label_sums import Summed, summed_by_row_key, top_by_row_key
from ..names import NOTHING, rows_named
from .cause import TOP_NAMES, Cause, Context, Evidence
from .wording import feeding, gpu, mean_note, quote, worst

NAME = "unexplained_idle"
# The idle is lost on other ranks when calls waiting for other processes cover at least half of it.
RANK_WAIT_SHARE = 0.5
HOST_CHUNK = 1 << 22  # host rows summed per chunk: tens of millions on a training export

# Host names that wait for other processes: MPI calls (nsys MPI tracing), collective ops and NCCL calls.
RANK_WAIT_PATTERN = re.compile(
    r"^MPI_|^(nccl|rccl)[A-Z]|^nccl:|c10d::|ProcessGroup|^gloo:|RemoteCall|CollectiveReduce"
)
# Each alternative of RANK_WAIT_PATTERN contains one of these: names without them are not tested further.
_RANK_WAIT_HINTS = ("MPI_", "ccl", "c10d::", "ProcessGroup", "gloo:", "RemoteCall", "CollectiveReduce")
ACTIVITY_KINDS = (RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION, OSRT, OVERHEAD)

FIXES = {
    "no_api": {
        "pytorch": "The trace records no CUDA/HIP API call, so nothing shows what the host did while the GPU "
        "idled: record the host side (torch.profiler with ProfilerActivity.CPU beside CUDA, or nsys -t "
        "cuda,nvtx,osrt), then profile again.",
        # A JAX/TF profile without host events was recorded with host tracing off: its own profiler records it.
        "tensorflow": "The trace records no CUDA/HIP API call, so nothing shows what the host did while the GPU "
        "idled: record the host side (tf.profiler.experimental.ProfilerOptions(host_tracer_level=2), the "
        "default; 0 records no host activity), then profile again.",
        "jax": "The trace records no CUDA/HIP API call, so nothing shows what the host did while the GPU idled: "
        "record the host side (jax.profiler.ProfileOptions with host_tracer_level 1 or more; 0 records no host "
        "activity), then profile again.",
        "default": "The trace records no CUDA/HIP API call, so nothing shows what the host did while the GPU "
        "idled: record the host side (nsys -t cuda,nvtx,osrt: CUDA API tracing on), then profile again.",
    },
    "ranks": {
        "default": "The GPU idles while the host waits for other processes (MPI/collective calls): the time is "
        "lost elsewhere; profile the other ranks (the slowest one sets the pace) and overlap "
        "communication with compute.",
    },
    "untraced": {
        "pytorch": "The trace does not show what the host did while the GPU idled: record more of it, e.g. "
        "torch.profiler(with_stack=True) with record_function ranges around data loading and logging, "
        "or nsys -t cuda,nvtx,osrt --sample=cpu --python-sampling=true; check for other processes "
        "sharing the GPU or the CPU.",
        "tensorflow": "The trace does not show what the host did while the GPU idled: enable host tracing "
        "(tf.profiler.experimental.ProfilerOptions(host_tracer_level=3, python_tracer_level=1)); "
        "check multi-worker peers and input workers.",
        "jax": "The trace does not show what the host did while the GPU idled: add jax.profiler.TraceAnnotation "
        "ranges, check other hosts in multi-host runs.",
        "default": "The trace does not show what the host did while the GPU idled: trace OS runtime calls and "
        "sample the CPU (nsys -t cuda,nvtx,osrt --sample=cpu), add NVTX ranges around host work.",
    },
}


def is_rank_wait(name: str) -> bool:
    return any(hint in name for hint in _RANK_WAIT_HINTS) and bool(RANK_WAIT_PATTERN.search(name))


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    return int(a["by_cause"].get(NOTHING, 0)) if a else 0


def evidence(ctx: Context) -> Evidence:
    trace = ctx.trace
    cols = event_columns(trace)
    idle = ctx.idle(NOTHING)
    activity = host_activity(trace)
    top = [
        {
            "name": str(cols.names[name]),
            "kind": ALL_KINDS[kind],
            "tid": int(tid),
            "overlap_ns": int(round(overlap / ctx.n_eff)),
        }
        for name, kind, tid, overlap in activity.top
    ]
    feeding = {a["feeding_threads_from"] for a in ctx.attribution.values()}
    rank_wait_ns = int(round(activity.rank_wait / ctx.n_eff))
    ev: Evidence = {
        "idle_by_device": idle,
        "share_of_idle": ctx.mean(idle) / ctx.idle_total() if ctx.idle_total() else None,
        "top_activity": top,
        "rank_wait_ns": rank_wait_ns,
        "profiler_overhead_ns": int(round(activity.profiler_overhead / ctx.n_eff)),
        "host_tracing": dict(activity.host_tracing),
        "feeding_threads_from": sorted(feeding),
        "processes": activity.processes,
        "world_size": trace.metadata.world_size,
        "long_gaps": ops.diagnosis_ops(trace).gap_ops,  # where in the code the longest idle gaps fall
    }
    lost = ctx.lost(NAME)
    if lost > 0 and rank_wait_ns >= RANK_WAIT_SHARE * lost:
        ev["remedy"] = "ranks"
    else:  # no launching thread at all (a GPU-only export): record the host side before anything else
        ev["remedy"] = "untraced" if activity.host_tracing["api_calls"] else "no_api"
    return ev


@dataclass(frozen=True)
class HostActivity:
    """What the host did while the GPUs idled unexplained, from the trace alone (no section): the evidence's
    heavy part, computed once per trace (:func:`host_activity`). ``top``: (name code, kind code, tid, overlap summed
    over the devices) of the TOP_NAMES host rows' (name, kind, thread) with the most overlap; ``rank_wait`` and
    ``profiler_overhead``: the unexplained idle, summed over the devices, that rank waits and profiler overhead
    cover; ``processes``: the host rows' distinct pids; ``host_tracing``: which host kinds the trace records."""

    top: tuple[tuple[Any, Any, Any, Any], ...]
    rank_wait: int
    profiler_overhead: int
    processes: int
    host_tracing: dict[str, bool]


def host_activity(trace: Trace) -> HostActivity:
    """:class:`HostActivity` of the trace, computed once: analyze finds it ahead of the diagnosis, on a core the
    sections leave idle (``diagnosis.prepare``)."""
    return memo(trace, "unexplained_activity", lambda: _host_activity(trace))


def _host_activity(trace: Trace) -> HostActivity:
    cols = event_columns(trace)
    busy = device_busy(trace)
    # The host rows as a mask, read a chunk of rows at a time below: their positions and names gathered whole
    # held ~0.5 GB at once for the 34M host rows of a training export (the diagnosis's peak).
    host_mask = kind_mask(cols.kind, ACTIVITY_KINDS)
    host_mask &= cols.tid >= 0
    host_mask &= cols.name >= 0
    # the names that wait for other ranks first (none, on most traces): the table's names tested only if some
    is_wait_name = np.fromiter((is_rank_wait(str(n)) for n in cols.names), bool, len(cols.names))
    if is_wait_name.any():
        # the rows of those names, by the names' table already tested (no second pass to find the names in use)
        named = rows_named(cols.name, np.append(is_wait_name, False))
        assert named is not None  # some name is a wait
        named &= host_mask
        waits = np.flatnonzero(named)
        del named
    else:
        waits = np.zeros(0, np.int64)
    overhead = np.flatnonzero(host_mask & (cols.kind == ALL_KINDS.index(OVERHEAD)))
    rank_wait = profiler_overhead = 0
    unexplained = [unexplained_intervals(trace, b) for b in busy.values()]
    wait_union = intervals.merge(cols.start[waits], cols.end[waits])  # the same for every device
    overhead_union = intervals.merge(cols.start[overhead], cols.end[overhead])
    for us, ue in unexplained:  # a loop over devices
        rank_wait += int(intervals.overlap_with_union(us, ue, *wait_union).sum())
        profiler_overhead += int(intervals.overlap_with_union(us, ue, *overhead_union).sum())
    partials: list[Summed] = []
    # A row's overlap summed over the devices' unexplained intervals, for the rows that reach into their union
    # (the first union interval ending after the row's start begins before its end): a few percent of the host
    # rows.
    every_start = np.concatenate([us for us, _ in unexplained]) if unexplained else np.zeros(0, np.int64)
    every_end = np.concatenate([ue for _, ue in unexplained]) if unexplained else np.zeros(0, np.int64)
    union_start, union_end = intervals.merge(every_start, every_end)
    ascending = starts_ascending(trace, cols.start)
    tables = _covered_tables(unexplained)
    for mine in _reaching_rows(cols, host_mask, union_start, union_end, ascending):
        overlap = _summed_overlap(cols.start[mine], cols.end[mine], tables)
        seen = overlap > 0
        mine = mine[seen]
        partials.append(summed_by_row_key(cols.name[mine], cols.kind[mine], cols.tid[mine], overlap[seen]))
    top = top_by_row_key(partials, TOP_NAMES)
    processes = _process_count(cols.pid, host_mask)
    return HostActivity(
        top=top,
        rank_wait=rank_wait,
        profiler_overhead=profiler_overhead,
        processes=processes,
        host_tracing={
            "api_calls": _has_kind(cols, RUNTIME, DRIVER),
            "framework_ops": _has_kind(cols, CPU_OP),
            "python": _has_kind(cols, PYTHON),
            "os_runtime": _has_kind(cols, OSRT),
        },
    )


# Up to this many processes are checked by a pass each; beyond, the pids are hashed.
FEW_PROCESSES = 16
PID_SAMPLE = 1 << 16  # about this many rows, evenly spaced, name the candidate processes


def _process_count(pid: np.ndarray | CodedInts, host_mask: np.ndarray) -> int:
    """How many distinct pids (>= 0) the rows where ``host_mask`` is set carry. A trace has a few processes: the
    pids of evenly spaced rows name them, and a pass per candidate confirms that no host row has another (two
    comparisons a candidate instead of gathering and hashing the pids of tens of millions of host rows); where
    one has, or beyond FEW_PROCESSES candidates, the host rows' pids are hashed a chunk at a time. A column held as
    codes (:class:`~tracelens.analyses.coded.CodedInts`) whose table holds no other pid needs no pass at all."""
    step = max(1, pid.size // PID_SAMPLE)
    sample = pid[::step][host_mask[::step]]
    candidates = distinct(sample[sample >= 0])
    if isinstance(pid, CodedInts) and not bool(((pid.table >= 0) & ~np.isin(pid.table, candidates)).any()):
        # held as codes (an Nsight export's threads): no code's pid is a process the sample missed, so no row's is
        # (each candidate is some host row's pid): no pass over the rows
        return int(candidates.size)
    if candidates.size <= FEW_PROCESSES and only_pids(pid, host_mask, candidates):
        return int(candidates.size)  # each candidate is some host row's pid
    # a hash of the few pids of each chunk, not a sort of every host row
    pids = [
        distinct(pid[lo + np.flatnonzero(host_mask[lo : lo + HOST_CHUNK])])
        for lo in range(0, host_mask.size, HOST_CHUNK)
    ]
    processes = distinct(np.concatenate(pids)) if pids else np.zeros(0, np.int64)
    return int((processes >= 0).sum())


# Rows compared per block in only_pids: its masks stay in the CPU's cache (no table-long temporaries).
PID_BLOCK = 1 << 16


def only_pids(pid: np.ndarray | CodedInts, host_mask: np.ndarray, candidates: np.ndarray) -> bool:
    """Whether every row where ``host_mask`` is set has a pid < 0 or among ``candidates`` (a few): compared a block
    of rows at a time into two reused block-sized masks, stopping at the first block with another pid (a column
    held as codes: compared whole, each comparison on its table)."""
    if isinstance(pid, CodedInts):
        other = host_mask & (pid >= 0)  # the host rows whose pid is none of the candidates
        for candidate in candidates:  # a loop over a few processes
            other &= pid != candidate
        return not other.any()
    other = np.empty(
        min(PID_BLOCK, pid.size), bool
    )  # the block's host rows whose pid is none of the candidates
    differs = np.empty_like(other)
    for lo in range(0, pid.size, PID_BLOCK):  # a loop over blocks of rows
        block = pid[lo : lo + PID_BLOCK]
        here, scratch = other[: block.size], differs[: block.size]
        np.greater_equal(block, 0, out=here)
        here &= host_mask[lo : lo + PID_BLOCK]
        for candidate in candidates:  # a loop over a few processes
            np.not_equal(block, candidate, out=scratch)
            here &= scratch
        if here.any():
            return False
    return True


def _has_kind(cols: EventColumns, *kinds: str) -> bool:
    """Whether some row has one of ``kinds``: read a chunk of rows at a time, stopping at the first found (the
    kinds a trace has show in its first rows; ``of_kind(...).any()`` builds a mask of every row)."""
    codes = [ALL_KINDS.index(k) for k in kinds]
    for lo in range(0, cols.kind.size, HOST_CHUNK):
        chunk = cols.kind[lo : lo + HOST_CHUNK]
        if any(bool((chunk == code).any()) for code in codes):
            return True
    return False


def _covered_tables(
    unions: list[tuple[np.ndarray, np.ndarray]],
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per device (a disjoint sorted union of intervals): its starts, the length of its first k intervals (k = 0..m)
    and the end of the k-th (k >= 1; below every time for k = 0): built once, read by :func:`_summed_overlap` for
    every chunk of rows (``intervals.overlap_with_union`` builds them again on each call)."""
    tables = []
    for union_starts, union_ends in unions:  # a loop over devices
        covered = np.zeros(union_starts.size + 1, np.int64)
        np.cumsum(union_ends - union_starts, out=covered[1:])
        last_end = np.empty(union_ends.size + 1, np.int64)
        last_end[0] = np.iinfo(np.int64).min
        last_end[1:] = union_ends
        tables.append((np.asarray(union_starts, np.int64), covered, last_end))
    return tables


def _covered_before(table: tuple[np.ndarray, np.ndarray, np.ndarray], times: np.ndarray) -> np.ndarray:
    """The length of a device's union before each time: its intervals starting at or before it, less the part of
    the last of them at or after it."""
    union_starts, covered, last_end = table
    at = intervals.search_sorted(union_starts, times, side="right")
    out = covered[at]
    above = np.maximum(last_end[at], times)  # never below the time: no overflow from the sentinel
    above -= times
    out -= above
    return out


def _summed_overlap(
    starts: np.ndarray, ends: np.ndarray, tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> np.ndarray:
    """Each interval's overlap with every device's unexplained intervals, summed over the devices
    (``intervals.summed_overlap``; negative where it ends before it starts, as there): each device's union length
    read at both ends (``tables``: :func:`_covered_tables`), with no table of every device's edges sorted
    together (intervals.Coverage: 0.12 s to build at x1512)."""
    out = np.zeros(starts.size, np.int64)
    for table in tables:  # a loop over devices
        out += _covered_before(table, ends)
        out -= _covered_before(table, starts)
    return out


def _reaching_rows(
    cols: EventColumns,
    host_mask: np.ndarray,
    union_start: np.ndarray,
    union_end: np.ndarray,
    ascending: bool | None = None,
) -> Iterator[np.ndarray]:
    """The host rows (where ``host_mask`` is set) that reach into a union of intervals (the
    first union interval ending after a row's start begins before its end), in chunks, ascending: a few percent
    of the host rows. ``ascending``: whether the rows are in start order (None: checked here)."""
    next_start = np.append(union_start, np.iinfo(np.int64).max)
    starts = cols.start
    if ascending is None:
        ascending = bool((starts[1:] >= starts[:-1]).all())
    if starts.size and ascending and (solver := _native_reaching(cols, host_mask, union_start, union_end)):
        out = np.empty(min(starts.size, HOST_CHUNK), np.int64)
        for lo in range(0, starts.size, HOST_CHUNK):  # chunks of rows, as below
            hi = lo + HOST_CHUNK
            count = solver.reaching_rows(
                starts[lo:hi], cols.end[lo:hi], host_mask[lo:hi].view(np.uint8), union_start, union_end, out
            )
            if count < 0:  # (the rows ascend, checked: not reached)
                raise ValueError("unexplained_idle: the rows' starts do not ascend")
            yield lo + out[:count]
        return
    if starts.size and ascending:
        # rows in start order (the event table is): per row, the union intervals ending at or before its start are
        # counted by placing the union's ends among the rows' starts (a binary search per union interval, a
        # running count per row), not by a binary search per host row; no gather of the host rows' times
        for lo in range(0, starts.size, HOST_CHUNK):  # chunks of rows: tens of millions on a training export
            start, end = starts[lo : lo + HOST_CHUNK], cols.end[lo : lo + HOST_CHUNK]
            first = int(np.searchsorted(union_end, start[0], side="right"))
            last = int(np.searchsorted(union_end, start[-1], side="right"))
            # the union's ends ascend: one walk through both (intervals.search_sorted), not a binary search each
            placed = intervals.search_sorted(start, union_end[first:last], side="left")
            # per row, the start of the first union interval ending after its start: a step in row order, the
            # next one's from each union end placed among the rows (the rows before the first end: ``first``)
            reach = np.repeat(next_start[first : last + 1], np.diff(placed, prepend=0, append=start.size))
            yield lo + np.flatnonzero(host_mask[lo : lo + HOST_CHUNK] & (reach < end))
        return
    for lo in range(0, host_mask.size, HOST_CHUNK):  # chunks of rows
        mine = lo + np.flatnonzero(host_mask[lo : lo + HOST_CHUNK])
        ends = cols.end[mine]
        yield mine[next_start[np.searchsorted(union_end, cols.start[mine], side="right")] < ends]


def _native_reaching(
    cols: EventColumns, host_mask: np.ndarray, union_start: np.ndarray, union_end: np.ndarray
) -> Any:
    """The compiled helper whose ``reaching_rows`` walks the rows and the union together (one pass, the same rows
    as the numpy placing below: ~10 ms less on the 406 MB tile), where it is built and the columns are the
    arrays it reads; else None."""
    solver = native_solver()
    arrays = (cols.start, cols.end, union_start, union_end)
    if (
        solver is None
        or not all(isinstance(a, np.ndarray) and a.dtype == np.int64 and a.flags.c_contiguous for a in arrays)
        or host_mask.dtype != np.bool_
        or not host_mask.flags.c_contiguous
    ):
        return None
    return solver


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    by_device = ev.get("idle_by_device") or {}
    device, idle = worst(by_device)
    text = f"{gpu(device, len(by_device))} was idle {fmt_ns(idle)}"
    if ev.get("share_of_idle") is not None and len(by_device) == 1:
        text += f" ({fmt_pct(ev['share_of_idle'])} of its idle time)"
    if (ev.get("host_tracing") or {}).get("api_calls", True):
        text += f" with no recorded activity on {feeding(ev.get('feeding_threads_from'))}"
    else:
        text += " and the trace records no CUDA/HIP API call: no launching thread to look at"
    if ev.get("rank_wait_ns"):
        text += f"; the host was waiting on other processes (MPI or collective calls) for {fmt_ns(ev['rank_wait_ns'])} of it"
    top = ev.get("top_activity") or []
    if top:
        text += (
            f"; in that time the trace shows {quote(top[0]['name'])} ({top[0]['kind']}, thread {top[0]['tid']}, "
            f"{fmt_ns(top[0]['overlap_ns'])})"
        )
    else:
        text += "; no host thread recorded anything in that time"
    tracing = ev.get("host_tracing") or {}
    missing = [
        what
        for key, what in (("framework_ops", "framework ops"), ("os_runtime", "OS-runtime calls"))
        if not tracing.get(key)
    ]
    if missing:
        text += f"; {' and '.join(missing)} were not traced"
    if (ev.get("world_size") or 1) > 1:
        text += f"; this is one of {ev['world_size']} ranks"
    return text + mean_note(cause, by_device) + "."


# Added to the jax "untraced" fix where the trace records no Python call (a profile that has them was told to turn on
# what was on).
JAX_PYTHON_TRACER = " Enable the Python tracer (python_tracer_level in jax.profiler.ProfileOptions)."


def adjust_fix(ev: Evidence, text: str, framework: str) -> str:
    if (
        framework == "jax"
        and ev.get("remedy") == "untraced"
        and not (ev.get("host_tracing") or {}).get("python")
    ):
        return text + JAX_PYTHON_TRACER
    return text


CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost, adjust_fix=adjust_fix)
