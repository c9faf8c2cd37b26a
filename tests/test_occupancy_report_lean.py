"""The occupancy section's report, which gathers per-configuration values to one device's launches at a time (and
to the few launches it lists), equals the report it replaced, which kept every per-launch array at once (kept here
as the reference), on hypothesis-generated traces."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings

from tests.test_occupancy_fast_paths import kernel_traces
from tracelens.analyses import occupancy as occupancy_module
from tracelens.analyses.columns import dictionary_codes, event_columns
from tracelens.analyses.occupancy import LOW_OCCUPANCY, TOP_KERNELS, occupancy_report
from tracelens.occupancy_calc import LIMITER_NAMES
from tracelens.trace import Trace
from tracelens.values import int_or_none


def _under_filled(trace: Trace, occ: occupancy_module._KernelOccupancy) -> np.ndarray:
    """Launches with fewer grid blocks than their GPU has SMs (docs/occupancy.md), whether or not their occupancy
    was computed; a launch without a grid, device or (positive) SM count is not under-filled."""
    sm_count = np.full(occ.device.size, np.nan)
    for device in np.unique(occ.device[np.isfinite(occ.device)]):  # a loop over devices
        count = trace.device_info(int(device)).get("sm_count")
        if count and count > 0:
            sm_count[occ.device == device] = count
    with np.errstate(invalid="ignore"):
        return occ.grid / sm_count < 1  # NaN compares False


def reference_top_kernels(
    trace: Trace, occ: occupancy_module._KernelOccupancy, occupancy: np.ndarray, lost: np.ndarray
) -> list[dict[str, Any]]:
    """Launch configurations (name, device, threads, registers, shared) that leave the most SM time empty,
    each launch counted as if it ran alone."""
    keep = np.flatnonzero(lost > 0)
    if keep.size == 0:
        return []
    codes, dictionary = dictionary_codes(trace.take("name", occ.rows[keep]))
    # Grouped by name code, not by name string: millions of launches would each become a Python string.
    # Codes are made canonical over the labels (a null name and "" are one label, as before).
    labels = pd.Series(list(dictionary) + [""], dtype=object).fillna("").to_numpy(dtype=object)
    canonical, label_of = pd.factorize(labels)
    duration = occ.duration[keep].astype(np.float64)
    # Launch configurations numbered by a groupby over the five keys only; each sum is a bincount over the
    # numpy columns (a 16-column frame of millions of launches cost ~0.7 GB more at peak).
    keys = pd.DataFrame(
        {
            "name": canonical[codes],
            "device": occ.device[keep],
            "threads": occ.threads[keep],
            "registers": occ.registers[keep],
            "shared": occ.shared[keep],
            # a CUDA green context's SMs (null elsewhere): its launches are a configuration of their own
            "context_sms": trace.take("context_sm_count", occ.rows[keep])
            .to_numpy(zero_copy_only=False)
            .astype(np.float64),
        }
    )
    group = keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()
    groups = int(group.max()) + 1
    first = np.full(groups, keep.size, np.int64)
    np.minimum.at(first, group, np.arange(keep.size))
    summary = keys.iloc[first].reset_index(drop=True)
    del keys

    def summed(values: np.ndarray) -> np.ndarray:  # NaN (not computed) adds nothing, as pandas' sum
        return np.bincount(group, weights=np.nan_to_num(values), minlength=groups)

    summary["count"] = np.bincount(group, minlength=groups)
    summary["total_ns"] = summed(duration)
    summary["lost_ns"] = summed(lost[keep])
    summary["occ_x_dur"] = summed((occupancy * occ.duration)[keep])
    summary["theo_x_dur"] = summed((occ.theoretical * occ.duration)[keep])
    summary["waves_x_dur"] = summed((occ.waves * occ.duration)[keep])
    summary["fill_x_dur"] = summed(occ.sm_fill()[keep] * duration)
    summary["grid_x_dur"] = summed(occ.grid[keep] * duration)
    # each mean over the launches where the figure was computed (an AMD GPU's, with no register count: none)
    summary["occ_dur"] = summed(np.where(np.isfinite(occupancy), occ.duration, 0.0)[keep])
    summary["theo_dur"] = summed(np.where(np.isfinite(occ.theoretical), occ.duration, 0.0)[keep])
    summary["waves_dur"] = summed(np.where(np.isfinite(occ.waves), occ.duration, 0.0)[keep])
    summary["under_count"] = np.bincount(group, weights=_under_filled(trace, occ)[keep], minlength=groups)
    # one configuration on one device: same shape, same limit (the first launch's values)
    summary["shape_limited"] = occ.shape_limited[keep][first]
    summary["shape"] = occ.shape[keep][first]
    summary["limiter"] = occ.limiter[keep][first]
    summary["name"] = np.asarray(label_of, dtype=object)[summary["name"].to_numpy()]
    summary = summary.sort_values(["lost_ns", "name"], ascending=[False, True]).head(TOP_KERNELS)
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
                "sm_fill": occupancy_module._json_float(row.fill_x_dur / total) if total > 0 else None,
                "grid_blocks": occupancy_module._json_float(row.grid_x_dur / total) if total > 0 else None,
                "occupancy": occupancy_module._json_float(row.occ_x_dur / row.occ_dur)
                if row.occ_dur > 0
                else None,
                "theoretical": occupancy_module._json_float(row.theo_x_dur / row.theo_dur)
                if row.theo_dur > 0
                else None,
                "shape_occupancy": occupancy_module._json_float(row.shape),
                "waves": occupancy_module._json_float(row.waves_x_dur / row.waves_dur)
                if row.waves_dur > 0
                else None,
                "under_filled_count": int(row.under_count),
                "block_shape_limited": bool(row.shape_limited),
                "limiter": LIMITER_NAMES[row.limiter] if row.limiter >= 0 else None,
                "threads_per_block": int_or_none(row.threads),
                "registers_per_thread": int_or_none(row.registers),
                "shared_bytes_per_block": int_or_none(row.shared),
                "context_sm_count": int_or_none(row.context_sms),
            }
        )
    return out


def reference_report(trace: Trace) -> dict[str, Any]:
    """The ``occupancy`` block (see docs/occupancy.md)."""
    occ = occupancy_module._KernelOccupancy(trace)
    # Basis: estimated achieved where the SM count makes it computable, otherwise theoretical.
    occupancy = np.where(np.isfinite(occ.estimated), occ.estimated, occ.theoretical)
    computed = np.isfinite(occupancy)
    under = _under_filled(trace, occ)
    low = computed & (occupancy < LOW_OCCUPANCY)
    fill = occ.sm_fill()
    grid_fill = occ.sm_fill(with_shape=False)
    standalone_lost = occ.duration * (1.0 - fill)  # 0 for excluded launches (fill 1)
    starts = event_columns(trace).start[occ.rows]
    ends = starts + occ.duration

    per_device = []
    not_computed = []
    for dev, note in sorted(occ.device_notes.items()):
        mask = occ.device == dev
        dur = occ.duration[mask]
        c = computed[mask]
        limits = note["limits"]
        limiter = occ.limiter[mask]
        limiter_ns = {name: int(dur[limiter == code].sum()) for code, name in enumerate(LIMITER_NAMES)}
        run = mask  # excluded launches take part with fill 1: they keep the SMs they share with others
        lost, under_lost = occupancy_module.empty_sm_ns_each(
            starts[run], ends[run], [fill[run], grid_fill[run]]
        )
        shape_limited = occ.shape_limited[mask]
        entry = {
            "device": dev,
            "name": note["name"],
            "compute_capability": f"{limits.compute_major}.{limits.compute_minor}" if limits else None,
            "sm_count": int(note["sm_count"]) if note["sm_count"] else None,
            "limits_source": sorted(set(limits.sources.values())) if limits else [],
            "kernel_count": int(mask.sum()),
            "kernel_ns": int(dur.sum()),
            "computed_count": int(c.sum()),
            "computed_kernel_ns": int(dur[c].sum()),
            "not_computed_reason": note["reason"]
            or (None if c.all() else occupancy_module._lacking(int((~c).sum()))),
            "basis": "estimated_achieved" if np.isfinite(occ.estimated[mask]).any() else "theoretical",
            "time_weighted_theoretical": occupancy_module._weighted(occ.theoretical[mask], dur),
            "time_weighted_estimated_achieved": occupancy_module._weighted(occ.estimated[mask], dur),
            "time_weighted_reported": occupancy_module._weighted(occ.reported[mask], dur),
            "low_count": int(low[mask].sum()),
            "low_ns": int(dur[low[mask]].sum()),
            "under_filled_count": int((under & run).sum()),
            "under_filled_ns": int(occ.duration[under & run].sum()),
            "block_shape_limited_count": int(shape_limited.sum()),
            "block_shape_limited_ns": int(dur[shape_limited].sum()),
            "register_or_shared_limited_ns": limiter_ns["registers"] + limiter_ns["shared_memory"],
            "collective_kernel_ns": int(dur[occ.collective[mask]].sum()),
            "library_kernel_ns": int(dur[occ.library[mask]].sum()),
            "library_under_filled_ns": int(occ.duration[under & occ.library & mask].sum()),
            "lost_ns": int(round(lost)),
            "under_filled_lost_ns": int(round(under_lost)),
            "block_shape_lost_ns": int(round(lost)) - int(round(under_lost)),
            "limiter_ns": limiter_ns,
        }
        per_device.append(entry)
        if note["reason"]:
            not_computed.append({"device": dev, "reason": note["reason"], "kernel_count": int(mask.sum())})
    computed_count = int(computed.sum())
    del starts, ends, fill, grid_fill, computed, under, low  # before the top configurations' own arrays
    no_device = int(np.isnan(occ.device).sum())
    if no_device:
        not_computed.append({"device": None, "reason": "kernel has no device id", "kernel_count": no_device})
    return {
        "low_threshold": LOW_OCCUPANCY,
        "kernel_count": int(occ.rows.size),
        "computed_count": computed_count,
        "lost_ns": sum(d["lost_ns"] for d in per_device),
        "under_filled_lost_ns": sum(d["under_filled_lost_ns"] for d in per_device),
        "block_shape_lost_ns": sum(d["block_shape_lost_ns"] for d in per_device),
        "per_device": per_device,
        "not_computed": not_computed,
        "top_low_occupancy_kernels": reference_top_kernels(trace, occ, occupancy, standalone_lost),
    }


@settings(max_examples=80, deadline=None)
@given(kernel_traces())
def test_occupancy_report_equals_the_reference(trace: Trace) -> None:
    assert json.dumps(occupancy_report(trace)) == json.dumps(reference_report(trace))
