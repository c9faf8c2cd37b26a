"""Can this trace answer "why is my GPU idle?": ``diagnosis.completeness`` (docs/analyses.md, "Trace completeness").

Each problem is a way a recording falls short, with its counts (``evidence``) and how to record properly for
the trace's profiler (``fix``). A *blocking* problem means the GPU side is missing: the diagnosis cannot say
why the GPU idles, so its primary cause is ``incomplete_trace`` and ``diff --fail-on-regression`` fails.

    no_gpu_activity                 no kernel, copy or memset, and no call that would launch one (blocking)
    launches_without_gpu_activity   launch calls, and no GPU op at all (blocking), or >= LOST_SHARE of them
                                    start after the last GPU op ended (blocking from BLOCKING_SHARE on)
    launches_before_gpu_activity    >= LOST_SHARE of the launch calls start before the first GPU op and match none
                                    by correlation id: the GPU side starts late (blocking from BLOCKING_SHARE on)
    kernel_launches_without_kernels kernel launch calls and GPU ops, none of them a kernel: the kernel side is lost
                                    (blocking)
    gpu_ops_without_device          >= BLOCKING_SHARE of the GPU ops name no GPU (their device id missing or no GPU
                                    number): they are in the trace but on no GPU, so no per-GPU figure holds them
                                    (blocking)
    gpu_ops_without_duration        >= BLOCKING_SHARE of the GPU ops are zero-length (a missing or negative `dur`, a
                                    lost end timestamp): their busy time is lost (blocking)
    gpu_clock_skew                  > CLOCK_SKEW_SHARE of the matched GPU ops start before their launch call began:
                                    the GPU's clock is not the host's (blocking; the launch-timing checks skipped)
    gpu_activity_without_launches   GPU ops and no host API call at all, or >= UNMATCHED_SHARE of the GPU ops
                                    with a correlation id match no host API call
    missing_correlation_ids         >= MISSING_ID_SHARE of the GPU ops (or of the launch calls) carry no
                                    correlation id
    dropped_events                  the profiler's own log says it dropped or lost records
    profiler_overhead               profiler-overhead rows cover >= OVERHEAD_SHARE of the analysed window, or the
                                    trace records at least one Python call per GPU op (a Python tracer)
"""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np

from .. import intervals
from ..event_names import strip_api_suffix
from ..trace import (
    ALL_KINDS,
    DRIVER,
    GPU_ACTIVITY_KINDS,
    HOST_KINDS,
    KERNEL,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    Trace,
)
from ..values import sorted_distinct
from .columns import EventColumns, device_busy, event_columns
from .derived import memo, starts_ascending
from .kinds import kind_mask
from .launch import call_ids_unique, launch_pairs
from .memcpy import api_correlation
from .migrations import has_migrations, migration_mask
from .names import code_mask, is_kernel_launch

LOST_SHARE = 0.10  # launch calls after the GPU side ends: reported from this share of the launch calls
BLOCKING_SHARE = 0.5  # ... and from this share the GPU side counts as missing
UNMATCHED_SHARE = 0.5
MISSING_ID_SHARE = 0.10
OVERHEAD_SHARE = 0.05
PYTHON_PER_GPU_OP = 1.0

KINDS = (
    "no_gpu_activity",
    "launches_without_gpu_activity",
    "launches_before_gpu_activity",
    "kernel_launches_without_kernels",
    "gpu_ops_without_device",
    "gpu_ops_without_duration",
    "gpu_clock_skew",
    "gpu_activity_without_launches",
    "missing_correlation_ids",
    "dropped_events",
    "profiler_overhead",
)

# Calls that enqueue GPU work: kernel and graph launches (names.KERNEL_LAUNCH_PATTERN), copies and memsets.
COPY_OR_SET_CALL = re.compile(r"^(cuda|hip)(Memcpy|Memset)\w*$|^cu(Memcpy|Memset)\w*$")
# Overhead rows that are CUDA's own work, not the profiler's (nsys CUPTI_ACTIVITY_KIND_OVERHEAD kinds).
CUDA_OWN_OVERHEAD = re.compile(
    r"(?i)module load|function load|command buffer full|jit compil|driver compiler"
)


def _is_launch_call(name: str) -> bool:
    return is_kernel_launch(name) or bool(COPY_OR_SET_CALL.match(strip_api_suffix(name)))


def _is_profiler_overhead(name: str) -> bool:
    return not CUDA_OWN_OVERHEAD.search(name)


# ---------------------------------------------------------------------------------------------- fixes
# Keyed by the profiler that wrote the trace (``recorder``): how to record what is missing.

GPU_SIDE_FIX = {
    "pytorch": "Record the GPU side: torch.profiler.profile(activities=[ProfilerActivity.CPU, "
    "ProfilerActivity.CUDA]) (ProfilerActivity.XPU/HPU elsewhere), started after CUDA is initialised "
    "(model on the GPU, one warm-up step) so CUPTI attaches to the context; no other CUPTI-based "
    "profiler (nsys, a second torch.profiler) attached to the process; and check the profiler's "
    "warnings for CUPTI errors or a hit GPU buffer limit.",
    "nsys": "Record the GPU side: nsys profile -t cuda,nvtx (CUDA tracing on), with --capture-range="
    "cudaProfilerApi only when cudaProfilerStart() runs after the CUDA context exists; export with "
    "nsys export --type sqlite so the CUPTI_ACTIVITY_KIND_KERNEL/MEMCPY/MEMSET tables are written.",
    "tensorflow": "Record the GPU side: a GPU build with CUPTI found (libcupti on LD_LIBRARY_PATH) and "
    "tf.profiler.experimental.ProfilerOptions(device_tracer_level=1).",
    "jax": "Record the GPU side: a GPU jaxlib with CUPTI found (libcupti on LD_LIBRARY_PATH), and run the "
    "jitted work inside jax.profiler.trace / start_trace.",
    "default": "Record the GPU side: enable CUDA/HIP activity tracing (CUPTI or roctracer) in the profiler, "
    "started after the GPU context exists.",
}
CPU_ONLY_NOTE = (
    " If the program ran on the CPU only, there is no GPU to diagnose: the host-side findings still hold."
)
HOST_SIDE_FIX = {
    "pytorch": "Record the host side with the GPU: activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
    "over whole steps (schedule(...) with prof.step()) so each GPU op's launch is in the window.",
    "nsys": "Trace the CUDA API: nsys profile -t cuda,nvtx; a window cut from a longer export keeps GPU work "
    "launched before it: export the whole capture, or capture a range (--capture-range).",
    "tensorflow": "Record host activity: ProfilerOptions(host_tracer_level=2) over whole steps.",
    "jax": "Record host activity over whole steps (jax.profiler.trace around complete steps).",
    "default": "Record the CUDA/HIP API calls that launch the GPU work, over whole steps.",
}
CORRELATION_FIX = {
    "pytorch": "Analyse the profiler's own output: traces merged or post-processed by other tools may lose the "
    "`correlation` arg that ties a kernel to its launch; a recent PyTorch writes it on every GPU op.",
    "nsys": "Export with a recent nsys (nsys export --type sqlite): its CUPTI tables carry correlationId.",
    "default": "Use the profiler's own output: the correlation id ties each GPU op to its launch call.",
}
DROPPED_FIX = {
    "pytorch": "The profiler lost records: profile fewer steps (schedule(active=N) smaller, or one "
    "torch.profiler.profile per few steps), or raise Kineto's GPU buffer limit "
    "(ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB in a KINETO_CONFIG file).",
    "nsys": "nsys lost events: capture a shorter range (--capture-range=cudaProfilerApi or nvtx, --duration) and "
    "trace fewer sources (-t, no --sample/--backtrace).",
    "default": "The profiler lost records: profile a shorter window, fewer steps.",
}
OVERHEAD_FIX = {
    "pytorch": "The profiler's own work inflates host time: with_stack=True (and with_modules) record every "
    "Python call; confirm host-side findings (launch overhead, host code) on a profile without them, "
    "and skip the first profiled steps (schedule(wait=1, warmup=1, ...)) where CUPTI allocates its "
    "buffers.",
    "nsys": "nsys's own overhead (PROFILER_OVERHEAD, CUPTI buffer flushes) falls in the window: trace fewer "
    "sources (no --sample/--backtrace, drop -t osrt) or capture a later range.",
    "tensorflow": "The profiler's own work inflates host time: python_tracer_level=0 and host_tracer_level=1 "
    "in ProfilerOptions to confirm host-side findings.",
    "jax": "The Python tracer inflates host time: confirm host-side findings on a profile without it "
    "(jax.profiler.ProfileOptions with python_tracer_level=0).",
    "default": "The profiler's own work inflates host time: confirm host-side findings with lighter tracing.",
}


DURATION_FIX = {
    "pytorch": "The GPU ops' durations are missing or negative (lost end timestamps; a trace rewritten by another "
    "tool may drop `dur`): analyse the profiler's own output, or record the GPU side again with a current torch "
    "(torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]); Kineto guards negative "
    "durations since pytorch/kineto#646).",
    "default": "The GPU ops' durations are missing or negative (lost end timestamps): analyse the profiler's own "
    "output, or record again.",
}


DEVICE_FIX = {
    "pytorch": "The GPU ops are recorded, but their device ids are missing or invalid (Kineto's args.device, else "
    "the event's pid, is no GPU number such as 0 or 1): this is no lost GPU side, and recording again the same way "
    "will not fix it. Analyse the profiler's own output where a tool rewrote the file (one that drops or renumbers "
    "args.device); else give each GPU event its GPU's index in args.device (a copy of the file) and analyse that.",
    "default": "The GPU ops are recorded, but their device ids are missing or invalid (no GPU number): this is no "
    "lost GPU side. Analyse the profiler's own output where a tool rewrote the file; else give each GPU op its GPU's "
    "index (a copy of the file) and analyse that.",
}


CLOCK_FIX = {
    "pytorch": "The GPU's timestamps are not on the host's clock (GPU ops start before their launch calls): record "
    "again with a current torch (torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]); "
    "Kineto aligns the CUPTI and roctracer clocks to the host's, pytorch/kineto#991, #1082), and analyse the "
    "profiler's own output, not a trace whose GPU rows another tool shifted.",
    "default": "The GPU's timestamps are not on the host's clock (GPU ops start before their launch calls): update "
    "the profiler, and analyse its own output.",
}
CLOCK_SKEW_SHARE = 0.5  # of the matched GPU ops: more than this start before their launch call began


def _calls_of(
    cols: EventColumns, gpu: np.ndarray, gpu_ids: np.ndarray, api_mask: np.ndarray, api_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(matched, op start, call start) of the GPU rows ``gpu``: each matched to the earliest API call with its id."""
    calls = np.flatnonzero(api_mask)[api_ids >= 0]
    ids, starts = api_ids[api_ids >= 0], cols.start[calls]
    order = np.lexsort((starts, ids))
    ids, starts = ids[order], starts[order]
    first = np.ones(ids.size, bool)
    first[1:] = ids[1:] != ids[:-1]
    ids, starts = ids[first], starts[first]
    at = np.minimum(np.searchsorted(ids, gpu_ids), max(ids.size - 1, 0))
    matched = (gpu_ids >= 0) & (ids[at] == gpu_ids) if ids.size else np.zeros(gpu_ids.size, bool)
    call_start = starts[at] if ids.size else np.zeros(gpu_ids.size, np.int64)
    return matched, cols.start[gpu], call_start


def _clock_skew(matched: np.ndarray, start: np.ndarray, call_start: np.ndarray) -> dict[str, Any] | None:
    """Evidence of a GPU clock off the host's: more than CLOCK_SKEW_SHARE of the matched GPU ops (``matched``,
    their ``start`` and their launch call's ``call_start``) start before their call began (a call's own op cannot);
    None otherwise."""
    count = int(np.count_nonzero(matched))
    if count == 0:
        return None
    ahead = (call_start - start)[matched]
    early = int(np.count_nonzero(ahead > 0))
    if early <= CLOCK_SKEW_SHARE * count:
        return None
    return {
        "matched_gpu_ops": count,
        "before_their_call": early,
        "share": early / count,
        "median_ahead_ns": int(np.median(ahead[ahead > 0])),
    }


def recorder(trace: Trace) -> str:
    """Which profiler's instructions apply: ``pytorch``, ``nsys``, ``tensorflow``, ``jax`` or ``default``."""
    meta = trace.metadata
    # a file tracelens annotate wrote (Kineto's format) from another producer's trace: that producer's instructions
    origin = meta.extra.get("annotated_from") if isinstance(meta.extra, dict) else None
    fmt = origin.get("format") or meta.source_format if isinstance(origin, dict) else meta.source_format
    if fmt == "nsys" or "nsight" in (meta.producer or "").lower():
        return "nsys"
    if fmt == "kineto":
        return "pytorch"
    return meta.framework if meta.framework in ("pytorch", "tensorflow", "jax") else "default"


def _fix(table: dict[str, str], who: str) -> str:
    return table.get(who, table["default"])


def _problem(kind: str, blocking: bool, evidence: dict[str, Any], fix: str) -> dict[str, Any]:
    return {"kind": kind, "blocking": blocking, "evidence": evidence, "fix": fix}


def _member(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """np.isin(values, reference) by a sort and a binary search (half np.isin's time on millions of ids)."""
    if reference.size == 0:
        return np.zeros(values.size, bool)
    ref = np.sort(reference)
    at = np.minimum(np.searchsorted(ref, values), ref.size - 1)
    return ref[at] == values


# ---------------------------------------------------------------------------------------------- the judge


def judge(trace: Trace) -> dict[str, Any]:
    """``{complete, answerable, problems[]}``: ``complete`` when no problem, ``answerable`` when none blocks."""
    cols = event_columns(trace)
    who = recorder(trace)
    gpu_mask = kind_mask(cols.kind, GPU_ACTIVITY_KINDS)
    gpu_count = int(np.count_nonzero(gpu_mask))
    # where every GPU op has a device, launch_pairs' rows are these, in row order, joined to the calls by id; their
    # window and last end are then the devices' (device_busy): no GPU row gathered at all
    pairs = launch_pairs(trace) if gpu_count else None
    joined = pairs is not None and len(pairs) == gpu_count
    gpu = None if joined else np.flatnonzero(gpu_mask)
    del gpu_mask
    # The API calls as a mask and their names compressed out of it: no row positions (8.8M int64 on a training
    # export); the launch calls as a mask over the calls, counted, not compressed (two copies before)
    api_mask = cols.of_kind(RUNTIME, DRIVER)
    api_ids = api_correlation(trace)  # shared with the launch pairs (held): no rows found again
    api_names = np.compress(api_mask, cols.name)
    is_launch = code_mask(api_names, cols.names, _is_launch_call)
    launch_count = int(np.count_nonzero(is_launch))
    has_call_id = api_ids >= 0
    with_id_count = int(np.count_nonzero(is_launch & has_call_id))  # the launch calls with an id
    # A mask, not the rows, and only without GPU ops, where it is read (34M rows, 270 MB, on a training export)
    host = kind_mask(cols.kind, HOST_KINDS) if gpu_count == 0 else None
    gpu_ids = None
    if pairs is not None and joined:
        gpu_ids = pairs["correlation_id"]
    elif gpu is not None and gpu.size:
        gpu_ids = cols.at("correlation_id", gpu)
    window = _gpu_window(trace, cols, gpu) if gpu_count else None
    problems: list[dict[str, Any]] = []
    evidence: dict[str, Any]

    # GPU ops that start before the call that launched them began: impossible on one clock. Where most matched ops
    # do, the GPU's timestamps are on another clock (roctracer's static offset, pytorch/kineto#991 and #1082; a
    # corrupt CUPTI record, pytorch/pytorch#192021), and every comparison of host and GPU times is off: the
    # checks below that compare them (launches after the last GPU op, before the first) would name a lost GPU side.
    if joined and pairs is not None:
        skew = _clock_skew(pairs["matched"], pairs["start"], pairs["launch_start"])
    elif gpu is not None and gpu_ids is not None:  # (GPU ops without a device: matched here by id)
        skew = _clock_skew(*_calls_of(cols, gpu, gpu_ids, api_mask, api_ids))
    else:
        skew = None
    if skew is not None:
        problems.append(_problem("gpu_clock_skew", True, skew, _fix(CLOCK_FIX, who)))

    if gpu_count == 0 and launch_count == 0:
        evidence = {
            "host_events": int(host.sum()) if host is not None else 0,
            "api_calls": int(api_ids.size),
            "framework_ops": int(cols.of_kind("cpu_op").sum()),
            "annotations": int(cols.of_kind("annotation").sum()),
        }
        unread = trace.metadata.extra.get("unread_device_planes")
        fix = (
            f"The trace's device activity is on {', '.join(map(str, unread))}, which tracelens does not read: it "
            "analyses GPUs (CUDA/ROCm) only; the host-side findings still hold."
            if unread
            else _fix(GPU_SIDE_FIX, who) + CPU_ONLY_NOTE
        )
        problems.append(_problem("no_gpu_activity", True, evidence, fix))
    elif launch_count and skew is None:
        last_gpu_end = window[1] if window is not None else None
        after = (
            _launches_from(trace, cols, api_mask, is_launch, last_gpu_end)
            if last_gpu_end is not None
            else launch_count
        )
        share = after / launch_count
        if not with_id_count:
            unmatched = None
        elif joined and pairs is not None and call_ids_unique(trace):
            # each call's id its own: a launch call's id is some GPU op's where a matched op's launch call is it
            called = sorted_distinct(pairs["launch_row"][pairs["matched"]])
            called_launches = int(code_mask(cols.name[called], cols.names, _is_launch_call).sum())
            unmatched = with_id_count - called_launches
        else:
            assert gpu_ids is not None or gpu_count == 0
            op_ids = gpu_ids[gpu_ids >= 0] if gpu_ids is not None else np.zeros(0, np.int64)
            unmatched = int((~_member(api_ids[is_launch & has_call_id], op_ids)).sum())
        if gpu_count == 0 or share >= LOST_SHARE:
            launch = np.flatnonzero(api_mask)[is_launch]
            evidence = {
                "launch_calls": launch_count,
                "gpu_ops": gpu_count,
                "after_last_gpu_op": after,
                "share": share,
                "last_gpu_op_end_ns": last_gpu_end,
                "host_end_ns": int(cols.end[launch].max()),
                "unmatched_launch_calls": unmatched,
            }
            blocking = gpu_count == 0 or share >= BLOCKING_SHARE
            problems.append(
                _problem("launches_without_gpu_activity", blocking, evidence, _fix(GPU_SIDE_FIX, who))
            )
    kernel_calls = 0
    if gpu_count and launch_count and not _has_kind(cols.kind, ALL_KINDS.index(KERNEL)):
        # copies or memsets recorded, kernels launched and none recorded: the kernel side is lost, and a verdict
        # from the copies alone (a "100% busy" GPU) would be made on missing evidence
        kernel_calls = int(np.count_nonzero(code_mask(api_names[is_launch], cols.names, is_kernel_launch)))
    del api_names
    if window is not None and launch_count and with_id_count and not kernel_calls and skew is None:
        late = _late_start(trace, cols, api_mask, is_launch & has_call_id, api_ids, gpu_ids, window[0])
        if late is not None and late / launch_count >= LOST_SHARE:
            evidence = {
                "launch_calls": launch_count,
                "before_first_gpu_op": late,
                "share": late / launch_count,
                "first_gpu_op_start_ns": window[0],
            }
            blocking = late / launch_count >= BLOCKING_SHARE
            problems.append(
                _problem("launches_before_gpu_activity", blocking, evidence, _fix(GPU_SIDE_FIX, who))
            )
    del api_mask
    if kernel_calls:
        evidence = {"kernel_launch_calls": kernel_calls, "kernels": 0, "gpu_ops": gpu_count}
        problems.append(_problem("kernel_launches_without_kernels", True, evidence, _fix(GPU_SIDE_FIX, who)))

    if gpu_count:
        # GPU ops without a length: a missing or negative duration (read as 0) leaves no busy time, and a GPU side
        # whose ops are mostly such would read as an idle GPU, its idle blamed on the host ("host_launch_overhead
        # 99.7%" on a trace whose kernels all had negative durations). Real traces: at most 2.3% (the 2021 V100
        # trace's sub-µs memsets rounded to integer µs).
        if joined and pairs is not None:
            zero = int(np.count_nonzero(pairs["end"] <= pairs["start"]))
        else:
            assert gpu is not None
            zero = int(np.count_nonzero(cols.end[gpu] <= cols.start[gpu]))
        # Reported only from BLOCKING_SHARE: a sub-µs op of an integer-µs trace (<= 2021) is zero-length too, so
        # a smaller share is no evidence of lost timestamps.
        if zero / gpu_count >= BLOCKING_SHARE:
            evidence = {"gpu_ops": gpu_count, "zero_length": zero, "share": zero / gpu_count}
            problems.append(_problem("gpu_ops_without_duration", True, evidence, _fix(DURATION_FIX, who)))

    if gpu_count and not joined:
        # GPU ops on no GPU (a device id missing or no GPU number, read as null): recorded, yet out of every
        # per-GPU figure; where most are, the GPUs' busy time and gaps are not the trace's ("GPUs 0" and a healthy
        # "none" verdict on a trace whose 61 kernels all had args.device -1). (Joined: every GPU op has a device.)
        assert gpu is not None
        no_device = int(np.count_nonzero(cols.device[gpu] < 0))
        if no_device / gpu_count >= BLOCKING_SHARE:
            evidence = {"gpu_ops": gpu_count, "without_device": no_device, "share": no_device / gpu_count}
            problems.append(_problem("gpu_ops_without_device", True, evidence, _fix(DEVICE_FIX, who)))

    if gpu_ids is not None:
        # unified-memory migrations: GPU ops no call launches (.migrations), left out of the launch checks below
        # (gpu_ids are the GPU rows' in row order, joined or not)
        launchable = np.ones(gpu_ids.size, bool)
        if has_migrations(trace):
            rows = gpu if gpu is not None else np.flatnonzero(kind_mask(cols.kind, GPU_ACTIVITY_KINDS))
            launchable = ~migration_mask(trace, rows)
        has_id = (gpu_ids >= 0) & launchable
        with_op_id = int(np.count_nonzero(has_id))
        if pairs is not None and joined:
            unmatched_gpu = int(np.count_nonzero(has_id & ~pairs["matched"]))
        else:
            unmatched_gpu = int((~_member(gpu_ids[has_id], api_ids[has_call_id])).sum())
        unmatched_share = unmatched_gpu / with_op_id if with_op_id else None
        if api_ids.size == 0 or (unmatched_share is not None and unmatched_share >= UNMATCHED_SHARE):
            evidence = {
                "gpu_ops": gpu_count,
                "api_calls": int(api_ids.size),
                "gpu_ops_with_id": with_op_id,
                "unmatched_gpu_ops": unmatched_gpu,
                "share": unmatched_share if api_ids.size else 1.0,
            }
            problems.append(
                _problem("gpu_activity_without_launches", False, evidence, _fix(HOST_SIDE_FIX, who))
            )
        launchable_count = int(np.count_nonzero(launchable))
        missing_gpu = launchable_count - with_op_id
        missing_launch = launch_count - with_id_count
        gpu_share = missing_gpu / launchable_count if launchable_count else 0.0
        launch_share = missing_launch / launch_count if launch_count else 0.0
        if gpu_share >= MISSING_ID_SHARE or launch_share >= MISSING_ID_SHARE:
            evidence = {
                "gpu_ops": gpu_count,
                "gpu_ops_without_id": missing_gpu,
                "gpu_share": gpu_share,
                "launch_calls": launch_count,
                "launch_calls_without_id": missing_launch,
                "launch_share": launch_share,
            }
            problems.append(_problem("missing_correlation_ids", False, evidence, _fix(CORRELATION_FIX, who)))

    drops = trace.metadata.extra.get("profiler_drops")
    if isinstance(drops, dict) and drops.get("message_count"):
        evidence = {
            "dropped_records": drops.get("dropped_records"),
            "collection_stopped_early": bool(drops.get("collection_stopped_early")),
            "message_count": int(drops["message_count"]),
            "messages": list(drops.get("messages") or []),
        }
        problems.append(_problem("dropped_events", False, evidence, _fix(DROPPED_FIX, who)))

    overhead = _overhead(trace, window, host)
    python_per_op = overhead["python_events"] / max(gpu_count, 1)
    overhead["python_events_per_gpu_op"] = python_per_op
    if (overhead["share"] or 0.0) >= OVERHEAD_SHARE or (
        overhead["python_events"] and python_per_op >= PYTHON_PER_GPU_OP
    ):
        problems.append(_problem("profiler_overhead", False, overhead, _fix(OVERHEAD_FIX, who)))

    return {
        "complete": not problems,
        "answerable": not any(p["blocking"] for p in problems),
        "recorder": who,
        "problems": problems,
    }


def judged(trace: Trace) -> dict[str, Any]:
    """:func:`judge`, computed once per trace (a fresh copy each call): analyze finds it ahead of the diagnosis,
    on a core the sections leave idle (``diagnosis.prepare``)."""
    return copy.deepcopy(memo(trace, "completeness", lambda: judge(trace)))


def python_events(trace: Trace) -> int:
    """How many Python-call rows the trace has (the judge's overhead problem and host_launch_overhead read it):
    counted once per trace."""
    cols = event_columns(trace)
    return memo(trace, "python_events", lambda: int(np.count_nonzero(cols.kind == ALL_KINDS.index(PYTHON))))


def _gpu_window(trace: Trace, cols: EventColumns, gpu: np.ndarray | None) -> tuple[int, int]:
    """(first start, last end) of the GPU ops (``gpu``: their rows; None where every GPU op has a device: then the
    devices' own first start and last end, ``device_busy``, which covers exactly those rows)."""
    if gpu is None:
        busy = device_busy(trace).values()
        return min(b.first_start_ns for b in busy), max(b.last_end_ns for b in busy)
    return int(cols.start[gpu].min()), int(cols.end[gpu].max())


def _launches_from(
    trace: Trace, cols: EventColumns, api_mask: np.ndarray, is_launch: np.ndarray, time: int
) -> int:
    """How many launch calls (``is_launch`` over the API calls, ``api_mask`` over the rows) start at or after
    ``time``: in a table in start order, those after the first row starting there (a binary search, a count of the
    mask before it); else by their starts."""
    if starts_ascending(trace, cols.start):
        first_row = int(np.searchsorted(cols.start, time, side="left"))
        first_call = int(np.count_nonzero(api_mask[:first_row]))
        return int(np.count_nonzero(is_launch[first_call:]))
    launch = np.flatnonzero(api_mask)[is_launch]
    return int(np.count_nonzero(cols.start[launch] >= time))


def _has_kind(kind: np.ndarray, code: int, chunk: int = 1 << 16) -> bool:
    """Whether any row has kind ``code``: by growing chunks, so a trace whose first kernels come early (all of
    them) stops after a few thousand rows, not a pass over every row (~9 ms on 34M rows)."""
    at = 0
    while at < kind.size:
        if np.any(kind[at : at + chunk] == code):
            return True
        at += chunk
        chunk *= 4
    return False


def _late_start(
    trace: Trace,
    cols: EventColumns,
    api_mask: np.ndarray,
    with_id: np.ndarray,
    api_ids: np.ndarray,
    gpu_ids: np.ndarray | None,
    first_gpu_start: int,
) -> int | None:
    """How many launch calls (``with_id``: the launch calls with an id, over the API calls) start before
    ``first_gpu_start`` and match no GPU op by id: work launched before the GPU side was recorded. None (not
    counted) where too few launch calls start that early to matter, the usual case, or where no GPU op carries an
    id to match."""
    early = int(np.count_nonzero(with_id)) - _launches_from(trace, cols, api_mask, with_id, first_gpu_start)
    if gpu_ids is None or early < LOST_SHARE * int(np.count_nonzero(with_id)):
        return None
    op_ids = gpu_ids[gpu_ids >= 0]
    if not op_ids.size:
        return None
    starts = cols.start[np.flatnonzero(api_mask)]
    before = with_id & (starts < first_gpu_start)
    return int(np.count_nonzero(~_member(api_ids[before], op_ids)))


def _overhead(trace: Trace, window: tuple[int, int] | None, host: np.ndarray | None) -> dict[str, Any]:
    """Profiler-overhead time inside the analysed window (``window``: the GPU ops' first start and last end; None
    without GPU ops: the host span) and Python rows (``host``: the host rows' mask, given where there are no GPU
    ops)."""
    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(OVERHEAD))
    rows = rows[code_mask(cols.name[rows], cols.names, _is_profiler_overhead)]
    if window is None:
        host_rows = np.flatnonzero(host) if host is not None else np.zeros(0, np.int64)
        lo = int(cols.start[host_rows].min()) if host_rows.size else 0
        hi = int(cols.end[host_rows].max()) if host_rows.size else 0
    else:
        lo, hi = window
    starts, ends = intervals.merge(np.clip(cols.start[rows], lo, hi), np.clip(cols.end[rows], lo, hi))
    overhead_ns = int((ends - starts).sum())
    return {
        "overhead_rows": int(rows.size),
        "overhead_ns": overhead_ns,
        "window_ns": hi - lo,
        "window": "gpu" if window is not None else "host",
        "share": overhead_ns / (hi - lo) if hi > lo else None,
        "python_events": python_events(trace),
    }
