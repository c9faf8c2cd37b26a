"""Each outermost op name against the roofline of its GPU (``ops.roofline``, docs/analyses.md "compute")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ... import gpu_specs
from ...trace import Trace
from ..columns import device_busy
from ..frame_free import sort_order, text_rank
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
    links = gpu_specs.links_of_device(info)
    if not links.memory_bytes_per_s:
        return None
    peak = compute["peak_flops_per_s"] / len(devices)  # one device's (kernels of an op run on one)
    bandwidth = float(links.memory_bytes_per_s)
    # pd.DataFrame({"gpu": ..., "flops": ..., "bytes": ...}).dropna(): the op names with all three, ascending
    index = np.intersect1d(
        np.intersect1d(gpu_ns.index, flops.index[~np.isnan(flops.values)]),
        nbytes.index[~np.isnan(nbytes.values)],
    )
    gpu = gpu_ns.values[np.searchsorted(gpu_ns.index, index)]
    flop = flops.values[np.searchsorted(flops.index, index)]
    moved = nbytes.values[np.searchsorted(nbytes.index, index)]
    kept = (gpu > 0) & (flop > 0) & (moved > 0)
    if not kept.any():
        return None
    index, gpu, flop, moved = index[kept], gpu[kept], flop[kept], moved[kept]
    achieved = flop / (gpu / 1e9)
    intensity = flop / moved
    attainable = np.minimum(peak, intensity * bandwidth)
    efficiency = achieved / attainable
    lost = gpu * np.clip(1 - efficiency, 0, None)
    names = op_names(trace).names
    label = np.array([str(names[c]) for c in index.tolist()] + [""], dtype=object)[:-1]
    # sort_values(["lost", "label"], ascending=[False, True]).head(limit)
    top = sort_order([lost, text_rank(label)], [False, True])[:limit]
    rows = [
        SimpleNamespace(
            label=label[i],
            gpu=g,
            flops=f,
            bytes=m,
            achieved=a,
            intensity=n,
            attainable=t,
            efficiency=e,
            lost=x,
        )
        for i, g, f, m, a, n, t, e, x in zip(
            top.tolist(),
            *(
                column[top].tolist()
                for column in (gpu, flop, moved, achieved, intensity, attainable, efficiency, lost)
            ),
            strict=True,
        )
    ]
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
            for r in rows
        ],
    }
