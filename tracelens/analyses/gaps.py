"""Idle gaps per GPU: where no kernel, memcpy or memset runs on any stream of the device.

Definitions (docs/analyses.md, "gaps"):
    busy union  = union of the device's kernel, memcpy and memset intervals, across all its streams
    gap         = a hole in the busy union inside [first start, last end) of the device
    idle_ns     = sum of gap lengths = span_ns - busy_ns
    histogram   = gap count and summed length per duration bucket (<10 us, 10-100 us, 0.1-1 ms, 1-10 ms, >=10 ms)
    timeline    = the span cut into TIMELINE_BUCKETS equal integer buckets; per bucket the busy-union length
                  inside it / bucket length (a fraction, never above 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import intervals
from ..trace import Trace
from .columns import DeviceBusy, device_busy
from .topk import largest_first

# Upper bounds (exclusive) of the gap-length buckets; the last bucket is open.
GAP_BUCKET_EDGES_NS: tuple[int, ...] = (10_000, 100_000, 1_000_000, 10_000_000)
GAP_BUCKET_LABELS: tuple[str, ...] = ("<10us", "10-100us", "0.1-1ms", "1-10ms", ">=10ms")
TIMELINE_BUCKETS = 50
LARGEST_GAPS = 10


def gap_histogram(lengths: np.ndarray) -> list[dict[str, Any]]:
    """Count and total length of gaps per duration bucket."""
    bucket = np.searchsorted(np.asarray(GAP_BUCKET_EDGES_NS), lengths, side="right")
    counts = np.bincount(bucket, minlength=len(GAP_BUCKET_LABELS))
    totals = np.bincount(bucket, weights=lengths, minlength=len(GAP_BUCKET_LABELS))
    lows = (0, *GAP_BUCKET_EDGES_NS)
    highs = (*GAP_BUCKET_EDGES_NS, None)
    return [
        {"bucket": label, "min_ns": lo, "max_ns": hi, "count": int(c), "total_ns": int(round(t))}
        for label, lo, hi, c, t in zip(GAP_BUCKET_LABELS, lows, highs, counts, totals, strict=True)
    ]


def utilization_timeline(busy: DeviceBusy, buckets: int = TIMELINE_BUCKETS) -> dict[str, Any]:
    """Busy-union fraction per equal bucket of the device span (integer edges, fewer buckets when span < n)."""
    span = busy.span_ns
    n = max(1, min(buckets, span))
    edges = busy.first_start_ns + (np.arange(n + 1, dtype=np.int64) * span) // n
    covered = intervals.overlap_with_union(edges[:-1], edges[1:], busy.busy_starts, busy.busy_ends)
    widths = np.diff(edges)
    fraction = np.where(widths > 0, covered / np.maximum(widths, 1), 0.0)
    return {
        "start_ns": int(edges[0]),
        "edges_ns": [int(x) for x in edges],
        "utilization": [float(min(1.0, f)) for f in fraction],
    }


def device_gaps(busy: DeviceBusy, largest: int = LARGEST_GAPS) -> dict[str, Any]:
    gap_lengths = busy.gap_ends - busy.gap_starts
    top = largest_first(gap_lengths, largest)
    return {
        "device": busy.device,
        "span_ns": busy.span_ns,
        "busy_ns": busy.busy_ns,
        "idle_ns": int(gap_lengths.sum()),
        "gap_count": int(gap_lengths.size),
        "histogram": gap_histogram(gap_lengths),
        "largest": [{"start_ns": int(busy.gap_starts[i]), "duration_ns": int(gap_lengths[i])} for i in top],
        "timeline": utilization_timeline(busy),
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return {
        "bucket_edges_ns": list(GAP_BUCKET_EDGES_NS),
        "devices": [device_gaps(b) for b in device_busy(trace).values()],
    }
