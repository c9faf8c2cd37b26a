"""``nn.Module`` paths (Kineto with_modules / with_stack: python_function rows "nn.Module: Name_N") and kernel,
copy time and FLOPs by the innermost module around each launch (``ops.by_module``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...trace import PYTHON, Trace, nesting_depth
from ..columns import event_columns, memo, thread_key
from ..frame_free import sort_order, text_groups
from ..grouping import sum_per_slot
from ..launch import launch_pairs
from ..names import code_mask
from .flops import flop_ops, label_sums
from .tree import TOP_OPS, thread_range_at

_MODULE_PREFIX = "nn.Module: "


@dataclass(frozen=True)
class Modules:
    """The trace's ``nn.Module`` rows sorted by (thread, start), their nesting level among modules, and each
    one's path from the outermost module (``Outer_0/Inner_3``)."""

    rows: np.ndarray
    level: np.ndarray
    path: np.ndarray  # str per row


def modules(trace: Trace) -> Modules:
    """The module rows (cached); empty when the trace records none."""
    return memo(trace, "modules", lambda: _modules(trace))


def _modules(trace: Trace) -> Modules:
    cols = event_columns(trace)
    # the thread and name tested at the python rows only (none in most traces: no table-long comparisons)
    py = np.flatnonzero(cols.of_kind(PYTHON))
    py = py[(cols.tid[py] >= 0) & (cols.name[py] >= 0)]
    rows = py[code_mask(cols.name[py], cols.names, lambda n: n.startswith(_MODULE_PREFIX))]
    if rows.size == 0:
        return Modules(rows, np.zeros(0, np.int64), np.zeros(0, object))
    key = thread_key(cols.pid[rows], cols.tid[rows])
    rows = rows[np.lexsort((-(cols.end[rows] - cols.start[rows]), cols.start[rows], key))]
    level = nesting_depth(cols.pid[rows], cols.tid[rows], cols.start[rows], cols.end[rows]).astype(np.int64)
    short = np.array([n[len(_MODULE_PREFIX) :] for n in cols.names], dtype=object)  # once per dictionary name
    path = short[cols.name[rows]].copy()
    # Level by level (a loop over nesting levels): each module's parent is the latest-starting module one
    # level up on its thread that still runs at its start; its path extends the parent's.
    for lvl in range(1, int(level.max()) + 1):
        child, parent = np.flatnonzero(level == lvl), np.flatnonzero(level == lvl - 1)
        at = _enclosing(cols, rows[parent], rows[child])
        found = at >= 0
        path[child[found]] = path[parent[at[found]]] + "/" + path[child[found]]
    return Modules(rows, level, path)


def _enclosing(cols: Any, outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """For each row of ``inner``, the index into ``outer`` (rows sorted by thread and start, disjoint on a
    thread) of the one running on its thread at its start; -1 when none."""
    return thread_range_at(cols, outer, cols.pid[inner], cols.tid[inner], cols.start[inner])


def module_at(trace: Trace, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each (thread, time), the index into ``modules(trace)`` of the innermost module running then (-1)."""
    mods = modules(trace)
    out = np.full(len(t), -1, np.int64)
    if mods.rows.size == 0:
        return out
    cols = event_columns(trace)
    for lvl in range(int(mods.level.max()) + 1):  # deeper levels overwrite: the innermost wins
        at_level = np.flatnonzero(mods.level == lvl)
        hit = thread_range_at(cols, mods.rows[at_level], pid, tid, t)
        out[hit >= 0] = at_level[hit[hit >= 0]]
    return out


def by_module(trace: Trace, limit: int = TOP_OPS) -> list[dict[str, Any]] | None:
    """Kernel, copy time and FLOPs by the innermost ``nn.Module`` running on the launching thread at the
    launch (self time: a parent module gets only what launches outside its children); None when the trace
    records no modules."""
    mods = modules(trace)
    if mods.rows.size == 0:
        return None
    pairs = launch_pairs(trace)
    matched = np.flatnonzero(pairs["matched"])
    module = module_at(trace, pairs["pid"][matched], pairs["tid"][matched], pairs["launch_start"][matched])
    found = module >= 0
    duration = (pairs["end"] - pairs["start"])[matched[found]].astype(np.int64)
    kernel = pairs["is_kernel"][matched[found]]
    gpu = np.where(kernel, duration, 0)
    columns = {"kernels": kernel.astype(np.int64), "gpu": gpu, "copy": np.where(kernel, 0, duration)}
    # frame.groupby("path")[["kernels", "gpu", "copy"]].sum()
    group, paths = text_groups(module[found], mods.path)
    named = group >= 0
    sums = {key: sum_per_slot(group[named], values[named], paths.size) for key, values in columns.items()}
    flops: np.ndarray | None = None
    counted = flop_ops(trace)
    if counted.recorded:  # FLOPs per module too (a trace recorded with shapes)
        cols = event_columns(trace)
        at = module_at(trace, cols.pid[counted.rows], cols.tid[counted.rows], cols.start[counted.rows])
        by_path = label_sums(mods.path[at[at >= 0]], counted.flops[at >= 0])
        # table.join(flops, how="outer").fillna(0): a module with FLOPs and no launch (a CUDA-graph capture) kept
        every = np.array(sorted(set(paths.tolist()) | set(by_path)) + [""], dtype=object)[:-1]
        at_path = np.searchsorted(every, paths) if paths.size else np.zeros(0, np.intp)
        for key, values in sums.items():
            widened = np.zeros(every.size, np.int64)
            widened[at_path] = values
            sums[key] = widened
        flops = np.array([by_path.get(p, 0.0) for p in every.tolist()], np.float64)
        paths = every
    # sort_values(["gpu", "path"], ascending=[False, True]).head(limit): the paths are ascending already
    top = sort_order([sums["gpu"], np.arange(paths.size)], [False, True])[:limit]
    return [
        {
            "path": str(paths[i]),
            "kernels": int(sums["kernels"][i]),
            "gpu_ns": int(sums["gpu"][i]),
            "copy_ns": int(sums["copy"][i]),
            "flops": None if flops is None else float(flops[i]),
        }
        for i in top.tolist()
    ]
