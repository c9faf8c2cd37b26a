"""Which framework op launched the GPU work: kernel, copy and host time by outermost op name.

Definitions (docs/analyses.md, "ops"):
    outermost op   = a framework op row (kind ``cpu_op``, or an annotation that is one of PyTorch's emit_nvtx op
                     ranges, named after the text before its first ", ") that no other framework op row on its
                     thread encloses; step markers (``ProfilerStep#N``) are steps, not ops, and other
                     annotations are not ops
    a GPU op's op  = the outermost op on the launching thread whose interval holds the launch call's start
                     (correlation join, as in ``launch``); backward kernels launched by the autograd thread go to
                     its ``autograd::engine::evaluate_function: ...Backward`` op, which is outermost there
    per name       count (outermost instances), cpu_ns (their summed durations), gpu_ns (summed duration of the
                   kernels attributed to them), copy_ns (memcpy and memset), flops (the counted FLOPs of the ops
                   nested in its instances; null when the trace records neither shapes nor flops)
GPU ops without a launch call, or launched outside any op, are ``unattributed``. A GPU op whose producer
recorded its op on the GPU op itself (the ``op`` column: xplane ``tf_op`` / ``hlo_op`` stats) goes to that op
instead, name for name; such a name with no host op rows counts its GPU ops' launches (distinct correlation
ids per device) and 0 cpu_ns.

FLOPs (docs/analyses.md, "compute"): an op is counted when the producer recorded its ``flops`` or
:mod:`tracelens.flop_model` computes them from its recorded shapes, and no op nested in it is counted (the
innermost such op: ``aten::linear`` -> ``aten::addmm`` counts once, at ``addmm``). ``compute`` sums them by
class and dtype and compares them with the GPUs' peak (:mod:`tracelens.peaks`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import flop_model, gpu_specs, intervals, peaks
from ..trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    GPU_ACTIVITY_KINDS,
    GPU_ANNOTATION,
    PYTHON,
    RUNTIME,
    Trace,
    nesting_depth,
)
from ..values import dense_codes, is_member, sorted_distinct
from . import flop_context
from .columns import (
    device_busy,
    dictionary_codes,
    event_columns,
    memo,
    range_running_at,
    thread_key,
    thread_time_positions,
)
from .launch import launch_pairs
from .names import EMIT_NVTX_PATTERN, code_mask, is_blocking_sync, names_in_use

TOP_OPS = 50


# PyTorch's emit_nvtx() op ranges (names.EMIT_NVTX_PATTERN): the op name is the text before the first ", ".
_EMIT_NVTX = EMIT_NVTX_PATTERN


@dataclass(frozen=True)
class OpNames:
    """Op names over the trace's name dictionary: ``code[cols.name[row]]`` is a framework op row's op-name code
    (the name itself, or for an emit_nvtx range the text before the first ", "), ``names[code]`` its text;
    ``nvtx[cols.name[row]]`` whether an annotation of that name is an emit_nvtx op range. Both lookups have a
    last slot for the null name (code -1)."""

    code: np.ndarray
    names: np.ndarray
    nvtx: np.ndarray
    # per GPU op (the rows of ``launch_pairs``, in its order): the code in ``names`` of the op recorded on it
    # (the ``op`` column), -1 where none
    recorded: np.ndarray | None = None


def op_names(trace: Trace) -> OpNames:
    """The op-name lookups (cached); each distinct annotation name is matched once, not each row."""
    return memo(trace, "op_names", lambda: _op_names(trace))


def _op_names(trace: Trace) -> OpNames:
    cols = event_columns(trace)
    size = len(cols.names)
    code = np.r_[np.arange(size, dtype=np.int64), -1]
    names = np.asarray(cols.names, dtype=object)
    nvtx = np.zeros(size + 1, bool)
    ann = cols.name[cols.of_kind(ANNOTATION)]
    used = np.flatnonzero(np.bincount(ann[ann >= 0], minlength=size) > 0)
    found = [(c, m.group(1)) for c in used if (m := _EMIT_NVTX.match(str(names[c])))]  # a loop over names
    if found:
        ranges = np.array([c for c, _ in found], np.int64)
        target, names = _codes_of(names, [t for _, t in found])
        code[ranges] = target
        nvtx[ranges] = True
    recorded = None
    gpu_codes, texts = _recorded_ops(trace)
    if texts:
        target, names = _codes_of(names, texts)
        recorded = np.where(gpu_codes >= 0, np.r_[target, -1][gpu_codes], -1)
    return OpNames(code, names, nvtx, recorded)


def _codes_of(names: np.ndarray, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's code among ``names`` where it is there already, else a new code after them; and the names
    with the new texts appended."""
    wanted = pd.Index(texts)
    index = pd.Index(names)
    existing = index.get_indexer(wanted) if index.is_unique else np.full(len(wanted), -1)
    new = pd.Index(wanted[existing < 0].unique())
    target = np.where(existing >= 0, existing, len(names) + new.get_indexer(wanted))
    return target.astype(np.int64), np.r_[names, np.asarray(new, dtype=object)]


def _gpu_rows(trace: Trace) -> np.ndarray:
    """Event rows of the GPU ops, in the order of ``launch_pairs``' rows (the same selection)."""
    cols = event_columns(trace)
    return np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))


def _recorded_ops(trace: Trace) -> tuple[np.ndarray, list[str]]:
    """Per GPU op (``launch_pairs`` order), the code into the returned texts of the op its producer recorded on
    it (the ``op`` column; -1 where none), and those texts; empty when no GPU op has one."""
    if trace.store.columns.get("op") is None:
        return np.zeros(0, np.int64), []
    codes, texts = dictionary_codes(trace.take("op", _gpu_rows(trace)))
    if not (codes >= 0).any():
        return np.zeros(0, np.int64), []
    return codes, [str(t) for t in texts]


def recorded_op_codes(trace: Trace) -> np.ndarray:
    """Per row of ``launch_pairs(trace)``, the op-name code (into ``op_names(trace).names``) of the op recorded
    on the GPU op itself; -1 where none."""
    recorded = op_names(trace).recorded
    return np.full(len(launch_pairs(trace)), -1, np.int64) if recorded is None else recorded


def gpu_op_name_codes(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``launch_pairs(trace)``: whether it is attributed to an op and that op's name code (the op
    recorded on it, else its outermost op's), -1 where unattributed (or the op has no name)."""
    return memo(trace, "gpu_op_name_codes", lambda: _with_recorded_ops(trace, op_of_gpu_ops(trace)))


def _with_recorded_ops(trace: Trace, op_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``launch_pairs``, given the op row the host join found for it (-1: none): whether it has an
    op, and the name code of the op recorded on it if any, else of the joined op's (-1: none, or no name)."""
    recorded = recorded_op_codes(trace)
    code = np.full(op_row.size, -1, np.int64)
    joined = op_row >= 0
    code[joined] = op_name_codes(trace, op_row[joined])
    code = np.where(recorded >= 0, recorded, code)
    return joined | (recorded >= 0), code


def emit_nvtx_rows(trace: Trace) -> np.ndarray:
    """Event rows of the emit_nvtx op ranges on threads (annotations whose name has the emit_nvtx form)."""
    def compute() -> np.ndarray:
        cols = event_columns(trace)
        return np.flatnonzero(cols.of_kind(ANNOTATION) & op_names(trace).nvtx[cols.name] & (cols.tid >= 0))

    return memo(trace, "emit_nvtx_rows", compute)


def framework_op_rows(trace: Trace) -> np.ndarray:
    """Event rows of the framework ops on threads: ``cpu_op`` rows and emit_nvtx op ranges, sorted."""
    def compute() -> np.ndarray:
        cols = event_columns(trace)
        cpu, nvtx = np.flatnonzero(cols.of_kind(CPU_OP) & (cols.tid >= 0)), emit_nvtx_rows(trace)
        return np.union1d(cpu, nvtx) if cpu.size and nvtx.size else (nvtx if nvtx.size else cpu)

    return memo(trace, "framework_op_rows", compute)


def _emit_nvtx_sizes(name: str) -> str | None:
    """The ``sizes = [...]`` list of an emit_nvtx range's text (the op's input shapes, as Kineto's
    ``Input Dims``), or None."""
    at = name.find(", sizes = ")
    if at < 0 or not _EMIT_NVTX.match(name):
        return None
    text = name[at + len(", sizes = "):]
    end = text.find(", input_op_ids = ")
    return text if end < 0 else text[:end]


def op_name_codes(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The op-name code (into ``op_names(trace).names``) of each framework op row."""
    return op_names(trace).code[event_columns(trace).name[rows]]


def outermost_ops(trace: Trace) -> np.ndarray:
    """Event rows of the outermost framework ops, sorted by (thread, start); computed once per trace (the ops
    section and three diagnosis evidence builders read it; an emit_nvtx export has millions of op ranges)."""
    return _op_tree(trace)[0]


def _op_tree(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(outermost ops; per GPU op, its outermost op and its innermost op): all from one ordering of the op
    ranges by thread, once per trace."""
    return memo(trace, "op_tree", lambda: _compute_op_tree(trace))


def _compute_op_tree(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    outermost, innermost = np.full(len(pairs), -1, np.int64), np.full(len(pairs), -1, np.int64)
    rows, bounds = ops_by_thread(cols, framework_op_rows(trace))
    if rows.size == 0:
        return rows, outermost, innermost
    # The launches by thread, each thread's against that thread's ops.
    matched = np.flatnonzero(pairs["matched"])
    threads = thread_key(cols.pid[rows[bounds[:-1]]], cols.tid[rows[bounds[:-1]]])  # ascending
    key = thread_key(pairs["pid"][matched], pairs["tid"][matched])
    code = np.minimum(np.searchsorted(threads, key), threads.size - 1)
    code[threads[code] != key] = -1
    del key
    by_thread = np.argsort(code, kind="stable")
    edges = np.searchsorted(code[by_thread], np.arange(-1, threads.size) + 0.5)
    del code
    launch_start = pairs["launch_start"][matched]
    keep = np.zeros(rows.size, bool)
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):  # a loop over threads
        thread_rows = rows[lo:hi]
        start, end = cols.start[thread_rows], cols.end[thread_rows]
        # Outermost: each op against the largest end seen before it on its thread (starting before it means
        # enclosed).
        outer = keep[lo:hi]
        outer[0] = True
        outer[1:] = start[1:] >= np.maximum.accumulate(end)[:-1]
        launches = by_thread[edges[i]:edges[i + 1]]
        if launches.size:
            t = launch_start[launches]
            outermost[matched[launches]] = _running(thread_rows, start, end, np.flatnonzero(outer), t)
            innermost[matched[launches]] = _innermost_at(thread_rows, start, end, t)
    return rows[keep], outermost, innermost


def _running(rows: np.ndarray, start: np.ndarray, end: np.ndarray, among: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time, the row of the range of ``among`` (positions into one thread's ``rows``/``start``/``end``,
    ascending, in start order) that started last at or before it, where it still runs then (-1: none)."""
    found = np.full(t.size, -1, np.int64)
    hit = intervals.running_at(start[among], end[among], t)
    found[hit >= 0] = rows[among[hit[hit >= 0]]]
    return found


def _innermost_at(rows: np.ndarray, start: np.ndarray, end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time, the deepest of one thread's op ranges (``rows``, ordered by start, longest first) whose
    interval holds it (-1: none): each nesting level's ranges are disjoint, so a binary search per level finds
    the one running then, and deeper levels overwrite."""
    level = _sorted_depth(start, end)
    found = np.full(t.size, -1, np.int64)
    for lvl in range(int(level.max()) + 1):  # a loop over nesting levels
        hit = _running(rows, start, end, np.flatnonzero(level == lvl), t)
        found[hit >= 0] = hit[hit >= 0]
    return found


def ops_by_thread(cols: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` (ascending) ordered by (thread key, start, longest first, row), as ``np.lexsort`` on those
    keys orders them, and where each thread's run begins: ``rows[bounds[i]:bounds[i + 1]]`` is one thread's.

    The event table is in start order, so this is a radix sort of a small thread number plus a sort of the
    rows that tie on (thread, start), not a three-key sort of an export's tens of millions of op ranges."""
    if rows.size == 0:
        return rows, np.zeros(1, np.int64)
    start = cols.start[rows]
    if (start[1:] < start[:-1]).any():  # a table not in start order: by start first (stable)
        order = np.argsort(start, kind="stable")
        rows, start = rows[order], start[order]
    thread = dense_codes(thread_key(cols.pid[rows], cols.tid[rows]))[0]
    thread = thread.astype(np.int16) if thread.max() < np.iinfo(np.int16).max else thread
    order = np.argsort(thread, kind="stable")
    rows, thread, start = rows[order], thread[order], start[order]
    del order
    # Ops of a thread starting together: longest first, then in row order.
    tie = (thread[1:] == thread[:-1]) & (start[1:] == start[:-1])
    del start
    if tie.any():
        at = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])
        group = np.cumsum(np.r_[True, ~tie[at[:-1]]])  # consecutive tied rows share a (thread, start)
        tied = rows[at]
        rows[at] = tied[np.lexsort((tied, cols.start[tied] - cols.end[tied], group))]
    bounds = np.r_[0, np.flatnonzero(thread[1:] != thread[:-1]) + 1, rows.size]
    return rows, bounds


def op_of_gpu_ops(trace: Trace) -> np.ndarray:
    """For each row of ``launch_pairs(trace)``, the event row of its outermost op (-1 when none); once per trace."""
    return _op_tree(trace)[1]


def outermost_op_at(trace: Trace, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each (pid, tid, time), the event row of the outermost op running on that thread then (-1: none)."""
    ops = outermost_ops(trace)
    out = np.full(len(t), -1, np.int64)
    at = _running_at(event_columns(trace), ops, pid, tid, t)
    found = at >= 0
    out[found] = ops[at[found]]
    return out



def ops_report(trace: Trace, limit: int = TOP_OPS) -> dict[str, Any]:
    """The ``ops`` block (see the module docstring)."""
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    ops = outermost_ops(trace)
    duration = (pairs["end"] - pairs["start"]).astype(np.int64)
    kernel = pairs["is_kernel"]
    attributed, op_code = gpu_op_name_codes(trace)
    frame = pd.DataFrame({"name": op_code[attributed],
                          "gpu": np.where(kernel[attributed], duration[attributed], 0),
                          "copy": np.where(kernel[attributed], 0, duration[attributed])})
    gpu = frame.groupby("name")[["gpu", "copy"]].sum()
    cpu = pd.DataFrame({"name": op_name_codes(trace, ops), "cpu": cols.end[ops] - cols.start[ops]}).groupby("name")["cpu"].agg(
        ["size", "sum"])
    # Names only recorded on GPU ops (no host op rows): their launches as the count, no host time.
    table = cpu.join(gpu, how="outer")
    gpu_only = table["size"].isna().to_numpy()
    if gpu_only.any():
        table.loc[gpu_only, "size"] = _launches(trace).reindex(table.index[gpu_only]).fillna(0).to_numpy()
    table = table.fillna(0).reset_index()
    n_names = len(table)
    table = table.sort_values(["gpu", "sum", "name"], ascending=[False, False, True]).head(limit)
    names = op_names(trace).names
    counted = flop_ops(trace)
    flops_by_name: pd.Series | None = None
    bytes_by_name: pd.Series | None = None
    if counted.recorded:
        code: np.ndarray
        if counted.op_code is not None:  # FLOPs recorded on the device: the op of the GPU ops they cover
            code = counted.op_code
        else:
            outer = _enclosing_outermost(trace, ops, counted.rows)
            code = np.full(outer.size, -1, np.int64)
            code[outer >= 0] = op_name_codes(trace, outer[outer >= 0])
            code[outer < 0] = _UNATTRIBUTED
        found = code != _UNATTRIBUTED
        flops_by_name = pd.Series(counted.flops[found]).groupby(code[found]).sum()
        # An op name's bytes only where every counted op in it has a byte count (else unknown).
        known = pd.Series(counted.bytes[found]).groupby(code[found])
        bytes_by_name = known.sum().where(known.count() == known.size())
    # A name none of whose instances holds a counted op: null (not modelled), not 0.
    rows = [{"name": str(names[r.name]) if r.name >= 0 else "", "count": int(r.size), "gpu_ns": int(r.gpu),
             "copy_ns": int(r.copy), "cpu_ns": int(r.sum),
             "flops": None if flops_by_name is None or r.name not in flops_by_name.index
             else float(flops_by_name[r.name])}
            for r in table.itertuples(index=False)]
    return {
        "op_count": int(ops.size),
        "names": int(n_names),
        "kernel_ns": int(duration[kernel].sum()),
        "attributed_kernel_ns": int(duration[kernel & attributed].sum()),
        "copy_ns": int(duration[~kernel].sum()),
        "attributed_copy_ns": int(duration[~kernel & attributed].sum()),
        "unattributed_count": int((~attributed).sum()),
        "by_name": rows,
        "by_innermost": by_innermost(trace, limit),
        "by_module": by_module(trace, limit),
        "compute": (compute := compute_report(trace)),
        "roofline": roofline(trace, compute, gpu["gpu"], flops_by_name, bytes_by_name),
    }


# An op-name code for "in no op" (op-name codes are >= -1).
_UNATTRIBUTED = -2


def _launches(trace: Trace) -> pd.Series:
    """Per op-name code recorded on GPU ops, the launches of its GPU ops: distinct (device, correlation id),
    a GPU op without a correlation id counting as one launch."""
    pairs = launch_pairs(trace)
    recorded = recorded_op_codes(trace)
    rec = np.flatnonzero(recorded >= 0)
    corr = pairs["correlation_id"][rec].astype(np.int64)
    frame = pd.DataFrame({"name": recorded[rec], "device": pairs["device"][rec],
                          "launch": np.where(corr >= 0, corr, -1 - rec)})
    return frame.drop_duplicates().groupby("name").size()


@dataclass(frozen=True)
class FlopOps:
    """The counted ops (see the module docstring): event rows, FLOPs, class and dtype of each, sorted by row.
    ``recorded``: whether any op of the trace has recorded shapes or flops (else FLOPs are unknown, not 0)."""

    rows: np.ndarray
    flops: np.ndarray
    op_class: np.ndarray  # str: flop_model.CLASSES
    dtype: np.ndarray  # str or None: the peak table's dtype of the op's inputs
    recorded: bool
    bytes: np.ndarray  # float, NaN where unknown: flop_model.OpFlops.bytes
    # FLOPs the producer recorded on the device (XLA op or GPU op rows, not host ops): the op-name code of each
    # (the op of the GPU ops it covers; -2 where none); None for host-op FLOPs
    op_code: np.ndarray | None = None


def flop_ops(trace: Trace) -> FlopOps:
    """The ops whose FLOPs are counted, once per trace (cached)."""
    return memo(trace, "flop_ops", lambda: _flop_ops(trace))


def _flop_ops(trace: Trace) -> FlopOps:
    cols = event_columns(trace)
    cpu = np.flatnonzero(cols.of_kind(CPU_OP))
    # emit_nvtx op ranges: their shapes are the ``sizes = [...]`` of their text (no dtypes, no flops).
    nvtx = emit_nvtx_rows(trace)
    # Once per distinct name; gathered per row only for the ranges counted below (an export has tens of millions).
    present = names_in_use(cols.name[nvtx], len(cols.names))
    dims_by_code = np.full(len(cols.names) + 1, None, dtype=object)  # the last slot: name -1 (null)
    dims_by_code[present] = [_emit_nvtx_sizes(str(cols.names[c])) for c in present]  # a loop over names
    none = FlopOps(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, object), np.zeros(0, object), False,
                   np.zeros(0))
    if cpu.size == 0 and nvtx.size == 0:
        return _device_flop_ops(trace) or none
    recorded = trace.frame(cpu, ["input_dims", "flops"])
    if not (recorded["input_dims"].notna().any() or recorded["flops"].notna().any()
            or pd.notna(dims_by_code).any()):
        return _device_flop_ops(trace) or none
    # Candidates: a formula for the op name (evaluated once per name the ops use) or a recorded flops value.
    names = op_names(trace)
    rows = np.r_[cpu, nvtx]
    code = names.code[cols.name[rows]]
    used = np.unique(code)
    formula = np.zeros(len(names.names) + 1, bool)  # the last slot: name -1 (null)
    formula[used[used >= 0]] = [flop_model.modelled(str(names.names[c])) for c in used[used >= 0]]
    pick = formula[code] | np.r_[recorded["flops"].notna().to_numpy(bool), np.zeros(nvtx.size, bool)]
    candidates = rows[pick]
    inputs = ["input_dims", "input_types", "concrete_inputs", "flops"]
    frame = pd.concat([trace.frame(cpu[pick[:cpu.size]], inputs).reset_index(drop=True).astype(object),
                       pd.DataFrame({"input_dims": dims_by_code[cols.name[nvtx[pick[cpu.size:]]]], "input_types": None,
                                     "concrete_inputs": None, "flops": None}, dtype=object)], ignore_index=True)
    frame["name"] = code[pick]
    _add_conv_context(trace, frame, candidates, np.r_[cpu, nvtx],
                      np.r_[recorded["input_dims"].to_numpy(object), dims_by_code[cols.name[nvtx]]])
    keys = ["name", "input_dims", "input_types", "concrete_inputs", "output", "passes"]
    # One FLOP formula evaluation per distinct signature (name, recorded inputs, context), not per op.
    signatures = frame[keys].astype(object).where(frame[keys].notna(), None).drop_duplicates()
    modelled = pd.DataFrame([flop_model.op_flops(str(names.names[s.name]), s.input_dims, s.input_types,
                                                 s.concrete_inputs, json.loads(s.output) if s.output else None,
                                                 None if s.passes is None else int(s.passes)).__dict__
                             for s in signatures.itertuples()],
                            index=signatures.index, columns=["flops", "op_class", "dtype", "bytes"])
    signatures = signatures.join(modelled)
    per_op = frame[keys].astype(object).where(frame[keys].notna(), None).merge(signatures, on=keys, how="left")
    # The producer's own count where it recorded one, else the formula's.
    value = pd.to_numeric(frame["flops"], errors="coerce").to_numpy(float, na_value=np.nan)
    value = np.where(np.isnan(value), per_op["flops"].astype(float).to_numpy(), value)
    has = ~np.isnan(value)
    rows, value = candidates[has], value[has]
    op_class, dtype = per_op["op_class"].to_numpy(object)[has], per_op["dtype"].to_numpy(object)[has]
    nbytes = pd.to_numeric(per_op["bytes"], errors="coerce").to_numpy(float)[has]
    keep = _innermost(cols, rows)
    order = np.argsort(rows[keep], kind="stable")
    return FlopOps(rows[keep][order], value[keep][order], op_class[keep][order], dtype[keep][order], True,
                   nbytes[keep][order])


def _add_conv_context(trace: Trace, frame: pd.DataFrame, candidates: np.ndarray, rows: np.ndarray,
                      dims: np.ndarray) -> None:
    """``output`` (a forward convolution's consumer's shape) and ``passes`` (the gradient ops a convolution
    backward op called) columns of the candidates' ``frame``, in place (:mod:`.flop_context`); ``rows``/``dims``:
    every framework op row and its Input Dims."""
    cols = event_columns(trace)
    names = op_names(trace)
    text = names.names
    codes = frame["name"].to_numpy(np.int64)
    forward = code_mask(codes, text, flop_model.is_conv_forward)
    backward = code_mask(codes, text, flop_model.is_conv_backward)
    frame["output"] = None
    frame["passes"] = None
    if forward.any():
        with_dims = pd.notna(dims)
        frame.loc[forward, "output"] = flop_context.conv_outputs(
            cols, rows[with_dims], dims[with_dims], candidates[forward], frame["input_dims"].to_numpy(object)[forward])
    if backward.any():
        frame.loc[backward, "passes"] = flop_context.backward_passes(cols, text, names.code, rows, candidates[backward])


def _device_flop_ops(trace: Trace) -> FlopOps | None:
    """FLOPs recorded on the device (xplane: the XLA op rows' ``flops``, where any has one, else the GPU ops'),
    one counted op per such row, classed by its HLO op and kernel names (:func:`flop_model.hlo_op_class`); the
    dtype is not recorded. None when no device row has flops."""
    if trace.store.columns.get("flops") is None:
        return None
    cols = event_columns(trace)
    xla = np.flatnonzero(cols.of_kind(GPU_ANNOTATION) & (cols.device >= 0))
    gpu = _gpu_rows(trace)
    xla_flops = _floats(trace, xla)
    if (~np.isnan(xla_flops)).any():
        rows, flops = xla[~np.isnan(xla_flops)], xla_flops[~np.isnan(xla_flops)]
        pair = _first_gpu_op_in(trace, rows)
    else:
        gpu_flops = _floats(trace, gpu)
        pair = np.flatnonzero(~np.isnan(gpu_flops))
        if pair.size == 0:
            return None
        rows, flops = gpu[pair], gpu_flops[pair]
    attributed, op_code = gpu_op_name_codes(trace)
    ok = pair >= 0
    code = np.full(rows.size, _UNATTRIBUTED, np.int64)
    code[ok] = np.where(attributed[pair[ok]], op_code[pair[ok]], _UNATTRIBUTED)
    names = op_names(trace).names
    kernel_name = np.full(rows.size, "", dtype=object)
    kernel_name[ok] = cols.names[cols.name[gpu[pair[ok]]]]
    own = np.where(cols.name[rows] >= 0, cols.names[cols.name[rows]], "").astype(object)
    op_text = np.where(code >= 0, names[np.maximum(code, 0)], "").astype(object)
    # Classed once per distinct (row name, op name, kernel name), not per row.
    keys = pd.MultiIndex.from_arrays([own, op_text, kernel_name])
    distinct = keys.unique()
    classes = pd.Series([flop_model.hlo_op_class(f"{a} {b}", str(k)) for a, b, k in distinct], index=distinct)
    op_class = classes.reindex(keys).to_numpy(object)
    order = np.argsort(rows, kind="stable")
    return FlopOps(rows[order], flops[order], op_class[order], np.full(rows.size, None, object)[order], True,
                   np.full(rows.size, np.nan), code[order])


def _floats(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The ``flops`` column at ``rows`` as float, NaN where null."""
    return trace.take("flops", rows).to_numpy(zero_copy_only=False).astype(float)


def _first_gpu_op_in(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """For each device row (an XLA op), the ``launch_pairs`` row of the first GPU op on its device starting in
    its interval [start, end) (-1: none)."""
    pairs = launch_pairs(trace)
    cols = event_columns(trace)
    out = np.full(rows.size, -1, np.int64)
    if len(pairs) == 0 or rows.size == 0:
        return out
    device = pairs["device"].astype(np.int64)
    order = np.lexsort((pairs["start"], device))
    pos, want = thread_time_positions([(device[order], [pairs["start"][order]]),
                                       (cols.device[rows].astype(np.int64), [cols.start[rows]])])
    at = np.searchsorted(pos, want, side="left")
    ok = at < order.size
    hit = order[np.minimum(at, order.size - 1)]
    ok &= (device[hit] == cols.device[rows]) & (pairs["start"][hit] < np.maximum(cols.end[rows], cols.start[rows] + 1))
    out[ok] = hit[ok]
    return out


def _innermost(cols: Any, rows: np.ndarray) -> np.ndarray:
    """Mask over ``rows`` (ops on threads): the ones that enclose none of the others on their thread."""
    if rows.size == 0:
        return np.zeros(0, bool)
    key = thread_key(cols.pid[rows], cols.tid[rows])
    start, end = cols.start[rows], cols.end[rows]
    # By (thread, start, longest first): ops on a thread nest or are disjoint, so an op encloses another
    # exactly when the next one in this order starts on its thread before it ends.
    order = np.lexsort((-(end - start), start, key))
    k, s, e = key[order], start[order], end[order]
    encloses = np.r_[(k[1:] == k[:-1]) & (s[1:] < e[:-1]) | (k[1:] == k[:-1]) & (s[1:] == s[:-1]), False]
    keep = np.empty(rows.size, bool)
    keep[order] = ~encloses
    return keep


def _enclosing_outermost(trace: Trace, ops: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each op row in ``rows``, the outermost op (of ``ops``, sorted by thread and start) it lies in; -1
    when none (an op is its own outermost op when it is one)."""
    out = np.full(rows.size, -1, np.int64)
    if ops.size == 0 or rows.size == 0:
        return out
    cols = event_columns(trace)
    # A zero-length op holds the op starting with it (its end taken one past its start).
    at = range_running_at(thread_key(cols.pid[ops], cols.tid[ops]), cols.start[ops],
                          np.maximum(cols.end[ops], cols.start[ops] + 1), thread_key(cols.pid[rows], cols.tid[rows]),
                          cols.start[rows])
    out[at >= 0] = ops[at[at >= 0]]
    return out


def compute_report(trace: Trace) -> dict[str, Any]:
    """The ``ops.compute`` block: counted FLOPs, by class and dtype, against the GPUs' peak.

    achieved_flops_per_s = flops / GPU span (first GPU activity start to last end, all devices);
    peak_flops_per_s     = devices x the model's peak for the dtype; with several dtypes, flops / sum over
                           dtypes of (flops_d / peak_d), so that the ideal time is each dtype's FLOPs at its peak;
    mfu                  = flops / (span x peak_flops_per_s). Null with ``reason`` where a figure is unknown.
    """
    counted = flop_ops(trace)
    out: dict[str, Any] = {"flops": None, "flops_by_class": None, "flops_by_dtype": None, "coverage": None,
                           "span_ns": None, "achieved_flops_per_s": None, "device_model": None,
                           "peak_flops_per_s": None, "peak_source": None, "mfu": None, "mfu_is_lower_bound": None,
                           "reason": None}
    if not counted.recorded:
        out["reason"] = ("the trace records no XLA flops (no flops stat on its XLA op or GPU op events)"
                         if trace.metadata.source_format == "xplane"
                         else "the trace records no input shapes or flops (profile with record_shapes=True)")
        return out
    total = float(counted.flops.sum())
    by_class = pd.Series(counted.flops).groupby(counted.op_class).sum()
    dtype = np.where(pd.isna(counted.dtype), "unknown", counted.dtype).astype(str)
    by_dtype = pd.Series(counted.flops).groupby(dtype).sum()
    out.update(flops=total, flops_by_class={c: float(by_class.get(c, 0.0)) for c in flop_model.CLASSES},
               flops_by_dtype={str(d): float(v) for d, v in by_dtype.items() if v > 0},
               coverage=flop_coverage(trace, counted))
    busy = device_busy(trace)
    if not busy:
        out["reason"] = "no GPU activity: no span to divide by"
        return out
    span = max(b.last_end_ns for b in busy.values()) - min(b.first_start_ns for b in busy.values())
    out["span_ns"] = int(span)
    if span <= 0:
        out["reason"] = "the GPU span is empty"
        return out
    out["achieved_flops_per_s"] = total / (span / 1e9)
    names = {trace.device_info(d).get("name") for d in busy}
    models = {peaks.device_model(n) for n in names}
    if len(models) != 1 or None in models:
        unknown = sorted(str(n) for n in names if peaks.device_model(n) is None)
        out["reason"] = (f"no peak-throughput row for device {', '.join(unknown)}" if unknown
                         else "devices of different models")
        return out
    model = cast(str, models.pop())  # one model, not None (checked above)
    out["device_model"] = model
    if total <= 0:
        out["reason"] = "no FLOPs counted"
        return out
    ideal_s, sources = 0.0, []
    for d, flops in by_dtype.items():
        row = peaks.peak(model, str(d)) if flops > 0 else None
        if flops > 0 and row is None:
            out["reason"] = (("the dtype of the ops with recorded flops is not recorded (none is assumed)"
                              if counted.op_code is not None else "dtype of some ops not recorded")
                             if d == "unknown" else f"no {d} peak for {model} in the table")
            return out
        if row is not None:
            ideal_s += flops / (row.flops_per_s * len(busy))
            sources.append(f"{row.dtype}: {row.source}")
    peak_total = total / ideal_s
    out.update(peak_flops_per_s=peak_total, peak_source="; ".join(sources), mfu=total / (span / 1e9 * peak_total),
               mfu_is_lower_bound=out["coverage"] is None or out["coverage"] < MFU_COVERAGE)
    return out


# Below this share of kernel time in counted ops, MFU is reported as a lower bound ("≥"): the uncounted
# kernels did work the FLOPs leave out.
MFU_COVERAGE = 0.9


def flop_coverage(trace: Trace, counted: FlopOps) -> float | None:
    """The share of kernel time inside counted ops (docs/analyses.md, "compute"): kernels launched inside an
    op whose FLOPs are counted (host ops: the launch call's thread and start), or, for FLOPs recorded on the
    device, the counted GPU ops themselves and the kernels starting inside a counted XLA op on their device.
    None when the trace has no kernel time."""
    pairs = launch_pairs(trace)
    kernel = pairs["is_kernel"]
    duration = (pairs["end"] - pairs["start"]).astype(np.int64)
    total = int(duration[kernel].sum())
    if total <= 0:
        return None
    cols = event_columns(trace)
    if counted.op_code is None:  # host ops: innermost counted ops, disjoint on a thread
        ops = counted.rows[np.lexsort((cols.start[counted.rows], thread_key(cols.pid[counted.rows],
                                                                            cols.tid[counted.rows])))]
        launched = np.flatnonzero(kernel & pairs["matched"])
        inside = _running_at(cols, ops, pairs["pid"][launched], pairs["tid"][launched],
                             pairs["launch_start"][launched]) >= 0
        return int(duration[launched[inside]].sum()) / total
    gpu = _gpu_rows(trace)
    covered = np.isin(gpu, counted.rows) & kernel
    xla = counted.rows[cols.of_kind(GPU_ANNOTATION)[counted.rows]]
    if xla.size:
        covered |= kernel & _starts_inside(cols.device[xla].astype(np.int64), cols.start[xla], cols.end[xla],
                                           pairs["device"].astype(np.int64), pairs["start"])
    return int(duration[covered].sum()) / total


def _starts_inside(device: np.ndarray, start: np.ndarray, end: np.ndarray, at_device: np.ndarray,
                   t: np.ndarray) -> np.ndarray:
    """Whether each (device, time) lies inside one of the ranges (``device``, ``start``, ``end``), which may
    overlap: the furthest end reached by the ranges of its device started at or before it is past it."""
    order = np.lexsort((start, device))
    return range_running_at(device[order], start[order], end[order], at_device, t, overlapping=True) >= 0


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return ops_report(trace)


# --- ops named in the diagnosis' evidence (docs/json.md, diagnosis.evidence.*) ---------------------------

_OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#")
_FOREACH_OR_FUSED = re.compile(r"_foreach_|_fused_|fused_adam|FusedAdam|multi_tensor")
TOP_EVIDENCE_OPS = 5


def launching_ops(trace: Trace, limit: int = TOP_EVIDENCE_OPS) -> list[dict[str, Any]]:
    """The outermost op names that launch the most kernels: instances that launched any, kernels, kernels per
    instance, their summed kernel time (an op launching thousands of tiny kernels is the launch-bound one).
    A kernel with an op recorded on it (xplane) counts for that op, whose instances are its launches."""
    pairs = launch_pairs(trace)
    op_row = op_of_gpu_ops(trace)
    recorded = recorded_op_codes(trace)
    joined = pairs["is_kernel"] & (op_row >= 0) & (recorded < 0)
    by_record = pairs["is_kernel"] & (recorded >= 0)
    if not (joined.any() or by_record.any()):
        return []
    names = op_names(trace).names
    op = op_row[joined]
    # Per op-name code (slot = code + 1, slot 0 the null name): kernels, their time, and the distinct ops (an op
    # has one name, so its instances are the distinct ops of that name).
    slot = np.r_[op_name_codes(trace, op), recorded[by_record]] + 1
    kernels = np.bincount(slot, minlength=len(names) + 1)
    kernel_ns = np.zeros(len(names) + 1, np.int64)
    duration = (pairs["end"] - pairs["start"]).astype(np.int64)
    np.add.at(kernel_ns, slot, np.r_[duration[joined], duration[by_record]])
    del slot
    instances = np.bincount(op_name_codes(trace, sorted_distinct(op)) + 1, minlength=len(names) + 1)
    if by_record.any():
        launches = _launches(trace)
        instances[launches.index.to_numpy() + 1] += launches.to_numpy()
    used = np.flatnonzero(kernels)
    top = used[np.lexsort((used, -kernel_ns[used], -kernels[used]))][:limit]
    return [{"name": str(names[s - 1]), "instances": int(instances[s]), "kernels": int(kernels[s]),
             "kernels_per_instance": float(kernels[s] / instances[s]), "kernel_ns": int(kernel_ns[s])} for s in top]


def optimizer_step(trace: Trace) -> dict[str, Any] | None:
    """Kernels launched inside PyTorch's ``Optimizer.step#...`` annotations, their share of all kernels, and
    whether the step uses foreach or fused kernels (None: the trace has no such annotation)."""
    cols = event_columns(trace)
    # An annotation since ~2022; a framework op row in older traces. The name test per dictionary name, then one
    # gather over the rows (the annotations of an emit_nvtx export are tens of millions).
    ann = _name_matches(cols.names, _OPTIMIZER_STEP)[cols.name]
    if not ann.any():
        return None
    ann = np.flatnonzero(ann & cols.of_kind(ANNOTATION, CPU_OP) & (cols.tid >= 0))
    if ann.size == 0:
        return None
    ann = ann[np.lexsort((cols.start[ann], thread_key(cols.pid[ann], cols.tid[ann])))]
    pairs = launch_pairs(trace)
    kernels = pairs["is_kernel"] & pairs["matched"]
    inside = _inside(cols, ann, pairs["pid"][kernels], pairs["tid"][kernels], pairs["launch_start"][kernels])
    cpu = framework_op_rows(trace)
    names = op_names(trace)
    fused = cpu[_name_matches(names.names, _FOREACH_OR_FUSED)[names.code][cols.name[cpu]]]
    in_step = _inside(cols, ann, cols.pid[fused], cols.tid[fused], cols.start[fused])
    total = int(kernels.sum())
    return {"steps": int(ann.size), "kernels": int(inside.sum()),
            "kernel_share": float(inside.sum() / total) if total else None,
            "foreach_or_fused": bool(in_step.any())}


def _name_matches(names: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
    """``pattern.search`` of each dictionary name as a boolean lookup, with a last slot (False) for the null code
    -1: by Arrow's regex kernel over the dictionary (the patterns here mean the same in RE2)."""
    try:
        found = pc.match_substring_regex(pa.array(names, type=pa.string()), pattern.pattern)
        hits = found.fill_null(False).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a name that is not a string: Python's regex, name by name
        hits = np.fromiter((bool(pattern.search(str(n))) for n in names), bool, count=len(names))
    return np.r_[hits.astype(bool), False]


def _inside(cols: Any, ranges: np.ndarray, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Whether each (thread, time) lies in one of ``ranges`` (rows sorted by thread and start, not nested)."""
    return _running_at(cols, ranges, pid, tid, t) >= 0


def sync_ops(trace: Trace, limit: int = TOP_EVIDENCE_OPS) -> list[dict[str, Any]]:
    """The outermost ops inside which blocking synchronization calls run (``aten::item``, ``aten::nonzero``,
    ...), by summed wait: name, calls, wait_ns."""
    cols = event_columns(trace)
    api = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER) & (cols.tid >= 0))
    calls = api[code_mask(cols.name[api], cols.names, is_blocking_sync)]
    op = outermost_op_at(trace, cols.pid[calls], cols.tid[calls], cols.start[calls])
    found = op >= 0
    if not found.any():
        return []
    frame = pd.DataFrame({"name": op_name_codes(trace, op[found]), "ns": cols.end[calls[found]] - cols.start[calls[found]]})
    table = frame.groupby("name")["ns"].agg(["size", "sum"]).reset_index()
    table = table.sort_values(["sum", "name"], ascending=[False, True]).head(limit)
    return [{"name": str(op_names(trace).names[r.name]), "calls": int(r.size), "wait_ns": int(r.sum)}
            for r in table.itertuples(index=False)]


def gap_ops(trace: Trace, limit: int = TOP_EVIDENCE_OPS) -> list[dict[str, Any]]:
    """The longest GPU idle gaps (over all devices) with the outermost op that launched the GPU work just
    before each (``op_before``: the GPU op ending at the gap's start) and just after it (``op_after``)."""
    busy = device_busy(trace)
    if not busy or not any(b.gap_starts.size for b in busy.values()):
        return []
    # Concatenated per device (a loop over devices).
    device = np.concatenate([np.full(b.gap_starts.size, d, np.int64) for d, b in busy.items()])
    start = np.concatenate([b.gap_starts for b in busy.values()]).astype(np.int64)
    end = np.concatenate([b.gap_ends for b in busy.values()]).astype(np.int64)
    length = end - start
    if length.size > limit:  # the gaps at least as long as the limit-th longest (ties included), then ordered
        keep = np.flatnonzero(length >= np.partition(length, length.size - limit)[length.size - limit])
        device, start, end, length = device[keep], start[keep], end[keep], length[keep]
    longest = np.lexsort((start, device, -length))[:limit]
    device, start, end = device[longest], start[longest], end[longest]
    pairs = launch_pairs(trace)
    # The GPU ops ending at some gap's start or starting at some gap's end: one pass over the ops, not one a gap.
    ending, starting = np.flatnonzero(is_member(pairs["end"], start)), np.flatnonzero(is_member(pairs["start"], end))
    out = []
    for d, s, e in zip(device, start, end, strict=True):  # a loop over the few gaps reported
        before = ending[(pairs["device"][ending] == d) & (pairs["end"][ending] == s)]
        after = starting[(pairs["device"][starting] == d) & (pairs["start"][starting] == e)]
        out.append({"device": int(d), "start_ns": int(s), "duration_ns": int(e - s),
                    "op_before": _op_name(trace, before), "op_after": _op_name(trace, after)})
    return out


def _op_name(trace: Trace, gpu_ops: np.ndarray) -> str | None:
    """The op name of the first of ``gpu_ops`` with an op: the one recorded on it, else the outermost op its
    launch call ran in (None: none has one)."""
    attributed, code = gpu_op_name_codes(trace)
    codes = code[gpu_ops]
    codes = codes[attributed[gpu_ops] & (codes >= 0)]
    return str(op_names(trace).names[codes[0]]) if codes.size else None


# --- modules (Kineto with_modules / with_stack: python_function rows "nn.Module: Name_N") -----------------

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
    py = np.flatnonzero(cols.of_kind(PYTHON) & (cols.tid >= 0) & (cols.name >= 0))
    rows = py[code_mask(cols.name[py], cols.names, lambda n: n.startswith(_MODULE_PREFIX))]
    if rows.size == 0:
        return Modules(rows, np.zeros(0, np.int64), np.zeros(0, object))
    key = thread_key(cols.pid[rows], cols.tid[rows])
    rows = rows[np.lexsort((-(cols.end[rows] - cols.start[rows]), cols.start[rows], key))]
    level = nesting_depth(cols.pid[rows], cols.tid[rows], cols.start[rows], cols.end[rows]).astype(np.int64)
    short = np.array([n[len(_MODULE_PREFIX):] for n in cols.names], dtype=object)  # once per dictionary name
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
    return _running_at(cols, outer, cols.pid[inner], cols.tid[inner], cols.start[inner])


def _running_at(cols: Any, ranges: np.ndarray, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each (thread, time), the index into ``ranges`` (sorted by thread and start, disjoint on a thread) of
    the range running then (start <= t < end); -1 when none."""
    return range_running_at(thread_key(cols.pid[ranges], cols.tid[ranges]), cols.start[ranges], cols.end[ranges],
                            thread_key(pid, tid), t)


def module_at(trace: Trace, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each (thread, time), the index into ``modules(trace)`` of the innermost module running then (-1)."""
    mods = modules(trace)
    out = np.full(len(t), -1, np.int64)
    if mods.rows.size == 0:
        return out
    cols = event_columns(trace)
    for lvl in range(int(mods.level.max()) + 1):  # deeper levels overwrite: the innermost wins
        at_level = np.flatnonzero(mods.level == lvl)
        hit = _running_at(cols, mods.rows[at_level], pid, tid, t)
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
    frame = pd.DataFrame({"path": mods.path[module[found]], "kernels": kernel.astype(np.int64),
                          "gpu": np.where(kernel, duration, 0), "copy": np.where(kernel, 0, duration)})
    table = frame.groupby("path")[["kernels", "gpu", "copy"]].sum()
    counted = flop_ops(trace)
    flops = None
    if counted.recorded:
        cols = event_columns(trace)
        at = module_at(trace, cols.pid[counted.rows], cols.tid[counted.rows], cols.start[counted.rows])
        flops = pd.Series(counted.flops[at >= 0]).groupby(mods.path[at[at >= 0]]).sum().rename_axis("path")
        # Named index on both sides: with no launch inside a module (a CUDA-graph capture) the join keeps it.
        table = table.join(flops.rename("flops"), how="outer").fillna(0)
    table = table.reset_index().sort_values(["gpu", "path"], ascending=[False, True]).head(limit)
    return [{"path": str(r.path), "kernels": int(r.kernels), "gpu_ns": int(r.gpu), "copy_ns": int(r.copy),
             "flops": float(r.flops) if flops is not None else None} for r in table.itertuples(index=False)]


# --- per-op roofline --------------------------------------------------------------------------------------

TOP_ROOFLINE = 10


def roofline(trace: Trace, compute: dict[str, Any], gpu_ns: pd.Series, flops: pd.Series | None,
             nbytes: pd.Series | None, limit: int = TOP_ROOFLINE) -> dict[str, Any] | None:
    """Each outermost op name against the roofline of its GPU: achieved FLOP/s over its attributed kernel
    time, arithmetic intensity (FLOPs per byte of the least memory traffic), the attainable
    min(peak, intensity x memory bandwidth), and the names losing the most kernel time to the gap,
    ``gpu_ns x (1 - achieved / attainable)``. None when the peak (``compute``) or the bandwidth is unknown or
    no op has FLOPs and bytes."""
    if flops is None or nbytes is None or not compute.get("peak_flops_per_s") or compute.get("device_model") is None:
        return None
    devices = list(device_busy(trace))
    info = trace.device_info(devices[0])
    links = gpu_specs.device_links(info.get("name"), info.get("compute_major"),
                                   info.get("memory_bandwidth_bytes_per_s"))
    if not links.memory_bytes_per_s:
        return None
    peak = compute["peak_flops_per_s"] / len(devices)  # one device's (kernels of an op run on one)
    bandwidth = float(links.memory_bytes_per_s)
    table = pd.DataFrame({"gpu": gpu_ns, "flops": flops, "bytes": nbytes}).dropna()
    table = table[(table["gpu"] > 0) & (table["flops"] > 0) & (table["bytes"] > 0)]
    if table.empty:
        return None
    table["achieved"] = table["flops"] / (table["gpu"] / 1e9)
    table["intensity"] = table["flops"] / table["bytes"]
    table["attainable"] = np.minimum(peak, table["intensity"] * bandwidth)
    table["efficiency"] = table["achieved"] / table["attainable"]
    table["lost"] = table["gpu"] * np.clip(1 - table["efficiency"], 0, None)
    names = op_names(trace).names
    table["label"] = [str(names[c]) for c in table.index]
    table = table.sort_values(["lost", "label"], ascending=[False, True]).head(limit)
    ridge = peak / bandwidth
    return {"peak_flops_per_s": peak, "memory_bytes_per_s": bandwidth, "memory_source": links.memory_source,
            "ridge_flops_per_byte": ridge,
            "ops": [{"name": r.label, "gpu_ns": int(r.gpu), "flops": float(r.flops), "bytes": float(r.bytes),
                     "achieved_flops_per_s": float(r.achieved), "intensity_flops_per_byte": float(r.intensity),
                     "bound": "compute" if r.intensity >= ridge else "memory",
                     "attainable_flops_per_s": float(r.attainable), "efficiency": float(r.efficiency),
                     "lost_ns": int(round(r.lost))} for r in table.itertuples()]}


# --- innermost op -------------------------------------------------------------------------------------------

def innermost_op_of_gpu_ops(trace: Trace) -> np.ndarray:
    """For each row of ``launch_pairs(trace)``, the event row of the innermost framework op on the launching
    thread whose interval holds the launch call's start (-1 when none): the deepest of the ops around it."""
    return _op_tree(trace)[2]


def _sorted_depth(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """:func:`tracelens.trace.nesting_depth` of one thread's intervals already ordered by (start, longest
    first): the intervals before each in that order minus those of them ended at its start."""
    ended = np.searchsorted(np.sort(end, kind="stable"), start, side="right")  # nearly sorted: timsort
    # A zero-length interval at exactly s counts as "ended" before anything starting at s, including itself
    # and later-ordered ones: remove those not ordered before this interval.
    zero = end == start
    if zero.any():
        cz = np.cumsum(zero)
        last_same_start = np.searchsorted(start, start, side="right") - 1
        ended -= cz[last_same_start] - cz + zero
    np.subtract(np.arange(start.size, dtype=ended.dtype), ended, out=ended)
    np.clip(ended, 0, np.iinfo(np.int16).max, out=ended)
    return ended.astype(np.int16)


def by_innermost(trace: Trace, limit: int = TOP_OPS) -> list[dict[str, Any]]:
    """Kernel and copy time by the innermost framework op around the launch call, most kernel time first."""
    pairs = launch_pairs(trace)
    op_row = innermost_op_of_gpu_ops(trace)
    found, code = _with_recorded_ops(trace, op_row)  # an op recorded on the GPU op itself is its innermost op
    if not found.any():
        return []
    duration = (pairs["end"] - pairs["start"])[found].astype(np.int64)
    kernel = pairs["is_kernel"][found]
    frame = pd.DataFrame({"name": code[found], "kernels": kernel.astype(np.int64),
                          "gpu": np.where(kernel, duration, 0), "copy": np.where(kernel, 0, duration)})
    table = frame.groupby("name")[["kernels", "gpu", "copy"]].sum().reset_index()
    table = table.sort_values(["gpu", "copy", "name"], ascending=[False, False, True]).head(limit)
    return [{"name": str(op_names(trace).names[r.name]) if r.name >= 0 else "", "kernels": int(r.kernels), "gpu_ns": int(r.gpu),
             "copy_ns": int(r.copy)} for r in table.itertuples(index=False)]
