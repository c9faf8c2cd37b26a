"""Per-GPU busy time, span and utilization (the ``devices`` block).

busy_ns   = length of the union of all kernel, memcpy and memset intervals on the device
span_ns   = last end - first start of those intervals
utilization = busy_ns / span_ns (0 when span is 0)
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..document import DeviceUtilization
from ..trace import ALL_KINDS, GPU_ACTIVITY_KINDS, KERNEL, MEMCPY, MEMSET, Trace
from .columns import device_busy, event_columns

__all__ = ["DeviceUtilization", "device_utilization", "section"]


def device_utilization(trace: Trace) -> list[DeviceUtilization]:
    """Busy/span/utilization and per-kind counts and summed durations for every GPU with activity."""
    cols = event_columns(trace)
    busy_by_device = device_busy(trace)
    gpu = cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)
    device, kind, duration = cols.device[gpu], cols.kind[gpu], cols.end[gpu] - cols.start[gpu]
    out: list[DeviceUtilization] = []
    for dev, busy in sorted(busy_by_device.items()):
        on_device = device == dev
        per_kind = {}
        for k in GPU_ACTIVITY_KINDS:
            sel = on_device & (kind == ALL_KINDS.index(k))
            per_kind[k] = (int(sel.sum()), int(duration[sel].sum()))
        span = busy.span_ns
        out.append(
            DeviceUtilization(
                id=dev,
                name=trace.device_info(dev).get("name"),
                busy_ns=busy.busy_ns,
                span_ns=span,
                utilization=(busy.busy_ns / span) if span > 0 else 0.0,
                first_start_ns=busy.first_start_ns,
                last_end_ns=busy.last_end_ns,
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
