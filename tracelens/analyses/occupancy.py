"""Kernel occupancy (the ``occupancy`` block); the per-kernel occupancy columns of the timeline are filled at
load by :mod:`tracelens.enrich`, whose calculator results this section builds on.

Definitions (``docs/occupancy.md``):
  theoretical          = active warps per SM / max warps per SM (CUDA occupancy calculator rules)
  estimated achieved   = min(active blocks per SM, grid blocks / SMs) x threads per block / max threads per SM
  occupancy            = estimated achieved where the SM count is known, else theoretical
  low                  = occupancy < LOW_OCCUPANCY, under-filled = grid blocks < SMs
  SM fill of a launch  = min(1, grid blocks / SMs) x (its shape occupancy when the block shape is what limits
                         it to below LOW_OCCUPANCY, else 1); 1 for collectives (NCCL/RCCL) and vendor-library
                         kernels (cuBLAS, cuDNN, CUTLASS, flash attention, ...), whose grids the user does not set
  lost_ns              = time integral, over the instants a kernel runs, of the GPU's share left empty:
                         1 - min(1, sum of the running kernels' SM fill)
Occupancy limited by registers or shared memory is information, not lost time: tuned library kernels (GEMM,
convolution) run there on purpose, and the user's code does not choose it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa

from ..enrich import KernelOccupancy
from ..occupancy_calc import LIMIT_BLOCKS, LIMIT_WARPS, LIMITER_NAMES
from ..trace import Trace
from ..values import first_seen_codes, int_or_none, is_missing
from .columns import event_columns
from .frame_free import group_numbers, sort_order, text_rank
from .grouping import sum_per_slot
from .names import code_bits, is_collective_kernel, is_library_kernel

LOW_OCCUPANCY = 0.5
TOP_KERNELS = 10


# What a launch's grid the user does not choose: the per-launch codes of _KernelOccupancy.excluded_as
NOT_EXCLUDED, COLLECTIVE, LIBRARY = 0, 1, 2


class _KernelOccupancy(KernelOccupancy):
    """The calculator's results (:class:`tracelens.enrich.KernelOccupancy`) plus which launches' grids the user
    does not choose (collectives, vendor-library kernels).

    The section reads the per-configuration values (``per_config``) and gathers them to the launches of one
    device, or of the few launches it lists, at a time: not the ~15 per-launch float64 arrays at once (a
    gigabyte at the 5M kernels of the 41M-event benchmark export)."""

    def __init__(self, trace: Trace) -> None:
        super().__init__(trace)
        # the name codes of the shared event columns (no Arrow take of the kernels' names, no re-encoding)
        cols = event_columns(trace)
        codes = cols.name[self.rows]
        # one byte per launch: COLLECTIVE, else LIBRARY, else NOT_EXCLUDED; each name used tested once for both
        # and the launches' codes read once through a table of that byte per name (code -1: the last slot, 0)
        bits = code_bits(codes, cols.names, (is_collective_kernel, is_library_kernel))
        as_name = np.where(
            bits & 1, np.int8(COLLECTIVE), np.where(bits & 2, np.int8(LIBRARY), np.int8(NOT_EXCLUDED))
        ).astype(np.int8)
        self.excluded_as = as_name[codes]
        del codes
        # Each launch's start from the shared event columns, and its duration from them where they hold the stored
        # int64 times as they are (no null): the same values as KernelOccupancy.duration's gathers from the store,
        # read once here instead of both there and again for the start times in the report.
        self.start = cols.start[self.rows]
        if _plain_int64(trace, "start_ns") and _plain_int64(trace, "end_ns"):
            self._duration = cols.end[self.rows] - self.start

    @property
    def collective(self) -> np.ndarray:
        return self.excluded_as == COLLECTIVE

    @property
    def library(self) -> np.ndarray:
        return self.excluded_as == LIBRARY

    @property
    def shape_limited(self) -> np.ndarray:
        """Launches whose block shape holds them below LOW_OCCUPANCY (registers and shared memory allow more,
        or are not recorded)."""
        return ~self.excluded & _shape_limited_config(self._per_config)[self._config]

    @property
    def excluded(self) -> np.ndarray:
        """Launches whose grid and block shape the user does not choose: collectives and vendor-library kernels."""
        return self.excluded_as != NOT_EXCLUDED

    def sm_fill(self, with_shape: bool = True) -> np.ndarray:
        """Share of the GPU's SMs (times their thread slots, for shape-limited launches) a launch can fill.

        1 where unknown (a kernel without a grid or SM count is not counted as leaving SMs empty) and for the
        excluded launches: they hold the GPU, and what they leave empty is not the user's to win back.
        """
        return _fill_table(self._per_config, with_shape)[self._config, self.excluded.view(np.int8)]


def _plain_int64(trace: Trace, column: str) -> bool:
    """The store holds ``column`` as one int64 Arrow array without nulls (event_columns' array is then its values)."""
    stored = trace.store.columns.get(column)
    return isinstance(stored, pa.Array) and stored.type == pa.int64() and stored.null_count == 0


def device_launches(
    occ: _KernelOccupancy, on_config: np.ndarray, gather_all: bool = False
) -> tuple[np.ndarray, ...]:
    """(configuration, duration, excluded_as, start, reported occupancy) of the launches of the configurations
    ``on_config`` marks (one device's), in launch order. Where it marks every configuration (a single-GPU trace)
    the launch arrays themselves, no gather (``gather_all``: gathered anyway, for the tests)."""
    if on_config.all() and not gather_all:
        return occ.config, occ.duration, occ.excluded_as, occ.start, occ.reported
    on = np.flatnonzero(on_config[occ.config])  # this device's launches
    return occ.config[on], occ.duration[on], occ.excluded_as[on], occ.start[on], occ.reported_at(on)


def _shape_limited_config(per_config: dict[str, np.ndarray]) -> np.ndarray:
    """Per configuration: its block shape holds it below LOW_OCCUPANCY (its launches not excluded)."""
    limiter = per_config["limiter"]
    by_shape = (limiter == LIMIT_WARPS) | (limiter == LIMIT_BLOCKS) | (limiter < 0)
    return by_shape & (per_config["shape"] < LOW_OCCUPANCY)


def _fill_table(per_config: dict[str, np.ndarray], with_shape: bool = True) -> np.ndarray:
    """The SM fill (``sm_fill``) per (configuration, excluded): shape (configurations, 2), column 1 the excluded
    launches' (1). The same elementwise products as per launch, so gathering it gives the same values."""
    grid_fill_or_one = np.nan_to_num(per_config["grid_fill"], nan=1.0)
    fill = np.stack([grid_fill_or_one, np.ones_like(grid_fill_or_one)], axis=1)
    if with_shape:
        shape_limited = _shape_limited_config(per_config)
        fill = fill * np.stack(
            [np.where(shape_limited, per_config["shape"], 1.0), np.ones_like(grid_fill_or_one)], axis=1
        )
    return fill


def empty_sm_ns(starts: np.ndarray, ends: np.ndarray, fill: np.ndarray) -> float:
    """Integral over the instants at least one launch runs of 1 - min(1, sum of the running launches' fill).

    Concurrent kernels share the SMs: two half-filling launches side by side leave nothing empty.
    """
    return empty_sm_ns_each(starts, ends, [fill])[0]


def empty_sm_ns_each(starts: np.ndarray, ends: np.ndarray, fills: list[np.ndarray]) -> list[float]:
    """:func:`empty_sm_ns` of the same launches for each of several fills: their start and end times sorted
    once (the sort is most of the cost: millions of kernels)."""
    if starts.size == 0:
        return [0.0 for _ in fills]
    if _one_at_a_time(starts, ends) and all(bool(np.isfinite(fill).all()) for fill in fills):
        return _empty_sm_ns_serial(starts, ends, fills)
    n = starts.size
    times = np.concatenate([starts, ends])
    order = np.argsort(times, kind="stable")
    length = np.diff(times[order]).astype(np.float64)
    del times
    # running launches after each time point: +1 at a start, -1 at an end (integers: the float sum was exact)
    running = np.cumsum(np.where(order < n, np.int32(1), np.int32(-1)), dtype=np.int64)[:-1]
    active = running > 0
    del running
    # Only the intervals where a launch runs count: they are picked once, before the per-fill arithmetic (about
    # half the intervals of serial launches are the gaps between them); the same products in the same order,
    # so the same sums.
    length = length[active]
    out = []
    for fill in fills:  # a loop over the few fills
        filled = np.cumsum(np.concatenate([fill, -fill])[order])[:-1][active]
        np.round(filled, 9, out=filled)
        np.clip(filled, 0.0, 1.0, out=filled)
        np.subtract(1.0, filled, out=filled)  # the empty share
        filled *= length
        out.append(float(filled.sum()))
    return out


def empty_sm_ns_at(
    starts: np.ndarray, ends: np.ndarray, tables: list[np.ndarray], at: np.ndarray
) -> list[float]:
    """``empty_sm_ns_each(starts, ends, [table[at] for table in tables])``. Launches that run one at a time with
    finite tables: each table's empty share (1 - its fill, rounded and clipped) computed once per entry and then
    gathered, not per launch (the same elementwise steps on the same values, so the same products and sums)."""
    if starts.size and all(bool(np.isfinite(t).all()) for t in tables) and _one_at_a_time(starts, ends):
        length = (ends - starts).astype(np.float64)
        out = []
        for table in tables:  # a loop over the few fills
            filled = _empty_share(table)[at]
            filled *= length
            out.append(float(filled.sum()))
        return out
    return empty_sm_ns_each(starts, ends, [table[at] for table in tables])


def _empty_share(fill: np.ndarray) -> np.ndarray:
    """Each fill's empty share as a new float64 array: 1 - the fill rounded to 9 places and clipped to [0, 1]."""
    share = np.array(fill, np.float64)
    np.round(share, 9, out=share)
    np.clip(share, 0.0, 1.0, out=share)
    np.subtract(1.0, share, out=share)
    return share


def _one_at_a_time(starts: np.ndarray, ends: np.ndarray) -> bool:
    """The launches run one after another (each ends no earlier than it starts, and before the next starts): the
    usual case of one device's kernels, in start order."""
    return bool((ends >= starts).all()) and bool((starts[1:] > ends[:-1]).all())


def _empty_sm_ns_serial(starts: np.ndarray, ends: np.ndarray, fills: list[np.ndarray]) -> list[float]:
    """:func:`empty_sm_ns_each` of launches that run one at a time, without the sort: the time points in order are
    each launch's start and end in turn, so the running intervals are the launches themselves and the running
    fill of each is its own (the running sum returns to exactly 0 after each end: x - x == 0, 0 + x == x), the
    same values in the same order, so the same sums."""
    length = (ends - starts).astype(np.float64)
    out = []
    for fill in fills:  # a loop over the few fills
        filled = _empty_share(fill)
        filled *= length
        out.append(float(filled.sum()))
    return out


def _weighted(values: np.ndarray, weights: np.ndarray) -> float | None:
    ok = np.isfinite(values)
    if values.size and ok.all():  # every value known (the usual case): no compression (the same arrays, sums)
        total = weights.sum()
        return None if total <= 0 else float((values * weights).sum() / total)
    total = weights[ok].sum()
    if not ok.any() or total <= 0:
        return None
    return float((values[ok] * weights[ok]).sum() / total)


# A launch configuration of the top kernels' table, with the kernel's name.
CONFIG_KEYS = ("device", "threads", "registers", "shared")


def _name_labels(codes: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each launch's label code, the labels) for name codes into ``names`` (-1: null): a null name and "" are one
    label. Only the names in use are read (not a dictionary of millions of NVTX texts)."""
    in_use = np.zeros(len(names) + 1, bool)
    in_use[codes] = True  # code -1: the last slot
    used = np.flatnonzero(in_use)
    texts = np.full(used.size, None, dtype=object)  # the last slot (a null name) stays None
    named = used < len(names)
    texts[named] = np.asarray(names, dtype=object)[used[named]]
    texts[is_missing(texts)] = ""  # fillna(""): a null name is the label ""
    canonical, label_of = first_seen_codes(texts)
    code_of = np.zeros(in_use.size, np.int64)
    code_of[used] = canonical
    return code_of[codes], np.asarray(label_of, dtype=object)


def config_groups(
    name: np.ndarray, config: np.ndarray, per_config: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(each launch's group, each group's first launch): the launches grouped by (name, device, threads, registers,
    shared), numbered in order of first appearance as ``groupby(..., sort=False, dropna=False).ngroup()`` does.
    The four configuration keys are grouped once per configuration (``config``: each launch's), then the launches
    by one int64 key of (name, that group): no five-column groupby of every launch."""
    # (a green context's launches apart from the same configuration's elsewhere: judged against other SMs)
    keys = CONFIG_KEYS + (("context_sms",) if "context_sms" in per_config else ())
    config_group = group_numbers([per_config[k] for k in keys])
    width = int(config_group.max()) + 1 if config_group.size else 1
    key = name.astype(np.int64) * width + config_group[config]
    group = first_seen_codes(key)[0]
    # groups numbered in order of first appearance: a group's first launch is where the running maximum rises
    # (no unbuffered minimum.at per launch)
    running = np.maximum.accumulate(group)
    first = np.flatnonzero(np.concatenate([[True], running[1:] > running[:-1]])) if group.size else group
    return group, first.astype(np.int64)


def _json_float(x: Any) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _top_kernels(
    trace: Trace, occ: _KernelOccupancy, keep: np.ndarray, lost: np.ndarray
) -> list[dict[str, Any]]:
    """Launch configurations (name, device, threads, registers, shared) that leave the most SM time empty,
    each launch counted as if it ran alone. ``keep``: the launches that leave some (positions ascending),
    ``lost``: what each of them leaves."""
    if keep.size == 0:
        return []
    per_config = occ.per_config
    config = occ.config[keep]
    excluded = occ.excluded_as[keep] != NOT_EXCLUDED

    def at_keep(name: str) -> np.ndarray:  # a per-configuration value at the kept launches
        return per_config[name][config]

    cols = event_columns(trace)
    name, label_of = _name_labels(cols.name[occ.rows[keep]], cols.names)
    kept_duration = occ.duration[keep]
    duration = kept_duration.astype(np.float64)
    group, first = config_groups(name, config, per_config)
    groups = first.size
    # the groups' table as columns (one value per group), sorted below as sort_values would
    summary: dict[str, np.ndarray] = {
        "name": name[first],
        **{k: per_config[k][config[first]] for k in CONFIG_KEYS},
    }
    del name

    def summed(values: np.ndarray) -> np.ndarray:  # NaN (not computed) adds nothing, as pandas' sum
        return np.bincount(group, weights=np.nan_to_num(values), minlength=groups)

    estimated, theoretical = at_keep("estimated"), at_keep("theoretical")
    occupancy = np.where(np.isfinite(estimated), estimated, theoretical)
    del estimated
    summary["count"] = np.bincount(group, minlength=groups)
    summary["total_ns"] = summed(duration)
    summary["lost_ns"] = summed(lost)
    summary["occ_x_dur"] = summed(occupancy * kept_duration)
    # durations of the launches where each was computed: none (an AMD GPU's, with no register count) is null, not 0
    summary["occ_dur"] = summed(np.where(np.isfinite(occupancy), duration, 0.0))
    del occupancy
    summary["theo_x_dur"] = summed(theoretical * kept_duration)
    summary["theo_dur"] = summed(np.where(np.isfinite(theoretical), duration, 0.0))
    del theoretical
    waves = at_keep("waves")
    summary["waves_x_dur"] = summed(waves * kept_duration)
    summary["waves_dur"] = summed(np.where(np.isfinite(waves), duration, 0.0))
    del waves
    summary["fill_x_dur"] = summed(_fill_table(per_config)[config, excluded.view(np.int8)] * duration)
    summary["grid_x_dur"] = summed(at_keep("grid") * duration)
    summary["under_count"] = np.bincount(group, weights=at_keep("grid_fill") < 1, minlength=groups)
    # one configuration on one device: same shape, same limit (the first launch's values)
    first_config = config[first]
    summary["shape_limited"] = ~excluded[first] & _shape_limited_config(per_config)[first_config]
    summary["shape"] = per_config["shape"][first_config]
    summary["limiter"] = per_config["limiter"][first_config]
    summary["context_sms"] = (
        per_config["context_sms"][first_config]
        if "context_sms" in per_config
        else np.full(first_config.size, np.nan)
    )
    summary["name"] = np.asarray(label_of, dtype=object)[summary["name"]]
    # sort_values(["lost_ns", "name"], ascending=[False, True]).head(TOP_KERNELS), as Python values (itertuples)
    top = sort_order([summary["lost_ns"], text_rank(summary["name"])], [False, True])[:TOP_KERNELS]
    fields = {key: column[top].tolist() for key, column in summary.items()}
    rows = [
        SimpleNamespace(**dict(zip(fields, values, strict=True)))
        for values in zip(*fields.values(), strict=True)
    ]
    out = []
    for row in rows:  # at most TOP_KERNELS rows
        total = row.total_ns
        out.append(
            {
                "name": row.name,
                "device": int(row.device),
                "count": int(row.count),
                "total_ns": int(total),
                "lost_ns": int(round(row.lost_ns)),
                "sm_fill": _json_float(row.fill_x_dur / total) if total > 0 else None,
                "grid_blocks": _json_float(row.grid_x_dur / total) if total > 0 else None,
                "occupancy": _json_float(row.occ_x_dur / row.occ_dur) if row.occ_dur > 0 else None,
                "theoretical": _json_float(row.theo_x_dur / row.theo_dur) if row.theo_dur > 0 else None,
                "shape_occupancy": _json_float(row.shape),
                "waves": _json_float(row.waves_x_dur / row.waves_dur) if row.waves_dur > 0 else None,
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


def occupancy_report(trace: Trace) -> dict[str, Any]:
    """The ``occupancy`` block (see docs/occupancy.md)."""
    occ = _KernelOccupancy(trace)
    per_config = occ.per_config
    # Per configuration (a few hundred): the basis is the estimated achieved occupancy where the SM count makes
    # it computable, otherwise the theoretical; its launches are gathered one device at a time below.
    occupancy = np.where(
        np.isfinite(per_config["estimated"]), per_config["estimated"], per_config["theoretical"]
    )
    computed = np.isfinite(occupancy)
    # fewer blocks than SMs: the grid and the SM count tell it, with or without the occupancy limits (an AMD GPU's
    # kernels have none); NaN compares False: an unknown SM count never counts as under-filled
    under = per_config["grid_fill"] < 1
    low = computed & (occupancy < LOW_OCCUPANCY)
    shape_limited_config = _shape_limited_config(per_config)
    # the SM fill per (configuration, excluded), read by a flat index: configuration x 2 + excluded
    fill = _fill_table(per_config).ravel()
    grid_fill = _fill_table(per_config, with_shape=False).ravel()
    launches_of_config = np.bincount(occ.config, minlength=occupancy.size)
    # per (configuration, excluded_as) slot, configuration x 3 + excluded_as: what each launch's figures read
    slots = occupancy.size * 3
    slot_config = np.repeat(np.arange(occupancy.size), 3)
    slot_excluded_as = np.tile(np.array([NOT_EXCLUDED, COLLECTIVE, LIBRARY]), occupancy.size)
    slot_limiter = per_config["limiter"][slot_config]
    slot_computed = computed[slot_config]
    slot_estimated = np.isfinite(per_config["estimated"])[slot_config]
    slot_shape_limited = (slot_excluded_as == NOT_EXCLUDED) & shape_limited_config[slot_config]
    slot_low, slot_under = low[slot_config], under[slot_config]

    per_device = []
    not_computed = []
    for dev, note in sorted(occ.device_notes.items()):
        config, dur, excluded_as, starts, reported = device_launches(occ, per_config["device"] == dev)
        # The launches' counts and summed durations per (configuration, excluded_as) slot, once: each count and
        # sum below is of the launches of some configurations and exclusions, read from the few slots, not a mask
        # and a pass over the device's millions of launches each.
        slot = config * 3
        slot += excluded_as
        slot_count = np.bincount(slot, minlength=slots)
        slot_ns = sum_per_slot(slot, dur, slots)
        del slot
        limits = note["limits"]
        limiter_ns = {
            name: int(slot_ns[slot_limiter == code].sum()) for code, name in enumerate(LIMITER_NAMES)
        }
        # excluded launches take part with fill 1: they keep the SMs they share with others
        ends = starts + dur
        at = config * 2
        at += excluded_as != NOT_EXCLUDED
        lost, under_lost = empty_sm_ns_at(starts, ends, [fill, grid_fill], at)
        del starts, ends, at
        c = slot_computed
        shape_limited = slot_shape_limited
        low_here = slot_low
        under_here = slot_under
        entry = {
            "device": dev,
            "name": note["name"],
            "compute_capability": f"{limits.compute_major}.{limits.compute_minor}" if limits else None,
            "sm_count": int(note["sm_count"]) if note["sm_count"] else None,
            "limits_source": sorted(set(limits.sources.values())) if limits else [],
            "kernel_count": int(config.size),
            "kernel_ns": int(slot_ns.sum()),
            "computed_count": int(slot_count[c].sum()),
            "computed_kernel_ns": int(slot_ns[c].sum()),
            "not_computed_reason": note["reason"]
            or (None if not slot_count[~c].any() else _lacking(int(slot_count[~c].sum()))),
            "basis": "estimated_achieved" if (slot_estimated & (slot_count > 0)).any() else "theoretical",
            "time_weighted_theoretical": _weighted(per_config["theoretical"][config], dur),
            "time_weighted_estimated_achieved": _weighted(per_config["estimated"][config], dur),
            "time_weighted_reported": _weighted(reported, dur),
            "low_count": int(slot_count[low_here].sum()),
            "low_ns": int(slot_ns[low_here].sum()),
            "under_filled_count": int(slot_count[under_here].sum()),
            "under_filled_ns": int(slot_ns[under_here].sum()),
            "block_shape_limited_count": int(slot_count[shape_limited].sum()),
            "block_shape_limited_ns": int(slot_ns[shape_limited].sum()),
            "register_or_shared_limited_ns": limiter_ns["registers"] + limiter_ns["shared_memory"],
            "collective_kernel_ns": int(slot_ns[slot_excluded_as == COLLECTIVE].sum()),
            "library_kernel_ns": int(slot_ns[slot_excluded_as == LIBRARY].sum()),
            "library_under_filled_ns": int(slot_ns[under_here & (slot_excluded_as == LIBRARY)].sum()),
            "lost_ns": int(round(lost)),
            "under_filled_lost_ns": int(round(under_lost)),
            "block_shape_lost_ns": int(round(lost)) - int(round(under_lost)),
            "limiter_ns": limiter_ns,
        }
        del config, dur, excluded_as, reported, slot_count, slot_ns
        per_device.append(entry)
        if note["reason"]:
            not_computed.append(
                {"device": dev, "reason": note["reason"], "kernel_count": entry["kernel_count"]}
            )
    computed_count = int(launches_of_config[computed].sum())
    no_device = int(launches_of_config[np.isnan(per_config["device"])].sum())
    if no_device:
        not_computed.append({"device": None, "reason": "kernel has no device id", "kernel_count": no_device})
    # The launches that, run alone, leave SMs empty: duration x (1 - fill) > 0 where the duration is positive
    # and the fill below 1 (a fill is never above 1 nor NaN), found without that product for every launch.
    leaves_some = occ.excluded_as == NOT_EXCLUDED  # excluded launches fill 1
    leaves_some &= (_fill_table(per_config)[:, 0] < 1)[occ.config]
    leaves_some &= occ.duration > 0
    keep = np.flatnonzero(leaves_some)
    del leaves_some
    kept = occ.config[keep] * 2 + (occ.excluded_as[keep] != NOT_EXCLUDED)
    standalone_lost = occ.duration[keep] * (1.0 - fill[kept])  # as duration x (1 - fill) at every launch
    del kept
    return {
        "low_threshold": LOW_OCCUPANCY,
        "kernel_count": int(occ.rows.size),
        "computed_count": computed_count,
        "lost_ns": sum(d["lost_ns"] for d in per_device),
        "under_filled_lost_ns": sum(d["under_filled_lost_ns"] for d in per_device),
        "block_shape_lost_ns": sum(d["block_shape_lost_ns"] for d in per_device),
        "per_device": per_device,
        "not_computed": not_computed,
        "top_low_occupancy_kernels": _top_kernels(trace, occ, keep, standalone_lost),
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return occupancy_report(trace)


def _lacking(count: int) -> str:
    return (
        f"{count} kernel{'' if count == 1 else 's'} {'lacks' if count == 1 else 'lack'} launch configuration "
        "or exceed" + ("s" if count == 1 else "") + " device limits"
    )
