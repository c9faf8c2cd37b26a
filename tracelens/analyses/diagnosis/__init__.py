"""Diagnosis: the causes of lost GPU time in one currency, ranked, each with evidence and an evidence-aware fix.

Every cause's ``lost_ns`` estimates the GPU time a user would get back by removing that cause (an upper bound
where it must be); where the what-if replay predicts its remedy's gain, the cause is credited the smaller of the
two (``rank_ns``, :mod:`.ranking`), so causes rank against each other in one currency (docs/analyses.md,
"diagnosis"). Per-device quantities are summed over the GPUs with activity and divided by n_eff = Σ span_ns / span
(the GPUs counted by GPU time, "device-mean"; n where they share one window, docs/analyses.md "GPU-time
weighting"), so a cause never exceeds the span and a GPU touched once does not halve the others' losses.

One module per cause, each exporting one :class:`~.cause.Cause` (its lost time per device, evidence, remedy,
fixes by framework, sentence and thresholds; its definition in the module's docstring), listed once in
:data:`CAUSES`, whose order sets the names and breaks ties. ``incomplete_trace`` and ``none`` are primaries
only (:data:`PRIMARY_ONLY`: no lost time, never in ``causes``)::

    share       lost_ns / span_ns
    rank_share  rank_ns / span_ns (ranking.py: min(lost, predicted gain) where the replay predicts it)
    primary     `incomplete_trace` when the trace cannot answer (a blocking completeness problem: the GPU side
                is missing, analyses/completeness.py); else the first cause by rank_ns when its rank_share >
                NONE_THRESHOLD, or whatever its rank_share when the GPUs are busy less than HEALTHY_MIN_BUSY of
                their span; else `none`

Without GPU activity: only input_pipeline's host-side view (``input_pipeline.host_view``); the other causes
need a GPU and are absent. A new cause is one module here, one entry in CAUSES and its entries in docs/json.md
("Evidence: <cause>") and docs/analyses.md (the causes table); ``tests/test_causes.py`` checks them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import intervals
from ...document.summary import span_weighted
from ...trace import Trace
from .. import BY_KEY
from .. import completeness as completeness_check
from ..columns import busy_gpu_equivalents, device_busy
from ..names import NOTHING
from ..schedule import run_sections, usable_threads
from . import (
    communication,
    host_launch_overhead,
    incomplete_trace,
    input_pipeline,
    low_occupancy,
    memcpy,
    multi_gpu_imbalance,
    none,
    queued_gaps,
    ranking,
    startup,
    synchronization,
    unexplained_idle,
)
from .cause import Cause, Context, Sentence, Verdict
from .none import HEALTHY_MIN_BUSY, NONE_THRESHOLD

# The task name of the completeness judge among the causes' findings (no cause is named so).
COMPLETENESS = "completeness"

# The diagnosis's longest work, started first on its two threads (the order changes no result): on the x1512
# export unexplained_idle ~0.6-1.0 s, the judge ~0.2-0.3 s, host_launch_overhead ~0.3 s, every other cause < 0.05 s.
RUN_FIRST: tuple[str, ...] = (unexplained_idle.NAME, COMPLETENESS, host_launch_overhead.NAME)

# Every cause, in tie-break order (equal lost time: the earlier one ranks first).
CAUSES: tuple[Cause, ...] = (
    startup.CAUSE,
    input_pipeline.CAUSE,
    host_launch_overhead.CAUSE,
    synchronization.CAUSE,
    memcpy.CAUSE,
    low_occupancy.CAUSE,
    multi_gpu_imbalance.CAUSE,
    communication.CAUSE,
    queued_gaps.CAUSE,
    unexplained_idle.CAUSE,
)
CAUSE_NAMES: tuple[str, ...] = tuple(c.name for c in CAUSES)
BY_NAME: dict[str, Cause] = {c.name: c for c in CAUSES}
# Primary-only verdicts (never in `causes`, no lost time): the trace cannot answer, or nothing is worth fixing.
VERDICTS: tuple[Verdict, ...] = (incomplete_trace.VERDICT, none.VERDICT)
INCOMPLETE_TRACE = incomplete_trace.NAME
PRIMARY_ONLY: tuple[str, ...] = tuple(v.name for v in VERDICTS)
# The sections diagnosis reads, declared once as its ``Section.needs`` (analyses/__init__.py); ``diagnose``
# checks them.
NEEDS: tuple[str, ...] = BY_KEY["diagnosis"].needs

__all__ = [
    "BY_NAME",
    "CAUSES",
    "CAUSE_NAMES",
    "COMPLETENESS",
    "HEALTHY_MIN_BUSY",
    "INCOMPLETE_TRACE",
    "NEEDS",
    "NONE_THRESHOLD",
    "PRIMARY_ONLY",
    "SEVERITIES",
    "SEVERITY_HIGH_SHARE",
    "VERDICTS",
    "busy_share",
    "diagnose",
    "gpu_span",
    "prepare",
    "section",
    "sentence_of",
    "severity",
]


# How urgent a finding is, from its share of the span (the one severity policy; renderers only label it):
# a quarter of the span or more is the first thing to fix; above the share that makes a cause primary
# (NONE_THRESHOLD) it is worth a change; below, it is minor.
SEVERITY_HIGH_SHARE = 0.25
SEVERITIES = ("high", "medium", "low")


def severity(share: float | None) -> str:
    """``high`` (share ≥ SEVERITY_HIGH_SHARE), ``medium`` (≥ NONE_THRESHOLD) or ``low``."""
    share = share or 0.0
    return "high" if share >= SEVERITY_HIGH_SHARE else "medium" if share >= none.NONE_THRESHOLD else "low"


def sentence_of(name: str) -> Sentence | None:
    """The sentence function of a cause or a primary-only verdict (None for a name this version does not
    know: a document written by another version)."""
    entries: tuple[Cause | Verdict, ...] = (*CAUSES, *VERDICTS)
    for entry in entries:
        if entry.name == name:
            return entry.sentence
    return None


def busy_share(trace: Trace) -> float | None:
    """The GPUs' busy share of their time: Σ busy_ns / Σ span_ns over the GPUs with a span, i.e. the span-weighted
    mean of each GPU's busy_ns / span_ns (the plain mean where every span is the same); None without GPU
    activity. A GPU touched for a few microseconds weighs those microseconds, not one GPU's share."""
    timed = [b for b in device_busy(trace).values() if b.span_ns > 0]
    if not timed:
        return None
    return span_weighted([b.busy_ns for b in timed], [b.span_ns for b in timed])


def gpu_span(trace: Trace) -> int:
    busy = list(device_busy(trace).values())
    if not busy:
        return 0
    return intervals.union_length(
        np.array([b.first_start_ns for b in busy]), np.array([b.last_end_ns for b in busy])
    )


def prepare(trace: Trace) -> None:
    """Compute ahead the diagnosis's work that reads the trace alone, no section (the completeness judge; with GPU
    activity, unexplained_idle's host activity and host_launch_overhead's top names: 1.3 of its 1.4 s of CPU at
    x1512), each memoized: analyze runs this where the sections leave a core idle (before the last of the big
    sections, which run one at a time), and :func:`diagnose` then reads the values instead of computing them last,
    on the critical path. Without it the diagnosis computes them itself; the document is the same."""
    completeness_check.judged(trace)
    if device_busy(trace):
        unexplained_idle.host_activity(trace)
        host_launch_overhead.top_names(trace)


def diagnose(
    trace: Trace, done: dict[str, Any], *, imbalance: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``diagnosis`` block from the sections in ``done`` (all of :data:`NEEDS`; a section that could not be
    computed may be null) and, for one rank of a run, the run's cross-rank ``imbalance`` (``lost_ns``: the
    per-GPU wait for the busiest rank), which ``multi_gpu_imbalance`` weighs against the in-trace imbalance."""
    missing = [key for key in NEEDS if key not in done]
    if missing:
        raise ValueError(
            f"diagnosis needs the sections {', '.join(missing)}: compute them first "
            "(analyze() does, whatever sections it is asked for)"
        )
    framework = trace.metadata.framework or "unknown"
    busy = device_busy(trace)
    has_gpu = bool(busy)
    if has_gpu:
        span = gpu_span(trace)
        attribution = {a["device"]: a for a in (done["attribution"] or {}).get("devices") or []}
        ctx = Context(trace, done, span, framework, busy, attribution, CAUSES, imbalance)
        # Each cause's finding reads the trace and the sections only, so they run on two threads, and so does the
        # completeness judge: the longest first (RUN_FIRST), the judge beside unexplained_idle, so that neither
        # waits for the other on one core at the end (at x1512 the judge ran alone after the causes: 0.5-1.1 s)
        found = run_sections(
            [*RUN_FIRST, *(cause.name for cause in CAUSES if cause.name not in RUN_FIRST)],
            lambda name: (
                completeness_check.judged(trace) if name == COMPLETENESS else BY_NAME[name].finding(ctx)
            ),
            threads=usable_threads(),
        )
        judged = found.pop(COMPLETENESS, None)
        causes = [c for c in found.values() if c is not None]
    else:
        judged = None
        causes, span = input_pipeline.host_view(trace, done, framework)
    whatif = done["whatif"]
    ranked = sorted(
        (ranking.with_gain(c, BY_NAME.get(c["cause"]), whatif, span) for c in causes if c["lost_ns"] > 0),
        key=lambda c: (-c["rank_ns"], CAUSE_NAMES.index(c["cause"])),
    )
    utilization = busy_share(trace)
    starved = utilization is not None and utilization < none.HEALTHY_MIN_BUSY
    completeness = judged if judged is not None else completeness_check.judged(trace)
    if not completeness["answerable"]:
        primary = {**incomplete_trace.primary(completeness, ranked), **ranking.NO_GAIN}
    elif ranked and (ranked[0]["rank_share"] > none.NONE_THRESHOLD or starved):
        primary = ranked[0]
    else:
        primary = {**none.primary(ranked, utilization), **ranking.NO_GAIN}
    nothing = (done["attribution"] or {}).get("total_by_cause", {}).get(NOTHING, 0)
    n = busy_gpu_equivalents(busy) if busy else 0.0  # GPU-time weighted, as every cause's lost time
    return {
        "primary": primary,
        "causes": ranked,
        "span_ns": span,
        "has_gpu_activity": has_gpu,
        "framework": framework,
        "threshold": none.NONE_THRESHOLD,
        "busy_share": utilization,
        "healthy_min_busy": none.HEALTHY_MIN_BUSY,
        "unexplained_idle_ns": int(round(nothing / n)) if n else 0,
        "completeness": completeness,
        "critical_path": ranking.critical_path(whatif),
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return diagnose(trace, done)
