"""Each outermost op name against the roofline of its GPU (``ops.roofline``, docs/analyses.md "compute")."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import gpu_specs
from ...trace import Trace
from ..columns import device_busy
from .sums import OpValues
from .tree import op_names

TOP_ROOFLINE = 10


def roofline(
    trace: Trace,
    compute: dict[str, Any],
    gpu_ns: OpValues,
    flops: OpValues | None,
    nbytes: OpValues | None,
    limit: int = TOP_ROOFLINE,
) -> dict[str, Any] | None:
    """Each outermost op name against the roofline of its GPU: achieved FLOP/s over its attributed kernel
    time, arithmetic intensity (FLOPs per byte of the least memory traffic), the attainable
    min(peak, intensity x memory bandwidth), and the names losing the most kernel time to the gap,
    ``gpu_ns x (1 - achieved / attainable)``. None when the peak (``compute``) or the bandwidth is unknown or
    no op has FLOPs and bytes."""
    if (
        flops is None
        or nbytes is None
        or not compute.get("peak_flops_per_s")
        or compute.get("device_model") is None
    ):
        return None
    devices = list(device_busy(trace))
    info = trace.device_info(devices[0])
    links = gpu_specs.device_links(
        info.get("name"), info.get("compute_major"), info.get("memory_bandwidth_bytes_per_s")
    )
    if not links.memory_bytes_per_s:
        return None
    peak = compute["peak_flops_per_s"] / len(devices)  # one device's (kernels of an op run on one)
    bandwidth = float(links.memory_bytes_per_s)
    import pandas as pd  # (FLOPs counted: a trace recorded with shapes)

    table = pd.DataFrame({"gpu": gpu_ns.series(), "flops": flops.series(), "bytes": nbytes.series()}).dropna()
    table = table[(table["gpu"] > 0) & (table["flops"] > 0) & (table["bytes"] > 0)]
    if table.empty:
        return None
    table["achieved"] = table["flops"] / (table["gpu"] / 1e9)
    table["intensity"] = table["flops"] / table["bytes"]
    table["attainable"] = np.minimum(peak, table["intensity"] * bandwidth)
    table["efficiency"] = table["achieved"] / table["attainable"]
    table["lost"] = table["gpu"] * np.clip(1 - table["efficiency"], 0, None)
    names = op_names(trace).names
    table["label"] = [str(names[c]) for c in table.index]
    table = table.sort_values(["lost", "label"], ascending=[False, True]).head(limit)
    ridge = peak / bandwidth
    return {
        "peak_flops_per_s": peak,
        "memory_bytes_per_s": bandwidth,
        "memory_source": links.memory_source,
        "ridge_flops_per_byte": ridge,
        "ops": [
            {
                "name": r.label,
                "gpu_ns": int(r.gpu),
                "flops": float(r.flops),
                "bytes": float(r.bytes),
                "achieved_flops_per_s": float(r.achieved),
                "intensity_flops_per_byte": float(r.intensity),
                "bound": "compute" if r.intensity >= ridge else "memory",
                "attainable_flops_per_s": float(r.attainable),
                "efficiency": float(r.efficiency),
                "lost_ns": int(round(r.lost)),
            }
            for r in table.itertuples()
        ],
    }
