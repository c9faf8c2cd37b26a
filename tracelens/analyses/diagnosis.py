"""Diagnosis: the causes of lost GPU time, ranked, each with evidence and the fix for the detected framework.

Definitions (docs/analyses.md, "diagnosis"). n = number of GPUs with activity. Per-device quantities are
averaged over the n devices ("device-mean"), so a cause never exceeds the span:
    span_ns               = length of the union over devices of [first start, last end); host span without GPU
    input_pipeline        = device-mean idle attributed to `input`
    host_launch_overhead  = device-mean idle attributed to `launch` + `cpu`
    synchronization       = device-mean idle attributed to `sync`, minus its synchronous-memcpy part
    memcpy                = device-mean synchronous-memcpy part of `sync` + memcpy.exposed_ns / n (when present)
    low_occupancy         = occupancy.lost_ns / n (when present)
    multi_gpu_imbalance   = max(sum over devices of (busiest busy_ns - busy_ns) / n, imbalance.lost_ns)
    share                 = lost_ns / span_ns; primary = the largest cause when its share > NONE_THRESHOLD,
                            else `none`
Without GPU activity: input_pipeline = host time attributed to `input` inside the steps (over the whole
host span when the trace has no steps), on the step threads; the other causes need a GPU and are absent.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from .. import intervals
from ..trace import Trace
from .attribution import host_rows, priority_split
from .columns import device_busy, event_columns
from .names import CAUSES, CPU, HOST_CATEGORY_PRIORITY, INPUT, LAUNCH, SYNC
from .steps import step_threads

NONE_THRESHOLD = 0.10
TOP_NAMES = 5

CAUSE_NAMES = ("input_pipeline", "host_launch_overhead", "synchronization", "memcpy", "low_occupancy",
               "multi_gpu_imbalance")

FIXES: dict[str, dict[str, str]] = {
    "input_pipeline": {
        "pytorch": "Feed the GPU faster: DataLoader(num_workers=N>0, pin_memory=True, prefetch_factor=2-4, "
                   "persistent_workers=True); move decoding/augmentation off the training loop.",
        "tensorflow": "Overlap input with compute: dataset.prefetch(tf.data.AUTOTUNE), "
                      "map(..., num_parallel_calls=tf.data.AUTOTUNE), cache() small datasets, "
                      "interleave() file reads.",
        "jax": "Prefetch batches onto the device ahead of the step (e.g. a background thread with "
               "jax.device_put) and parallelise the input pipeline (tf.data AUTOTUNE / grain workers).",
        "default": "The GPU waits for input: prefetch and parallelise data loading so the next batch is ready.",
    },
    "host_launch_overhead": {
        "pytorch": "The host cannot issue kernels fast enough: use bigger batches, CUDA graphs "
                   "(torch.cuda.graphs / torch.compile(mode='reduce-overhead')) or torch.compile to fuse small "
                   "kernels.",
        "tensorflow": "Reduce per-op host overhead: tf.function(jit_compile=True) (XLA) to fuse ops, bigger "
                      "batches, steps_per_execution in Keras.",
        "jax": "Wrap the step in jax.jit (whole step, not per op), use bigger batches, scan over micro-steps.",
        "default": "Launch overhead dominates: fuse kernels, use CUDA graphs, launch fewer larger kernels.",
    },
    "synchronization": {
        "pytorch": "Drop per-step host syncs: avoid .item()/.cpu()/print(tensor) in the loop (accumulate on "
                   "the GPU, log every N steps), use non_blocking=True copies, no torch.cuda.synchronize().",
        "tensorflow": "Avoid reading tensors on the host each step (.numpy(), Python control flow on tensors); "
                      "keep metrics on device and fetch them every N steps.",
        "jax": "Avoid block_until_ready()/device_get each step; fetch metrics every N steps.",
        "default": "Blocking synchronizations stall the GPU queue: remove per-step device-wide syncs.",
    },
    "memcpy": {
        "pytorch": "Overlap copies with compute: pin_memory=True in the DataLoader, tensor.to(device, "
                   "non_blocking=True), keep data resident on the GPU, avoid synchronous copies.",
        "tensorflow": "Prefetch to the device (tf.data.experimental.prefetch_to_device) and keep tensors on "
                      "the GPU between ops.",
        "jax": "Use jax.device_put ahead of time and keep arrays on device; avoid host round trips.",
        "default": "Copies are exposed: use pinned host memory, async copies on a separate stream.",
    },
    "low_occupancy": {
        "pytorch": "Kernels leave the GPU partly empty: bigger batches, AMP (torch.autocast) for tensor cores, "
                   "torch.compile to fuse small ops.",
        "tensorflow": "Bigger batches, mixed precision (tf.keras.mixed_precision.set_global_policy"
                      "('mixed_float16')), XLA jit_compile=True.",
        "jax": "Bigger batches, bfloat16 compute, let XLA fuse (jax.jit).",
        "default": "Launch more blocks per kernel (bigger problem sizes) and fewer registers/shared memory per "
                   "thread.",
    },
    "multi_gpu_imbalance": {
        "pytorch": "Balance work across GPUs: DistributedDataParallel instead of DataParallel, equal shard "
                   "sizes, check the slow rank's input pipeline.",
        "tensorflow": "Use tf.distribute.MirroredStrategy / MultiWorkerMirroredStrategy with even per-replica "
                      "batches.",
        "jax": "Shard evenly with pjit/shard_map; check per-host input pipelines.",
        "default": "Some GPUs do much less work than the busiest one: balance the split.",
    },
    "none": {
        "default": "No single cause loses more than 10% of the span; the GPU is kept busy.",
    },
}


def fix_for(cause: str, framework: str) -> str:
    table = FIXES[cause]
    return table.get(framework, table["default"])


def _scalars(block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        return {}
    return {k: v for k, v in block.items() if isinstance(v, (Real, str, bool)) or v is None}


def top_host_names(trace: Trace, category: str, limit: int = TOP_NAMES) -> list[dict[str, Any]]:
    """The host names with the most summed time in a category (evidence)."""
    rows = host_rows(trace)
    sel = (rows.category == HOST_CATEGORY_PRIORITY.index(category)) & (rows.name >= 0)
    if not sel.any():
        return []
    codes, inverse = np.unique(rows.name[sel], return_inverse=True)
    total = np.bincount(inverse, weights=rows.end[sel] - rows.start[sel])
    count = np.bincount(inverse)
    names = event_columns(trace).names
    order = np.lexsort((codes, -total))[:limit]
    return [{"name": str(names[codes[i]]), "count": int(count[i]), "total_ns": int(total[i])} for i in order]


def gpu_span(trace: Trace) -> int:
    busy = list(device_busy(trace).values())
    if not busy:
        return 0
    return intervals.union_length(np.array([b.first_start_ns for b in busy]), np.array([b.last_end_ns for b in busy]))


def _cause(name: str, lost: float, span: int, evidence: dict[str, Any], framework: str) -> dict[str, Any]:
    lost_ns = int(round(lost))
    return {"cause": name, "lost_ns": lost_ns, "share": (lost_ns / span) if span > 0 else 0.0,
            "evidence": evidence, "fix": fix_for(name, framework)}


def _gpu_causes(trace: Trace, done: dict[str, Any], span: int, framework: str) -> list[dict[str, Any]]:
    busy = device_busy(trace)
    n = len(busy)
    attr = done.get("attribution") or {}
    devices = attr.get("devices") or []
    idle = {c: sum(d["by_cause"][c] for d in devices) for c in CAUSES}
    sync_copy = sum(d["sync_copy_ns"] for d in devices)
    launch = done.get("launch") or {}
    sync = done.get("sync") or {}
    per_device = {str(d["device"]): d["by_cause"] for d in devices}
    causes = [
        _cause("input_pipeline", idle[INPUT] / n, span, {
            "idle_by_device": {k: v[INPUT] for k, v in per_device.items()},
            "top_input_ranges": top_host_names(trace, INPUT),
            "steps_input_share": ((done.get("steps") or {}).get("summary") or {}).get("host_share", {}).get(INPUT),
        }, framework),
        _cause("host_launch_overhead", (idle[LAUNCH] + idle[CPU]) / n, span, {
            "idle_launch_by_device": {k: v[LAUNCH] for k, v in per_device.items()},
            "idle_cpu_by_device": {k: v[CPU] for k, v in per_device.items()},
            "launch_latency_p50_ns": (launch.get("latency") or {}).get("p50_ns"),
            "small_kernel_share": (launch.get("small_kernels") or {}).get("share"),
            "short_kernels": (launch.get("short_kernels") or {}).get("count"),
            "issue_to_execution": (launch.get("rates") or {}).get("issue_to_execution"),
            "cuda_graphs": (launch.get("cuda_graphs") or {}).get("in_use"),
            "top_cpu_ops": top_host_names(trace, CPU),
        }, framework),
        _cause("synchronization", (idle[SYNC] - sync_copy) / n, span, {
            "idle_by_device": {k: v[SYNC] for k, v in per_device.items()},
            "blocking_calls": (sync.get("blocking") or {}).get("count"),
            "blocking_ns": (sync.get("blocking") or {}).get("total_ns"),
            "top_sync_calls": (sync.get("blocking") or {}).get("by_name", [])[:TOP_NAMES],
            "item_pattern": {k: v for k, v in (sync.get("item_pattern") or {}).items() if k != "per_step"},
            "after_sync_idle_ns": sum(d["after_sync"]["idle_ns"] for d in devices),
        }, framework),
    ]
    memcpy = done.get("memcpy")
    exposed = memcpy.get("exposed_ns") if isinstance(memcpy, dict) else None
    causes.append(_cause("memcpy", (sync_copy + (exposed or 0)) / n, span, {
        "sync_copy_idle_ns": sync_copy, "exposed_ns": exposed, **{f"memcpy.{k}": v for k, v in _scalars(memcpy).items()
                                                                     if k != "exposed_ns"}}, framework))
    occupancy = done.get("occupancy")
    occ_lost = occupancy.get("lost_ns") if isinstance(occupancy, dict) else None
    if occ_lost is not None:
        causes.append(_cause("low_occupancy", occ_lost / n, span,
                             {f"occupancy.{k}": v for k, v in _scalars(occupancy).items()}, framework))
    busiest = max((b.busy_ns for b in busy.values()), default=0)
    within = sum(busiest - b.busy_ns for b in busy.values()) / n if n >= 2 else 0.0
    across = (done.get("imbalance") or {}).get("lost_ns") if isinstance(done.get("imbalance"), dict) else None
    causes.append(_cause("multi_gpu_imbalance", max(within, float(across or 0)), span, {
        "busy_by_device": {str(d): b.busy_ns for d, b in busy.items()}, "busiest_ns": busiest,
        "within_trace_ns": int(round(within)), "across_ranks_ns": across}, framework))
    return causes


def _host_causes(trace: Trace, done: dict[str, Any], framework: str) -> tuple[list[dict[str, Any]], int]:
    host = done.get("host") or {}
    span = int(host.get("span_ns") or 0)
    steps = done.get("steps") or {}
    summary = steps.get("summary")
    if summary:
        lost = summary["host_ns"][INPUT]
        evidence = {"steps": steps["count"], "step_mean_ns": summary["mean_ns"],
                    "input_share_of_steps": summary["host_share"][INPUT]}
    else:
        rows = host_rows(trace)
        if rows.start.size == 0:
            return [], span
        lo, hi = int(rows.start.min()), int(rows.end.max())
        split, _ = priority_split(np.array([lo]), np.array([hi]), rows, step_threads(trace))
        lost = int(split[0, CAUSES.index(INPUT)])
        evidence = {"steps": 0}
    evidence["top_input_ranges"] = top_host_names(trace, INPUT)
    evidence["note"] = "no GPU activity in the trace: host-side view only"
    return [_cause("input_pipeline", lost, span, evidence, framework)], span


def diagnose(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    framework = trace.metadata.framework or "unknown"
    has_gpu = bool(device_busy(trace))
    if has_gpu:
        span = gpu_span(trace)
        causes = _gpu_causes(trace, done, span, framework)
    else:
        causes, span = _host_causes(trace, done, framework)
    ranked = sorted((c for c in causes if c["lost_ns"] > 0), key=lambda c: (-c["lost_ns"], CAUSE_NAMES.index(c["cause"])))
    if ranked and ranked[0]["share"] > NONE_THRESHOLD:
        primary = ranked[0]
    else:
        largest = ranked[0] if ranked else None
        primary = {"cause": "none", "lost_ns": 0, "share": 0.0,
                   "evidence": {"largest_cause": largest["cause"] if largest else None,
                                "largest_share": largest["share"] if largest else 0.0,
                                "threshold": NONE_THRESHOLD},
                   "fix": fix_for("none", framework)}
    nothing = (done.get("attribution") or {}).get("total_by_cause", {}).get("nothing", 0)
    n = len(device_busy(trace))
    return {"primary": primary, "causes": ranked, "span_ns": span, "has_gpu_activity": has_gpu,
            "framework": framework, "threshold": NONE_THRESHOLD,
            "unexplained_idle_ns": int(round(nothing / n)) if n else 0}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return diagnose(trace, done)
