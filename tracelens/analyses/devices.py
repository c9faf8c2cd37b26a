"""Per-GPU busy time, span and utilization (the ``devices`` block).

busy_ns   = length of the union of all kernel, memcpy and memset intervals on the device
span_ns   = last end - first start of those intervals
utilization = busy_ns / span_ns (0 when span is 0)

The busy union split by what runs (the parts add up to busy_ns exactly):
kernel_union_ns = length of the union of the device's kernel intervals
copies_only_ns  = length of the union of its memcpy intervals less the kernel union (copies, no kernel)
memsets_only_ns = length of the union of its memset intervals less the kernel and copy unions
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from .. import intervals
from ..document import DeviceUtilization
from ..trace import ALL_KINDS, GPU_ACTIVITY_KINDS, KERNEL, MEMCPY, MEMSET, Trace
from .columns import device_busy, event_columns
from .kinds import kind_mask
from .masked_sums import count_where, sum_where

__all__ = ["DeviceUtilization", "busy_by_kind", "device_utilization", "section"]


def _length(starts: np.ndarray, ends: np.ndarray) -> int:
    return int((ends - starts).sum())


def busy_by_kind(
    starts: np.ndarray, ends: np.ndarray, kind: np.ndarray, busy_ns: int | None = None
) -> tuple[int, int, int]:
    """One device's busy union split as (kernel union, copies only, memsets only), from its GPU rows'
    intervals and kind codes: each part is the kind's union less the unions of the kinds before it.
    ``busy_ns``: the length of the union of all the rows, where the caller holds it (``device_busy``)."""

    def union(k: str) -> tuple[np.ndarray, np.ndarray]:
        sel = kind == ALL_KINDS.index(k)
        return intervals.merge(starts[sel], ends[sel])

    kernels, copies = union(KERNEL), union(MEMCPY)
    if busy_ns is not None and bool((ends >= starts).all()):
        # Proper intervals: |C \ K| = |C| - |C n K| (each copy union interval's overlap with the kernel union,
        # a search per copy), and the three parts add up to the busy union, so |M \ (K u C)| = busy - |K| -
        # |C \ K|: no subtraction, and no merge of the kernels and copies together (0.3 s a device at x1512).
        kernel_ns = _length(*kernels)
        copies_ns = _length(*copies) - int(intervals.overlap_with_union(*copies, *kernels).sum())
        return kernel_ns, copies_ns, busy_ns - kernel_ns - copies_ns
    memsets = union(MEMSET)
    copies_only = intervals.subtract(*copies, *kernels)
    kernels_or_copies = intervals.merge(
        np.concatenate([kernels[0], copies[0]]), np.concatenate([kernels[1], copies[1]])
    )
    memsets_only = intervals.subtract(*memsets, *kernels_or_copies)
    return _length(*kernels), _length(*copies_only), _length(*memsets_only)


def device_utilization(trace: Trace) -> list[DeviceUtilization]:
    """Busy/span/utilization and per-kind counts and summed durations for every GPU with activity."""
    cols = event_columns(trace)
    busy_by_device = device_busy(trace)
    on = kind_mask(cols.kind, GPU_ACTIVITY_KINDS)  # one pass over the run of GPU kind codes
    on &= cols.device >= 0
    gpu = np.flatnonzero(on)  # gathers by index: faster
    del on
    gpu_device = cols.device[gpu]
    out: list[DeviceUtilization] = []
    for dev, busy in sorted(busy_by_device.items()):
        # one device's GPU rows read at a time: not every GPU op's kind, times and duration at once
        rows = gpu[gpu_device == dev]
        kind, start, end = cols.kind[rows], cols.start[rows], cols.end[rows]
        del rows
        duration = end - start
        per_kind = {}
        for k in GPU_ACTIVITY_KINDS:
            sel = kind == ALL_KINDS.index(k)
            per_kind[k] = (count_where(sel), int(sum_where(duration, sel)))  # (no compressed copies)
        del duration, sel
        span, busy_ns = busy.span_ns, busy.busy_ns  # (busy_ns: a sum over the union on each read)
        kernel_union, copies_only, memsets_only = busy_by_kind(start, end, kind, busy_ns)
        del kind, start, end
        out.append(
            DeviceUtilization(
                id=dev,
                name=trace.device_info(dev).get("name"),
                busy_ns=busy_ns,
                span_ns=span,
                utilization=(busy_ns / span) if span > 0 else 0.0,
                first_start_ns=busy.first_start_ns,
                last_end_ns=busy.last_end_ns,
                kernel_count=per_kind[KERNEL][0],
                kernel_ns=per_kind[KERNEL][1],
                memcpy_count=per_kind[MEMCPY][0],
                memcpy_ns=per_kind[MEMCPY][1],
                memset_count=per_kind[MEMSET][0],
                memset_ns=per_kind[MEMSET][1],
                kernel_union_ns=kernel_union,
                copies_only_ns=copies_only,
                memsets_only_ns=memsets_only,
            )
        )
    return out


def section(trace: Trace, done: dict[str, Any]) -> list[dict[str, Any]]:
    return [asdict(d) for d in device_utilization(trace)]
