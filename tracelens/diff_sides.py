"""The two sides of a ``tracelens diff``: whether each can answer (its GPU side recorded; for a run, every rank's),
whether both have steps, and what else differs between them besides the change (GPU count or models, rank,
profiler). ``diff.compare`` puts both into its result; definitions in docs/json.md, "The diff document"."""

from __future__ import annotations

from typing import Any, cast

from .document import Document, summary_of
from .units import fmt_ns

Doc = Document


def incomplete_reason(doc: Doc) -> str | None:
    """Why a trace, or a run, cannot answer (its blocking completeness problems, with their counts; a run's ranks
    whose trace cannot answer), or None when it can."""
    own = _own_incomplete_reason(doc)
    ranks = _ranks_incomplete(doc)
    return "; ".join(r for r in (own, ranks) if r) or None


def _ranks_incomplete(doc: Doc) -> str | None:
    """A run's ranks whose traces cannot answer (``ranks[].blocking_problems``): the run's diagnosis is its
    representative rank's, so a rank that lost its GPU side left the run's utilization over the other ranks' GPUs
    only, with nothing said."""
    rows = cast("dict[str, Any]", doc).get("ranks") or []
    blocked = [r for r in rows if isinstance(r, dict) and r.get("blocking_problems")]
    if not blocked:
        return None
    shown = ", ".join(
        f"rank {r.get('rank')} ({', '.join(str(k).replace('_', ' ') for k in r['blocking_problems'])})"
        for r in blocked[:8]
    )
    more = f" and {len(blocked) - 8} more" if len(blocked) > 8 else ""
    return f"{len(blocked)} of {len(rows)} ranks' traces cannot answer, their GPU side missing: {shown}{more}"


def _own_incomplete_reason(doc: Doc) -> str | None:
    """The document's own blocking completeness problems, worded; None when it can answer.

    A document without ``diagnosis.completeness`` (an older saved one) can answer unless its primary cause is
    ``incomplete_trace``."""
    diagnosis: Any = doc.get("diagnosis") or {}
    completeness = diagnosis.get("completeness") if isinstance(diagnosis, dict) else None
    if not isinstance(completeness, dict):
        primary = diagnosis.get("primary") if isinstance(diagnosis, dict) else None
        return (
            "incomplete trace"
            if isinstance(primary, dict) and primary.get("cause") == "incomplete_trace"
            else None
        )
    if completeness.get("answerable", True):
        return None
    parts = []
    for problem in completeness.get("problems") or []:
        if not isinstance(problem, dict) or not problem.get("blocking"):
            continue
        ev = problem.get("evidence") or {}
        if problem.get("kind") == "launches_without_gpu_activity" and ev.get("gpu_ops"):
            parts.append(
                f"{ev.get('after_last_gpu_op') or 0:,} of {ev.get('launch_calls') or 0:,} launch calls start after the "
                "last recorded GPU op (the GPU side stops early)"
            )
        elif problem.get("kind") == "launches_without_gpu_activity":
            parts.append(
                f"{ev.get('launch_calls') or 0:,} launch calls and no GPU activity recorded (the profiler lost "
                "the GPU side)"
            )
        elif problem.get("kind") == "launches_before_gpu_activity":
            parts.append(
                f"{ev.get('before_first_gpu_op') or 0:,} of {ev.get('launch_calls') or 0:,} launch calls start before "
                "the first recorded GPU op (the GPU side starts late)"
            )
        elif problem.get("kind") == "kernel_launches_without_kernels":
            n = ev.get("kernel_launch_calls") or 0
            parts.append(
                f"{n:,} kernel launch call{'' if n == 1 else 's'} and no kernel recorded (the profiler lost the "
                "kernels)"
            )
        elif problem.get("kind") == "no_gpu_activity":
            parts.append(f"no GPU activity recorded ({ev.get('host_events') or 0:,} host events only)")
        elif problem.get("kind") == "gpu_ops_without_device":
            parts.append(
                f"{ev.get('without_device') or 0:,} of {ev.get('gpu_ops') or 0:,} GPU ops name no GPU (device id "
                "missing or invalid)"
            )
        elif problem.get("kind") == "gpu_ops_without_duration":
            parts.append(
                f"{ev.get('zero_length') or 0:,} of {ev.get('gpu_ops') or 0:,} GPU ops have no duration (a missing "
                "or negative dur: their busy time is lost)"
            )
        elif problem.get("kind") == "gpu_clock_skew":
            parts.append(
                f"{ev.get('before_their_call') or 0:,} of {ev.get('matched_gpu_ops') or 0:,} GPU ops start before "
                f"the call that launched them began, by {fmt_ns(ev.get('median_ahead_ns'))} at the median (the "
                "GPU's clock is not the host's)"
            )
        else:  # a kind of a newer tracelens: its fix says what is missing
            parts.append(f"the trace's {str(problem.get('kind')).replace('_', ' ')}")
    return "; ".join(parts) or "incomplete trace"


def cannot_answer(result: dict[str, Any]) -> str | None:
    """One line saying which side of a comparison cannot answer and why, or None when both can."""
    sides = [
        (label, result[key])
        for label, key in (("BASE", "base"), ("HEAD", "head"))
        if not result[key].get("answerable", True)
    ]
    if not sides:
        return None
    return "; ".join(
        f"{label} ({side.get('path')}) cannot answer: {side.get('incomplete_reason')}"
        for label, side in sides
    )


PROFILERS = {
    "nsys": "Nsight Systems",
    "kineto": "the PyTorch profiler",
    "xplane": "the TensorFlow/JAX profiler",
}


def _gpu_models(doc: Doc) -> list[str] | None:
    """The GPUs' model names, sorted; None when a GPU has no name (the trace did not record it)."""
    names = [d.get("name") for d in cast("dict[str, Any]", doc).get("devices") or []]
    return sorted(n for n in names if n) if names and all(names) else None


MODEL_CHARS = 100  # a model name comes from the trace: a 70,000-character one pushed the diff's markdown past its budget


def _bounded(name: str) -> str:
    """A GPU model name of at most MODEL_CHARS characters (head … tail)."""
    if len(name) <= MODEL_CHARS:
        return name
    tail = (MODEL_CHARS - 1) // 3
    return f"{name[: MODEL_CHARS - 1 - tail]}…{name[-tail:]}"


def _rank(doc: Doc) -> tuple[int | None, int | None]:
    source: Any = doc.get("source") or {}
    return source.get("rank"), source.get("world_size")


def _different_ranks(base_doc: Doc, head_doc: Doc) -> str | None:
    """A line when the two traces are different ranks, or ranks of runs of different sizes (each only where both
    traces record it)."""
    (b_rank, b_world), (h_rank, h_world) = _rank(base_doc), _rank(head_doc)
    ranks = b_rank is not None and h_rank is not None and b_rank != h_rank
    worlds = bool(b_world) and bool(h_world) and b_world != h_world
    if not (ranks or worlds):
        return None

    def where(rank: int | None, world: int | None) -> str:
        return f"rank {'?' if rank is None else rank}" + (f" of {world}" if world else "")

    return (
        f"BASE is {where(b_rank, b_world)}, HEAD {where(h_rank, h_world)}: ranks of a distributed run do different "
        "work and wait on each other"
        if ranks
        else f"BASE is {where(b_rank, b_world)}, HEAD {where(h_rank, h_world)}: runs of different sizes"
    )


def caveats(base_doc: Doc, head_doc: Doc) -> list[str]:
    """Why the two traces may not measure like with like: a different number or model of GPUs, another rank of a
    distributed run, another profiler. The figures are still compared; these lines say what they then measure
    besides the change."""
    out: list[str] = []
    base_sum, head_sum = summary_of(base_doc), summary_of(head_doc)
    b_n, h_n = base_sum["device_count"], head_sum["device_count"]
    if b_n and h_n and b_n != h_n:
        out.append(
            f"BASE has activity on {b_n} GPU{'s' * (b_n != 1)}, HEAD on {h_n}: the utilization and device-mean "
            "figures compare different machines or placements"
        )
    b_fmt, h_fmt = (cast("dict[str, Any]", d.get("source") or {}).get("format") for d in (base_doc, head_doc))
    b_models, h_models = _gpu_models(base_doc), _gpu_models(head_doc)
    # Names are compared within one format only: each profiler words a model its own way.
    if b_fmt == h_fmt and b_models and h_models and sorted(set(b_models)) != sorted(set(h_models)):
        out.append(
            f"the GPU models differ (BASE {', '.join(map(_bounded, sorted(set(b_models))))}; HEAD "
            f"{', '.join(map(_bounded, sorted(set(h_models))))}): the comparison measures the hardware too"
        )
    ranks = _different_ranks(base_doc, head_doc)
    if ranks:
        out.append(ranks)
    if b_fmt in PROFILERS and h_fmt in PROFILERS and b_fmt != h_fmt:
        out.append(
            f"BASE was recorded by {PROFILERS[b_fmt]} ({b_fmt}), HEAD by {PROFILERS[h_fmt]} ({h_fmt}): their capture "
            "windows differ (a whole process, or the profiler's scheduled steps), so span-based figures may move "
            "without a code change; the mean step time compares best"
        )
    return out


def steps_on_one_side(step_means: tuple[float | None, float | None]) -> str | None:
    """One line when only one trace has steps (``step_means``: each side's ``diff.mean_step_ns``), else None.

    The mean step time is the gate's measure of speed: a head that lost its step markers (a removed
    ``profiler.step()``, a capture without the NVTX step ranges) would pass on utilization alone, however much
    slower its steps were. Such a comparison is inconclusive, as one whose trace cannot answer."""
    b_steps, h_steps = step_means
    if (b_steps is None) == (h_steps is None):
        return None
    side, other = ("HEAD", "BASE") if h_steps is None else ("BASE", "HEAD")
    return f"{side} has no steps and {other} has: the mean step time cannot be compared"
