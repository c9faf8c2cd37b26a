"""Which framework op launched the GPU work: kernel, copy and host time by outermost op name (the ``ops``
section), and the package of the op analyses it is built from.

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

The modules, one job each:
    tree          op names, the op tree (outermost and innermost op of each GPU op), which op runs at a time
    flops         the counted ops and their FLOPs (``ops.compute``: FLOPs, MFU, coverage)
    flop_context  what a convolution's FLOPs need from the ops around it (output shape, backward passes)
    nn_modules    ``nn.Module`` paths and time by module (``ops.by_module``)
    roofline      each op name against its GPU's roofline (``ops.roofline``)
    evidence      the ops the diagnosis names in its evidence (launching ops, optimizer step, sync ops, gaps)
    sums          sums by op-name code (``sums_by_code``), a block of GPU ops at a time (``sums_by_code_in_blocks``)
This module assembles the section (``by_name``, ``by_innermost`` and the blocks above).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from ...trace import Trace
from ..columns import device_busy, event_columns
from ..frame_free import sort_order
from ..launch import launch_pairs
from ..masked_sums import sum_where
from ..schedule import run_beside
from . import roofline
from .evidence import (
    TOP_EVIDENCE_OPS,
    DiagnosisOps,
    diagnosis_ops,
    gap_ops,
    launching_ops,
    optimizer_step,
    sync_ops,
)
from .flops import MFU_COVERAGE, FlopOps, compute_report, flop_coverage, flop_ops
from .nn_modules import Modules, by_module, module_at, modules
from .roofline import TOP_ROOFLINE
from .sums import (
    EXACT_BITS,
    CodeSums,
    OpValues,
    code_sums_in_blocks,
    float_sums,
    gpu_op_durations,
    kernel_copy_sums,
    sums_by_code,
)
from .tree import (
    TOP_OPS,
    UNATTRIBUTED,
    OpNames,
    enclosing_outermost,
    framework_op_rows,
    gpu_op_name_codes,
    innermost_op_of_gpu_ops,
    op_name_codes,
    op_names,
    op_of_gpu_ops,
    outermost_op_at,
    outermost_ops,
    recorded_launches_of,
    with_recorded_ops,
)

__all__ = [
    "EXACT_BITS",
    "MFU_COVERAGE",
    "TOP_EVIDENCE_OPS",
    "TOP_OPS",
    "TOP_ROOFLINE",
    "DiagnosisOps",
    "FlopOps",
    "Modules",
    "OpNames",
    "by_innermost",
    "by_module",
    "compute_report",
    "diagnosis_ops",
    "flop_coverage",
    "flop_ops",
    "framework_op_rows",
    "gap_ops",
    "gpu_op_name_codes",
    "innermost_op_of_gpu_ops",
    "launching_ops",
    "module_at",
    "modules",
    "op_name_codes",
    "op_names",
    "op_of_gpu_ops",
    "ops_report",
    "optimizer_step",
    "outermost_op_at",
    "outermost_ops",
    "section",
    "sums_by_code",
    "sync_ops",
]


def outer_join(left: CodeSums, right: CodeSums) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``left.frame().join(right.frame(), how="outer")`` as (the codes of either, ascending; each column at them):
    a column that lacks some code becomes float64 with NaN there, as the frame's does."""
    index = np.union1d(left.index, right.index).astype(np.int64)
    columns: dict[str, np.ndarray] = {}
    for side in (left, right):  # a loop over the two sides, then their few columns
        at = np.searchsorted(index, side.index)
        whole = side.index.size == index.size
        for name, values in side.columns.items():
            if whole:
                columns[name] = values.copy()
            else:
                column = np.full(index.size, np.nan)
                column[at] = values
                columns[name] = column
    return index, columns


def ops_report(trace: Trace, limit: int = TOP_OPS) -> dict[str, Any]:
    """The ``ops`` block (see the module docstring)."""
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    ops = outermost_ops(trace)
    kernel = pairs["is_kernel"]
    attributed, op_code = gpu_op_name_codes(trace)
    # kernel_ns, attributed_kernel_ns, copy_ns, attributed_copy_ns: int64 sums (wrapping as numpy's), a block of
    # GPU ops at a time with the sums by op name (no duration and selections of every GPU op held at once)
    totals = np.zeros(4, np.int64)

    def gpu_block(lo: int, hi: int) -> CodeSums:
        duration, k, a = gpu_op_durations(trace, slice(lo, hi)), kernel[lo:hi], attributed[lo:hi]
        copy = ~k
        # int64 adds of the selected durations (wrapping as their compressed sums do), no compressed copies
        totals[:] += [sum_where(duration, where) for where in (k, k & a, copy, copy & a)]
        if a.all():  # every GPU op of the block attributed: no compressed copies of its columns
            return kernel_copy_sums(op_code[lo:hi], duration, k)
        return kernel_copy_sums(op_code[lo:hi][a], duration[a], k[a])

    gpu = code_sums_in_blocks(len(pairs), gpu_block)
    del gpu.columns["size"]

    def cpu_block(lo: int, hi: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        rows = ops[lo:hi]
        return op_name_codes(trace, rows), {"sum": cols.end[rows] - cols.start[rows]}

    cpu = code_sums_in_blocks(ops.size, cpu_block)
    # Names only recorded on GPU ops (no host op rows): their launches as the count, no host time.
    # (cpu.join(gpu, how="outer"): a column missing at some name becomes float64, as the frame's did)
    index, columns = outer_join(cpu, gpu)
    gpu_only = np.isnan(columns["size"]) if columns["size"].dtype.kind == "f" else np.zeros(index.size, bool)
    if gpu_only.any():
        launched, launches = recorded_launches_of(trace)
        at = np.minimum(np.searchsorted(launched, index[gpu_only]), max(launched.size - 1, 0))
        found = launched[at] == index[gpu_only] if launched.size else np.zeros(at.size, bool)
        columns["size"][gpu_only] = np.where(found, launches[at] if launched.size else 0, 0)
    for values in columns.values():  # fillna(0)
        if values.dtype.kind == "f":
            values[np.isnan(values)] = 0
    n_names = int(index.size)
    # sort_values(["gpu", "sum", "name"], ascending=[False, False, True]).head(limit)
    top = sort_order([columns["gpu"], columns["sum"], index], [False, False, True])[:limit]
    table = [
        SimpleNamespace(name=name, **dict(zip(columns, values, strict=True)))
        for name, *values in zip(
            index[top].tolist(), *(v[top].tolist() for v in columns.values()), strict=True
        )
    ]
    names = op_names(trace).names
    counted = flop_ops(trace)
    flops_by_name: OpValues | None = None
    bytes_by_name: OpValues | None = None
    if counted.recorded:
        code: np.ndarray
        if counted.op_code is not None:  # FLOPs recorded on the device: the op of the GPU ops they cover
            code = counted.op_code
        else:
            outer = enclosing_outermost(trace, ops, counted.rows)
            code = np.full(outer.size, -1, np.int64)
            code[outer >= 0] = op_name_codes(trace, outer[outer >= 0])
            code[outer < 0] = UNATTRIBUTED
        found = code != UNATTRIBUTED
        flops_by_name = float_sums(code[found], counted.flops[found])
        # An op name's bytes only where every counted op in it has a byte count (else unknown).
        bytes_by_name = float_sums(code[found], counted.bytes[found], all_known=True)
    # A name none of whose instances holds a counted op: null (not modelled), not 0.
    rows = [
        {
            "name": str(names[r.name]) if r.name >= 0 else "",
            "count": int(r.size),
            "gpu_ns": int(r.gpu),
            "copy_ns": int(r.copy),
            "cpu_ns": int(r.sum),
            "flops": None if flops_by_name is None else flops_by_name.get(r.name),
        }
        for r in table
    ]
    return {
        "op_count": int(ops.size),
        "names": int(n_names),
        "kernel_ns": int(totals[0]),
        "attributed_kernel_ns": int(totals[1]),
        "copy_ns": int(totals[2]),
        "attributed_copy_ns": int(totals[3]),
        "unattributed_count": int((~attributed).sum()),
        "by_name": rows,
        "by_innermost": by_innermost(trace, limit),
        "by_module": by_module(trace, limit),
        "compute": (compute := compute_report(trace)),
        "roofline": roofline.roofline(
            trace, compute, OpValues(gpu.index, gpu.columns["gpu"]), flops_by_name, bytes_by_name
        ),
    }


def by_innermost(trace: Trace, limit: int = TOP_OPS) -> list[dict[str, Any]]:
    """Kernel and copy time by the innermost framework op around the launch call, most kernel time first."""
    pairs = launch_pairs(trace)
    op_row = innermost_op_of_gpu_ops(trace)
    is_kernel = pairs["is_kernel"]

    def block(lo: int, hi: int) -> CodeSums:
        # an op recorded on the GPU op itself is its innermost op
        found, code = with_recorded_ops(trace, op_row[lo:hi], lo)
        if found.all():  # every GPU op of the block has one: the block's own columns, no positions
            return kernel_copy_sums(
                code, gpu_op_durations(trace, slice(lo, hi)), is_kernel[lo:hi], kernels=True
            )
        at = np.flatnonzero(found)
        at += lo
        return kernel_copy_sums(code[found], gpu_op_durations(trace, at), is_kernel[at], kernels=True)

    table = code_sums_in_blocks(len(pairs), block)
    if len(table) == 0:  # no GPU op with an innermost op
        return []
    columns = table.columns
    # sort_values(["gpu", "copy", "name"], ascending=[False, False, True]).head(limit)
    top = sort_order([columns["gpu"], columns["copy"], table.index], [False, False, True])[:limit]
    names = op_names(trace).names
    return [
        {
            "name": str(names[name]) if name >= 0 else "",
            "kernels": int(kernels),
            "gpu_ns": int(gpu),
            "copy_ns": int(copy),
        }
        for name, kernels, gpu, copy in zip(
            table.index[top].tolist(),
            columns["kernels"][top].tolist(),
            columns["gpu"][top].tolist(),
            columns["copy"][top].tolist(),
            strict=True,
        )
    ]


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    if not device_busy(trace):
        return ops_report(trace)
    # The ops the diagnosis names (on traces with GPU activity), found while the op tree is held, once the tree
    # they both read is built: on the other worker where it has nothing of its own to run (schedule.run_beside: on
    # a big trace this section runs alone, the sections beside it done, the exclusive ones kept apart), else after
    # the section's own tables on this thread. (Two threads of their own beside the what-if section, on the 406 MB
    # Kineto tile, were three busy threads on two cores: the section's thread sat in a join ~70 ms while the
    # what-if section, the sections' critical path, lost its core to them.)
    outermost_ops(trace)
    found = run_beside(
        ["report", "evidence"], lambda key: ops_report(trace) if key == "report" else diagnosis_ops(trace)
    )
    report: dict[str, Any] = found["report"]
    return report
