"""Per-GPU busy time, span and utilization (the ``devices`` block).

busy_ns   = length of the union of all kernel, memcpy and memset intervals on the device
span_ns   = last end - first start of those intervals
utilization = busy_ns / span_ns (0 when span is 0)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import intervals
from ..trace import GPU_ACTIVITY_KINDS, KERNEL, MEMCPY, MEMSET, Trace


@dataclass
class DeviceUtilization:
    id: int
    name: str | None
    busy_ns: int
    span_ns: int
    utilization: float
    first_start_ns: int
    last_end_ns: int
    kernel_count: int
    kernel_ns: int
    memcpy_count: int
    memcpy_ns: int
    memset_count: int
    memset_ns: int


def device_utilization(trace: Trace) -> list[DeviceUtilization]:
    """Busy/span/utilization and per-kind counts and summed durations for every GPU with activity."""
    gpu = trace.of_kind(*GPU_ACTIVITY_KINDS)
    gpu = gpu[gpu["device"].notna()]
    out: list[DeviceUtilization] = []
    for device, rows in gpu.groupby(gpu["device"].astype("int64"), sort=True):
        starts = rows["start_ns"].to_numpy(np.int64)
        ends = rows["end_ns"].to_numpy(np.int64)
        busy = intervals.union_length(starts, ends)
        first, last = int(starts.min()), int(ends.max())
        span = last - first
        durations = ends - starts
        kinds = rows["kind"].astype(str).to_numpy()
        per_kind = {k: (int((kinds == k).sum()), int(durations[kinds == k].sum())) for k in GPU_ACTIVITY_KINDS}
        out.append(
            DeviceUtilization(
                id=int(device),
                name=trace.device_info(int(device)).get("name"),
                busy_ns=busy,
                span_ns=span,
                utilization=(busy / span) if span > 0 else 0.0,
                first_start_ns=first,
                last_end_ns=last,
                kernel_count=per_kind[KERNEL][0],
                kernel_ns=per_kind[KERNEL][1],
                memcpy_count=per_kind[MEMCPY][0],
                memcpy_ns=per_kind[MEMCPY][1],
                memset_count=per_kind[MEMSET][0],
                memset_ns=per_kind[MEMSET][1],
            )
        )
    return out


def section(trace: Trace, done: dict[str, Any]) -> list[dict[str, Any]]:
    return [asdict(d) for d in device_utilization(trace)]
