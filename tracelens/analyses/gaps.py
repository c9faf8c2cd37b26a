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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import intervals
from ..trace import ALL_KINDS, GPU_ACTIVITY_KINDS, Trace

# Upper bounds (exclusive) of the gap-length buckets; the last bucket is open.
GAP_BUCKET_EDGES_NS: tuple[int, ...] = (10_000, 100_000, 1_000_000, 10_000_000)
GAP_BUCKET_LABELS: tuple[str, ...] = ("<10us", "10-100us", "0.1-1ms", "1-10ms", ">=10ms")
TIMELINE_BUCKETS = 50
LARGEST_GAPS = 10

T = TypeVar("T")


def memo(trace: Trace, key: str, compute: Callable[[], T]) -> T:
    """Cache a derived value on the trace object (sections share joins and unions; the trace is unchanged)."""
    store = trace.__dict__.setdefault("_tracelens_analysis_cache", {})
    if key not in store:
        store[key] = compute()
    return store[key]


class Table:
    """Equal-length named numpy columns. ``t["col"]`` is a column; ``t[mask]`` / ``t[indices]`` select rows.

    Row selections are lazy: a column is gathered when first read, so selecting rows of a wide table to
    read two of its columns costs two gathers, not one per column.
    """

    def __init__(self, columns: dict[str, np.ndarray], rows: np.ndarray | None = None) -> None:
        self._columns = columns
        self._rows = rows  # int64 row indices into the columns, or None for all rows
        self._gathered: dict[str, np.ndarray] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            if self._rows is None:
                return self._columns[key]
            if key not in self._gathered:
                self._gathered[key] = self._columns[key][self._rows]
            return self._gathered[key]
        key = np.asarray(key)
        picked = np.flatnonzero(key) if key.dtype == bool else key.astype(np.int64)
        return Table(self._columns, picked if self._rows is None else self._rows[picked])

    def __len__(self) -> int:
        if self._rows is not None:
            return int(self._rows.size)
        return len(next(iter(self._columns.values()))) if self._columns else 0

    @property
    def empty(self) -> bool:
        return len(self) == 0


@dataclass
class EventColumns:
    """The event table as plain numpy arrays (nulls as -1), read once from Arrow and shared by the sections.

    ``kind`` indexes :data:`ALL_KINDS`; ``name`` indexes ``names`` (the name dictionary, -1 for null).
    """

    kind: np.ndarray
    name: np.ndarray
    names: np.ndarray
    start: np.ndarray
    end: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    correlation_id: np.ndarray
    external_id: np.ndarray
    graph_id: np.ndarray
    bytes: np.ndarray
    step: np.ndarray
    is_dtoh: np.ndarray

    def of_kind(self, *kinds: str) -> np.ndarray:
        """Boolean mask of rows whose kind is one of ``kinds``."""
        lookup = np.zeros(len(ALL_KINDS) + 1, bool)  # the extra slot is kind -1 (unknown)
        lookup[[ALL_KINDS.index(k) for k in kinds]] = True
        return lookup[self.kind]


def _dictionary(column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    codes = pc.fill_null(array.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, array.dictionary.to_pylist()


def _ints(table: pa.Table, name: str) -> np.ndarray:
    return pc.fill_null(table.column(name), -1).to_numpy().astype(np.int64)


def event_columns(trace: Trace) -> EventColumns:
    def compute() -> EventColumns:
        table = trace.events
        kind_codes, kind_values = _dictionary(table.column("kind"))
        kind_map = np.array([ALL_KINDS.index(k) if k in ALL_KINDS else -1 for k in kind_values] + [-1], np.int64)
        name_codes, name_values = _dictionary(table.column("name"))
        copy_codes, copy_values = _dictionary(table.column("copy_kind"))
        dtoh = np.array([v == "DtoH" for v in copy_values] + [False], bool)
        return EventColumns(
            kind=kind_map[kind_codes],  # a null code (-1) picks the trailing -1
            name=name_codes,
            names=np.array(name_values, dtype=object),
            start=table.column("start_ns").to_numpy().astype(np.int64),
            end=table.column("end_ns").to_numpy().astype(np.int64),
            device=_ints(table, "device"),
            stream=_ints(table, "stream"),
            pid=_ints(table, "pid"),
            tid=_ints(table, "tid"),
            correlation_id=_ints(table, "correlation_id"),
            external_id=_ints(table, "external_id"),
            graph_id=_ints(table, "graph_id"),
            bytes=_ints(table, "bytes"),
            step=_ints(table, "step"),
            is_dtoh=dtoh[copy_codes],
        )

    return memo(trace, "event_columns", compute)


@dataclass
class DeviceBusy:
    device: int
    busy_starts: np.ndarray  # merged, sorted, disjoint
    busy_ends: np.ndarray
    first_start_ns: int
    last_end_ns: int

    @property
    def span_ns(self) -> int:
        return self.last_end_ns - self.first_start_ns

    @property
    def busy_ns(self) -> int:
        return int((self.busy_ends - self.busy_starts).sum())

    @property
    def gap_starts(self) -> np.ndarray:
        return self.busy_ends[:-1]

    @property
    def gap_ends(self) -> np.ndarray:
        return self.busy_starts[1:]


def device_busy(trace: Trace) -> dict[int, DeviceBusy]:
    """The merged busy intervals of every GPU with activity, keyed by device id."""

    def compute() -> dict[int, DeviceBusy]:
        cols = event_columns(trace)
        gpu = cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)
        devices, starts_all, ends_all = cols.device[gpu], cols.start[gpu], cols.end[gpu]
        out: dict[int, DeviceBusy] = {}
        for device in np.unique(devices):
            sel = devices == device
            starts, ends = starts_all[sel], ends_all[sel]
            s, e = intervals.merge(starts, ends)
            out[int(device)] = DeviceBusy(int(device), s, e, int(starts.min()), int(ends.max()))
        return out

    return memo(trace, "device_busy", compute)


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
    top = np.argsort(-gap_lengths, kind="stable")[:largest]
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
