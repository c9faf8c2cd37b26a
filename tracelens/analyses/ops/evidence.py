"""The ops the diagnosis names in its evidence (docs/json.md, diagnosis.evidence.*): the ops launching the most
kernels, the optimizer step's kernels, the ops blocking syncs run in, the ops around the longest idle gaps."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ...arrow_calls import match_substring_regex
from ...arrow_read import arrow_bools
from ...trace import ALL_KINDS, ANNOTATION, CPU_OP, DRIVER, RUNTIME, Trace, string_array
from ...values import is_member, sorted_distinct
from ..blocks import BLOCK_ROWS, kind_mask
from ..columns import device_busy, event_columns, memo, thread_key
from ..derived import held
from ..frame_free import sort_order
from ..launch import launch_pairs
from ..names import HOST_CATEGORY_PRIORITY, SYNC, is_blocking_sync
from .sums import SUM_BLOCK, code_sums, gpu_op_durations
from .tree import (
    emit_nvtx_rows,
    framework_op_rows,
    gpu_op_name_codes,
    op_name_codes,
    op_names,
    op_of_gpu_ops,
    outermost_op_at,
    recorded_launches_of,
    thread_range_at,
)

_OPTIMIZER_STEP = re.compile(r"^Optimizer\.step#")


_FOREACH_OR_FUSED = re.compile(r"_foreach_|_fused_|fused_adam|FusedAdam|multi_tensor")


TOP_EVIDENCE_OPS = 5


@dataclass(frozen=True)
class DiagnosisOps:
    """The ops the diagnosis names (each field: the function of that name at its default limit)."""

    launching_ops: list[dict[str, Any]]
    optimizer_step: dict[str, Any] | None
    sync_ops: list[dict[str, Any]]
    gap_ops: list[dict[str, Any]]


def diagnosis_ops(trace: Trace) -> DiagnosisOps:
    """:class:`DiagnosisOps` of the trace, computed once (a few rows): the ops section computes it while the op
    tree, the op names and the op rows are held for its own tables, so that those (hundreds of MB on a training
    export) are not held for the diagnosis, which runs last; a diagnosis run without the ops section computes it
    itself. A copy each ask: the diagnosis puts its lists into its document."""
    found = memo(
        trace,
        "op_evidence",
        lambda: DiagnosisOps(launching_ops(trace), optimizer_step(trace), sync_ops(trace), gap_ops(trace)),
    )
    return copy.deepcopy(found)


def launching_ops(trace: Trace, limit: int = TOP_EVIDENCE_OPS) -> list[dict[str, Any]]:
    """The outermost op names that launch the most kernels: instances that launched any, kernels, kernels per
    instance, their summed kernel time (an op launching thousands of tiny kernels is the launch-bound one).
    A kernel with an op recorded on it (xplane) counts for that op, whose instances are its launches."""
    pairs = launch_pairs(trace)
    op_row = op_of_gpu_ops(trace)
    recorded = op_names(trace).recorded  # (None: none recorded, no column of -1)
    joined = pairs["is_kernel"] & (op_row >= 0)
    if recorded is not None:
        joined &= recorded < 0
    by_record = pairs["is_kernel"] & (recorded >= 0) if recorded is not None else np.zeros(joined.size, bool)
    if not (joined.any() or by_record.any()):
        return []
    names = op_names(trace).names
    # Per op-name code (slot = code + 1, slot 0 the null name): kernels, their time, and the distinct ops (an op
    # has one name, so its instances are the distinct ops of that name); a block of GPU ops at a time (int64 sums
    # wrap as numpy's, in any order).
    kernels = np.zeros(len(names) + 1, np.int64)
    kernel_ns = np.zeros(len(names) + 1, np.int64)
    op_codes = gpu_op_name_codes(trace)[1]
    for lo in range(0, joined.size, SUM_BLOCK):  # a loop over blocks of GPU ops
        mine, theirs = (
            np.flatnonzero(joined[lo : lo + SUM_BLOCK]),
            np.flatnonzero(by_record[lo : lo + SUM_BLOCK]),
        )
        mine += lo
        theirs += lo
        # (an op joined to a GPU op without an op recorded on it: its name code is the GPU op's, read from them)
        slot, duration = op_codes[mine], gpu_op_durations(trace, mine)
        if recorded is not None:
            slot, duration = np.r_[slot, recorded[theirs]], np.r_[duration, gpu_op_durations(trace, theirs)]
        slot += 1
        kernels += np.bincount(slot, minlength=len(names) + 1)
        np.add.at(kernel_ns, slot, duration)
        del slot, duration, mine, theirs
    op = op_row[joined]
    instances = np.bincount(op_name_codes(trace, sorted_distinct(op)) + 1, minlength=len(names) + 1)
    if by_record.any():
        launched, launches = recorded_launches_of(trace)
        instances[launched + 1] += launches
    used = np.flatnonzero(kernels)
    top = used[np.lexsort((used, -kernel_ns[used], -kernels[used]))][:limit]
    return [
        {
            "name": str(names[s - 1]),
            "instances": int(instances[s]),
            "kernels": int(kernels[s]),
            "kernels_per_instance": float(kernels[s] / instances[s]),
            "kernel_ns": int(kernel_ns[s]),
        }
        for s in top
    ]


def optimizer_step(trace: Trace) -> dict[str, Any] | None:
    """Kernels launched inside PyTorch's ``Optimizer.step#...`` annotations, their share of all kernels, and
    whether the step uses foreach or fused kernels (None: the trace has no such annotation)."""
    cols = event_columns(trace)
    # An annotation since ~2022; a framework op row in older traces. The name test per dictionary name, then one
    # gather over the rows (the annotations of an emit_nvtx export are tens of millions).
    matches = _name_matches(cols.names, _OPTIMIZER_STEP)
    codes = np.flatnonzero(matches[:-1])
    if codes.size == 0:  # no such name: no pass over the rows
        return None
    if codes.size <= 4:  # a comparison per name: no gather over every row
        ann = cols.name == codes[0]
        for code in codes[1:]:
            ann |= cols.name == code
    else:
        ann = matches[cols.name]
    ann = np.flatnonzero(ann)
    # the kind and thread tests at those rows only
    ann = ann[
        np.isin(cols.kind[ann], [ALL_KINDS.index(ANNOTATION), ALL_KINDS.index(CPU_OP)]) & (cols.tid[ann] >= 0)
    ]
    if ann.size == 0:
        return None
    ann = ann[np.lexsort((cols.start[ann], thread_key(cols.pid[ann], cols.tid[ann])))]
    pairs = launch_pairs(trace)
    kernels = pairs["is_kernel"] & pairs["matched"]
    inside = _inside(cols, ann, pairs["pid"][kernels], pairs["tid"][kernels], pairs["launch_start"][kernels])
    total = int(kernels.sum())
    return {
        "steps": int(ann.size),
        "kernels": int(inside.sum()),
        "kernel_share": float(inside.sum() / total) if total else None,
        "foreach_or_fused": _fused_in_steps(trace, ann),
    }


# Op rows in the first block tested for a foreach / fused op inside an optimizer step (each next block twice as
# many; the test stops at the first found).
FUSED_BLOCK = 1 << 16


def _fused_in_steps(trace: Trace, steps: np.ndarray) -> bool:
    """Whether a foreach / fused framework op starts inside one of ``steps`` (optimizer step rows, sorted by
    thread and start): the op rows a block at a time, stopping at the first such op (no name gather over every
    op row where one is found early, as in a training trace's first step)."""
    cols = event_columns(trace)
    names = op_names(trace)
    # per event name code (-1: the last slot)
    is_fused = _name_matches(names.names, _FOREACH_OR_FUSED)[names.code]
    if not is_fused.any():
        return False
    # Where no emit_nvtx op range is there (a Kineto trace) the op rows are the cpu ops on threads: read from the
    # table's own blocks, the kind and thread tested at the fused names' rows only (the op tree groups them straight
    # from the table: no sorted positions of every op row, framework_op_rows, made for this test alone).
    cpu = framework_op_rows(trace) if emit_nvtx_rows(trace).size else None
    size = cols.kind.size if cpu is None else cpu.size
    # blocks doubling in size: a few dozen at most over an export's tens of millions of op rows
    lo, block = 0, FUSED_BLOCK
    while lo < size:  # a loop over blocks of op rows (or of the table's rows), until one is found
        if cpu is None:
            fused = np.flatnonzero(is_fused[cols.name[lo : lo + block]])
            fused += lo
            fused = fused[(cols.kind[fused] == ALL_KINDS.index(CPU_OP)) & (cols.tid[fused] >= 0)]
        else:
            rows = cpu[lo : lo + block]
            fused = rows[is_fused[cols.name[rows]]]
        if fused.size and _inside(cols, steps, cols.pid[fused], cols.tid[fused], cols.start[fused]).any():
            return True
        lo, block = lo + block, 2 * block
    return False


def sync_ops(trace: Trace, limit: int = TOP_EVIDENCE_OPS) -> list[dict[str, Any]]:
    """The outermost ops inside which blocking synchronization calls run (``aten::item``, ``aten::nonzero``,
    ...), by summed wait: name, calls, wait_ns."""
    cols = event_columns(trace)
    calls = _blocking_calls(cols, held(trace, "host_categories"))
    op = outermost_op_at(trace, cols.pid[calls], cols.tid[calls], cols.start[calls])
    found = op >= 0
    if not found.any():
        return []
    # groupby("name")["ns"].agg(["size", "sum"]).sort_values(["sum", "name"], ascending=[False, True])
    table = code_sums(op_name_codes(trace, op[found]), ns=cols.end[calls[found]] - cols.start[calls[found]])
    size, total = table.columns["size"], table.columns["ns"]
    top = sort_order([total, table.index], [False, True])[:limit]
    names = op_names(trace).names
    return [
        {"name": str(names[code]), "calls": int(calls_), "wait_ns": int(ns)}
        for code, calls_, ns in zip(
            table.index[top].tolist(), size[top].tolist(), total[top].tolist(), strict=True
        )
    ]


def _blocking_calls(cols: Any, categories: np.ndarray | None = None) -> np.ndarray:
    """Event rows (int64, ascending) of the runtime and driver calls on threads whose name is a blocking sync
    (``names.is_blocking_sync``, tested once per name the calls use), the table read a block of rows at a time:
    no mask of the whole table, and the calls' rows held as int32 (8.8M calls on the x1512 export) until the
    names pick a few. Given the host categories (``startup.host_categories``, where held: the diagnosis reads
    them after this), the rows of category ``sync`` (the same calls, on threads or not) instead: one pass over a
    byte a row, no kind, thread and name read at every row (0.17 -> 0.03 s at x1512)."""
    if categories is not None:
        calls = np.flatnonzero(categories == HOST_CATEGORY_PRIORITY.index(SYNC))
        # (the calls only: a framework's waits, Python frames, are of category sync too)
        api = (ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER))
        return calls[(cols.tid[calls] >= 0) & kind_mask(cols.kind[calls], api)]
    kinds = (ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER))
    kind, tid, name, size = cols.kind, cols.tid, cols.name, cols.kind.size
    seen = np.zeros(len(cols.names) + 1, bool)  # the names the calls use (the last slot: no name)
    parts = []
    for lo in range(0, size, BLOCK_ROWS):  # a loop over blocks of rows
        mask = kind_mask(kind[lo : lo + BLOCK_ROWS], kinds)
        mask &= tid[lo : lo + BLOCK_ROWS] >= 0
        part = np.flatnonzero(mask)
        part += lo
        parts.append(part.astype(np.int32) if size < 2**31 else part)
        seen[name[parts[-1]]] = True
        del mask, part
    used = np.flatnonzero(seen[:-1])
    blocking = np.zeros(len(cols.names) + 1, bool)
    blocking[used] = np.fromiter((is_blocking_sync(str(cols.names[i])) for i in used), bool, count=used.size)
    return np.concatenate([np.zeros(0, np.int64), *(p[blocking[name[p]]] for p in parts)]).astype(np.int64)


def _ops_at(pairs: Any, column: str, times: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(is_member(pairs[column], times))``, a block of GPU ops at a time (no column of every GPU
    op gathered and searched at once)."""
    if len(pairs) <= SUM_BLOCK:  # one block: the column read whole (no gather of it at every position)
        return np.flatnonzero(is_member(pairs[column], times)).astype(np.int64, copy=False)
    parts = [np.zeros(0, np.int64)]
    for lo in range(0, len(pairs), SUM_BLOCK):  # a loop over blocks of GPU ops
        found = np.flatnonzero(
            is_member(pairs[np.arange(lo, min(lo + SUM_BLOCK, len(pairs)))][column], times)
        )
        found += lo
        parts.append(found)
    return np.concatenate(parts)


def gap_ops(trace: Trace, limit: int = TOP_EVIDENCE_OPS) -> list[dict[str, Any]]:
    """The longest GPU idle gaps (over all devices) with the outermost op that launched the GPU work just
    before each (``op_before``: the GPU op ending at the gap's start) and just after it (``op_after``)."""
    busy = device_busy(trace)
    if not busy or not any(b.gap_starts.size for b in busy.values()):
        return []
    device, start, end, length = _longest_gaps(busy, limit)
    longest = np.lexsort((start, device, -length))[:limit]
    device, start, end = device[longest], start[longest], end[longest]
    pairs = launch_pairs(trace)
    # The GPU ops ending at some gap's start or starting at some gap's end: one pass over the ops, not one a gap.
    ending, starting = _ops_at(pairs, "end", start), _ops_at(pairs, "start", end)
    ending_at, starting_at = pairs[ending], pairs[starting]  # each column gathered once, at those ops
    out = []
    for d, s, e in zip(device, start, end, strict=True):  # a loop over the few gaps reported
        before = ending[(ending_at["device"] == d) & (ending_at["end"] == s)]
        after = starting[(starting_at["device"] == d) & (starting_at["start"] == e)]
        out.append(
            {
                "device": int(d),
                "start_ns": int(s),
                "duration_ns": int(e - s),
                "op_before": _op_name(trace, before),
                "op_after": _op_name(trace, after),
            }
        )
    return out


def _longest_gaps(busy: dict[int, Any], limit: int) -> tuple[np.ndarray, ...]:
    """(device, start, end, length) of the gaps at least as long as the ``limit``-th longest over all devices
    (ties included; every gap where there are at most ``limit``), in device order, then gap order. Each device's
    own such gaps first, a device at a time (a loop over devices): the longest over all are among them (a gap
    shorter than its device's ``limit``-th longest has ``limit`` longer ones), with no int64 copies of every
    device's gaps at once."""
    picked = []
    total = 0
    for d, b in busy.items():  # a loop over devices
        length = (b.gap_ends - b.gap_starts).astype(np.int64, copy=False)
        total += length.size
        keep = np.arange(length.size)
        if length.size > limit:
            keep = np.flatnonzero(length >= np.partition(length, length.size - limit)[length.size - limit])
        picked.append(
            (
                np.full(keep.size, d, np.int64),
                b.gap_starts[keep].astype(np.int64),
                b.gap_ends[keep].astype(np.int64),
            )
        )
        del length
    device, start, end = (np.concatenate(column) for column in zip(*picked, strict=True))
    length = end - start
    if total > limit:  # the gaps at least as long as the limit-th longest (ties included)
        keep = np.flatnonzero(length >= np.partition(length, length.size - limit)[length.size - limit])
        device, start, end, length = device[keep], start[keep], end[keep], length[keep]
    return device, start, end, length


def _op_name(trace: Trace, gpu_ops: np.ndarray) -> str | None:
    """The op name of the first of ``gpu_ops`` with an op: the one recorded on it, else the outermost op its
    launch call ran in (None: none has one)."""
    attributed, code = gpu_op_name_codes(trace)
    codes = code[gpu_ops]
    codes = codes[attributed[gpu_ops] & (codes >= 0)]
    return str(op_names(trace).names[codes[0]]) if codes.size else None


def _name_matches(names: np.ndarray, pattern: re.Pattern[str]) -> np.ndarray:
    """``pattern.search`` of each dictionary name as a boolean lookup, with a last slot (False) for the null code
    -1: by Arrow's regex kernel over the dictionary (the patterns here mean the same in RE2)."""
    try:
        found = match_substring_regex(string_array(list(names)), pattern.pattern)  # (pa.array imports pandas)
        hits = arrow_bools(found, False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # a name that is not a string: Python's regex, name by name
        hits = np.fromiter((bool(pattern.search(str(n))) for n in names), bool, count=len(names))
    return np.r_[hits.astype(bool), False]


def _inside(cols: Any, ranges: np.ndarray, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Whether each (thread, time) lies in one of ``ranges`` (rows sorted by thread and start, not nested)."""
    return thread_range_at(cols, ranges, pid, tid, t) >= 0
