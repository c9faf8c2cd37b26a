"""none: the primary when nothing is worth fixing (no lost time, never in ``causes``).

The primary is ``none`` when no cause's rank share (its lost time, or less where the what-if replay predicts its
fix saves less) exceeds :data:`NONE_THRESHOLD` and the GPUs are busy at least :data:`HEALTHY_MIN_BUSY` of their
span (a starved GPU is never healthy: then the largest cause is primary whatever its share). A cause can lose
more than the threshold and still rank below it: its fix alone is predicted to save less, because other work
(often the host's own) then sets the pace. The evidence names the cause that loses the most, so the sentence
never says that nothing loses time when something does.
"""

from __future__ import annotations

from typing import Any

from ...units import fmt_pct
from .cause import Finding, Verdict

NAME = "none"
# A cause must cost more than a tenth of the span to be worth a change: below that, profiling noise and
# step-to-step variation are of the same order.
NONE_THRESHOLD = 0.10
# GPUs busy less than half their span are starved whatever the causes' shares: the verdict names the largest.
HEALTHY_MIN_BUSY = 0.5
FIX = f"No cause loses more than {NONE_THRESHOLD:.0%} of the span and the GPUs are busy most of it: no bottleneck to fix."
# when a cause loses more than the threshold but the replay predicts its fix alone saves less
FIX_BOUND_UP = (
    f"No single fix is predicted to save more than {NONE_THRESHOLD:.0%} of the span, though a cause loses more than "
    "that: its time is bound up with other work that then sets the pace (see the what-if remedies)."
)


def primary(ranked: list[Finding], busy_share: float | None) -> Finding:
    largest = ranked[0] if ranked else None
    # the largest lost time; ties go to the ranking's order (max keeps the first)
    most_lost = max(ranked, key=lambda c: c["lost_ns"]) if ranked else None
    bound_up = most_lost is not None and most_lost["share"] > NONE_THRESHOLD
    return {
        "cause": NAME,
        "lost_ns": 0,
        "share": 0.0,
        "evidence": {
            "largest_cause": largest["cause"] if largest else None,
            "largest_share": largest["rank_share"] if largest else 0.0,
            "threshold": NONE_THRESHOLD,
            "busy_share": busy_share,
            "most_lost_cause": most_lost["cause"] if most_lost else None,
            "most_lost_share": most_lost["share"] if most_lost else 0.0,
            "most_lost_rank_share": most_lost["rank_share"] if most_lost else 0.0,
        },
        "fix": FIX_BOUND_UP if bound_up else FIX,
    }


def sentence(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str:
    ev = cause.get("evidence") or {}
    threshold = ev.get("threshold", diagnosis.get("threshold"))
    most_lost = ev.get("most_lost_cause")
    bound_up = bool(most_lost) and threshold is not None and (ev.get("most_lost_share") or 0.0) > threshold
    if bound_up:  # something loses more than the threshold: say so, and why it is not the verdict
        text = (
            f"No fix is predicted to save more than {fmt_pct(threshold)} of the span: {most_lost} loses "
            f"{fmt_pct(ev['most_lost_share'])} of it, but the replay predicts its fix alone saves "
            f"{fmt_pct(ev.get('most_lost_rank_share'))} (other work then sets the pace)"
        )
    else:
        text = f"No cause loses more than {fmt_pct(threshold)} of the span"
    if ev.get("busy_share") is not None:
        text += f"; the GPUs are busy {fmt_pct(ev['busy_share'])} of it"
    if ev.get("largest_cause") and not (bound_up and ev["largest_cause"] == most_lost):
        text += f" ({'first ranked' if bound_up else 'largest'}: {ev['largest_cause']}, {fmt_pct(ev.get('largest_share'))})"
    return text + "."


VERDICT = Verdict(NAME, sentence)
