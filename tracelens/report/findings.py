"""One sentence per diagnosis finding, with its numbers, for the terminal and the markdown report.

Each cause's sentence is part of its ``Cause`` (``analyses/diagnosis/<cause>.py``), built from its structured
evidence (``docs/json.md``, "Evidence by cause"); the JSON document keeps only the structure. Output is plain
text: names from the traced program are quoted as they are, so callers escape the sentence for their medium
(markdown: ``escape.md``).
"""

from __future__ import annotations

from typing import Any

from ..analyses.diagnosis import PRIMARY_ONLY, incomplete_trace, sentence_of
from ..analyses.diagnosis import memcpy as memcpy_cause
from ..analyses.diagnosis import severity as finding_severity
from .units import fmt_ns, fmt_pct

__all__ = [
    "caveats",
    "critical_path_clause",
    "finding_severity",
    "gain_clause",
    "memcpy_checks",
    "problem_sentence",
    "sentence",
    "utilization_sentence",
]


def problem_sentence(problem: dict[str, Any]) -> str:
    """A completeness problem (``diagnosis.completeness.problems[]``) as one sentence with its numbers."""
    text = incomplete_trace.problem_clause(problem)
    return text[0].upper() + text[1:] + "."


def caveats(diagnosis: dict[str, Any]) -> list[str]:
    """The non-blocking completeness problems as sentences: the answer stands, these figures are affected."""
    problems = ((diagnosis or {}).get("completeness") or {}).get("problems") or []
    return [problem_sentence(p) for p in problems if isinstance(p, dict) and not p.get("blocking")]


def utilization_sentence(summary: dict[str, Any]) -> str | None:
    """ "GPU busy 99.3%: kernels 2.3%, copies only 97.0%": ``summary.gpu_utilization`` and its split by what ran
    (``summary.utilization_by_kind``; a part that rounds to 0.0% is left out, kernels always shown). None
    without GPU activity."""
    busy = summary.get("gpu_utilization")
    if busy is None:
        return None
    text = f"GPU busy {fmt_pct(busy)}"
    split = summary.get("utilization_by_kind")
    if isinstance(split, dict):
        parts = [f"kernels {fmt_pct(split.get('kernels'))}"]
        parts += [
            f"{label} {fmt_pct(split.get(key))}"
            for key, label in (("copies_only", "copies only"), ("memsets_only", "memsets only"))
            if fmt_pct(split.get(key)) not in ("0.0%", "-")
        ]
        text += ": " + ", ".join(parts)
    return text


# Why a cause is ranked by its lost-time estimate (``gain_reason``, diagnosis/ranking.py), in words.
ESTIMATE_REASONS = {
    "no_replay": "the trace has no replay",
    "short_window": "the window is under 1 ms, too short to replay",
    "not_modeled": "the replay has no model of its fix",
    "no_change": "the replay's model of its fix finds nothing of it to change here",
    "other_remedy": "its fix is not the one the replay models",
    "one_time": "profiling after warm-up removes exactly that one-time time",
    "unlaunched": "the replay cannot tie most GPU ops to a launch call, so it cannot move them",
}


def gain_clause(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str | None:
    """How the cause is ranked (docs/analyses.md, "Ranking"): by the replay's prediction, "Replay: fixing it
    saves 90.0% of the step (to 323 µs)." (``predicted_gain_ns``, ``gain_basis``; where that is more than the cause's
    lost time, which then ranks it, the sentence says so), or "…saves no time here…"
    where the replay applied its fix and gained nothing; by its lost time where no prediction applies ("Not
    predicted (…): ranked by its lost time.", ``gain_reason``). None for `none` and `incomplete_trace`."""
    gain, span = cause.get("predicted_gain_ns"), diagnosis.get("span_ns")
    reason = cause.get("gain_reason")
    if isinstance(reason, str):
        # ranked by its lost time: a replay figure, where there is one, would contradict the ranking
        return f"Not predicted ({ESTIMATE_REASONS.get(reason, reason)}): ranked by its lost time."
    if not isinstance(gain, (int, float)) or not span or cause.get("gain_basis") not in ("step", "span"):
        return None
    share = gain / span
    if share <= 0:
        return "Replay: fixing it saves no time here, so it ranks below every cause that may gain."
    if cause["gain_basis"] == "step" and cause.get("predicted_step_ns") is not None:
        text = (
            f"Replay: fixing it saves {fmt_pct(share)} of the step (to {fmt_ns(cause['predicted_step_ns'])})"
        )
    else:
        text = f"Replay: fixing it saves {fmt_pct(share)} of the span"
    lost = cause.get("lost_ns")
    if isinstance(lost, (int, float)) and gain > lost:
        # rank_ns = min(lost, gain): the replay's figure alone, beside a smaller lost time, read as the ranking's
        return f"{text}, more than its own lost time ({fmt_pct(lost / span)} of the span), which ranks it."
    return text + "."


def critical_path_clause(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str | None:
    """ "The critical path runs on the host: 92.0% of it." for the primary cause when the replay's critical path
    is on the host (``diagnosis.critical_path``), else None (also for ``none`` and ``incomplete_trace``)."""
    path = diagnosis.get("critical_path")
    primary = diagnosis.get("primary") or {}
    if (
        not isinstance(path, dict)
        or not path.get("on_host")
        or cause.get("cause") != primary.get("cause")
        or cause.get("cause") in PRIMARY_ONLY
    ):
        return None
    return f"The critical path runs on the host: {fmt_pct(path.get('host_share'))} of it."


def sentence(cause: dict[str, Any], diagnosis: dict[str, Any] | None = None) -> str:
    """The finding as one sentence with its numbers (plain text; escape it for markdown), then the replay's
    predicted gain of its fix and, for the primary, where the critical path runs (when on the host)."""
    diagnosis = diagnosis or {}
    build = sentence_of(str(cause.get("cause")))
    text = f"{cause.get('cause')}: {fmt_ns(cause.get('lost_ns'))} lost."
    if build is not None and isinstance(cause.get("evidence"), dict):
        try:
            text = build(cause, diagnosis)
        except (
            KeyError,
            TypeError,
            ValueError,
        ):  # a document written by another version: fall back, never crash
            pass
    extra = [c for c in (gain_clause(cause, diagnosis), critical_path_clause(cause, diagnosis)) if c]
    return " ".join([text, *extra])


def memcpy_checks(memcpy: dict[str, Any], framework: str | None) -> list[tuple[str, str | None]]:
    """The memcpy section's checks (``memcpy.findings[]``, data) as (sentence, fix) pairs: worded by the
    diagnosis's memcpy cause, the fix from its one fix table for the framework."""
    checks = [c for c in memcpy.get("findings") or [] if isinstance(c, dict)]
    return [
        (memcpy_cause.check_sentence(c), memcpy_cause.check_fix(c, framework or "unknown")) for c in checks
    ]
