"""The what-if section in words, shared by the terminal and markdown renderers: one line per remedy,
"fixing X: step 153 ms → 125 ms (−18%)", and the critical path's shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .units import fmt_ns, fmt_pct

MIN_SHOWN_GAIN = 0.001  # remedies that shorten the step (or span) by less than this are not listed


def remedy_lines(doc: Mapping[str, Any]) -> list[str]:
    """One plain-text line per remedy that gains at least MIN_SHOWN_GAIN, largest first (names are tracelens's
    own cause keys)."""
    whatif = doc.get("whatif")
    if not isinstance(whatif, dict):
        return []
    base = whatif.get("replay_error") or {}
    lines = []
    for r in whatif.get("remedies") or []:
        if not isinstance(r, dict) or (r.get("gain_ns") or 0) <= 0:
            continue
        if r.get("predicted_step_ns") is not None and base.get("recorded_step_ns"):
            before, after = base["recorded_step_ns"], r["predicted_step_ns"]
            what = "step"
        else:
            before, after = base.get("recorded_span_ns"), r.get("predicted_span_ns")
            what = "span"
        change = (after - before) / before if before else None
        if change is not None and change > -MIN_SHOWN_GAIN:
            continue  # rounding noise, or a remedy that costs more than it saves here
        pct = "" if change is None else f" (−{fmt_pct(abs(change))})"
        lines.append(
            f"fixing {r.get('cause')} ({r.get('remedy')}): {what} {fmt_ns(before)} → {fmt_ns(after)}{pct}"
        )
    return lines


def _markers_mean_step(doc: Mapping[str, Any]) -> float | None:
    """The steps' mean by their markers: the trace's ``summary.steps.mean_ns``; a run's, its ranks' mean
    steps weighted by their step counts."""
    steps = (doc.get("summary") or {}).get("steps")
    if isinstance(steps, dict) and steps.get("mean_ns"):
        return float(steps["mean_ns"])
    ranks = [
        r
        for r in doc.get("ranks") or []
        if isinstance(r, dict) and r.get("mean_step_ns") and r.get("step_count")
    ]
    count = sum(r["step_count"] for r in ranks)
    return sum(r["mean_step_ns"] * r["step_count"] for r in ranks) / count if count else None


def step_basis_line(doc: Mapping[str, Any]) -> str | None:
    """Where the replay's step (``recorded_step_ns``: read where each step's work ends) shows another figure than
    the step markers' mean the report gives elsewhere: which is which. None where they read the same."""
    replayed = ((doc.get("whatif") or {}).get("replay_error") or {}).get("recorded_step_ns")
    markers = _markers_mean_step(doc)
    if not replayed or markers is None or fmt_ns(replayed) == fmt_ns(markers):
        return None
    return (
        f"step: read where each step's work ends, {fmt_ns(replayed)} on average; the step markers' mean is "
        f"{fmt_ns(markers)}"
    )


def is_run_replay(doc: Mapping[str, Any]) -> bool:
    """The document's replay is a run's (its ranks' graphs joined: ``replay_error.joined`` is there)."""
    error = (doc.get("whatif") or {}).get("replay_error")
    return isinstance(error, dict) and "joined" in error


def replay_line(doc: Mapping[str, Any]) -> str | None:
    error = (doc.get("whatif") or {}).get("replay_error")
    if not isinstance(error, dict):
        return None
    step = error.get("step_error")
    line = f"replayed unchanged: span off by {fmt_pct(error.get('span_error'))}" + (
        f", mean step by {fmt_pct(step)}" if step is not None else ""
    )
    if "joined" in error:  # a run: its ranks joined at their collectives, or why not
        line += (
            f" (ranks joined at {error.get('collectives_joined')} collectives)"
            if error["joined"]
            else f" (ranks not joined: {error.get('join_reason')})"
        )
    reason = error.get("model_reason")
    if isinstance(reason, str):  # the model replay (every lag at its median) is beyond 2%: why
        line += f"; the model alone is over 2% off: {reason}"
    return line


def critical_path_line(doc: Mapping[str, Any]) -> str | None:
    path = (doc.get("whatif") or {}).get("critical_path")
    if not isinstance(path, dict):
        return None
    shares = path.get("shares") or {}
    parts = ", ".join(f"{name.replace('_', ' ')} {fmt_pct(share)}" for name, share in shares.items() if share)
    where = "on the host" if path.get("on_host") else "on the GPU"
    return f"critical path ({fmt_ns(path.get('length_ns'))}) {where}: {parts}"
