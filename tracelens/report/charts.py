"""Charts GitHub renders inline in markdown (mermaid ``xychart-beta``): no image to upload.

- Lost GPU time by cause: one horizontal bar per cause of the diagnosis, in ms.
- GPU busy over time: one line per device (up to MAX_LINES), the devices' bucketed busy fractions
  (``gaps.devices[].timeline``) re-binned onto one shared time axis, since each device's buckets cover its own
  span.

Only tracelens's own words reach a chart (cause names, numbers, "GPU <id>" labels from integer ids), so
nothing from the traced program needs escaping here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..document.types import Document
from .plots import utilization_series

BUCKETS = 50
MAX_LINES = 8


def _number(value: float) -> str:
    """Three significant digits (whole numbers from 100), positional: mermaid's xychart lexer reads no exponent
    (``[+-]?(digits[.digits] | .digits)``), so 0.00005 written "5e-05" broke the chart."""
    if value >= 100:
        return f"{value:.0f}"
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")


def lost_time_chart(doc: Document | dict[str, Any]) -> list[str]:
    """Mermaid lines (fenced) for the lost time by cause, or [] when no cause lost time."""
    diagnosis = doc.get("diagnosis")
    causes = [c for c in (diagnosis or {}).get("causes") or [] if isinstance(c, dict) and c.get("lost_ns")]
    if not causes:
        return []
    ms = [c["lost_ns"] / 1e6 for c in causes]
    top = max(ms)
    # Horizontal: cause names are long, and side by side under vertical bars they overlap.
    return [
        "```mermaid",
        "xychart-beta horizontal",
        '    title "Lost GPU time by cause (ms)"',
        "    x-axis [" + ", ".join(str(c["cause"]) for c in causes) + "]",
        f'    y-axis "ms" 0 --> {_number(top * 1.1)}',
        "    bar [" + ", ".join(_number(v) for v in ms) + "]",
        "```",
    ]


def rebinned(
    series: list[tuple[Any, list[int], list[float]]], buckets: int = BUCKETS
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Edges of ``buckets`` equal bins over all devices' spans, and each device's busy fraction per bin.

    A device's value is held constant inside each of its own buckets, so a bin's value is the overlap-weighted
    mean of the device buckets it covers; outside the device's span the device counts as idle.
    """
    lo = min(e[0] for _, e, _ in series)
    hi = max(e[-1] for _, e, _ in series)
    grid = np.linspace(lo, hi, buckets + 1)
    width = np.diff(grid)
    out = []
    for _, edges, values in series:
        e = np.asarray(edges, np.float64)
        v = np.asarray(values, np.float64)
        # Busy time up to each grid edge: the integral of the step function, interpolated inside a bucket.
        cumulative = np.concatenate([[0.0], np.cumsum(v * np.diff(e))])
        busy_to = np.interp(grid, e, cumulative, left=0.0, right=cumulative[-1])
        out.append(np.divide(np.diff(busy_to), width, out=np.zeros_like(width), where=width > 0))
    return grid, out


def utilization_chart(doc: Document | dict[str, Any]) -> list[str]:
    """Mermaid lines (fenced) for busy % over time, or [] without a timeline."""
    series = utilization_series(doc)[:MAX_LINES]
    if not series:
        return []
    grid, values = rebinned(series)
    span_ms = (grid[-1] - grid[0]) / 1e6
    title = (
        "GPU busy over time (%)"
        if len(series) == 1
        else "GPU busy over time (%): "
        + ", ".join(f"line {i + 1} = GPU {int(d)}" for i, (d, _, _) in enumerate(series))
    )
    lines = [
        "```mermaid",
        "xychart-beta",
        f'    title "{title}"',
        f'    x-axis "ms since the first GPU op" 0 --> {_number(span_ms)}',
        '    y-axis "busy %" 0 --> 100',
    ]
    lines.extend("    line [" + ", ".join(f"{100 * x:.1f}" for x in v) + "]" for v in values)
    return [*lines, "```"]


# The device time breakdown of the communication section, one stacked text bar per device (terminal and
# markdown alike: block characters need no image and survive any table cell).
BREAKDOWN_PARTS = (
    ("computation_only_ns", "█", "computation only"),
    ("communication_overlapped_ns", "▓", "communication overlapped by computation"),
    ("communication_exposed_ns", "▒", "communication exposed"),
    ("memcpy_exposed_ns", "░", "memcpy/memset not overlapped"),
    ("idle_ns", "·", "idle"),
)
BAR_WIDTH = 40


def stacked_bar(breakdown: Mapping[str, Any], width: int = BAR_WIDTH) -> str:
    """``width`` characters, each part's share of the span by largest remainder (the parts sum to the span)."""
    values = [max(int(breakdown.get(key) or 0), 0) for key, _, _ in BREAKDOWN_PARTS]
    total = sum(values)
    if total <= 0:
        return ""
    # Integer arithmetic: equal remainders are exactly equal, so ties go to the earlier part, not to float noise.
    cells = [v * width // total for v in values]
    remainders = [v * width % total for v in values]
    for i in sorted(range(len(values)), key=lambda i: (-remainders[i], i))[: width - sum(cells)]:
        cells[i] += 1
    return "".join(char * int(n) for (_, char, _), n in zip(BREAKDOWN_PARTS, cells, strict=True))


def bar_legend() -> str:
    return ", ".join(f"{char} {label}" for _, char, label in BREAKDOWN_PARTS)
