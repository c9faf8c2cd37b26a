"""multi_gpu_imbalance: some GPUs do much less work than the busiest one, inside this trace or, for one rank
of a run, across the run's ranks (the run's ``imbalance``, an explicit input of :func:`diagnosis.diagnose`).

lost_ns = max(Σ over the compared devices (busiest busy_ns − busy_ns) / their number, run ``imbalance.lost_ns``).
It has no per-device term: it is a comparison between devices. The compared devices are the GPUs the trace shows
over at least MIN_SPAN_SHARE of the diagnosis span (all of them where that leaves fewer than two, so the evidence
still names the busiest and the least busy; the in-trace loss is then 0): a GPU seen for a few microseconds (a
context's first memset, a stray copy to another device) is no evidence of a split of the work, while a GPU that
waited for the busiest one is in the trace for its share of the work or, idle, from its first op to its last.
Among the compared GPUs every one counts as one: the loss is each one's wait for the busiest, outside its own span
(where the GPU-time weighting of the other causes would discount it, docs/analyses.md).
"""

from __future__ import annotations

from typing import Any

from ...units import fmt_ns
from .cause import ONLY, Cause, Context, Evidence
from .wording import worst

NAME = "multi_gpu_imbalance"

FIX = {
    "pytorch": "Balance work across GPUs: DistributedDataParallel instead of DataParallel, equal shard sizes, "
    "check the slow rank's input pipeline.",
    "tensorflow": "Use tf.distribute.MirroredStrategy / MultiWorkerMirroredStrategy with even per-replica batches.",
    "jax": "Shard evenly with pjit/shard_map; check per-host input pipelines.",
    "default": "Some GPUs do much less work than the busiest one: balance the split.",
}


# A GPU is compared when the trace shows it over at least this share of the diagnosis span (its first op's start to
# its last op's end): a GPU of the job that was given less work runs its share of each step and spans far more;
# below it, a context's first memset or a stray copy (2 us of a 100 ms window) would make the whole verdict.
MIN_SPAN_SHARE = 0.05


def _spanning(ctx: Context) -> dict[int, int]:
    """``{device: busy_ns}`` of the GPUs spanning at least MIN_SPAN_SHARE of the diagnosis span."""
    return {d: b.busy_ns for d, b in ctx.busy.items() if b.span_ns >= MIN_SPAN_SHARE * ctx.span}


def compared(ctx: Context) -> dict[int, int]:
    """``{device: busy_ns}`` of the compared GPUs: those spanning at least MIN_SPAN_SHARE of the diagnosis span;
    every GPU where fewer than two do (then nothing is lost within the trace)."""
    kept = _spanning(ctx)
    return kept if len(kept) >= 2 else {d: b.busy_ns for d, b in ctx.busy.items()}


def within_trace(busy: dict[int, int], n: int) -> float:
    """Σ over devices (busiest busy_ns − busy_ns) / n (0 with fewer than two GPUs)."""
    busiest = max(busy.values(), default=0)
    return sum(busiest - b for b in busy.values()) / n if n >= 2 else 0.0


def in_trace(ctx: Context) -> float:
    """The in-trace loss: :func:`within_trace` over the compared GPUs (0 with fewer than two of them)."""
    kept = _spanning(ctx)
    return within_trace(kept, len(kept))


def own_cause(ctx: Context, device: int | None) -> dict[str, Any] | None:
    """A device's largest own loss: ``{cause, lost_ns}`` (ties in CAUSES order), None without any."""
    if device is None:
        return None
    losses = ctx.device_losses(device)
    if not losses:
        return None
    order = [c.name for c in ctx.causes]
    cause = min(losses, key=lambda c: (-losses[c], order.index(c)))
    return {"cause": cause, "lost_ns": losses[cause]}


def evidence(ctx: Context) -> Evidence:
    busy = {d: b.busy_ns for d, b in ctx.busy.items()}
    across = ctx.imbalance.get("lost_ns") if isinstance(ctx.imbalance, dict) else None
    pool = compared(ctx)  # the busiest and the least busy among the compared GPUs
    least = min(pool, key=lambda d: (pool[d], d)) if pool else None
    most = min(pool, key=lambda d: (-pool[d], d)) if pool else None
    # Per device, not averaged: the busiest device sets the pace; the least busy waits the most, and its own
    # largest loss says what keeps it from the work the others do.
    return {
        "busy_by_device": {str(d): b for d, b in busy.items()},
        "busiest_ns": max(pool.values(), default=0),
        "busiest_device": most,
        "least_busy_device": least,
        "least_busy_own_cause": own_cause(ctx, least) if ctx.n >= 2 else None,
        "within_trace_ns": int(round(in_trace(ctx))),
        "across_ranks_ns": across,
    }


def lost(ctx: Context, ev: Evidence) -> float:
    return max(in_trace(ctx), float(ev["across_ranks_ns"] or 0))


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    busy = ev.get("busy_by_device") or {}
    if ev.get("across_ranks_ns") and ev["across_ranks_ns"] >= cause["lost_ns"]:
        return f"Ranks wait {fmt_ns(cause['lost_ns'])} on average for the busiest rank."
    least = str(ev.get("least_busy_device"))
    busiest, top = worst(busy)
    text = (
        f"GPU {least} was busy {fmt_ns(busy.get(least))} while GPU {busiest} was busy {fmt_ns(top)}: "
        f"the GPUs are {fmt_ns(cause['lost_ns'])} short of the busiest one on average"
    )
    own = ev.get("least_busy_own_cause")
    if own:
        text += f"; GPU {least}'s own largest loss is {own['cause']} ({fmt_ns(own['lost_ns'])})"
    return text + "."


CAUSE = Cause(NAME, evidence, {ONLY: FIX}, sentence, lost=lost)
