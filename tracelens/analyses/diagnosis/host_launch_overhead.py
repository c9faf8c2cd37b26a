"""host_launch_overhead: the GPU idles while its launching thread runs framework code or CUDA API calls.

lost_ns = device-mean of ``attribution.devices[].by_cause.launch + by_cause.cpu``. ``by_cause.launch`` holds the GPU's
gaps before ops launched one by one that it already had (``queued_launch``, docs/analyses.md "Queued"): the sentence
names them apart from the time the launching thread spent in API calls, and where they are most of the lost time the
fix says so (``queued_kernels``): the host kept ahead, the per-kernel gaps are the GPU's.
"""

from __future__ import annotations

from typing import Any

from ...trace import Trace
from ...units import fmt_ns, fmt_pct
from .. import ops
from ..columns import event_columns
from ..completeness import python_events
from ..feeding_names import feeding_name_sums
from ..launch import SMALL_KERNEL_NS
from ..names import CPU, LAUNCH
from .cause import TOP_NAMES, Cause, Context, Evidence, top_host_names, top_of
from .wording import feeding, gpu, mean_note, quote, worst

NAME = "host_launch_overhead"
# By count, not time: each launch costs the host the same whatever the kernel's length, so a step of thousands
# of microsecond kernels beside a few long GEMMs is still launch-bound by the tiny ones. At least half the
# launches tiny: fuse them; fewer, and the host's own code between launches is the thing to cut.
SMALL_KERNEL_COUNT_SHARE = 0.5

FIXES = {
    "graphs": {
        "pytorch": "CUDA graphs are in use, yet the GPU still waits on the host: capture what is still launched "
        "outside the graphs (see the ops named in the evidence), e.g. torch.compile(mode='reduce-overhead') "
        "over the whole step or a larger torch.cuda.graphs region.",
        "default": "CUDA graphs are in use, yet the GPU still waits on the host: capture the work still launched "
        "outside them.",
    },
    # Every GPU op already runs from a graph: nothing is left to capture; the gaps are between replays.
    "graphs_whole": {
        "pytorch": "Every GPU op already runs from CUDA graphs, yet the GPU waits on the host between replays: "
        "capture more per graph (the whole step, e.g. torch.compile(mode='reduce-overhead') over it), replay "
        "several steps per launch, or cut the host's per-step work between replays.",
        "jax": "Every GPU op already runs from CUDA graphs, yet the GPU waits on the host between replays: jit "
        "the whole step (or several steps with lax.scan) so that each dispatch carries more work.",
        "default": "Every GPU op already runs from CUDA graphs, yet the GPU waits on the host between replays: "
        "capture more work per graph or do less on the host between replays.",
    },
    # Most of the idle lies before ops the GPU already had (launched one by one, the host ahead of it): the host
    # issued fast enough, each kernel launched on its own leaves a gap on the GPU.
    "queued_kernels": {
        "pytorch": "The GPU idles before work it already had queued (the host launched ahead of it): each kernel "
        "or copy launched on its own leaves a gap on the GPU. Launch fewer, larger kernels: fuse them with torch.compile, "
        "capture them in CUDA graphs (torch.compile(mode='reduce-overhead')), use fused/foreach optimizers, or "
        "larger batches.",
        "tensorflow": "The GPU idles between ops it already had queued: fuse them, tf.function(jit_compile=True) "
        "(XLA), bigger batches.",
        "jax": "The GPU idles between ops it already had queued: jit the whole step so that XLA fuses them, bigger "
        "batches.",
        "default": "The GPU idles before work it already had queued: launch fewer, larger kernels (fuse them, "
        "CUDA graphs).",
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
# Which tracer records the Python calls, in the trace's framework's words (a JAX or TF profile never used torch's).
PYTHON_TRACERS = {
    "pytorch": "torch.profiler's with_stack=True or a Python tracer",
    "tensorflow": "the profiler's Python tracer, tf.profiler.experimental.ProfilerOptions(python_tracer_level=1)",
    "jax": "JAX's Python tracer, python_tracer_level in jax.profiler.ProfileOptions",
    "default": "a Python tracer",
}
PYTHON_TRACING_NOTE = (
    " Caution: this trace records Python calls ({count:,} Python events: {tracer}), which slows the host "
    "(several-fold where much Python runs per step); confirm the launch overhead on a profile without them before "
    "acting on it."
)


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    return int(a["by_cause"].get(LAUNCH, 0)) + int(a["by_cause"].get(CPU, 0)) if a else 0


def remedy(
    ctx: Context,
    graphs_in_use: bool,
    idle_launch: dict[str, int],
    idle_cpu: dict[str, int],
    small_count_share: float | None,
    ops_outside_graphs: int | None = None,
    idle_queued_launch: dict[str, int] | None = None,
) -> str:
    if graphs_in_use:
        return "graphs_whole" if ops_outside_graphs == 0 else "graphs"
    # (at least half of the launch and cpu idle before ops the GPU already had: the host was not the bottleneck)
    if (
        idle_queued_launch
        and 2 * ctx.mean(idle_queued_launch) >= ctx.mean(idle_launch) + ctx.mean(idle_cpu) > 0
    ):
        return "queued_kernels"
    if ctx.mean(idle_cpu) >= ctx.mean(idle_launch) and (small_count_share or 0.0) < SMALL_KERNEL_COUNT_SHARE:
        return "host_code"
    return "small_kernels"


def _on_feeding_threads(ctx: Context, category: str) -> list[dict[str, Any]] | None:
    """The top names of ``category`` on the GPUs' feeding threads only (attribution.feeding_name_sums), where some
    host thread feeds none: the trace-wide top (``top_host_names``, memoized, found ahead) named
    "uvicorn/server.py(60): serve" of another process as the launching thread's host time. None where the
    trace-wide top stands (every host thread feeds a GPU, or too many host rows)."""
    sums = feeding_name_sums(ctx.trace)
    if sums is None:
        return None
    count, total = sums[category]
    return top_of(event_columns(ctx.trace).names, count[1:], total[1:], TOP_NAMES)


def _top_names(ctx: Context, category: str) -> list[dict[str, Any]]:
    """The feeding threads' top names of ``category`` where they were summed, else the trace-wide top. An empty
    list from the feeding threads stands: a launching thread that ran no framework op has no name to give (the
    trace-wide top named a DataLoader worker process's "aten::to" as the launching thread's host time)."""
    on_feeding = _on_feeding_threads(ctx, category)
    return on_feeding if on_feeding is not None else top_host_names(ctx.trace, category)


def evidence(ctx: Context) -> Evidence:
    launch = ctx.section("launch")
    graphs = launch.get("cuda_graphs") or {}
    small = launch.get("small_kernels") or {}
    idle_launch, idle_cpu = ctx.idle(LAUNCH), ctx.idle(CPU)
    # the part of idle_launch before ops launched one by one the GPU already had (not the thread's API calls)
    idle_queued = {
        str(d): int((a.get("queued_launch") or {}).get("idle_ns", 0)) for d, a in ctx.attribution.items()
    }
    ops_outside = None
    if graphs.get("in_use"):
        pairs_ops = launch.get("gpu_ops")
        ops_outside = int(pairs_ops - graphs.get("graph_ops", 0)) if isinstance(pairs_ops, int) else None
    ev: Evidence = {
        "idle_launch_by_device": idle_launch,
        "idle_cpu_by_device": idle_cpu,
        "idle_queued_launch_by_device": idle_queued,
        "launch_latency_p50_ns": (launch.get("latency") or {}).get("p50_ns"),
        # no kernel ran (copies only): no share of kernel time or count to speak of
        "small_kernel_share": small.get("share") if small.get("total_kernel_ns") else None,
        "small_kernel_count_share": small.get("count_share") if small.get("total_kernel_ns") else None,
        "short_kernels": (launch.get("short_kernels") or {}).get("count"),
        "issue_to_execution": (launch.get("rates") or {}).get("issue_to_execution"),
        "cuda_graphs": graphs.get("in_use"),
        "ops_outside_graphs": ops_outside,
        "top_cpu_ops": _top_names(ctx, CPU),
        "top_launch_calls": _top_names(ctx, LAUNCH),
        # Which op's kernels the host spends its launches on (an unfused optimizer step: thousands).
        "launching_ops": ops.diagnosis_ops(ctx.trace).launching_ops,
        "optimizer_step": ops.diagnosis_ops(ctx.trace).optimizer_step,
    }
    ev["feeding_threads_from"] = sorted({a["feeding_threads_from"] for a in ctx.attribution.values()})
    ev["remedy"] = remedy(
        ctx,
        bool(graphs.get("in_use")),
        idle_launch,
        idle_cpu,
        small.get("count_share"),
        ops_outside,
        idle_queued,
    )
    # A Python tracer (torch.profiler's with_stack, JAX's python tracer) records every Python call, which slows
    # the host: the launch overhead it shows may be partly the profiler's own.
    ev["python_events"] = python_events(ctx.trace)
    return ev


def top_names(trace: Trace) -> None:
    """Find (memoize) the top host names the evidence reads, ahead of the diagnosis (``diagnosis.prepare``)."""
    top_host_names(trace, CPU)
    top_host_names(trace, LAUNCH)


def adjust_fix(ev: Evidence, text: str, framework: str) -> str:
    if not ev.get("python_events"):
        return text
    tracer = PYTHON_TRACERS.get(framework, PYTHON_TRACERS["default"])
    return text + PYTHON_TRACING_NOTE.format(count=ev["python_events"], tracer=tracer)


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    launch, cpu = ev.get("idle_launch_by_device") or {}, ev.get("idle_cpu_by_device") or {}
    total = {d: launch.get(d, 0) + cpu.get(d, 0) for d in set(launch) | set(cpu)}
    device, idle = worst(total)
    queued = int((ev.get("idle_queued_launch_by_device") or {}).get(device, 0))
    doing = [
        f"{what} ({fmt_ns(ns)})"
        for what, ns in (
            ("framework or Python code", cpu.get(device)),
            ("CUDA API calls", launch.get(device, 0) - queued),
        )
        if ns
    ]
    text = f"{gpu(device, len(total))} was idle {fmt_ns(idle)}"
    if doing:
        text += f" while {feeding(ev.get('feeding_threads_from'))} ran " + " and ".join(doing)
    if queued:  # (no host activity of the launching thread's explains this part: named apart)
        text += (f", and idle {fmt_ns(queued)}" if doing else "") + (
            " before GPU work it already had queued (launched one by one, the launch calls had returned)"
        )
    top_ops = ev.get("top_cpu_ops") or []
    if top_ops:
        text += f"; most host time in {quote(top_ops[0]['name'])}"
    if ev.get("small_kernel_share") is not None:
        text += (
            f"; {fmt_pct(ev['small_kernel_share'])} of kernel time is in kernels under "
            f"{fmt_ns(SMALL_KERNEL_NS)}"
        )
    if ev.get("issue_to_execution") is not None:
        text += f"; the host issues GPU work at {ev['issue_to_execution']:.2f}x the rate the GPU runs it"
    if ev.get("cuda_graphs"):
        text += f"; CUDA graphs are in use, {ev.get('ops_outside_graphs') or 0:,} GPU ops still launched outside them"
    return text + mean_note(cause, total) + "."


CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost, adjust_fix=adjust_fix)
