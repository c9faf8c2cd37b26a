"""Derived per-event columns filled in after any reader (format-independent): each kernel's theoretical and
estimated achieved occupancy (``docs/occupancy.md``), from its launch geometry and the device's limits.

Part of the timeline layer with ``trace.py`` (docs/architecture.md): ``ingest.load`` runs :func:`enrich`, and
the occupancy section (``analyses/occupancy.py``) builds on the same :class:`KernelOccupancy`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import occupancy_calc
from .occupancy_calc import LimitsUnavailable
from .trace import KERNEL, SparseColumn, Trace, arrow_numpy, numpy_array


def enrich(trace: Trace) -> Trace:
    """Return the trace with derived columns filled (the kernels' occupancy, :func:`annotate_occupancy`)."""
    return annotate_occupancy(trace)


def _float_column(rows: _Rows, name: str) -> np.ndarray:
    """A numeric column of the rows as float64 with NaN for nulls."""
    return rows.column(name)


def _product(table: _Rows, prefix: str) -> np.ndarray:
    """x*y*z of a launch dimension; missing y/z count as 1, missing x makes the product unknown (NaN)."""
    x = _float_column(table, f"{prefix}_x")
    y = np.nan_to_num(_float_column(table, f"{prefix}_y"), nan=1.0)
    z = np.nan_to_num(_float_column(table, f"{prefix}_z"), nan=1.0)
    return x * y * z


def _shared_bytes(table: _Rows) -> np.ndarray:
    """static + dynamic shared memory; one missing counts as 0, both missing is unknown (NaN)."""
    static = _float_column(table, "static_shared_bytes")
    dynamic = _float_column(table, "dynamic_shared_bytes")
    both_missing = np.isnan(static) & np.isnan(dynamic)
    return np.where(both_missing, np.nan, np.nan_to_num(static) + np.nan_to_num(dynamic))


class _Rows:
    """Some rows of the events, read column by column as numpy."""

    def __init__(self, trace: Trace, rows: np.ndarray) -> None:
        self.trace = trace
        self.rows = rows

    def column(self, name: str) -> np.ndarray:
        return arrow_numpy(pc.cast(self.trace.take(name, self.rows), pa.float64()))

    def int64(self, name: str) -> np.ndarray:
        return arrow_numpy(self.trace.take(name, self.rows)).astype(np.int64)


def _kind_rows(trace: Trace, kind: str) -> np.ndarray:
    """Rows of one kind, from the kind column's dictionary indices (no numpy columns of the whole trace: this
    runs at load time, for :func:`annotate_occupancy`)."""
    kinds = trace.store.column("kind")
    codes = np.flatnonzero(np.asarray(kinds.dictionary.to_pylist(), dtype=object) == kind)
    if codes.size == 0:
        return np.zeros(0, np.int64)
    indices = arrow_numpy(kinds.indices)
    # a comparison per code (one, unless the dictionary repeats a value): no lookup table gathered per row
    mask = indices == codes[0]
    for code in codes[1:]:
        mask |= indices == code
    return np.flatnonzero(mask)


class KernelOccupancy:
    """Calculator results for every kernel row of a trace, plus why devices were skipped."""

    def __init__(self, trace: Trace) -> None:
        self.rows = _kind_rows(trace, KERNEL)
        kernels = _Rows(trace, self.rows)
        n = self.rows.size
        self.device = _float_column(kernels, "device")
        self.threads = _product(kernels, "block")
        self.grid = _product(kernels, "grid")
        self.registers = _float_column(kernels, "registers_per_thread")
        self.shared = _shared_bytes(kernels)
        self.duration = kernels.int64("end_ns") - kernels.int64("start_ns")
        self.reported = _float_column(kernels, "reported_occupancy")
        self.theoretical = np.full(n, np.nan)
        self.estimated = np.full(n, np.nan)
        self.waves = np.full(n, np.nan)
        self.blocks_per_sm = np.full(n, np.nan)
        self.active = np.full(n, -1, dtype=np.int32)
        self.limiter = np.full(n, -1, dtype=np.int8)
        self.grid_fill = np.full(n, np.nan)  # min(1, grid blocks / SMs)
        self.shape = np.full(n, np.nan)  # occupancy the block shape alone allows
        self.device_notes: dict[int, dict[str, Any]] = {}
        for dev in np.unique(self.device[~np.isnan(self.device)]).astype(np.int64):
            mask = self.device == dev
            info = trace.device_info(int(dev))
            note: dict[str, Any] = {
                "name": info.get("name"),
                "reason": None,
                "limits": None,
                "sm_count": info.get("sm_count"),
            }
            self.device_notes[int(dev)] = note
            if info.get("sm_count"):
                self.grid_fill[mask] = np.minimum(1.0, self.grid[mask] / int(info["sm_count"]))
            try:
                limits = occupancy_calc.device_limits(info)
            except LimitsUnavailable as why:
                note["reason"] = str(why)
                continue
            note["limits"] = limits
            self.shape[mask] = occupancy_calc.shape_occupancy(limits, self.threads[mask])
            if np.isnan(self.registers[mask]).all():
                note["reason"] = "the trace records no registers per thread for this device's kernels"
                continue
            res = occupancy_calc.compute(
                limits, self.threads[mask], self.registers[mask], self.shared[mask], self.grid[mask]
            )
            self.theoretical[mask] = res.theoretical
            self.estimated[mask] = res.estimated_achieved
            self.waves[mask] = res.waves
            self.blocks_per_sm[mask] = res.blocks_per_sm
            self.active[mask] = res.active_blocks_per_sm
            self.limiter[mask] = res.limiter


def annotate_occupancy(trace: Trace) -> Trace:
    """The trace with ``theoretical_occupancy`` and ``estimated_achieved_occupancy`` filled for kernels.

    Values the calculator cannot compute keep whatever the reader wrote (normally null).
    """
    if trace.num_events == 0:
        return trace
    occ = KernelOccupancy(trace)
    if occ.rows.size == 0 or np.isnan(occ.theoretical).all():
        return trace
    kernels = _Rows(trace, occ.rows)
    updates: dict[str, SparseColumn] = {}
    for column, values in (
        ("theoretical_occupancy", occ.theoretical),
        ("estimated_achieved_occupancy", occ.estimated),
    ):
        merged = np.where(np.isnan(values), kernels.column(column), values)
        known = ~np.isnan(merged)
        if not known.any():
            continue
        # Kernel rows only: the other rows of the column stay as the reader left them (null; no reader fills them)
        updates[column] = SparseColumn(
            occ.rows[known].astype(np.int32 if trace.num_events < 2**31 else np.int64),
            numpy_array(merged[known].astype(np.float32), pa.float32()),
        )
    return Trace(events=trace.store.with_columns(updates), devices=trace.devices, metadata=trace.metadata)
