"""What the low-occupancy remedy scales each kernel by: its wave-quantized fill, floored by its memory traffic.

Per kernel (a launch of the graph's GPU ops):

    slots  = SMs x the blocks per SM its shape, registers and shared memory allow (the occupancy calculator's
             active blocks per SM; tracelens.occupancy_calc)
    waves  = ceil(grid blocks / slots)
    fill   = grid blocks / (waves x slots), x the shape's occupancy where the block shape limits it
             (the share of the GPU's block slots its waves keep busy: 64 blocks on 132 SMs x 4 slots are 12%,
             140 blocks on 132 SMs x 1 slot are 2 waves at 53%)
    where the calculator has no active-blocks figure (no registers recorded, unknown device limits): the SM
    fill of the occupancy section (min(1, grid / SMs), x the shape's occupancy where the shape limits it)
    floor  = the bytes its op reads (each recorded input tensor once, at the op's dtype: flop_model's
             ``bytes``; a formula op's output written too) / the device's peak memory bandwidth, for a kernel
             that is the only GPU op its outermost framework op launched; no floor where the floor exceeds the
             kernel's recorded time (the op did not read all of its inputs: a gather, a view) or nothing is
             recorded
    time   = max(recorded x fill, floor), never above the recorded time

The same work spread over every block slot at the same per-block speed: an upper bound on the gain where more
blocks per SM do not speed the work up in proportion (a kernel bound by memory latency gains less); the floor
holds it to what the memory can deliver. Vendor-library and collective kernels keep their time (fill 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import flop_model, intervals
from ..analyses.columns import EventColumns, dictionary_codes, event_columns
from ..analyses.names import code_mask, is_collective_kernel, is_library_kernel
from ..analyses.occupancy import LOW_OCCUPANCY
from ..analyses.ops import op_of_gpu_ops
from ..enrich import KernelOccupancy
from ..gpu_specs import links_of_device
from ..occupancy_calc import LIMIT_BLOCKS, LIMIT_WARPS
from ..trace import Trace
from ..values import dense_codes
from .engine import native_solver
from .graph import Graph, unique_ints
from .name_tests import name_lookup


def wave_fill(grid: np.ndarray, sm_count: np.ndarray, active: np.ndarray) -> np.ndarray:
    """grid / (ceil(grid / (SMs x active)) x SMs x active); NaN where a factor is unknown or not positive."""
    slots = sm_count * active
    ok = (grid > 0) & (slots > 0) & np.isfinite(grid) & np.isfinite(slots)
    safe_slots = np.where(ok, slots, 1.0)
    waves = np.ceil(np.where(ok, grid, 1.0) / safe_slots)
    return np.where(ok, grid / (waves * safe_slots), np.nan)


def kernel_model(trace: Trace, g: Graph) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(per graph op: fill (1 for non-kernels and excluded launches), floor in ns (0: none); counts of how)."""
    n = g.op_row.size
    floor = np.zeros(n, np.int64)
    occ = KernelOccupancy(trace)
    if occ.rows.size == 0 or n == 0:
        return np.ones(n), floor, {}
    # as the occupancy section counts them: collectives and vendor-library kernels are not the user's to re-grid;
    # a block shape below LOW_OCCUPANCY limited by warps or blocks per SM (or an unknown limiter) limits the fill.
    # The fill of a launch not excluded depends only on its configuration (device, shape, grid: a few hundred):
    # computed per configuration and gathered once to the graph's ops (the same elementwise operations as per
    # launch, so the same values), no per-launch array of the calculator's values
    per_config = occ.per_config
    limiter, shape = per_config["limiter"], per_config["shape"]
    by_shape = (limiter == LIMIT_WARPS) | (limiter == LIMIT_BLOCKS) | (limiter < 0)
    shape_limited = by_shape & (shape < LOW_OCCUPANCY)
    sm_count = np.full(limiter.size, np.nan)
    for dev, note in occ.device_notes.items():  # a loop over devices
        if note.get("sm_count"):
            sm_count[per_config["device"] == dev] = float(note["sm_count"])
    if "context_sms" in per_config:  # a green context's kernels fill its SMs, not the device's
        context = per_config["context_sms"]
        sm_count = np.where(np.isfinite(context) & (context > 0), context, sm_count)
    quantized = wave_fill(per_config["grid"], sm_count, per_config["active"].astype(float))
    shape = np.where(shape_limited, shape, 1.0)
    sm_fill = np.nan_to_num(per_config["grid_fill"], nan=1.0) * shape  # the occupancy section's SM fill
    config_fill = np.where(np.isfinite(quantized), quantized * shape, sm_fill)
    cols = event_columns(trace)
    finite = np.isfinite(quantized)
    found = _fill_natively(g, occ, cols, config_fill, finite)
    fill, under, recorded, how = (
        found if found is not None else fill_by_numpy(g, occ, cols, config_fill, finite)
    )
    if under.size == 0:
        return fill, floor, how
    floor[under] = _traffic_floor(trace, g, under, recorded)
    how["floored"] = int((floor[under] > np.ceil(recorded * fill[under])).sum())
    return fill, floor, how


# (per graph op: its fill; the ops whose fill is below 1 and their recorded times; how many of those are wave
# quantized, how many SM fill only)
Fills = tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]


def _fill_natively(
    g: Graph, occ: KernelOccupancy, cols: EventColumns, config_fill: np.ndarray, finite: np.ndarray
) -> Fills | None:
    """:func:`fill_by_numpy` in one compiled pass over the ops (_replay_solve.c ``op_fill``: each op's kernel
    searched from the previous op's, its name's exclusion and its configuration's fill read there; no op-sized
    temporaries), where the helper was built and the names' dictionary is small enough to test whole; else None."""
    solver = native_solver()
    collective = name_lookup(cols.names, is_collective_kernel)
    library = name_lookup(cols.names, is_library_kernel)
    name = cols.name
    if solver is None or collective is None or library is None:
        return None
    if not (isinstance(name, np.ndarray) and name.dtype == np.int32):
        return None
    n = g.op_row.size
    fill, under, recorded = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    counts = np.zeros(2, np.int64)
    written = solver.op_fill(  # type: ignore[attr-defined]
        np.ascontiguousarray(g.op_row, np.int64),
        np.ascontiguousarray(occ.rows, np.int64),
        np.ascontiguousarray(occ.config, np.int64),
        np.ascontiguousarray(name),
        (collective | library).view(np.uint8),
        np.ascontiguousarray(config_fill, np.float64),
        np.ascontiguousarray(finite, bool).view(np.uint8),
        np.ascontiguousarray(g.op_start, np.int64),
        np.ascontiguousarray(g.op_end, np.int64),
        np.ascontiguousarray(g.time, np.int64),
        fill,
        under,
        recorded,
        counts,
    )
    if written < 0:
        return None
    how = {"wave_quantized": int(counts[0]), "sm_fill_only": int(counts[1])}
    return fill, under[:written].copy(), recorded[:written].copy(), how


def fill_by_numpy(
    g: Graph, occ: KernelOccupancy, cols: EventColumns, config_fill: np.ndarray, finite_config: np.ndarray
) -> Fills:
    """Per graph op its fill: its kernel's configuration's (``config_fill``), 1 where it is no kernel of ``occ`` or
    an excluded one (a collective or vendor-library kernel, by name); the ops under 1, their recorded times and
    counts (``finite_config``: the configuration's wave-quantized fill is known). The path without the compiled
    helper, and its reference."""
    # (the ops' rows ascend, as the kernels' do: intervals.search_sorted walks both where its helper is built)
    at = np.minimum(intervals.search_sorted(occ.rows, g.op_row), occ.rows.size - 1)
    hit = occ.rows[at] == g.op_row
    config = occ.config[at]
    del at
    # excluded, by the kernels' names: an op that is a kernel has the kernel's row, so its name (the names in use
    # tested once each; no column read again)
    collective = name_lookup(cols.names, is_collective_kernel)
    library = name_lookup(cols.names, is_library_kernel)
    if collective is not None and library is not None:  # one gather of the rows' names, through both rules
        excluded = (collective | library)[cols.name[g.op_row]]
    else:
        codes = cols.name[g.op_row]
        excluded = code_mask(codes, cols.names, is_collective_kernel) | code_mask(
            codes, cols.names, is_library_kernel
        )
    fill = np.where(hit & ~excluded, config_fill[config], 1.0)
    finite = finite_config[config]
    lowered = hit & (fill < 1.0)
    how = {
        "wave_quantized": int((lowered & finite).sum()),
        "sm_fill_only": int((lowered & ~finite).sum()),
    }
    under = np.flatnonzero(fill < 1.0)
    recorded = (
        g.time[g.op_end[under]] - g.time[g.op_start[under]]
    )  # (read once: the floor's test reads it too)
    return fill, under, recorded, how


def _traffic_floor(trace: Trace, g: Graph, ops: np.ndarray, recorded: np.ndarray | None = None) -> np.ndarray:
    """Per op in ``ops``: its op's input bytes / peak memory bandwidth in ns, where it is the only GPU op of its
    outermost framework op and the floor is below its recorded time (``recorded``: the ops' recorded times
    where the caller has them); else 0."""
    out = np.zeros(ops.size, np.int64)
    owner = op_of_gpu_ops(trace)
    if owner.size != g.op_row.size:
        return out
    mine = owner[ops]
    single = (mine >= 0) & only_gpu_op(owner)[ops]
    if not single.any():
        return out
    rows = mine[single]
    op_bytes = _input_bytes(trace, rows)
    bandwidth = np.full(rows.size, np.nan)
    alone = ops[single]
    devices = g.op_device[alone]
    for dev in unique_ints(devices):  # a loop over devices
        info = trace.device_info(int(dev))
        links = links_of_device(info)
        if links.memory_bytes_per_s:
            bandwidth[devices == dev] = links.memory_bytes_per_s
    with np.errstate(invalid="ignore"):
        ns = np.ceil(op_bytes / bandwidth * 1e9)
    if recorded is None:
        took = g.time[g.op_end[alone]] - g.time[g.op_start[alone]]
    else:
        took = recorded[single]
    usable = np.isfinite(ns) & (ns <= took.astype(float))
    out[np.flatnonzero(single)[usable]] = ns[usable].astype(np.int64)
    return out


def only_gpu_op(owner: np.ndarray) -> np.ndarray:
    """Per GPU op: it has an owner (``owner`` >= 0, its framework op) that owns no other GPU op. Where the owners
    ascend over the GPU ops (the ops in row order, a framework op's GPU ops after it: the usual case), each
    owner's ops are one run and an op is alone where neither neighbour among the owned ops shares its owner (no
    count per framework op: a bincount sized by the highest owner, 1.5M on the 406 MB Kineto tile); else by
    that count."""
    owned = np.flatnonzero(owner >= 0)
    values = owner[owned]
    out = np.zeros(owner.size, bool)
    if values.size and bool((values[1:] >= values[:-1]).all()):
        alone = np.ones(values.size, bool)
        same = values[1:] == values[:-1]
        alone[1:] &= ~same
        alone[:-1] &= ~same
        out[owned] = alone
    elif values.size:
        out[owned] = np.bincount(values)[values] == 1
    return out


SIGNATURE_COLUMNS = ("input_dims", "input_types", "concrete_inputs")


def _input_bytes(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per framework-op row: ``flop_model.op_flops(name, input_dims, input_types, concrete_inputs).bytes`` as
    float64 (NaN where None), computed once per distinct signature: the rows' dictionary codes of the four
    columns combined into one signature number (no frame of Python strings per row), the strings read at one row
    of each signature (null: None; a null name: "")."""
    cols = event_columns(trace)
    decoded: list[tuple[np.ndarray, list[Any]]] = [(cols.name[rows], [])]
    decoded += [dictionary_codes(trace.take(column, rows)) for column in SIGNATURE_COLUMNS]
    widths = [int(codes.max(initial=-1)) + 2 for codes, _ in decoded]
    signature = np.zeros(rows.size, np.int64)
    if math.prod(widths) < 2**62:  # the four codes packed into one number, ranked once (the same ranks)
        for (codes, _), width in zip(decoded, widths, strict=True):  # a loop over the four columns
            signature *= width
            signature += codes
            signature += 1
        signature, _ = dense_codes(signature)
    else:
        for (codes, _), width in zip(
            decoded, widths, strict=True
        ):  # (signature so far, this code) renumbered
            signature, _ = dense_codes(signature * width + (codes.astype(np.int64) + 1))
    groups = int(signature.max(initial=-1)) + 1
    first = np.empty(groups, np.int64)
    first[signature[::-1]] = np.arange(rows.size)[::-1]  # a row of each signature
    name_codes = decoded[0][0][first].tolist()
    texts = [[values[c] if c >= 0 else None for c in codes[first].tolist()] for codes, values in decoded[1:]]
    per_signature = np.array(
        [
            _as_float(flop_model.op_flops(str(cols.names[n]) if n >= 0 else "", dims, types, concrete).bytes)
            for n, dims, types, concrete in zip(name_codes, *texts, strict=True)
        ],  # a loop over distinct op signatures
        np.float64,
    ).reshape(-1)
    return per_signature[signature]


def _as_float(value: Any) -> float:
    return np.nan if value is None else float(value)
