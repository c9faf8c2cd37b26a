"""NVTX ranges and annotations: CPU time, and the GPU work launched inside them.

Definitions (docs/analyses.md, "ranges"), per range instance (a row of kind `annotation`), then summed per name:
    cpu_ns          = end - start
    launched ops    = GPU ops whose launch call (correlation_id join) starts inside [start, end) on the same
                      thread (pid, tid) — the rule of nsys's nvtx_gpu_proj_trace
    gpu_op_ns       = summed durations of the launched ops
    projected span  = [first launched op start, last launched op end); projected_ns = its length
    gpu_idle_ns     = projected_ns - the device busy union inside the projected span (every op on the
                      device counts as busy; a range launching onto several devices uses their joint union)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import intervals
from ..trace import ANNOTATION, Trace
from .columns import device_busy, event_columns, thread_key, thread_time_positions
from .launch import launch_pairs

NAME_LIMIT = 200


def _per_launch(trace: Trace) -> pd.DataFrame:
    """GPU ops grouped by their launch call (a graph launch may enqueue many ops)."""
    pairs = launch_pairs(trace)
    m = pairs[pairs["matched"]]
    m = m[np.argsort(m["correlation_id"], kind="stable")]
    cid = m["correlation_id"]
    if cid.size == 0:
        return pd.DataFrame(columns=["pid", "tid", "t", "op_ns", "first", "last", "dev_min", "dev_max", "ops"])
    group = np.flatnonzero(np.r_[True, cid[1:] != cid[:-1]])  # first row of each launch call
    start, end, dev = m["start"], m["end"], m["device"]
    return pd.DataFrame({
        "pid": m["pid"][group], "tid": m["tid"][group], "t": m["launch_start"][group],
        "op_ns": np.add.reduceat(end - start, group), "first": np.minimum.reduceat(start, group),
        "last": np.maximum.reduceat(end, group), "dev_min": np.minimum.reduceat(dev, group),
        "dev_max": np.maximum.reduceat(dev, group), "ops": np.diff(np.r_[group, cid.size]),
    })


def _slice_reduce(ufunc: np.ufunc, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, empty: int) -> np.ndarray:
    """ufunc-reduce values[lo_i:hi_i] for every i (``empty`` where the slice is empty); ufunc is idempotent
    (minimum, maximum).

    A sparse table built one level at a time: level k holds the reduction of every window of 2^k values, and a
    slice of length L is the reduction of its first and last windows of 2^floor(log2 L). O(n log n) time and
    O(n) memory whatever the slices; reducing each slice directly costs the sum of their lengths, which nested
    ranges (an outer range covering every launch) make quadratic.
    """
    out = np.full(lo.size, empty, dtype=values.dtype)
    length = hi - lo
    has = length > 0
    if not has.any():
        return out
    level = np.floor(np.log2(np.where(has, length, 1))).astype(np.int64)
    level[~has] = -1
    table = values.copy()
    k = 0
    while True:
        sel = np.flatnonzero(level == k)
        if sel.size:
            out[sel] = ufunc(table[lo[sel]], table[hi[sel] - (1 << k)])
        if (1 << (k + 1)) > values.size or not (level > k).any():
            break
        width = 1 << k
        # Windows of 2^(k+1) from two windows of 2^k; the tail keeps windows that would run past the end
        # (never read: a slice only reads windows that fit inside it).
        table[:-width] = ufunc(table[:-width], table[width:])
        k += 1
    return out


def range_instances(trace: Trace) -> pd.DataFrame:
    """Every annotation row with its launched GPU work and projected span."""
    cols = event_columns(trace)
    ann = cols.of_kind(ANNOTATION)
    rs, re_ = cols.start[ann], cols.end[ann]
    out = pd.DataFrame({"name": cols.name[ann], "start": rs, "end": re_, "pid": cols.pid[ann], "tid": cols.tid[ann]})
    launches = _per_launch(trace)
    n = len(out)
    out["ops"] = 0
    out["gpu_op_ns"] = 0
    out["proj_start"] = 0
    out["proj_end"] = 0
    out["gpu_idle_ns"] = 0
    if n == 0 or launches.empty:
        return out
    # Sort launches by (thread, start); a range's launches are those of its thread inside [start, end).
    lkey, kstart, kend = thread_time_positions([
        (thread_key(launches["pid"].to_numpy(), launches["tid"].to_numpy()), [launches["t"].to_numpy(np.int64)]),
        (thread_key(out["pid"].to_numpy(), out["tid"].to_numpy()), [rs, re_])])
    order = np.argsort(lkey, kind="stable")
    lkey = lkey[order]
    launches = launches.iloc[order].reset_index(drop=True)
    lo = np.searchsorted(lkey, kstart, side="left")
    hi = np.searchsorted(lkey, kend, side="left")
    csum_ns = np.concatenate([[0], np.cumsum(launches["op_ns"].to_numpy(np.int64))])
    csum_ops = np.concatenate([[0], np.cumsum(launches["ops"].to_numpy(np.int64))])
    out["ops"] = csum_ops[hi] - csum_ops[lo]
    out["gpu_op_ns"] = csum_ns[hi] - csum_ns[lo]
    first = _slice_reduce(np.minimum, launches["first"].to_numpy(np.int64), lo, hi, 0)
    last = _slice_reduce(np.maximum, launches["last"].to_numpy(np.int64), lo, hi, 0)
    dmin = _slice_reduce(np.minimum, launches["dev_min"].to_numpy(np.int64), lo, hi, -1)
    dmax = _slice_reduce(np.maximum, launches["dev_max"].to_numpy(np.int64), lo, hi, -1)
    out["proj_start"], out["proj_end"] = first, last
    idle = np.zeros(n, np.int64)
    busy = device_busy(trace)
    has = hi > lo
    for device, b in busy.items():
        sel = has & (dmin == device) & (dmax == device)
        idle[sel] = (last[sel] - first[sel]) - intervals.overlap_with_union(first[sel], last[sel], b.busy_starts,
                                                                           b.busy_ends)
    mixed = has & (dmin != dmax)
    if mixed.any():
        us, ue = intervals.merge(np.concatenate([b.busy_starts for b in busy.values()]),
                                 np.concatenate([b.busy_ends for b in busy.values()]))
        idle[mixed] = (last[mixed] - first[mixed]) - intervals.overlap_with_union(first[mixed], last[mixed], us, ue)
    out["gpu_idle_ns"] = idle
    return out


def range_summary(trace: Trace, limit: int = NAME_LIMIT) -> dict[str, Any]:
    inst = range_instances(trace)
    if inst.empty:
        return {"count": 0, "names": 0, "ranges": []}
    names = event_columns(trace).names
    inst = inst.assign(cpu_ns=inst["end"] - inst["start"], projected_ns=inst["proj_end"] - inst["proj_start"],
                       with_gpu=(inst["ops"] > 0).astype(np.int64))
    agg = inst.groupby("name", sort=False).agg(
        n=("cpu_ns", "size"), cpu_ns=("cpu_ns", "sum"), ops=("ops", "sum"), gpu_op_ns=("gpu_op_ns", "sum"),
        projected_ns=("projected_ns", "sum"), gpu_idle_ns=("gpu_idle_ns", "sum"), with_gpu=("with_gpu", "sum"))
    agg = agg.reset_index()
    agg["label"] = [str(names[c]) if c >= 0 else "" for c in agg["name"].to_numpy()]
    agg = agg.sort_values(["cpu_ns", "label"], ascending=[False, True], kind="stable")
    rows = [{"name": r.label, "count": int(r.n), "cpu_ns": int(r.cpu_ns), "gpu_ops": int(r.ops),
             "gpu_op_ns": int(r.gpu_op_ns), "projected_ns": int(r.projected_ns), "gpu_idle_ns": int(r.gpu_idle_ns),
             "instances_with_gpu": int(r.with_gpu)} for r in agg.head(limit).itertuples(index=False)]
    return {"count": int(len(inst)), "names": int(len(agg)), "ranges": rows}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return range_summary(trace)
