"""none: the primary when nothing is worth fixing (no lost time, never in ``causes``).

The primary is ``none`` when no cause's share exceeds :data:`NONE_THRESHOLD` and the GPUs are busy at least
:data:`HEALTHY_MIN_BUSY` of their span (a starved GPU is never healthy: then the largest cause is primary
whatever its share).
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


def primary(ranked: list[Finding], busy_share: float | None) -> Finding:
    largest = ranked[0] if ranked else None
    return {
        "cause": NAME,
        "lost_ns": 0,
        "share": 0.0,
        "evidence": {
            "largest_cause": largest["cause"] if largest else None,
            "largest_share": largest["rank_share"] if largest else 0.0,
            "threshold": NONE_THRESHOLD,
            "busy_share": busy_share,
        },
        "fix": FIX,
    }


def sentence(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str:
    ev = cause.get("evidence") or {}
    text = f"No cause loses more than {fmt_pct(ev.get('threshold', diagnosis.get('threshold')))} of the span"
    if ev.get("busy_share") is not None:
        text += f"; the GPUs are busy {fmt_pct(ev['busy_share'])} of it"
    if ev.get("largest_cause"):
        text += f" (largest: {ev['largest_cause']}, {fmt_pct(ev.get('largest_share'))})"
    return text + "."


VERDICT = Verdict(NAME, sentence)
