"""The counted ops and their FLOPs, and the ``ops.compute`` block (docs/analyses.md, "compute").

An op is counted when the producer recorded its ``flops`` or :mod:`tracelens.flop_model` computes them from its
recorded shapes, and no op nested in it is counted (the innermost such op: ``aten::linear`` -> ``aten::addmm``
counts once, at ``addmm``). ``compute`` sums them by class and dtype and compares them with the GPUs' peak
(:mod:`tracelens.peaks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ... import flop_model, peaks
from ...arrow_read import arrow_codes, arrow_floats
from ...trace import CPU_OP, GPU_ANNOTATION, Trace
from ...values import is_missing
from ..columns import device_busy, event_columns, memo, range_running_at, thread_key, thread_time_positions
from ..frame_free import group_numbers
from ..launch import launch_pairs
from ..names import code_mask, names_in_use
from . import flop_context
from .sums import float_sums
from .tree import (
    UNATTRIBUTED,
    emit_nvtx_rows,
    emit_nvtx_sizes,
    gpu_op_name_codes,
    gpu_rows,
    op_names,
    thread_range_at,
)


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


def _nvtx_dims_by_code(trace: Trace, nvtx: np.ndarray) -> np.ndarray:
    """Per name code (the last slot: null), the ``sizes = [...]`` of an emit_nvtx op range's text for the names the
    ``nvtx`` rows use, else None. Once per distinct name; the names are tested first among every emit_nvtx name of
    the dictionary (``op_names``), and only where some of them has sizes are the rows' names gathered to find which
    of them the rows use (an export has tens of millions of ranges, whose names mostly have no sizes)."""
    cols = event_columns(trace)
    dims_by_code = np.full(len(cols.names) + 1, None, dtype=object)  # the last slot: name -1 (null)
    if nvtx.size == 0:
        return dims_by_code
    candidates = np.flatnonzero(op_names(trace).nvtx[:-1])  # the rows' names are among these
    dims = [emit_nvtx_sizes(str(cols.names[c])) for c in candidates]  # a loop over names
    sized = np.array([d is not None for d in dims], bool)
    if not sized.any():
        return dims_by_code
    used = np.zeros(len(cols.names) + 1, bool)
    used[names_in_use(cols.name[nvtx], len(cols.names))] = True
    keep = sized & used[candidates]
    dims_by_code[candidates[keep]] = np.asarray(dims, dtype=object)[keep]
    return dims_by_code


def _flop_ops(trace: Trace) -> FlopOps:
    cols = event_columns(trace)
    # emit_nvtx op ranges: their shapes are the ``sizes = [...]`` of their text (no dtypes, no flops).
    nvtx = emit_nvtx_rows(trace)
    dims_by_code = _nvtx_dims_by_code(trace, nvtx)
    none = FlopOps(
        np.zeros(0, np.int64), np.zeros(0), np.zeros(0, object), np.zeros(0, object), False, np.zeros(0)
    )
    nvtx_dims = not is_missing(dims_by_code).all()  # pd.notna(dims_by_code).any()
    if not (trace.store.has("input_dims") or trace.store.has("flops") or nvtx_dims):
        # no row carries either column (a Kineto trace recorded without shapes): every op's are null, no frame of
        # the 0.8M ops' nulls built to find that out (and no positions of the cpu ops: the same answer)
        return _device_flop_ops(trace) or none
    cpu = np.flatnonzero(cols.of_kind(CPU_OP))
    if cpu.size == 0 and nvtx.size == 0:
        return _device_flop_ops(trace) or none
    # The recorded columns as arrays (no frame): Input Dims as text (None: not recorded), flops (NaN: none).
    dims_code, dims_text = arrow_codes(trace.take("input_dims", cpu))
    recorded_flops = arrow_floats(trace.take("flops", cpu))
    if not ((dims_code >= 0).any() or (~np.isnan(recorded_flops)).any() or nvtx_dims):
        return _device_flop_ops(trace) or none
    # every op's Input Dims as its frame column gave them: text, NaN where not recorded
    recorded_dims = np.array([*dims_text, np.nan], dtype=object)[dims_code]
    # Candidates: a formula for the op name (evaluated once per name the ops use) or a recorded flops value.
    names = op_names(trace)
    rows = np.r_[cpu, nvtx]
    code = names.code[cols.name[rows]]
    used = np.unique(code)
    formula = np.zeros(len(names.names) + 1, bool)  # the last slot: name -1 (null)
    formula[used[used >= 0]] = [flop_model.modelled(str(names.names[c])) for c in used[used >= 0]]
    pick = formula[code] | np.r_[~np.isnan(recorded_flops), np.zeros(nvtx.size, bool)]
    candidates = rows[pick]
    picked_cpu, picked_nvtx = cpu[pick[: cpu.size]], nvtx[pick[cpu.size :]]
    # The candidates' inputs (the host ops' recorded ones, then the emit_nvtx ranges' sizes): object columns,
    # None where missing, as the signature keys of the frame were
    frame: dict[str, np.ndarray] = {
        "input_dims": np.r_[recorded_dims[pick[: cpu.size]], dims_by_code[cols.name[picked_nvtx]]],
        "name": code[pick],
    }
    for column in ("input_types", "concrete_inputs"):
        column_code, column_text = arrow_codes(trace.take(column, picked_cpu))
        frame[column] = np.r_[
            np.array([*column_text, None], dtype=object)[column_code], [None] * picked_nvtx.size
        ]
    flops_column = np.r_[recorded_flops[pick[: cpu.size]], np.full(picked_nvtx.size, np.nan)]
    _add_conv_context(
        trace, frame, candidates, np.r_[cpu, nvtx], np.r_[recorded_dims, dims_by_code[cols.name[nvtx]]]
    )
    keys = ["name", "input_dims", "input_types", "concrete_inputs", "output", "passes"]
    signature = {key: _none_where_missing(frame[key]) for key in keys}
    # One FLOP formula evaluation per distinct signature (name, recorded inputs, context), not per op: the
    # signatures numbered in order of first appearance (drop_duplicates), each evaluated at its first op.
    group = group_numbers([signature[key] for key in keys])
    first = np.unique(group, return_index=True)[1] if group.size else group
    import json  # here, not at module level: an analyze of a trace without these texts never loads json (kimp17)

    modelled = [
        flop_model.op_flops(
            str(names.names[signature["name"][i]]),
            signature["input_dims"][i],
            signature["input_types"][i],
            signature["concrete_inputs"][i],
            json.loads(signature["output"][i]) if signature["output"][i] else None,
            None if signature["passes"][i] is None else int(signature["passes"][i]),
        )
        for i in first.tolist()
    ]
    per_flops = np.array([_float_or_nan(m.flops) for m in modelled], np.float64)
    per_bytes = np.array([_float_or_nan(m.bytes) for m in modelled], np.float64)
    per_class = np.array([m.op_class for m in modelled] + [None], dtype=object)[:-1]
    per_dtype = np.array([m.dtype for m in modelled] + [None], dtype=object)[:-1]
    # The producer's own count where it recorded one, else the formula's.
    value = np.where(np.isnan(flops_column), per_flops[group] if group.size else flops_column, flops_column)
    has = ~np.isnan(value)
    rows, value = candidates[has], value[has]
    op_class, dtype = per_class[group][has], per_dtype[group][has]
    nbytes = per_bytes[group][has]
    keep = _innermost(cols, rows)
    order = np.argsort(rows[keep], kind="stable")
    return FlopOps(
        rows[keep][order],
        value[keep][order],
        op_class[keep][order],
        dtype[keep][order],
        True,
        nbytes[keep][order],
    )


def label_sums(labels: np.ndarray, values: np.ndarray) -> dict[Any, float]:
    """``pd.Series(values).groupby(labels).sum()`` as a dict in label order (missing labels dropped): the sums
    by :func:`.sums.float_sums` (pandas' Kahan sums, exact where they can be)."""
    labels = np.asarray(labels, dtype=object)
    named = ~is_missing(labels)
    if not named.any():
        return {}
    distinct, code = np.unique(labels[named], return_inverse=True)
    summed = float_sums(code.reshape(-1), np.asarray(values, np.float64)[named])
    return dict(zip(distinct[summed.index].tolist(), summed.values.tolist(), strict=True))


def _none_where_missing(values: np.ndarray) -> np.ndarray:
    """An object copy of ``values`` with None where a value is missing (``where(notna(), None)``)."""
    out = np.asarray(values).astype(object)
    out[is_missing(out)] = None
    return out


def _float_or_nan(value: Any) -> float:
    """A modelled count as float64 (``astype(float)`` / ``pd.to_numeric(errors="coerce")`` of its column): NaN
    where None."""
    if value is None:
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def _add_conv_context(
    trace: Trace, frame: dict[str, np.ndarray], candidates: np.ndarray, rows: np.ndarray, dims: np.ndarray
) -> None:
    """``output`` (a forward convolution's consumer's shape) and ``passes`` (the gradient ops a convolution
    backward op called) columns of the candidates' ``frame`` (object arrays), in place (:mod:`.flop_context`);
    ``rows``/``dims``: every framework op row and its Input Dims."""
    cols = event_columns(trace)
    names = op_names(trace)
    text = names.names
    codes = frame["name"].astype(np.int64)
    forward = code_mask(codes, text, flop_model.is_conv_forward)
    backward = code_mask(codes, text, flop_model.is_conv_backward)
    frame["output"] = np.full(codes.size, None, dtype=object)
    frame["passes"] = np.full(codes.size, None, dtype=object)
    if forward.any():
        with_dims = ~is_missing(dims)
        frame["output"][forward] = flop_context.conv_outputs(
            cols,
            rows[with_dims],
            dims[with_dims],
            candidates[forward],
            frame["input_dims"][forward],
        )
    if backward.any():
        frame["passes"][backward] = flop_context.backward_passes(
            cols, text, names.code, rows, candidates[backward]
        )


def _device_flop_ops(trace: Trace) -> FlopOps | None:
    """FLOPs recorded on the device (xplane: the XLA op rows' ``flops``, where any has one, else the GPU ops'),
    one counted op per such row, classed by its HLO op and kernel names (:func:`flop_model.hlo_op_class`); the
    dtype is not recorded. None when no device row has flops."""
    if trace.store.columns.get("flops") is None:
        return None
    cols = event_columns(trace)
    xla = np.flatnonzero(cols.of_kind(GPU_ANNOTATION) & (cols.device >= 0))
    gpu = gpu_rows(trace)
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
    code = np.full(rows.size, UNATTRIBUTED, np.int64)
    code[ok] = np.where(attributed[pair[ok]], op_code[pair[ok]], UNATTRIBUTED)
    names = op_names(trace).names
    kernel_name = np.full(rows.size, "", dtype=object)
    kernel_name[ok] = cols.names[cols.name[gpu[pair[ok]]]]
    own = np.where(cols.name[rows] >= 0, cols.names[cols.name[rows]], "").astype(object)
    op_text = np.where(code >= 0, names[np.maximum(code, 0)], "").astype(object)
    # Classed once per distinct (row name, op name, kernel name), not per row.
    group = group_numbers([own, op_text, kernel_name])
    first = np.unique(group, return_index=True)[1]  # each distinct triple's first row
    op_class = np.array(
        [flop_model.hlo_op_class(f"{own[i]} {op_text[i]}", str(kernel_name[i])) for i in first.tolist()],
        dtype=object,
    )[group]
    order = np.argsort(rows, kind="stable")
    return FlopOps(
        rows[order],
        flops[order],
        op_class[order],
        np.full(rows.size, None, object)[order],
        True,
        np.full(rows.size, np.nan),
        code[order],
    )


def _floats(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The ``flops`` column at ``rows`` as float, NaN where null."""
    return arrow_floats(trace.take("flops", rows))


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
    pos, want = thread_time_positions(
        [(device[order], [pairs["start"][order]]), (cols.device[rows].astype(np.int64), [cols.start[rows]])]
    )
    at = np.searchsorted(pos, want, side="left")
    ok = at < order.size
    hit = order[np.minimum(at, order.size - 1)]
    ok &= (device[hit] == cols.device[rows]) & (
        pairs["start"][hit] < np.maximum(cols.end[rows], cols.start[rows] + 1)
    )
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


def compute_report(trace: Trace) -> dict[str, Any]:
    """The ``ops.compute`` block: counted FLOPs, by class and dtype, against the GPUs' peak.

    achieved_flops_per_s = flops / GPU span (first GPU activity start to last end, all devices);
    peak_flops_per_s     = devices x the model's peak for the dtype; with several dtypes, flops / sum over
                           dtypes of (flops_d / peak_d), so that the ideal time is each dtype's FLOPs at its peak;
    mfu                  = flops / (span x peak_flops_per_s). Null with ``reason`` where a figure is unknown.
    """
    counted = flop_ops(trace)
    out: dict[str, Any] = {
        "flops": None,
        "flops_by_class": None,
        "flops_by_dtype": None,
        "coverage": None,
        "span_ns": None,
        "achieved_flops_per_s": None,
        "device_model": None,
        "peak_flops_per_s": None,
        "peak_source": None,
        "mfu": None,
        "mfu_is_lower_bound": None,
        "reason": None,
    }
    if not counted.recorded:
        out["reason"] = (
            "the trace records no XLA flops (no flops stat on its XLA op or GPU op events)"
            # (an XLA profile, or one tracelens annotate wrote from it: its framework is still jax or tensorflow)
            if trace.metadata.source_format == "xplane" or trace.metadata.framework in ("jax", "tensorflow")
            else "the trace records no input shapes or flops (profile with record_shapes=True)"
        )
        return out
    total = float(counted.flops.sum())
    by_class = label_sums(counted.op_class, counted.flops)
    dtype = np.where(is_missing(counted.dtype), "unknown", counted.dtype).astype(str)
    by_dtype = label_sums(dtype, counted.flops)
    out.update(
        flops=total,
        flops_by_class={c: float(by_class.get(c, 0.0)) for c in flop_model.CLASSES},
        flops_by_dtype={str(d): float(v) for d, v in by_dtype.items() if v > 0},
        coverage=flop_coverage(trace, counted),
    )
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
        out["reason"] = (
            f"no peak-throughput row for device {', '.join(unknown)}"
            if unknown
            else "devices of different models"
        )
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
            out["reason"] = (
                (
                    "the dtype of the ops with recorded flops is not recorded (none is assumed)"
                    if counted.op_code is not None
                    else "dtype of some ops not recorded"
                )
                if d == "unknown"
                else f"no {d} peak for {model} in the table"
            )
            return out
        if row is not None:
            ideal_s += flops / (row.flops_per_s * len(busy))
            sources.append(f"{row.dtype}: {row.source}")
    peak_total = total / ideal_s
    out.update(peak_flops_per_s=peak_total, peak_source="; ".join(sources))
    mfu = total / (span / 1e9 * peak_total)
    if mfu > 1:
        # more work than the GPUs can do at their dense peak in the span: the counted ops' kernels are not (all)
        # in it (lost, on a device the trace does not name, or a window cut around them), or they ran 2:4-sparse
        out["reason"] = (
            f"the counted FLOPs exceed what the GPUs can do at peak in their span (MFU {mfu:.3g}): the counted "
            "ops' kernels are not all in the trace's GPU span"
        )
        return out
    out.update(mfu=mfu, mfu_is_lower_bound=out["coverage"] is None or out["coverage"] < MFU_COVERAGE)
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
        ops = counted.rows[
            np.lexsort((cols.start[counted.rows], thread_key(cols.pid[counted.rows], cols.tid[counted.rows])))
        ]
        launched = np.flatnonzero(kernel & pairs["matched"])
        inside = (
            thread_range_at(
                cols, ops, pairs["pid"][launched], pairs["tid"][launched], pairs["launch_start"][launched]
            )
            >= 0
        )
        return int(duration[launched[inside]].sum()) / total
    gpu = gpu_rows(trace)
    covered = np.isin(gpu, counted.rows) & kernel
    xla = counted.rows[cols.of_kind(GPU_ANNOTATION)[counted.rows]]
    if xla.size:
        covered |= kernel & _starts_inside(
            cols.device[xla].astype(np.int64),
            cols.start[xla],
            cols.end[xla],
            pairs["device"].astype(np.int64),
            pairs["start"],
        )
    return int(duration[covered].sum()) / total


def _starts_inside(
    device: np.ndarray, start: np.ndarray, end: np.ndarray, at_device: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """Whether each (device, time) lies inside one of the ranges (``device``, ``start``, ``end``), which may
    overlap: the furthest end reached by the ranges of its device started at or before it is past it."""
    order = np.lexsort((start, device))
    return range_running_at(device[order], start[order], end[order], at_device, t, overlapping=True) >= 0
