"""What-if: replay the trace's dependency graph unchanged (replay_error), with each cause's remedy applied
(remedies[]), and its critical path (tracelens/replay; definitions in docs/analyses.md, "whatif").

    replay_error      replayed vs recorded span of the graph's points, and mean step time, (replayed - recorded)
                      / recorded
    gain_ns           replayed span unchanged - replayed span with the remedy (the replay's own error cancels)
    predicted_span_ns recorded span - gain_ns; predicted_step_ns: recorded mean step - (replayed mean step
                      unchanged - with the remedy); null where the remedied replay has no positive step time
    gain_share        gain_ns / recorded span
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

import numpy as np

from ..replay import engine
from ..replay.critical import critical_path
from ..replay.graph import Graph, point_rows
from ..replay.remedies import NOT_MODELED, NOT_MODELED_REASONS, REMEDIES, Context, Outcome
from ..trace import DRIVER, GPU_ACTIVITY_KINDS, RUNTIME, STEP, Trace
from .columns import event_columns
from .migrations import migration_mask
from .schedule import run_beside, run_sections


def relative(replayed: float | None, recorded: float | None) -> float | None:
    """(replayed - recorded) / recorded, or None where either is unknown or the recorded one is 0."""
    if replayed is None or not recorded:
        return None
    return (replayed - recorded) / recorded


class Timed(Protocol):
    """What a replay's outcome says (``Outcome`` of one trace, ``RunOutcome`` of a run)."""

    span_ns: int
    step_ns: float | None
    step_count: int


def outcome_errors(recorded: Timed, replayed: Timed) -> dict[str, Any]:
    """The recorded and replayed span and mean step, and their relative errors (``replay_error``'s own keys, and
    each rank's in a run)."""
    return {
        "recorded_span_ns": recorded.span_ns,
        "replayed_span_ns": replayed.span_ns,
        "span_error": relative(replayed.span_ns, recorded.span_ns),
        "steps": recorded.step_count,
        "recorded_step_ns": recorded.step_ns,
        "replayed_step_ns": replayed.step_ns,
        "step_error": relative(replayed.step_ns, recorded.step_ns),
    }


def replay_error_fields(
    g: Graph, recorded: Timed, base: Timed, typical: Timed, migrations: int = 0
) -> dict[str, Any]:
    """``replay_error`` of a trace's or a run's graph: the unchanged replay and the model replay (every lag at
    its median) against the recording. ``migrations``: the unlaunched ops that are unified-memory migrations, which
    no call launches (.migrations): not counted as ops that lost their launch call."""
    return {
        "points": int(g.size),
        "blocking_calls": int((g.call_waits | g.call_queued).sum()),
        **outcome_errors(recorded, base),
        "model_span_error": relative(typical.span_ns, recorded.span_ns),
        "model_step_error": relative(typical.step_ns, recorded.step_ns),
        "unlaunched_gpu_ops": int((g.op_launch_call < 0).sum()) - migrations,
        "gpu_ops": int(g.op_row.size),
    }


# Size limits of the replay. Memory: the graph holds ~59 bytes per point (numpy's live bytes) and the section
# peaks at ~87 bytes per point of numpy arrays above what analyze held before it, ~92 bytes of RSS (the Nsight
# export replicated x1000, 20.3M points: analyze's peak 3,115 MiB = 1.64x the 1,903 MiB export, the whatif section
# running alone on ~1,290 MiB; 3,340 MiB = 1.76x before benchmarks/results/kwhat27.md). The replay adds ~0.95 MiB
# per MiB of this export family whatever its size, so analyze stays above 1.5x wherever the replay runs on it; the
# x1512 export (30.7M points, ~2.75 GiB more at this rate: ~4.8 GiB against the bound's 4,323 MiB) stays skipped:
# MAX_POINTS = 30M is not raised. Time: the compiled solver (replay/_replay_solve.c) visits each point and edge
# once per replay (the unchanged one, the model one, one per remedy), a few ns each; plans, remedies and the
# critical path are numpy passes over the points: the section grows with the points alone (CPU, shared 2-core
# machine: 1.4 s at x100 against a 3.3 s load, 21 s at x1000 against a 37 s load: ~1.4x per point, the cache
# misses of 10x larger arrays).
MAX_POINTS = 30_000_000
# Without the compiled solver (no C compiler at install time) the numpy batches solve: one batch per *cut* (each
# blocking call's end, each wake-up of an idle host thread by another, each collective participant's end, in
# sequence), ~9 µs per cut per replay whatever its size, ~60 µs per cut over the section's replays: 100,000 cuts
# (the x100 export has 64,400, 63,600 of them wake-ups) is ~6 s.
MAX_CUTS_WITHOUT_SOLVER = 100_000


# The model replay (every lag at its device's median) is held to this error against the recording; beyond it,
# replay_error says which kind of lag the median does not represent (``model_reason``).
MODEL_ERROR_LIMIT = 0.02
# The lag kinds the model replay sets to their device's median, and why the median can miss each.
MODEL_LAGS = {
    "queued_gaps": "the GPU's gaps between queued ops differ by op (a kernel after a copy, a library kernel's "
    "set-up), the model gives each the device's median",
    "launch_latencies": "launch latencies differ by call (a launch queued behind others, a first launch of a "
    "kernel), the model gives each the device's median",
    "wake_ups": "the host's return after what it waited for differs by wait, the model gives each the median",
}


def remedy_entry(
    cause: str, remedy: str, out: Timed, recorded: Timed, base: Timed, assumptions: str
) -> dict[str, Any]:
    """One ``remedies[]`` entry of a trace or a run: the remedied replay ``out`` against the unchanged one
    (``base``), its gain carried onto the recording."""
    gain = base.span_ns - out.span_ns
    step = None
    if recorded.step_ns is not None and base.step_ns is not None and out.step_ns is not None:
        step = recorded.step_ns - (base.step_ns - out.step_ns)
        # A step read where its work ends: when the remedied replay ends the last step's work before the
        # first step's (a short window whose first step holds the removed work), there is no step to predict.
        if out.step_ns <= 0 or step <= 0:
            step = None
    return {
        "cause": cause,
        "remedy": remedy,
        "predicted_span_ns": recorded.span_ns - gain,
        "predicted_step_ns": step,
        "gain_ns": gain,
        "gain_share": gain / recorded.span_ns if recorded.span_ns else None,
        "step_gain_share": (1 - step / recorded.step_ns) if step is not None and recorded.step_ns else None,
        "assumptions": assumptions,
    }


def _model_error_by_lag(ctx: Context, recorded: Outcome) -> dict[str, dict[str, float | None]]:
    """Per lag kind of MODEL_LAGS, the model replay's {span_error, step_error} with only that kind at its median."""
    g = ctx.graph
    plain = ~(g.edge_is_wait | g.edge_is_wake | g.edge_is_collective)
    launch_edges = plain & ctx.is_host[g.edge_src]
    event_edges = plain & ~ctx.is_host[g.edge_src]
    lag = g.lag_at_typical_stream_gaps()

    def typical(edges: np.ndarray) -> np.ndarray:
        return np.where(edges, g.edge_typical, g.edge_lag)

    graphs = {
        "queued_gaps": replace(g, lag=lag, edge_lag=typical(event_edges)),
        "launch_latencies": replace(g, edge_lag=typical(launch_edges)),
        "wake_ups": replace(g, edge_lag=typical(g.edge_is_wait)),
    }
    out = {}
    for kind, graph in graphs.items():  # three replays, only where the model is off by more than the limit
        o = ctx.outcome(graph)
        out[kind] = {
            "span_error": relative(o.span_ns, recorded.span_ns),
            "step_error": relative(o.step_ns, recorded.step_ns),
        }
    return out


def _model_reason(error: dict[str, Any], parts: dict[str, dict[str, float | None]], graph_ops: int) -> str:
    """The lag kind whose medians alone put the model replay furthest off, in words: by the mean step where it is
    beyond the limit, else by the span."""
    step = error["model_step_error"]
    key = "model_step_error" if step is not None and abs(step) > MODEL_ERROR_LIMIT else "model_span_error"
    part_key = "step_error" if key == "model_step_error" else "span_error"
    kind = max(parts, key=lambda k: abs(parts[k][part_key] or 0.0))
    what = "mean step" if part_key == "step_error" else "span"
    why = MODEL_LAGS[kind]
    if kind == "launch_latencies" and graph_ops:
        # each op of a CUDA graph launch starts at its own delay behind the one launch call: its place in the
        # graph, whose own edges the trace does not record
        why += f"; here {graph_ops:,} ops of CUDA graph launches each start at their own delay behind their launch"
    return (
        f"{kind.replace('_', ' ')} at their median alone put the model replay's {what} "
        f"{100 * (parts[kind][part_key] or 0.0):+.1f}% off (all lags: {100 * error[key]:+.1f}%): {why}"
    )


def _skipped(reason: str) -> dict[str, Any]:
    return {
        "replay_error": None,
        "remedies": [],
        "not_modeled": list(NOT_MODELED),
        "not_modeled_reasons": dict(NOT_MODELED_REASONS),
        "critical_path": None,
        "reason": reason,
    }


def graph_points(trace: Trace) -> int:
    """The replay graph's size before it is built, an upper bound: 2 points per host API row or step marker on a
    thread (nested rows included), 2 per GPU op."""
    cols = event_columns(trace)
    return 2 * (  # count_nonzero: no int64 sum over the masks
        np.count_nonzero(cols.of_kind(RUNTIME, DRIVER, STEP) & (cols.tid >= 0))
        + np.count_nonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))
    )


def whatif(trace: Trace) -> dict[str, Any]:
    rows = None
    if 2 * event_columns(trace).kind.size <= MAX_POINTS:
        # it fits whatever its rows: they are found once, for the count and the graph (no masks made twice)
        rows = point_rows(trace)
        points = 2 * (rows[0].size + rows[1].size)
    else:
        points = graph_points(trace)
    if points > MAX_POINTS:
        return _skipped(f"the trace is too large to replay: {points:,} graph points (limit {MAX_POINTS:,})")
    ctx = Context(trace, rows)
    del rows
    g = ctx.graph
    if g.op_row.size == 0:
        return _skipped("no GPU activity: the replay models how host calls and GPU ops wait on each other")
    if engine.native_solver() is None:
        cuts = engine.cut_count(g)
        if cuts > MAX_CUTS_WITHOUT_SOLVER:
            return _skipped(
                f"too many blocking calls, host wake-ups and matched collective kernels to replay without the "
                f"compiled solver: {cuts:,} (limit {MAX_CUTS_WITHOUT_SOLVER:,})"
            )
    # the replays after the graph: each remedy (its model and its replay), the model replay and the critical
    # path read the context only, so they run as tasks on a second thread too where the graph is small enough that
    # a second task's working arrays beside the first's are cheap (TWO_THREADS_MAX_POINTS): within analyze, only on
    # its other worker once that has no section of its own to run (schedule.run_beside: two threads while the other
    # worker ran sections cost ~3% of the process's CPU on the 406 MB Kineto trace for no wall time); one at a time
    # in this order otherwise (each task keeps what its entry says, not its replay's times)
    tasks: dict[str, Callable[[], Any]] = {
        CRITICAL_TASK: partial(_critical_task, ctx),
        **{cause: partial(_remedy_task, ctx, cause) for cause in remedy_task_order()},
        MODEL_TASK: lambda: _model_replay(ctx),
    }
    # the step of each point (8 bytes a point) goes once the last task that reads it is done: the remedies' replays
    # after it then have its memory (the other replays read the steps through what the unchanged one found)
    step_readers = {key for key in STEP_OF_READERS if key in tasks}

    def run_task(key: str) -> Any:
        out = tasks[key]()
        if key in step_readers:
            step_readers.discard(key)
            if not step_readers:
                ctx.release_step_of()
        return out

    if g.size <= TWO_THREADS_MAX_POINTS:
        done = run_beside(list(tasks), run_task)
    else:
        done = run_sections(list(tasks), run_task, threads=1)
    remedies: list[dict[str, Any]] = [done[cause] for cause in REMEDIES if done[cause] is not None]
    # largest gain first: by the step time where the trace has steps (the steady state), else by the span
    remedies.sort(key=lambda r: (float(r["predicted_step_ns"] or 0.0), -int(r["gain_ns"])))
    return {
        "replay_error": done[MODEL_TASK],
        "remedies": remedies,
        "not_modeled": list(NOT_MODELED),
        "not_modeled_reasons": dict(NOT_MODELED_REASONS),
        "critical_path": done[CRITICAL_TASK],
        "reason": None,
    }


# The tasks after the graph besides one per remedy. They start in the order critical path (it computes the unchanged
# replay, whose plan every replay of a remedy that changes only lags reuses), the remedies (each one's model first,
# which needs no plan; the longest first, REMEDY_TASKS_FIRST), the model replay.
CRITICAL_TASK, MODEL_TASK = "critical_path", "replay_error"
# The tasks that read each point's step (Context.step_of): the critical path (its per-step sums; the unchanged replay
# it computes finds what every replay's mean step reads) and the CUDA graph remedy (its regions are per step).
STEP_OF_READERS = (CRITICAL_TASK, "host_launch_overhead")
# Remedies whose task is the longest (the 406 MB Kineto tile: low_occupancy 43 ms, its kernel model and replay;
# host_launch_overhead 34; synchronization 30, its derived plan; the others there 0-2): started first, so that the
# two threads end together (longest first: the last task is a short one; in REMEDIES order the longest came last and
# the other thread sat idle for it, ~25 ms there).
REMEDY_TASKS_FIRST = ("low_occupancy", "host_launch_overhead", "synchronization")


def remedy_task_order() -> list[str]:
    """The remedies in the order their tasks start: REMEDY_TASKS_FIRST, then the others in REMEDIES order (the
    entries themselves are listed in REMEDIES order whatever the task order)."""
    first = [cause for cause in REMEDY_TASKS_FIRST if cause in REMEDIES]
    return first + [cause for cause in REMEDIES if cause not in first]


# Graphs up to this many points replay their remedies two at a time (the Kineto 406 MB benchmark trace: 1.45M
# points); a second task's arrays are ~50 bytes a point beside the graph's ~75.
TWO_THREADS_MAX_POINTS = 4_000_000


def _critical_task(ctx: Context) -> dict[str, Any] | None:
    """``critical_path``; then the unchanged replay's times, which no other task reads, go (their pages serve the
    remedies' replays)."""
    # (no steps: no per-step sums to make, the same empty per_step as steps of -1 give)
    path = critical_path(ctx.graph, ctx.base.times, ctx.trace, ctx.step_of if ctx.has_steps else None)
    ctx.release_base_times()
    return path


def _model_replay(ctx: Context) -> dict[str, Any]:
    """``replay_error``: the unchanged and the model replay against the recording."""
    g, recorded = ctx.graph, ctx.recorded
    typical = ctx.outcome(g.at_typical_lags(), consume=True)
    replay_error: dict[str, Any] = {
        **replay_error_fields(
            g,
            recorded,
            ctx.base,
            typical,
            int((migration_mask(ctx.trace, g.op_row) & (g.op_launch_call < 0)).sum()),
        ),
        "model_error_by_lag": None,
        "model_reason": None,
    }
    del typical  # its times (8 bytes a point) are not needed past replay_error
    if any(abs(replay_error[k] or 0.0) > MODEL_ERROR_LIMIT for k in ("model_span_error", "model_step_error")):
        parts = _model_error_by_lag(ctx, recorded)
        replay_error["model_error_by_lag"] = parts
        replay_error["model_reason"] = _model_reason(replay_error, parts, int(g.op_graph.sum()))
    return replay_error


def _remedy_task(ctx: Context, cause: str) -> dict[str, Any] | None:
    """The ``remedies[]`` entry of ``cause`` (None where the trace has nothing its remedy changes)."""
    remedy, model = REMEDIES[cause]
    changed, assumptions = model(ctx)
    if changed is None:
        return None
    # (the changed graph is read by nothing after its replay: its times are written over its own lags)
    return remedy_entry(
        cause, remedy, ctx.outcome(changed, consume=True), ctx.recorded, ctx.base, assumptions
    )


def gain_by_cause(whatif_block: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Cause -> {gain_ns, gain_share, step_gain_share} of its replayed remedy: what the diagnosis can rank causes
    by where a replay exists (it runs after this section and reads it from ``done``)."""
    remedies = (whatif_block or {}).get("remedies") or []
    return {r["cause"]: {k: r[k] for k in ("gain_ns", "gain_share", "step_gain_share")} for r in remedies}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return whatif(trace)
