"""Utilization-over-time plot for the markdown report (matplotlib, Agg backend: no display needed).

Data: ``gaps.devices[*].timeline`` of the analysis document (per device, the span cut into equal buckets,
each with its busy-union fraction). One step line per device, x in ms from the trace's time origin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def utilization_series(doc: dict[str, Any]) -> list[tuple[int, list[int], list[float]]]:
    """(device, bucket edges in ns, busy fraction per bucket) for every device with a timeline."""
    gaps = doc.get("gaps")
    devices = gaps.get("devices") if isinstance(gaps, dict) else None
    series = []
    for entry in devices or []:
        timeline = entry.get("timeline") if isinstance(entry, dict) else None
        if not isinstance(timeline, dict):
            continue
        edges, values = timeline.get("edges_ns") or [], timeline.get("utilization") or []
        if len(values) >= 1 and len(edges) == len(values) + 1:
            series.append((entry.get("device"), list(edges), list(values)))
    return series


def write_utilization_plot(doc: dict[str, Any], path: str | Path) -> bool:
    """Write the PNG at ``path``; False (and no file) when the document has no utilization timeline."""
    series = utilization_series(doc)
    if not series:
        return False
    # Figure + the Agg canvas directly: no pyplot (its import and global state cost ~0.15 s per report).
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for device, edges, values in series:
        xs = [e / 1e6 for e in edges]
        # A step line: each bucket's value held across the bucket.
        ax.stairs([100 * v for v in values], xs, label=f"GPU {device}", linewidth=1.2)
    ax.set_xlabel("time since trace start (ms)")
    ax.set_ylabel("GPU busy (%)")
    ax.set_ylim(0, 105)
    ax.set_title("GPU utilization over time (busy fraction per bucket)")
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend(loc="lower right", fontsize="small", ncol=min(4, len(series)))
    fig.tight_layout()
    fig.savefig(str(path), format="png")
    return True
