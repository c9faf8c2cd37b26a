"""Pieces the causes' sentences share: quoted traced names, the worst device, counted nouns.

Sentences are plain text: names from the traced program are quoted as they are, so renderers escape the
sentence for their medium (markdown: ``report.escape.md``).
"""

from __future__ import annotations

from typing import Any

from ...units import fmt_ns, fmt_pct, shorten

NAME_LIMIT = 60  # a traced name longer than this is shortened head…tail: template suffixes stay visible


def quote(name: Any) -> str:
    """A traced name, shortened and quoted."""
    return f"“{shorten(str(name), NAME_LIMIT)}”"


def worst(by_device: dict[str, int]) -> tuple[str, int]:
    """The device with the largest value (ties: lowest id) and that value."""
    if not by_device:
        return "?", 0
    device = min(by_device, key=lambda d: (-by_device[d], int(d) if str(d).lstrip("-").isdigit() else 0))
    return device, by_device[device]


def calls(n: int, what: str = "call") -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def feeding(sources: Any) -> str:
    """Who feeds the GPU, by how the attribution found the threads (``attribution.devices[].feeding_threads_from``):
    "its launching thread" only where correlation ids name it; else the threads the idle was read against."""
    found = set(sources or ())
    if not found or found == {"correlation"}:
        return "its launching thread"
    if found <= {"correlation", "launch_calls"}:
        return "the threads that made launch calls (no correlation id ties a call to its op)"
    if found <= {"correlation", "launch_calls", "process"}:
        return "the host threads of its process (no correlation id names the launching one)"
    return "the host threads (no correlation id names the launching one)"


def gpu(device: str, n: int) -> str:
    return f"GPU {device}" if n > 1 or device != "0" else "The GPU"


def mean_note(cause: dict[str, Any], by_device: dict[str, int]) -> str:
    """ " (mean over 2 GPUs, GPU-time weighted: 3 ms, 40% of their idle time)" when several GPUs report; else
    nothing (the device-mean: Σ over the GPUs / n_eff, docs/analyses.md "GPU-time weighting")."""
    if len(by_device) <= 1:
        return ""
    share = (cause.get("evidence") or {}).get("share_of_idle")
    of_idle = f", {fmt_pct(share)} of their idle time" if share is not None else ""
    return f" (mean over {len(by_device)} GPUs, GPU-time weighted: {fmt_ns(cause.get('lost_ns'))}{of_idle})"
