"""Utilization-over-time plot for the markdown report (matplotlib, Agg backend: no display needed).

Data: ``gaps.devices[*].timeline`` of the analysis document (per device, the span cut into equal buckets,
each with its busy-union fraction). One step line per device, x in ms from the trace's time origin.
A multi-rank run document also gets per-rank bars. Both return PNG bytes; the CLI writes the files.
"""

from __future__ import annotations

from typing import Any

from ..document import Document, RunDocument


def utilization_series(doc: Document | dict[str, Any]) -> list[tuple[int, list[int], list[float]]]:
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


def utilization_png(doc: Document | dict[str, Any]) -> bytes | None:
    """The utilization plot as PNG bytes; None when the document has no utilization timeline."""
    series = utilization_series(doc)
    if not series:
        return None
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
    return _png(fig)


def ranks_png(doc: RunDocument | dict[str, Any]) -> bytes | None:
    """Per-rank bars of a run document: GPU utilization, and collective time split into transfer and wait
    (or, without collectives, each rank's mean step time). None for a one-trace document."""
    ranks = doc.get("ranks") or []
    if not ranks:
        return None
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = [str(r["rank"]) for r in ranks]
    x = np.arange(len(ranks))
    util = [100.0 * (r["utilization"] or 0.0) for r in ranks]
    transfer = np.asarray([r["collective_transfer_ns"] for r in ranks], dtype=float) / 1e6
    wait = np.asarray([r["collective_wait_ns"] for r in ranks], dtype=float) / 1e6
    fig = Figure(figsize=(min(20.0, max(6.0, 0.25 * len(ranks) + 3)), 5.5), dpi=110)
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.bar(x, util, color="#4C72B0")
    top.set_ylabel("GPU utilization %")
    top.set_ylim(0, 100)
    straggler = (doc.get("imbalance") or {}).get("straggler_rank")
    if straggler is not None and str(straggler) in labels:
        top.bar(
            [labels.index(str(straggler))],
            [util[labels.index(str(straggler))]],
            color="#C44E52",
            label=f"straggler (rank {straggler})",
        )
        top.legend(loc="lower right")
    if transfer.any() or wait.any():
        bottom.bar(x, transfer, color="#55A868", label="collective transfer")
        bottom.bar(x, wait, bottom=transfer, color="#DD8452", label="collective wait")
        bottom.set_ylabel("NCCL time (ms)")
    else:  # no collectives: the step time each rank took instead
        mean_step = np.asarray([r["mean_step_ns"] or 0 for r in ranks], dtype=float) / 1e6
        bottom.bar(x, mean_step, color="#8172B3", label="mean step time")
        bottom.set_ylabel("mean step (ms)")
    bottom.set_xlabel("rank")
    bottom.legend(loc="upper right")
    step = max(1, len(ranks) // 32)
    bottom.set_xticks(x[::step], labels[::step])
    fig.tight_layout()
    return _png(fig)


def _png(fig: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
