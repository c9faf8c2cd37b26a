"""Kernel occupancy (the ``occupancy`` block) and the per-kernel occupancy columns of the timeline.

Definitions (``docs/occupancy.md``):
  theoretical          = active warps per SM / max warps per SM (CUDA occupancy calculator rules)
  estimated achieved   = min(active blocks per SM, grid blocks / SMs) x threads per block / max threads per SM
  occupancy            = estimated achieved where the SM count is known, else theoretical
  low                  = occupancy < LOW_OCCUPANCY, under-filled = grid blocks < SMs
  lost_ns              = sum over low or under-filled kernels of duration x (1 - occupancy)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import occupancy_calc
from ..occupancy_calc import LIMITER_NAMES, LimitsUnavailable
from ..trace import EVENT_COLUMNS, EVENT_SCHEMA, KERNEL, Trace

LOW_OCCUPANCY = 0.5
TOP_KERNELS = 10


def _float_column(table: pa.Table | _Rows, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls."""
    if isinstance(table, _Rows):
        return table.column(name)
    return pc.cast(table.column(name), pa.float64()).to_numpy(zero_copy_only=False)


def _product(table: pa.Table | _Rows, prefix: str) -> np.ndarray:
    """x*y*z of a launch dimension; missing y/z count as 1, missing x makes the product unknown (NaN)."""
    x = _float_column(table, f"{prefix}_x")
    y = np.nan_to_num(_float_column(table, f"{prefix}_y"), nan=1.0)
    z = np.nan_to_num(_float_column(table, f"{prefix}_z"), nan=1.0)
    return x * y * z


def _shared_bytes(table: pa.Table | _Rows) -> np.ndarray:
    """static + dynamic shared memory; one missing counts as 0, both missing is unknown (NaN)."""
    static = _float_column(table, "static_shared_bytes")
    dynamic = _float_column(table, "dynamic_shared_bytes")
    both_missing = np.isnan(static) & np.isnan(dynamic)
    return np.where(both_missing, np.nan, np.nan_to_num(static) + np.nan_to_num(dynamic))


class _Rows:
    """Some rows of an event table, read column by column as numpy (cheaper than an Arrow take of a table)."""

    def __init__(self, events: pa.Table, rows: np.ndarray) -> None:
        self.events = events
        self.rows = rows

    def column(self, name: str) -> np.ndarray:
        return _float_column(self.events, name)[self.rows]

    def int64(self, name: str) -> np.ndarray:
        return self.events.column(name).to_numpy().astype(np.int64)[self.rows]


def _kind_mask(kind: pa.ChunkedArray, value: str) -> np.ndarray:
    """Rows whose dictionary-encoded kind equals ``value``, compared on the dictionary indices."""
    parts = []
    for chunk in kind.chunks:
        codes = np.flatnonzero(np.asarray(chunk.dictionary.to_pylist(), dtype=object) == value)
        indices = chunk.indices.to_numpy(zero_copy_only=False)
        parts.append(np.isin(indices, codes) if codes.size else np.zeros(len(chunk), dtype=bool))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


class _KernelOccupancy:
    """Calculator results for every kernel row of a trace, plus why devices were skipped."""

    def __init__(self, trace: Trace) -> None:
        events = trace.events
        self.rows = np.flatnonzero(_kind_mask(events.column("kind"), KERNEL))
        kernels = _Rows(events, self.rows)
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
        self.active = np.full(n, -1, dtype=np.int64)
        self.limiter = np.full(n, -1, dtype=np.int8)
        self.device_notes: dict[int, dict[str, Any]] = {}
        for dev in np.unique(self.device[~np.isnan(self.device)]).astype(np.int64):
            mask = self.device == dev
            info = trace.device_info(int(dev))
            note: dict[str, Any] = {"name": info.get("name"), "reason": None, "limits": None}
            self.device_notes[int(dev)] = note
            try:
                limits = occupancy_calc.device_limits(info)
            except LimitsUnavailable as why:
                note["reason"] = str(why)
                continue
            note["limits"] = limits
            if np.isnan(self.registers[mask]).all():
                note["reason"] = "the trace records no registers per thread for this device's kernels"
                continue
            res = occupancy_calc.compute(limits, self.threads[mask], self.registers[mask], self.shared[mask], self.grid[mask])
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
    events = trace.events
    if events.num_rows == 0:
        return trace
    occ = _KernelOccupancy(trace)
    if occ.rows.size == 0 or np.isnan(occ.theoretical).all():
        return trace
    for column, values in (("theoretical_occupancy", occ.theoretical), ("estimated_achieved_occupancy", occ.estimated)):
        full = _float_column(events, column)
        full[occ.rows] = np.where(np.isnan(values), full[occ.rows], values)
        arr = pa.array(full.astype(np.float32), type=pa.float32(), mask=np.isnan(full))
        events = events.set_column(EVENT_COLUMNS.index(column), EVENT_SCHEMA.field(column), arr)
    return Trace(events=events, devices=trace.devices, metadata=trace.metadata)


def _weighted(values: np.ndarray, weights: np.ndarray) -> float | None:
    ok = np.isfinite(values)
    total = weights[ok].sum()
    if not ok.any() or total <= 0:
        return None
    return float((values[ok] * weights[ok]).sum() / total)


def _json_float(x: Any) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _top_kernels(trace: Trace, occ: _KernelOccupancy, occupancy: np.ndarray, lost: np.ndarray) -> list[dict[str, Any]]:
    """Launch configurations (name, device, threads, registers, shared) with the most lost time."""
    keep = np.flatnonzero(lost > 0)
    if keep.size == 0:
        return []
    names = trace.events.column("name").take(pa.array(occ.rows[keep], pa.int64()))
    frame = pd.DataFrame(
        {
            "name": pc.cast(names, pa.string()).to_pandas().fillna(""),
            "device": occ.device[keep],
            "threads": occ.threads[keep],
            "registers": occ.registers[keep],
            "shared": occ.shared[keep],
            "duration": occ.duration[keep].astype(np.float64),
            "lost": lost[keep],
            "occ_x_dur": (occupancy * occ.duration)[keep],
            "theo_x_dur": (occ.theoretical * occ.duration)[keep],
            "waves_x_dur": (occ.waves * occ.duration)[keep],
            "limiter": occ.limiter[keep],
            "under": (occ.blocks_per_sm < 1)[keep],
        }
    )
    keys = ["name", "device", "threads", "registers", "shared"]
    groups = frame.groupby(keys, sort=False, dropna=False)
    summary = groups.agg(
        count=("duration", "size"),
        total_ns=("duration", "sum"),
        lost_ns=("lost", "sum"),
        occ_x_dur=("occ_x_dur", "sum"),
        theo_x_dur=("theo_x_dur", "sum"),
        waves_x_dur=("waves_x_dur", "sum"),
        under_count=("under", "sum"),
        limiter=("limiter", "first"),  # one configuration on one device has one limiter
    ).reset_index()
    summary = summary.sort_values("lost_ns", ascending=False).head(TOP_KERNELS)
    out = []
    for row in summary.itertuples(index=False):  # at most TOP_KERNELS rows
        total = row.total_ns
        out.append(
            {
                "name": row.name,
                "device": int(row.device),
                "count": int(row.count),
                "total_ns": int(total),
                "lost_ns": int(round(row.lost_ns)),
                "occupancy": _json_float(row.occ_x_dur / total) if total > 0 else None,
                "theoretical": _json_float(row.theo_x_dur / total) if total > 0 else None,
                "waves": _json_float(row.waves_x_dur / total) if total > 0 else None,
                "under_filled_count": int(row.under_count),
                "limiter": LIMITER_NAMES[row.limiter] if row.limiter >= 0 else None,
                "threads_per_block": _int_or_none(row.threads),
                "registers_per_thread": _int_or_none(row.registers),
                "shared_bytes_per_block": _int_or_none(row.shared),
            }
        )
    return out


def _int_or_none(x: float) -> int | None:
    return int(x) if np.isfinite(x) else None


def occupancy_report(trace: Trace) -> dict[str, Any]:
    """The ``occupancy`` block (see docs/occupancy.md)."""
    occ = _KernelOccupancy(trace)
    # Basis: estimated achieved where the SM count makes it computable, otherwise theoretical.
    occupancy = np.where(np.isfinite(occ.estimated), occ.estimated, occ.theoretical)
    computed = np.isfinite(occupancy)
    under = occ.blocks_per_sm < 1  # NaN compares False: unknown SM count never counts as under-filled
    low = computed & (occupancy < LOW_OCCUPANCY)
    counted = computed & (low | under)
    lost = np.where(counted, occ.duration * (1.0 - np.clip(occupancy, 0.0, 1.0)), 0.0)

    per_device = []
    not_computed = []
    for dev, note in sorted(occ.device_notes.items()):
        mask = occ.device == dev
        dur = occ.duration[mask]
        c = computed[mask]
        limits = note["limits"]
        limiter_ns = {
            name: int(dur[occ.limiter[mask] == code].sum()) for code, name in enumerate(LIMITER_NAMES)
        }
        entry = {
            "device": dev,
            "name": note["name"],
            "compute_capability": f"{limits.compute_major}.{limits.compute_minor}" if limits else None,
            "sm_count": limits.sm_count if limits else None,
            "limits_source": sorted(set(limits.sources.values())) if limits else [],
            "kernel_count": int(mask.sum()),
            "kernel_ns": int(dur.sum()),
            "computed_count": int(c.sum()),
            "computed_kernel_ns": int(dur[c].sum()),
            "not_computed_reason": note["reason"]
            or (None if c.all() else f"{int((~c).sum())} kernels lack launch configuration or exceed device limits"),
            "basis": "estimated_achieved" if np.isfinite(occ.estimated[mask]).any() else "theoretical",
            "time_weighted_theoretical": _weighted(occ.theoretical[mask], dur),
            "time_weighted_estimated_achieved": _weighted(occ.estimated[mask], dur),
            "time_weighted_reported": _weighted(occ.reported[mask], dur),
            "low_count": int(low[mask].sum()),
            "low_ns": int(dur[low[mask]].sum()),
            "under_filled_count": int(under[mask].sum()),
            "under_filled_ns": int(dur[under[mask]].sum()),
            "lost_ns": int(round(lost[mask].sum())),
            "limiter_ns": limiter_ns,
        }
        per_device.append(entry)
        if note["reason"]:
            not_computed.append({"device": dev, "reason": note["reason"], "kernel_count": int(mask.sum())})
    no_device = int(np.isnan(occ.device).sum())
    if no_device:
        not_computed.append({"device": None, "reason": "kernel has no device id", "kernel_count": no_device})
    return {
        "low_threshold": LOW_OCCUPANCY,
        "kernel_count": int(occ.rows.size),
        "computed_count": int(computed.sum()),
        "lost_ns": int(round(lost.sum())),
        "per_device": per_device,
        "not_computed": not_computed,
        "top_low_occupancy_kernels": _top_kernels(trace, occ, occupancy, lost),
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return occupancy_report(trace)
