"""Which framework op launched the GPU work: kernel, copy and host time by outermost op name.

Definitions (docs/analyses.md, "ops"):
    outermost op   = a framework op row (kind ``cpu_op``) that no other framework op row on its thread encloses;
                     step markers (``ProfilerStep#N``) are steps, not ops, and annotations are not ops
    a GPU op's op  = the outermost op on the launching thread whose interval holds the launch call's start
                     (correlation join, as in ``launch``); backward kernels launched by the autograd thread go to
                     its ``autograd::engine::evaluate_function: ...Backward`` op, which is outermost there
    per name       count (outermost instances), cpu_ns (their summed durations), gpu_ns (summed duration of the
                   kernels attributed to them), copy_ns (memcpy and memset), flops (null: shapes are not read)
GPU ops without a launch call, or launched outside any op, are ``unattributed``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..trace import CPU_OP, Trace
from .columns import event_columns, thread_key, thread_time_positions
from .launch import launch_pairs

TOP_OPS = 50


def outermost_ops(trace: Trace) -> np.ndarray:
    """Event rows of the outermost framework ops, sorted by (thread, start)."""
    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(CPU_OP) & (cols.tid >= 0))
    if rows.size == 0:
        return rows
    key = thread_key(cols.pid[rows], cols.tid[rows])
    # Longest first among equal starts, so an op and a child starting with it keep the op outermost.
    order = np.lexsort((-(cols.end[rows] - cols.start[rows]), cols.start[rows], key))
    rows, key = rows[order], key[order]
    # Each op against the largest end seen before it on its thread: starting before that end means enclosed.
    new_thread = np.r_[True, key[1:] != key[:-1]]
    previous_end = np.where(new_thread, np.iinfo(np.int64).min, np.r_[0, cols.end[rows][:-1]])
    reach = _grouped_running_max(previous_end, np.cumsum(new_thread))
    return rows[cols.start[rows] >= reach]


def _grouped_running_max(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarted at each new ``group`` (groups are contiguous)."""
    out = values.copy()
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    for lo, hi in zip(starts, np.r_[starts[1:], values.size], strict=True):  # a loop over threads
        out[lo:hi] = np.maximum.accumulate(values[lo:hi])
    return out


def op_of_gpu_ops(trace: Trace) -> np.ndarray:
    """For each row of ``launch_pairs(trace)``, the event row of its outermost op (-1 when none)."""
    pairs = launch_pairs(trace)
    out = np.full(len(pairs), -1, np.int64)
    ops = outermost_ops(trace)
    if ops.size == 0 or len(pairs) == 0:
        return out
    cols = event_columns(trace)
    op_key = thread_key(cols.pid[ops], cols.tid[ops])
    matched = np.flatnonzero(pairs["matched"])
    if matched.size == 0:  # no GPU op has a launch call (e.g. correlation ids not recorded)
        return out
    launch_key = thread_key(pairs["pid"][matched], pairs["tid"][matched])
    launch_t = pairs["launch_start"][matched]
    # Outermost ops of a thread are disjoint, and come sorted by (thread key, start), so their positions are
    # sorted too: the candidate is the last one starting at or before t.
    op_pos, t_pos = thread_time_positions([(op_key, [cols.start[ops]]), (launch_key, [launch_t])])
    at = np.searchsorted(op_pos, t_pos, side="right") - 1
    ok = at >= 0
    ok[ok] &= (op_key[at[ok]] == launch_key[ok]) & (launch_t[ok] < cols.end[ops][at[ok]])
    out[matched[ok]] = ops[at[ok]]
    return out


def ops_report(trace: Trace, limit: int = TOP_OPS) -> dict[str, Any]:
    """The ``ops`` block (see the module docstring)."""
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    ops = outermost_ops(trace)
    op_row = op_of_gpu_ops(trace)
    duration = (pairs["end"] - pairs["start"]).astype(np.int64)
    kernel = pairs["is_kernel"]
    attributed = op_row >= 0
    frame = pd.DataFrame({"name": cols.name[op_row[attributed]],
                          "gpu": np.where(kernel[attributed], duration[attributed], 0),
                          "copy": np.where(kernel[attributed], 0, duration[attributed])})
    gpu = frame.groupby("name")[["gpu", "copy"]].sum()
    cpu = pd.DataFrame({"name": cols.name[ops], "cpu": cols.end[ops] - cols.start[ops]}).groupby("name")["cpu"].agg(
        ["size", "sum"])
    table = cpu.join(gpu, how="left").fillna(0).reset_index()
    table = table.sort_values(["gpu", "sum", "name"], ascending=[False, False, True]).head(limit)
    names = cols.names
    rows = [{"name": str(names[r.name]) if r.name >= 0 else "", "count": int(r.size), "gpu_ns": int(r.gpu),
             "copy_ns": int(r.copy), "cpu_ns": int(r.sum), "flops": None} for r in table.itertuples(index=False)]
    return {
        "op_count": int(ops.size),
        "names": int(len(cpu)),
        "kernel_ns": int(duration[kernel].sum()),
        "attributed_kernel_ns": int(duration[kernel & attributed].sum()),
        "copy_ns": int(duration[~kernel].sum()),
        "attributed_copy_ns": int(duration[~kernel & attributed].sum()),
        "unattributed_count": int((~attributed).sum()),
        "by_name": rows,
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return ops_report(trace)
