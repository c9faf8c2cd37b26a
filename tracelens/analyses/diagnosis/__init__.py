"""Diagnosis: the causes of lost GPU time in one currency, ranked, each with evidence and an evidence-aware fix.

Every cause's ``lost_ns`` estimates the GPU time a user would get back by removing that cause (an upper bound
where it must be), so causes rank against each other (docs/analyses.md, "diagnosis"). n = GPUs with activity;
per-device quantities are averaged over them ("device-mean"), so a cause never exceeds the span.

    startup               device-mean idle attributed to `startup` (one-time work inside the GPU window)
    input_pipeline        device-mean idle attributed to `input`
    host_launch_overhead  device-mean idle attributed to `launch` + `cpu`
    synchronization       device-mean idle attributed to `sync`, minus its synchronous-memcpy part
    memcpy                device-mean synchronous-memcpy part of `sync` + memcpy.device_mean_exposed_ns
    low_occupancy         occupancy.lost_ns / n: SM time left empty by under-filled grids and block shapes
    multi_gpu_imbalance   max(sum over devices of (busiest busy_ns - busy_ns) / n, imbalance.lost_ns)
    communication         communication.devices[].exposed_ns / n: collective time with no other kernel running
    unexplained_idle      device-mean idle that no host activity of the feeding threads covers (`nothing`)
    share                 lost_ns / span_ns
    primary               `incomplete_trace` when the trace cannot answer (a blocking completeness problem:
                          the GPU side is missing, analyses/completeness.py); else the largest cause when its
                          share > NONE_THRESHOLD, or whatever its share when the GPUs are busy less than
                          HEALTHY_MIN_BUSY of their span; else `none`
Without GPU activity: input_pipeline = host time attributed to `input` inside the steps (over the whole host
span when the trace has no steps), on the step threads; the other causes need a GPU and are absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .. import gpu_specs, intervals
from ..trace import ALL_KINDS, ANNOTATION, CPU_OP, DRIVER, OSRT, OVERHEAD, PYTHON, RUNTIME, Trace
from . import completeness as completeness_check
from . import memcpy as memcpy_analysis
from . import ops, startup
from .attribution import feeding_threads, host_rows, priority_split, thread_row_mask, unexplained_intervals
from .columns import DeviceBusy, device_busy, event_columns
from .names import CAUSES, CPU, HOST_CATEGORY_PRIORITY, INPUT, LAUNCH, NOTHING, STARTUP, SYNC, code_mask
from .steps import step_threads

NONE_THRESHOLD = 0.10
HEALTHY_MIN_BUSY = 0.5
TOP_NAMES = 5
PINNED_NEAR_LINK = 0.7  # pinned copies at >= 70% of the link's theoretical bandwidth are as fast as it goes

CAUSE_NAMES = ("startup", "input_pipeline", "host_launch_overhead", "synchronization", "memcpy", "low_occupancy",
               "multi_gpu_imbalance", "communication", "unexplained_idle")
# Primary-only verdicts (never in `causes`, no lost time): the trace cannot answer, or nothing is worth fixing.
INCOMPLETE_TRACE = "incomplete_trace"
PRIMARY_ONLY = (INCOMPLETE_TRACE, "none")

# Host names that wait for other processes: MPI calls (nsys MPI tracing), collective ops and NCCL calls.
RANK_WAIT_PATTERN = re.compile(r"^MPI_|^(nccl|rccl)[A-Z]|^nccl:|c10d::|ProcessGroup|^gloo:|RemoteCall|CollectiveReduce")
_ACTIVITY_KINDS = (RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION, OSRT, OVERHEAD)


# ---------------------------------------------------------------------------------------------- fixes
# Each fix is chosen from the cause's evidence (its `remedy`) and phrased for the framework.

def _by_framework(framework: str, texts: dict[str, str]) -> str:
    return texts.get(framework, texts["default"])


STARTUP_FIX = {
    "pytorch": "The profile includes one-time start-up work: profile the steady state, e.g. "
               "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=2, active=3)) and "
               "prof.step() each iteration, or nsys --capture-range=cudaProfilerApi with "
               "torch.cuda.profiler.start() after warm-up. Keep compiled artefacts between runs "
               "(torch.compile's FX graph and autotuning caches, TORCHINDUCTOR_CACHE_DIR).",
    "tensorflow": "The profile includes one-time start-up work (tf.function tracing, XLA compilation, cuDNN "
                  "autotuning): start the profiler after the first steps (tf.profiler.experimental.start after "
                  "warm-up, or the Keras TensorBoard callback's profile_batch='10,20').",
    "jax": "The profile includes one-time start-up work (tracing and XLA compilation): start jax.profiler after "
           "a warm-up step and keep compiled executables between runs "
           "(jax.config.update('jax_compilation_cache_dir', ...)).",
    "default": "The profile includes one-time start-up work (context creation, module loading, library "
               "initialization): profile the steady state, e.g. nsys --capture-range=cudaProfilerApi with "
               "cudaProfilerStart() after warm-up, or nsys --delay.",
}
INPUT_FIX = {
    "single_process": {
        "pytorch": "The DataLoader loads every batch on the training thread (num_workers=0): use "
                   "DataLoader(num_workers=N>0, pin_memory=True, persistent_workers=True, prefetch_factor=2-4).",
        "default": "Batches are loaded on the training thread: load them in background workers.",
    },
    "multi_process": {
        "pytorch": "The DataLoader's workers do not keep up: more workers (num_workers), prefetch_factor=4, "
                   "persistent_workers=True, and cheaper per-sample work (decode/augment on the GPU, e.g. DALI, "
                   "or pre-processed data).",
        "default": "The loader's workers do not keep up: more workers, deeper prefetch, cheaper per-sample work.",
    },
    "tf_data": {
        "tensorflow": "Overlap input with compute: dataset.prefetch(tf.data.AUTOTUNE), "
                      "map(..., num_parallel_calls=tf.data.AUTOTUNE), cache() small datasets, interleave() file "
                      "reads.",
        "default": "Overlap input with compute: prefetch and parallelise the tf.data pipeline (AUTOTUNE).",
    },
    "other": {
        "pytorch": "Feed the GPU faster: DataLoader(num_workers=N>0, pin_memory=True, prefetch_factor=2-4, "
                   "persistent_workers=True); move decoding/augmentation off the training loop.",
        "tensorflow": "Overlap input with compute: dataset.prefetch(tf.data.AUTOTUNE), "
                      "map(..., num_parallel_calls=tf.data.AUTOTUNE), cache() small datasets.",
        "jax": "Prefetch batches onto the device ahead of the step (e.g. a background thread with "
               "jax.device_put) and parallelise the input pipeline (tf.data AUTOTUNE / grain workers).",
        "default": "The GPU waits for input: prefetch and parallelise data loading so the next batch is ready.",
    },
}
LAUNCH_FIX = {
    "graphs": {
        "pytorch": "CUDA graphs are in use, yet the GPU still waits on the host: capture what is still launched "
                   "outside the graphs (see the ops named in the evidence), e.g. torch.compile(mode='reduce-overhead') "
                   "over the whole step or a larger torch.cuda.graphs region.",
        "default": "CUDA graphs are in use, yet the GPU still waits on the host: capture the work still launched "
                   "outside them.",
    },
    "small_kernels": {
        "pytorch": "The host cannot issue kernels as fast as the GPU runs them (many tiny kernels): fuse them "
                   "with torch.compile, use fused/foreach optimizers (torch.optim.AdamW(fused=True)), CUDA graphs "
                   "(torch.compile(mode='reduce-overhead')), or larger batches.",
        "tensorflow": "Many tiny ops: tf.function(jit_compile=True) (XLA) to fuse them, bigger batches, "
                      "steps_per_execution in Keras.",
        "jax": "Many tiny ops: jit the whole step (not per op), use bigger batches, scan over micro-steps.",
        "default": "Launch overhead dominates: fuse kernels, use CUDA graphs, launch fewer larger kernels.",
    },
    "host_code": {
        "pytorch": "The GPU waits while the host runs framework/Python code between launches: move per-step "
                   "Python work out of the loop, torch.compile the model (fewer, fused ops), CUDA graphs, or "
                   "bigger batches so each launch carries more work.",
        "tensorflow": "The GPU waits for host-side op dispatch: wrap the step in tf.function (jit_compile=True), "
                      "bigger batches, steps_per_execution in Keras.",
        "jax": "The GPU waits for host-side dispatch: jit the whole step, bigger batches.",
        "default": "The GPU waits while the host runs code between launches: do less per step on the host, "
                   "batch more work per launch.",
    },
}
PYTHON_TRACING_NOTE = (" Caution: this trace records Python calls ({count:,} Python events: torch.profiler's "
                       "with_stack=True or a Python tracer), which slows the host (several-fold where much Python runs "
                       "per step); confirm the launch overhead on a profile without them before acting on it.")
SYNC_FIX = {
    "item": {
        "pytorch": "Tensor values read on the host each step (.item(), .cpu(), print(tensor), if tensor:) wait for "
                   "the GPU: keep metrics on the GPU and read them every N steps; avoid data-dependent host "
                   "control flow.",
        "tensorflow": "Values read on the host each step (.numpy(), float(x)) wait for the GPU: keep metrics on "
                      "device and fetch them every N steps.",
        "jax": "Values read on the host each step (float(x), device_get) wait for the GPU: fetch them every N steps.",
        "default": "Small device-to-host reads with a wait drain the GPU queue: read results every N steps.",
    },
    "explicit": {
        "pytorch": "Explicit synchronizations stall the queue: remove torch.cuda.synchronize() from the loop (keep "
                   "it only around timing code), use non_blocking=True copies and events instead of device-wide "
                   "syncs.",
        "jax": "Avoid block_until_ready() in the loop; fetch results every N steps.",
        "default": "Blocking synchronizations stall the GPU queue: remove per-step device-wide syncs, wait on "
                   "events instead.",
    },
}
MEMCPY_FIX = {
    "pin": {
        "pytorch": "Copies use pageable host memory (staged by the driver, synchronous): DataLoader(pin_memory=True) "
                   "or tensor.pin_memory(), then tensor.to(device, non_blocking=True).",
        "tensorflow": "Let tf.data stage input on the device: prefetch_to_device / prefetch(tf.data.AUTOTUNE).",
        "jax": "Stage input with jax.device_put ahead of use from host arrays that stay alive.",
        "default": "Copies use pageable host memory: allocate host buffers with cudaMallocHost/cudaHostAlloc (or "
                   "cudaHostRegister) and copy with cudaMemcpyAsync.",
    },
    "async": {
        "pytorch": "Copies are synchronous (the host waits for each): tensor.to(device, non_blocking=True) from "
                   "pinned memory, and no .item()/.cpu() inside the step.",
        "default": "Copies are synchronous: use cudaMemcpyAsync from pinned memory on a non-default stream.",
    },
    "batch": {
        "pytorch": "Many small copies: stack/cat them on the host and copy once, or create tensors directly on the "
                   "device (torch.tensor(..., device='cuda')).",
        "default": "Many small copies: batch them into one larger transfer.",
    },
    "fewer_bytes": {
        "pytorch": "The copies are already pinned and asynchronous and move as fast as the link allows: move fewer "
                   "bytes (keep weights/data resident on the GPU instead of offloading, copy in bf16/fp16 or "
                   "uint8 and convert on the GPU) or overlap them with compute on a side stream (prefetch the "
                   "next layer or batch).",
        "default": "The copies are already pinned and asynchronous and near the link's bandwidth: move fewer bytes "
                   "(keep data resident on the GPU, smaller dtypes) or overlap them with compute on another stream.",
    },
    "floor": {
        "pytorch": "Overlap cannot hide these copies: the kernels already run beside them or are too few to cover "
                   "them, so the copy time itself is the floor. Move fewer bytes: keep weights/data resident on the "
                   "GPU instead of offloading them, copy in bf16/fp16 or uint8 and convert on the GPU.",
        "default": "Overlap cannot hide these copies: the kernels already run beside them or are too few to cover "
                   "them, so the copy time itself is the floor. Move fewer bytes: keep data resident on the GPU, "
                   "copy smaller dtypes and convert on the GPU.",
    },
    "overlap": {
        "pytorch": "Copies run while no kernel does: prefetch on a side stream (torch.cuda.Stream) with pinned "
                   "memory and non_blocking=True so they overlap compute.",
        "tensorflow": "Prefetch to the device (tf.data.experimental.prefetch_to_device) so copies overlap compute.",
        "jax": "Double-buffer device_put so the next batch copies while the current one computes.",
        "default": "Overlap copies with compute: pinned memory, cudaMemcpyAsync on a separate stream.",
    },
    "device_copies": {
        "pytorch": "Device-to-device copies with no compute beside them: avoid materialising copies "
                   "(.contiguous(), .clone(), torch.cat in loops); use views and in-place ops.",
        "default": "Device-to-device copies with no compute beside them: avoid the copies (views, in-place ops).",
    },
}
OCCUPANCY_FIX = {
    "under_filled": {
        "pytorch": "Launches with fewer blocks than the GPU has SMs leave SMs idle: bigger batches, fuse small ops "
                   "(torch.compile), or for your own kernels a grid of at least one block per SM (split the work "
                   "finer).",
        "tensorflow": "Launches leave SMs idle: bigger batches, XLA fusion (jit_compile=True).",
        "jax": "Launches leave SMs idle: bigger batches, let XLA fuse (jax.jit).",
        "default": "Launches with fewer blocks than SMs leave SMs idle: launch at least one block per SM "
                   "(split the work finer, bigger problems per launch).",
    },
    "block_shape": {
        "default": "Kernels whose block shape caps their occupancy (tiny blocks hit the blocks-per-SM limit, "
                   "partial warps waste lanes): use blocks of 128-512 threads, a multiple of 32.",
    },
}
COMMUNICATION_FIX = {
    "pytorch": "Collectives run with nothing to hide them: let DDP overlap them with backward (bucket_cap_mb tuned: "
               "larger for many small all-reduces, smaller to start earlier; static_graph=True, no "
               "find_unused_parameters), accumulate gradients with model.no_sync() on all but the last micro-step; "
               "with FSDP prefetch (forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE).",
    "tensorflow": "Collectives are exposed: pack gradients into fewer all-reduces "
                  "(tf.distribute.experimental.CommunicationOptions(bytes_per_pack=...)), let XLA overlap them "
                  "(XLA_FLAGS=--xla_gpu_enable_latency_hiding_scheduler=true).",
    "jax": "Collectives are exposed: let XLA schedule them asynchronously beside compute "
           "(XLA_FLAGS=--xla_gpu_enable_latency_hiding_scheduler=true), shard so fewer, larger collectives run.",
    "default": "Collectives run while no kernel computes: issue them asynchronously beside independent work, fewer "
               "and larger messages, and check the interconnect's bandwidth.",
}
COMMUNICATION_LINK_BOUND_FIX = ("The collectives already move data near the link's peak bus bandwidth: faster "
                                "collectives need fewer bytes (bf16 gradients, gradient compression, a larger "
                                "batch per step), so hide them behind compute.")
IMBALANCE_FIX = {
    "pytorch": "Balance work across GPUs: DistributedDataParallel instead of DataParallel, equal shard sizes, "
               "check the slow rank's input pipeline.",
    "tensorflow": "Use tf.distribute.MirroredStrategy / MultiWorkerMirroredStrategy with even per-replica batches.",
    "jax": "Shard evenly with pjit/shard_map; check per-host input pipelines.",
    "default": "Some GPUs do much less work than the busiest one: balance the split.",
}
UNEXPLAINED_FIX = {
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
               "ranges, enable the Python tracer, check other hosts in multi-host runs.",
        "default": "The trace does not show what the host did while the GPU idled: trace OS runtime calls and "
                   "sample the CPU (nsys -t cuda,nvtx,osrt --sample=cpu), add NVTX ranges around host work.",
    },
}
NONE_FIX = "No cause loses more than 10% of the span and the GPUs are busy most of it: no bottleneck to fix."


def fix_for(table: dict[str, str], framework: str) -> str:
    return _by_framework(framework, table)


# ---------------------------------------------------------------------------------------------- context


@dataclass
class Context:
    """What every cause builder reads: the trace, the sections computed so far, and device-level totals."""

    trace: Trace
    done: dict[str, Any]
    span: int
    framework: str
    busy: dict[int, DeviceBusy]
    attribution: dict[int, dict[str, Any]]  # device -> attribution entry

    @property
    def n(self) -> int:
        return len(self.busy)

    def idle(self, category: str) -> dict[str, int]:
        """Idle time attributed to a host category, per device (keys are device ids as strings)."""
        return {str(d): int(a["by_cause"][category]) for d, a in self.attribution.items()}

    def mean(self, values: dict[str, int] | list[float]) -> float:
        items = list(values.values()) if isinstance(values, dict) else values
        return float(sum(items)) / self.n if self.n else 0.0

    @cached_property
    def losses(self) -> dict[int, dict[str, int]]:
        """Each device's own lost time per cause (:func:`device_losses`)."""
        return {device: device_losses(self, device) for device in self.busy}

    def lost(self, cause: str) -> float:
        """A cause's lost time: the device-mean of the devices' own losses to it."""
        return sum(own.get(cause, 0) for own in self.losses.values()) / self.n if self.n else 0.0

    def idle_total(self) -> float:
        return self.mean([a["idle_ns"] for a in self.attribution.values()])


def _cause(name: str, lost: float, ctx: Context, evidence: dict[str, Any], fix: str) -> dict[str, Any]:
    lost_ns = max(int(round(lost)), 0)
    return {"cause": name, "lost_ns": lost_ns, "share": (lost_ns / ctx.span) if ctx.span > 0 else 0.0,
            "evidence": evidence, "fix": fix}


def top_host_names(trace: Trace, category: str, limit: int = TOP_NAMES) -> list[dict[str, Any]]:
    """The host names with the most summed time in a category (evidence)."""
    rows = host_rows(trace)
    sel = rows.category == HOST_CATEGORY_PRIORITY.index(category)
    sel[sel] = rows.names(sel) >= 0
    if not sel.any():
        return []
    codes, inverse = np.unique(rows.names(sel), return_inverse=True)
    total = np.bincount(inverse, weights=rows.ends(sel) - rows.starts(sel))
    count = np.bincount(inverse)
    names = event_columns(trace).names
    order = np.lexsort((codes, -total))[:limit]
    return [{"name": str(names[codes[i]]), "count": int(count[i]), "total_ns": int(total[i])} for i in order]


def gpu_span(trace: Trace) -> int:
    busy = list(device_busy(trace).values())
    if not busy:
        return 0
    return intervals.union_length(np.array([b.first_start_ns for b in busy]), np.array([b.last_end_ns for b in busy]))


def _steps_summary(done: dict[str, Any]) -> dict[str, Any]:
    steps = done.get("steps") or {}
    return {"count": steps.get("count") or 0, "summary": steps.get("summary") or {}}


# ---------------------------------------------------------------------------------------------- causes


def _startup(ctx: Context) -> dict[str, Any]:
    work = startup.one_time_work(ctx.trace)
    items: list[dict[str, Any]] = []
    for device, busy in ctx.busy.items():
        threads, _ = feeding_threads(ctx.trace, device)
        for item in startup.device_items(ctx.trace, busy, thread_row_mask(ctx.trace, threads)):
            items.append({"device": device, **item})
    items.sort(key=lambda i: (-i["idle_ns"], i["name"]))
    idle = ctx.idle(STARTUP)
    evidence = {
        "idle_by_device": idle,
        "items": items[:startup.TOP_ITEMS],
        "first_step_ns": work.first_step_ns,
        "later_step_median_ns": work.later_step_median_ns,
        "slow_first_step": work.slow_first_step,
    }
    return _cause("startup", ctx.lost("startup"), ctx, evidence, fix_for(STARTUP_FIX, ctx.framework))


def _loader_kind(names: list[str]) -> str:
    text = " ".join(names)
    if "_SingleProcessDataLoaderIter" in text:
        return "single_process"
    if "_MultiProcessingDataLoaderIter" in text:
        return "multi_process"
    if "Iterator" in text:
        return "tf_data"
    return "other"


def _input(ctx: Context) -> dict[str, Any]:
    idle = ctx.idle(INPUT)
    top = top_host_names(ctx.trace, INPUT)
    steps = _steps_summary(ctx.done)
    host_ns = steps["summary"].get("host_ns") or {}
    loader = _loader_kind([t["name"] for t in top])
    evidence = {
        "idle_by_device": idle,
        "share_of_idle": ctx.mean(idle) / ctx.idle_total() if ctx.idle_total() else None,
        "top_input_ranges": top,
        "input_per_step_ns": host_ns[INPUT] / steps["count"] if steps["count"] and INPUT in host_ns else None,
        "steps_input_share": (steps["summary"].get("host_share") or {}).get(INPUT),
        "loader": loader,
    }
    table = INPUT_FIX[loader]
    return _cause("input_pipeline", ctx.lost("input_pipeline"), ctx, evidence, fix_for(table, ctx.framework))


def _launch_overhead(ctx: Context) -> dict[str, Any]:
    launch = ctx.done.get("launch") or {}
    graphs = launch.get("cuda_graphs") or {}
    small = launch.get("small_kernels") or {}
    idle_launch, idle_cpu = ctx.idle(LAUNCH), ctx.idle(CPU)
    ops_outside = None
    if graphs.get("in_use"):
        pairs_ops = launch.get("gpu_ops")
        ops_outside = int(pairs_ops - graphs.get("graph_ops", 0)) if isinstance(pairs_ops, int) else None
    evidence = {
        "idle_launch_by_device": idle_launch,
        "idle_cpu_by_device": idle_cpu,
        "launch_latency_p50_ns": (launch.get("latency") or {}).get("p50_ns"),
        "small_kernel_share": small.get("share"),
        "small_kernel_count_share": small.get("count_share"),
        "short_kernels": (launch.get("short_kernels") or {}).get("count"),
        "issue_to_execution": (launch.get("rates") or {}).get("issue_to_execution"),
        "cuda_graphs": graphs.get("in_use"),
        "ops_outside_graphs": ops_outside,
        "top_cpu_ops": top_host_names(ctx.trace, CPU),
        "top_launch_calls": top_host_names(ctx.trace, LAUNCH),
        # Which op's kernels the host spends its launches on (an unfused optimizer step: thousands).
        "launching_ops": ops.launching_ops(ctx.trace),
        "optimizer_step": ops.optimizer_step(ctx.trace),
    }
    if graphs.get("in_use"):
        remedy = "graphs"
    # By count, not time: each launch costs the host the same whatever the kernel's length, so a step of
    # thousands of microsecond kernels beside a few long GEMMs is still launch-bound by the tiny ones.
    elif ctx.mean(idle_cpu) >= ctx.mean(idle_launch) and (small.get("count_share") or 0.0) < 0.5:
        remedy = "host_code"
    else:
        remedy = "small_kernels"
    evidence["remedy"] = remedy
    # A Python tracer (torch.profiler's with_stack, JAX's python tracer) records every Python call, which slows
    # the host: the launch overhead it shows may be partly the profiler's own.
    python_events = int(event_columns(ctx.trace).of_kind(PYTHON).sum())
    evidence["python_events"] = python_events
    fix = fix_for(LAUNCH_FIX[remedy], ctx.framework)
    if python_events:
        fix += PYTHON_TRACING_NOTE.format(count=python_events)
    return _cause("host_launch_overhead", ctx.lost("host_launch_overhead"), ctx, evidence, fix)


def _synchronization(ctx: Context) -> dict[str, Any]:
    sync = ctx.done.get("sync") or {}
    idle = ctx.idle(SYNC)
    item = {k: v for k, v in (sync.get("item_pattern") or {}).items() if k != "per_step"}
    blocking = sync.get("blocking") or {}
    evidence = {
        "idle_by_device": idle,
        "blocking_calls": blocking.get("count"),
        "blocking_ns": blocking.get("total_ns"),
        "top_sync_calls": (blocking.get("by_name") or [])[:TOP_NAMES],
        "item_pattern": item,
        "after_sync_idle_ns": sum(a["after_sync"]["idle_ns"] for a in ctx.attribution.values()),
        "sync_ops": ops.sync_ops(ctx.trace),  # the ops the blocking calls run in (aten::item, ...)
    }
    remedy = "item" if item.get("count") else "explicit"
    evidence["remedy"] = remedy
    return _cause("synchronization", ctx.lost("synchronization"), ctx, evidence,
                  fix_for(SYNC_FIX[remedy], ctx.framework))


def _memcpy_remedy(top: dict[str, Any] | None, link_fraction: float | None, small: dict[str, Any],
                   floor: bool) -> str:
    """The fix the copies' own evidence calls for, from the kind with the most exposed time on the GPU with the
    most exposed copy time (``floor``: overlap could not hide it, ``memcpy.copies_are_the_floor``)."""
    if top is None:
        return "async"  # only synchronous-copy idle, no exposed copy time
    duration = top["duration_ns"] or 1
    if top["kind"] == "DtoD":
        return "device_copies"
    if top["pageable_ns"] / duration >= 0.5:
        return "pin"
    if top["sync_ns"] / duration >= 0.5:
        return "async"
    if (small.get("burst_copy_count") or 0) >= 0.5 * top["count"] and top["kind"] in ("HtoD", "DtoH"):
        return "batch"
    if floor:
        # The kernels already run beside the copies, or too few are left to hide them: only fewer bytes help.
        return "floor"
    if top["pinned_ns"] / duration >= 0.5 and (link_fraction is None or link_fraction >= PINNED_NEAR_LINK):
        # Pinned, asynchronous and as fast as the link allows (or the link is unknown): only fewer bytes help.
        return "fewer_bytes"
    return "overlap"


def _memcpy(ctx: Context) -> dict[str, Any] | None:
    section = ctx.done.get("memcpy")
    memcpy: dict[str, Any] = section if isinstance(section, dict) else {}
    sync_copy = sum(a["sync_copy_ns"] for a in ctx.attribution.values())
    per_device = [d for d in memcpy.get("per_device") or [] if d.get("exposed_ns")]
    # The GPU with the most exposed copy time speaks for the cause: its own kinds, counts and bytes, so a
    # sentence naming it uses its numbers (ties: the lowest id).
    worst = min(per_device, key=lambda d: (-d["exposed_ns"], d["device"])) if per_device else None
    kinds = sorted((k for k in (worst or {}).get("by_kind") or [] if k.get("exposed_ns")),
                   key=lambda k: (-k["exposed_ns"], k["kind"]))
    top = kinds[0] if kinds else None
    link_fraction = top.get("large_achieved_fraction") if top else None
    kernel_union = {d["id"]: d.get("kernel_union_ns") for d in ctx.done.get("devices") or []}
    kernels = kernel_union.get(worst["device"]) if worst else None
    headroom = memcpy_analysis.overlap_headroom(worst["union_ns"], worst["exposed_ns"], kernels) \
        if worst and kernels is not None else None
    floor = bool(worst and kernels is not None
                 and memcpy_analysis.copies_are_the_floor(worst["union_ns"], worst["exposed_ns"], kernels))
    remedy = _memcpy_remedy(top, link_fraction, memcpy.get("small_copies") or {}, floor)
    fields = ("kind", "count", "bytes", "duration_ns", "exposed_ns", "pageable_ns", "pinned_ns", "sync_ns", "async_ns",
              "achieved_bytes_per_s")
    evidence = {
        "sync_copy_idle_ns": sync_copy,
        "device_mean_exposed_ns": memcpy.get("device_mean_exposed_ns"),
        "exposed_by_device": {str(d["device"]): d["exposed_ns"] for d in memcpy.get("per_device") or []},
        "device": worst["device"] if worst else None,
        "by_kind": [{f: k.get(f) for f in fields} for k in kinds],
        "kernel_union_ns": kernels,
        "overlap_headroom_ns": headroom,
        "link_fraction": link_fraction,
        "remedy": remedy,
    }
    return _cause("memcpy", ctx.lost("memcpy"), ctx, evidence,
                  fix_for(MEMCPY_FIX[remedy], ctx.framework))


def _low_occupancy(ctx: Context) -> dict[str, Any] | None:
    occupancy = ctx.done.get("occupancy")
    if not isinstance(occupancy, dict) or occupancy.get("lost_ns") is None:
        return None
    # Device-means, like lost_ns, so the parts add up to it.
    under = int(round(occupancy.get("under_filled_lost_ns", 0) / ctx.n))
    shape = int(round(occupancy.get("block_shape_lost_ns", 0) / ctx.n))
    fields = ("name", "device", "count", "total_ns", "lost_ns", "sm_fill", "grid_blocks", "threads_per_block",
              "block_shape_limited")
    evidence = {
        "lost_by_device": {str(d["device"]): d["lost_ns"] for d in occupancy.get("per_device") or []},
        "under_filled_lost_ns": under,
        "block_shape_lost_ns": shape,
        "sm_count": {str(d["device"]): d["sm_count"] for d in occupancy.get("per_device") or []},
        "top_kernels": [{f: k.get(f) for f in fields} for k in (occupancy.get("top_low_occupancy_kernels") or [])[:TOP_NAMES]],
        "register_or_shared_limited_ns": sum(d.get("register_or_shared_limited_ns", 0)
                                             for d in occupancy.get("per_device") or []),
        "library_under_filled_ns": sum(d.get("library_under_filled_ns", 0) for d in occupancy.get("per_device") or []),
    }
    remedy = "block_shape" if shape > under else "under_filled"
    evidence["remedy"] = remedy
    return _cause("low_occupancy", ctx.lost("low_occupancy"), ctx, evidence,
                  fix_for(OCCUPANCY_FIX[remedy], ctx.framework))


def device_losses(ctx: Context, device: int) -> dict[str, int]:
    """One device's own lost time per cause (not averaged over devices): the one definition of each cause's
    per-device term, whose device-mean is the cause's lost_ns (``Context.lost``).

    Its attribution split, its exposed copies and collectives, its empty SM time. Imbalance is a comparison
    between devices, so it has no per-device term.
    """
    a = ctx.attribution.get(device)
    by = a["by_cause"] if a else {}
    memcpy = {d["device"]: d.get("exposed_ns", 0) for d in (ctx.done.get("memcpy") or {}).get("per_device") or []}
    occupancy = {d["device"]: d.get("lost_ns", 0) for d in (ctx.done.get("occupancy") or {}).get("per_device") or []}
    comm = {d["device"]: d.get("exposed_ns", 0) for d in (ctx.done.get("communication") or {}).get("devices") or []}
    sync_copy = int(a["sync_copy_ns"]) if a else 0
    losses = {
        "startup": int(by.get(STARTUP, 0)),
        "input_pipeline": int(by.get(INPUT, 0)),
        "host_launch_overhead": int(by.get(LAUNCH, 0)) + int(by.get(CPU, 0)),
        "synchronization": int(by.get(SYNC, 0)) - sync_copy,
        "memcpy": sync_copy + int(memcpy.get(device, 0)),
        "low_occupancy": int(occupancy.get(device, 0)),
        "communication": int(comm.get(device, 0)),
        "unexplained_idle": int(by.get(NOTHING, 0)),
    }
    return {cause: ns for cause, ns in losses.items() if ns > 0}


def _own_cause(ctx: Context, device: int | None) -> dict[str, Any] | None:
    """A device's largest own loss: ``{cause, lost_ns}`` (ties in CAUSE_NAMES order), None without any."""
    if device is None:
        return None
    losses = device_losses(ctx, device)
    if not losses:
        return None
    cause = min(losses, key=lambda c: (-losses[c], CAUSE_NAMES.index(c)))
    return {"cause": cause, "lost_ns": losses[cause]}


def _imbalance(ctx: Context) -> dict[str, Any]:
    busy = {d: b.busy_ns for d, b in ctx.busy.items()}
    busiest = max(busy.values(), default=0)
    within = sum(busiest - b for b in busy.values()) / ctx.n if ctx.n >= 2 else 0.0
    imbalance = ctx.done.get("imbalance")
    across = imbalance.get("lost_ns") if isinstance(imbalance, dict) else None
    least = min(busy, key=lambda d: (busy[d], d)) if busy else None
    most = min(busy, key=lambda d: (-busy[d], d)) if busy else None
    # Per device, not averaged: the busiest device sets the pace; the least busy waits the most, and its own
    # largest loss says what keeps it from the work the others do.
    evidence = {"busy_by_device": {str(d): b for d, b in busy.items()}, "busiest_ns": busiest,
                "busiest_device": most, "least_busy_device": least,
                "least_busy_own_cause": _own_cause(ctx, least) if ctx.n >= 2 else None,
                "within_trace_ns": int(round(within)), "across_ranks_ns": across}
    return _cause("multi_gpu_imbalance", max(within, float(across or 0)), ctx, evidence,
                  fix_for(IMBALANCE_FIX, ctx.framework))


def _collective_types(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The devices' per-type collective figures summed over GPUs; busbw weighted by each entry's measured time."""
    by_type: dict[str, dict[str, Any]] = {}
    for d in devices:  # a loop over GPUs and their few collective types
        for t in d["by_type"]:
            entry = by_type.setdefault(t["type"], {"type": t["type"], "count": 0, "time_ns": 0, "exposed_ns": 0,
                                                   "bytes": None, "bus_bytes": 0.0, "bus_ns": 0})
            entry["count"] += t["count"]
            entry["time_ns"] += t["time_ns"]
            entry["exposed_ns"] += t.get("exposed_ns", 0)
            if t.get("bytes") is not None:
                entry["bytes"] = (entry["bytes"] or 0) + t["bytes"]
            if t.get("busbw_bytes_per_s") is not None and t.get("measured_ns"):
                entry["bus_bytes"] += t["busbw_bytes_per_s"] * t["measured_ns"] / 1e9
                entry["bus_ns"] += t["measured_ns"]
    return sorted(by_type.values(), key=lambda t: (-t["time_ns"], t["type"]))


def _link(ctx: Context, devices: list[dict[str, Any]]) -> gpu_specs.CollectiveLink:
    """The peer link of the GPUs with collectives: the slowest known one; unknown when any is unknown."""
    links = [gpu_specs.collective_link(info.get("name"), info.get("compute_major"))
             for info in (ctx.trace.device_info(int(d["device"])) for d in devices)]
    unknown = [link for link in links if link.peak_bytes_per_s is None]
    if unknown or not links:
        return unknown[0] if unknown else gpu_specs.CollectiveLink(None, None, None, "no GPU with collectives")
    return min(links, key=lambda link: link.peak_bytes_per_s or 0.0)


def _communication(ctx: Context) -> dict[str, Any] | None:
    report = ctx.done.get("communication")
    if not isinstance(report, dict) or not report.get("collective_count"):
        return None
    devices = [d for d in report.get("devices") or [] if d.get("collective_count")]
    exposed = {str(d["device"]): int(d["exposed_ns"]) for d in devices}
    collective = {str(d["device"]): int(d["collective_ns"]) for d in devices}
    link = _link(ctx, devices)
    peak = link.peak_bytes_per_s
    types = _collective_types(devices)
    bus_bytes, bus_ns = sum(t["bus_bytes"] for t in types), sum(t["bus_ns"] for t in types)
    busbw = bus_bytes / bus_ns * 1e9 if bus_ns else None
    for t in types:
        t["busbw_bytes_per_s"] = t["bus_bytes"] / t["bus_ns"] * 1e9 if t["bus_ns"] else None
        t["link_fraction"] = t["busbw_bytes_per_s"] / peak if t["busbw_bytes_per_s"] is not None and peak else None
        del t["bus_bytes"], t["bus_ns"]
    fraction = busbw / peak if busbw is not None and peak else None
    total = sum(collective.values())
    # Collectives near the link's peak cannot get faster: only overlap or fewer bytes help; below it, overlap
    # and fewer, larger messages do.
    remedy = "link_bound" if fraction is not None and fraction >= PINNED_NEAR_LINK else "overlap"
    evidence = {
        "exposed_by_device": exposed,
        "collective_by_device": collective,
        "overlap_share": 1 - sum(exposed.values()) / total if total else None,
        "by_type": types,
        "world_size": ctx.trace.metadata.world_size,
        "busbw_bytes_per_s": busbw,
        "link": link.link,
        "link_peak_bytes_per_s": peak,
        "link_source": link.source,
        "link_unknown_reason": link.unknown_reason,
        "link_fraction": fraction,
        "responsible": [t["type"] for t in sorted(types, key=lambda t: (-t["exposed_ns"], t["type"]))
                        if t["exposed_ns"] > 0][:3],
        "remedy": remedy,
    }
    fix = fix_for(COMMUNICATION_FIX, ctx.framework)
    if remedy == "link_bound":
        fix = COMMUNICATION_LINK_BOUND_FIX + " " + fix
    return _cause("communication", ctx.lost("communication"), ctx, evidence, fix)


_HOST_CHUNK = 1 << 22


def _unexplained(ctx: Context) -> dict[str, Any]:
    trace = ctx.trace
    cols = event_columns(trace)
    idle = ctx.idle(NOTHING)
    host = np.flatnonzero(cols.of_kind(*_ACTIVITY_KINDS) & (cols.tid >= 0) & (cols.name >= 0))
    waits = host[code_mask(cols.name[host], cols.names, lambda n: bool(RANK_WAIT_PATTERN.search(n)))]
    overhead = host[cols.kind[host] == ALL_KINDS.index(OVERHEAD)]
    rank_wait = profiler_overhead = 0
    unexplained = [unexplained_intervals(trace, busy) for busy in ctx.busy.values()]
    for us, ue in unexplained:  # a loop over devices
        for rows, total in ((waits, "rank_wait"), (overhead, "overhead")):
            union = intervals.merge(cols.start[rows], cols.end[rows])
            covered = int(intervals.overlap_with_union(us, ue, *union).sum())
            if total == "rank_wait":
                rank_wait += covered
            else:
                profiler_overhead += covered
    partials = []
    for lo in range(0, host.size, _HOST_CHUNK):  # chunks of host rows: tens of millions on a training export
        mine = host[lo: lo + _HOST_CHUNK]
        starts, ends = cols.start[mine], cols.end[mine]
        overlap = np.zeros(mine.size, np.int64)
        for us, ue in unexplained:
            overlap += intervals.overlap_with_union(starts, ends, us, ue)
        seen = overlap > 0
        mine = mine[seen]
        partials.append(pd.DataFrame({"name": cols.name[mine], "kind": cols.kind[mine], "tid": cols.tid[mine],
                                      "overlap": overlap[seen]}).groupby(["name", "kind", "tid"], sort=False)
                        ["overlap"].sum())
    summed = (pd.concat(partials).groupby(level=[0, 1, 2], sort=False).sum() if partials
              else pd.Series([], dtype=np.int64, index=pd.MultiIndex.from_arrays([[], [], []],
                                                                                 names=["name", "kind", "tid"])))
    top_rows = (summed.rename("overlap").reset_index()
                .sort_values(["overlap", "name"], ascending=[False, True]).head(TOP_NAMES))
    top = [{"name": str(cols.names[r.name]), "kind": ALL_KINDS[r.kind], "tid": int(r.tid),
            "overlap_ns": int(round(r.overlap / ctx.n))} for r in top_rows.itertuples(index=False)]
    feeding = {a["feeding_threads_from"] for a in ctx.attribution.values()}
    pids = np.unique(cols.pid[host])
    evidence = {
        "idle_by_device": idle,
        "share_of_idle": ctx.mean(idle) / ctx.idle_total() if ctx.idle_total() else None,
        "top_activity": top,
        "rank_wait_ns": int(round(rank_wait / ctx.n)),
        "profiler_overhead_ns": int(round(profiler_overhead / ctx.n)),
        "host_tracing": {
            "api_calls": bool(cols.of_kind(RUNTIME, DRIVER).any()),
            "framework_ops": bool(cols.of_kind(CPU_OP).any()),
            "python": bool(cols.of_kind(PYTHON).any()),
            "os_runtime": bool(cols.of_kind(OSRT).any()),
        },
        "feeding_threads_from": sorted(feeding),
        "processes": int((pids >= 0).sum()),
        "world_size": trace.metadata.world_size,
        "long_gaps": ops.gap_ops(trace),  # where in the code the longest idle gaps fall
    }
    lost = ctx.lost("unexplained_idle")
    remedy = "ranks" if lost > 0 and evidence["rank_wait_ns"] >= 0.5 * lost else "untraced"
    evidence["remedy"] = remedy
    return _cause("unexplained_idle", lost, ctx, evidence, fix_for(UNEXPLAINED_FIX[remedy], ctx.framework))


GPU_CAUSES: tuple[Callable[[Context], dict[str, Any] | None], ...] = (
    _startup, _input, _launch_overhead, _synchronization, _memcpy, _low_occupancy, _imbalance, _communication,
    _unexplained,
)


def _host_causes(trace: Trace, done: dict[str, Any], framework: str) -> tuple[list[dict[str, Any]], int]:
    host = done.get("host") or {}
    span = int(host.get("span_ns") or 0)
    steps = done.get("steps") or {}
    summary = steps.get("summary")
    if summary:
        lost = summary["host_ns"][INPUT]
        evidence: dict[str, Any] = {"steps": steps["count"], "step_mean_ns": summary["mean_ns"],
                                    "input_share_of_steps": summary["host_share"][INPUT]}
    else:
        rows = host_rows(trace)
        if rows.row.size == 0:
            return [], span
        lo, hi = int(rows.starts().min()), int(rows.ends().max())
        split, _ = priority_split(np.array([lo]), np.array([hi]), rows, step_threads(trace))
        lost = int(split[0, CAUSES.index(INPUT)])
        evidence = {"steps": 0}
    top = top_host_names(trace, INPUT)
    evidence["top_input_ranges"] = top
    evidence["loader"] = _loader_kind([t["name"] for t in top])
    evidence["note"] = "no GPU activity in the trace: host-side view only"
    lost_ns = int(round(lost))
    cause = {"cause": "input_pipeline", "lost_ns": lost_ns, "share": lost_ns / span if span > 0 else 0.0,
             "evidence": evidence, "fix": fix_for(INPUT_FIX[evidence["loader"]], framework)}
    return [cause], span


def busy_share(trace: Trace) -> float | None:
    """Device-mean of busy_ns / span_ns (None without GPU activity)."""
    busy = device_busy(trace)
    shares = [b.busy_ns / b.span_ns for b in busy.values() if b.span_ns > 0]
    return float(np.mean(shares)) if shares else None


def diagnose(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    framework = trace.metadata.framework or "unknown"
    busy = device_busy(trace)
    has_gpu = bool(busy)
    if has_gpu:
        span = gpu_span(trace)
        attribution = {a["device"]: a for a in (done.get("attribution") or {}).get("devices") or []}
        ctx = Context(trace, done, span, framework, busy, attribution)
        causes = [c for build in GPU_CAUSES if (c := build(ctx)) is not None]
    else:
        causes, span = _host_causes(trace, done, framework)
    ranked = sorted((c for c in causes if c["lost_ns"] > 0), key=lambda c: (-c["lost_ns"], CAUSE_NAMES.index(c["cause"])))
    utilization = busy_share(trace)
    starved = utilization is not None and utilization < HEALTHY_MIN_BUSY
    completeness = completeness_check.judge(trace)
    if not completeness["answerable"]:
        primary = incomplete_primary(completeness, ranked)
    elif ranked and (ranked[0]["share"] > NONE_THRESHOLD or starved):
        primary = ranked[0]
    else:
        largest = ranked[0] if ranked else None
        primary = {"cause": "none", "lost_ns": 0, "share": 0.0,
                   "evidence": {"largest_cause": largest["cause"] if largest else None,
                                "largest_share": largest["share"] if largest else 0.0,
                                "threshold": NONE_THRESHOLD, "busy_share": utilization},
                   "fix": NONE_FIX}
    nothing = (done.get("attribution") or {}).get("total_by_cause", {}).get(NOTHING, 0)
    n = len(busy)
    return {"primary": primary, "causes": ranked, "span_ns": span, "has_gpu_activity": has_gpu,
            "framework": framework, "threshold": NONE_THRESHOLD, "busy_share": utilization,
            "healthy_min_busy": HEALTHY_MIN_BUSY, "unexplained_idle_ns": int(round(nothing / n)) if n else 0,
            "completeness": completeness}


def incomplete_primary(completeness: dict[str, Any], ranked: list[dict[str, Any]]) -> dict[str, Any]:
    """The `incomplete_trace` primary: which blocking problems, what the recorded part shows, how to record."""
    blocking = [p for p in completeness["problems"] if p["blocking"]]
    largest = ranked[0] if ranked else None
    evidence = {"problems": [p["kind"] for p in blocking],
                "largest_cause": largest["cause"] if largest else None,
                "largest_share": largest["share"] if largest else 0.0}
    return {"cause": INCOMPLETE_TRACE, "lost_ns": 0, "share": 0.0, "evidence": evidence,
            "fix": blocking[0]["fix"] if blocking else None}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return diagnose(trace, done)
