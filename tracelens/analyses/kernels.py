"""Per-kernel-name totals over all devices (the ``kernels`` block), like nsys ``cuda_gpu_kern_sum``.

For every distinct kernel name (kind ``kernel`` rows; duration = end_ns - start_ns):

count, total_ns, min_ns, max_ns   plain aggregates of the durations
avg_ns                            total_ns / count
median_ns                         median of the durations (mean of the middle two for an even count)
stdev_ns                          sample standard deviation (n - 1 in the denominator); 0 for a single launch
time_fraction                     total_ns / summed duration of all kernels (NOT of wall time), 0-1

Names are sorted by total_ns descending, then name. ``by_name`` lists every name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..trace import KERNEL, Trace
from .columns import event_columns


def kernel_summary(trace: Trace) -> dict[str, Any]:
    """Count, summed time and the per-name statistics of every kernel in the trace."""
    cols = event_columns(trace)
    is_kernel = np.flatnonzero(cols.of_kind(KERNEL))  # gathers by index: faster than by mask
    if not is_kernel.size:
        return {"count": 0, "total_ns": 0, "distinct_names": 0, "by_name": []}
    # Group on the name dictionary's integer codes (strings only for the distinct names at the end).
    frame = pd.DataFrame({"code": cols.name[is_kernel], "dur": cols.end[is_kernel] - cols.start[is_kernel]})
    grouped = frame.groupby("code", sort=False)["dur"]
    stats = grouped.agg(["count", "sum", "min", "max", "median", "std"]).reset_index()
    names = np.append(cols.names, "").astype(object)  # code -1 (null name) picks the trailing ""
    stats["name"] = names[stats["code"].to_numpy()].astype(str)
    stats["std"] = stats["std"].fillna(0.0)  # a single launch has no spread
    stats = stats.sort_values(["sum", "name"], ascending=[False, True], kind="stable")
    total = int(frame["dur"].sum())
    by_name = [
        {
            "name": name,
            "count": int(count),
            "total_ns": int(total_ns),
            "avg_ns": float(total_ns) / float(count),
            "median_ns": float(median),
            "min_ns": int(lo),
            "max_ns": int(hi),
            "stdev_ns": float(std),
            "time_fraction": (float(total_ns) / total) if total > 0 else 0.0,
        }
        for name, count, total_ns, lo, hi, median, std in zip(
            stats["name"],
            stats["count"],
            stats["sum"],
            stats["min"],
            stats["max"],
            stats["median"],
            stats["std"],
            strict=True,
        )
    ]
    return {"count": int(len(frame)), "total_ns": total, "distinct_names": len(by_name), "by_name": by_name}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return kernel_summary(trace)
