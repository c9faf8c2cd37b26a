"""Collective communication on each GPU: how much of it computation hides, and the device's time breakdown.

Definitions (docs/analyses.md, "communication"), per device, over its span [first GPU op start, last end):
    C  = union of collective kernels: NCCL/RCCL kernels by name (every generation: ``ncclKernel_*``,
         ``ncclDevKernel_*``, ``rcclGenericKernel``, ...) and kernels that start inside an XLA collective op
         on the same device (``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
         ``collective-permute``, with their ``-start``/``-done`` halves); the ops themselves are annotations,
         not GPU time, so busy time and the breakdown agree with the gaps section
    K  = union of the other kernels (computation)
    M  = union of memcpy and memset
    collective_ns                = |C|
    exposed_ns                   = |C \\ K|: collective time with no other kernel running on the device
    overlap_share                = |C ∩ K| / |C|
    breakdown (sums to the span) = computation only |K \\ C| + communication overlapped |C ∩ K|
                                   + communication exposed |C \\ K| + memcpy/memset not overlapped |M \\ (K ∪ C)|
                                   + idle (span − |K ∪ C ∪ M|)
Per collective type: count and summed duration; bytes, algorithm and bus bandwidth only where the trace
records message sizes (none of the readers keeps them yet: null).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import intervals
from ..trace import GPU_ANNOTATION, KERNEL, MEMCPY, MEMSET, Trace
from .columns import event_columns
from .names import code_map, code_mask, is_collective_kernel

# Collective types, in report order. NCCL kernel names carry the type in CamelCase after the prefix; XLA op
# names in kebab-case.
TYPES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "send_recv",
         "collective_permute", "other")
_NCCL_TYPE = re.compile(r"(?i)(?:nccl|rccl)\w*?(AllReduce|AllGather|ReduceScatter|AllToAll|Broadcast|Reduce|"
                        r"SendRecv|Send|Recv)")
_XLA_COLLECTIVE = re.compile(r"^%?(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
                             r"collective-broadcast)(-start|-done)?(\.\d+)?$")
_TYPE_OF = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
            "alltoall": "all_to_all", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "send_recv",
            "send": "send_recv", "recv": "send_recv", "all-reduce": "all_reduce", "all-gather": "all_gather",
            "reduce-scatter": "reduce_scatter", "all-to-all": "all_to_all",
            "collective-permute": "collective_permute", "collective-broadcast": "broadcast"}


def is_xla_collective(name: str) -> bool:
    return bool(_XLA_COLLECTIVE.match(name))


def collective_type(name: str) -> str | None:
    """The collective type of a kernel or XLA op name, ``other`` for an untyped NCCL kernel, None if not one."""
    xla = _XLA_COLLECTIVE.match(name)
    if xla:
        return _TYPE_OF[xla.group(1)]
    if not is_collective_kernel(name):
        return None
    typed = _NCCL_TYPE.search(name)
    return _TYPE_OF[typed.group(1).lower()] if typed else "other"


def _union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    return int((ends - starts).sum())


def device_communication(starts: np.ndarray, ends: np.ndarray, is_collective: np.ndarray, is_kernel: np.ndarray,
                         types: np.ndarray) -> dict[str, Any]:
    """One device's figures from its GPU rows (kernels, collectives, copies) as parallel arrays."""
    c = intervals.merge(starts[is_collective], ends[is_collective])
    k = intervals.merge(starts[is_kernel & ~is_collective], ends[is_kernel & ~is_collective])
    m = intervals.merge(starts[~is_kernel & ~is_collective], ends[~is_kernel & ~is_collective])
    kc = intervals.merge(np.concatenate([c[0], k[0]]), np.concatenate([c[1], k[1]]))
    collective = _union_ns(*c)
    exposed = _union_ns(*intervals.subtract(*c, *k))
    overlapped = collective - exposed
    span = int(ends.max() - starts.min()) if starts.size else 0
    everything = intervals.union_length(starts, ends)
    by_type = []
    for kind in TYPES:
        sel = is_collective & (types == kind)
        if sel.any():
            by_type.append({"type": kind, "count": int(sel.sum()), "time_ns": int((ends[sel] - starts[sel]).sum()),
                            "bytes": None, "algbw_bytes_per_s": None, "busbw_bytes_per_s": None})
    return {
        "collective_count": int(is_collective.sum()),
        "collective_ns": collective,
        "exposed_ns": exposed,
        "overlap_share": overlapped / collective if collective else None,
        "breakdown": {
            "span_ns": span,
            "computation_only_ns": _union_ns(*k) - overlapped,
            "communication_overlapped_ns": overlapped,
            "communication_exposed_ns": exposed,
            "memcpy_exposed_ns": _union_ns(*intervals.subtract(*m, *kc)),
            "idle_ns": span - everything,
        },
        "by_type": by_type,
    }


def _inside_xla_ops(cols: Any, rows: np.ndarray, types: np.ndarray, ops: np.ndarray, op_types: np.ndarray) -> None:
    """Type, in place, the kernels in ``rows`` that start inside one of the XLA collective ``ops`` of their device
    and have no collective type of their own (``op_types``: the type of each of ``ops``)."""
    for device in np.unique(cols.device[ops]):  # a loop over devices
        on_device = cols.device[ops] == device
        mine = ops[on_device]
        order = np.argsort(cols.start[mine], kind="stable")
        op_start, op_end, op_type = cols.start[mine][order], cols.end[mine][order], op_types[on_device][order]
        # An op's end, or the latest end of the ops started before it, covers a kernel starting before it.
        reach = np.maximum.accumulate(op_end)
        candidates = np.flatnonzero((cols.device[rows] == device) & (types == ""))
        at = np.searchsorted(op_start, cols.start[rows][candidates], side="right") - 1
        inside = (at >= 0) & (cols.start[rows][candidates] < reach[np.maximum(at, 0)])
        types[candidates[inside]] = op_type[at[inside]]


def communication_report(trace: Trace) -> dict[str, Any]:
    """The ``communication`` block: per device with GPU activity, its collectives and time breakdown."""
    cols = event_columns(trace)
    on_device = cols.device >= 0
    kernel = cols.of_kind(KERNEL) & on_device
    rows = np.flatnonzero(kernel | (cols.of_kind(MEMCPY, MEMSET) & on_device))
    types = np.where(kernel[rows], code_map(cols.name[rows], cols.names, lambda n: collective_type(n) or "", ""), "")
    ops = np.flatnonzero(cols.of_kind(GPU_ANNOTATION) & on_device
                         & code_mask(cols.name, cols.names, is_xla_collective))
    if ops.size:
        _inside_xla_ops(cols, rows, types, ops, code_map(cols.name[ops], cols.names, lambda n: collective_type(n) or "", ""))
    is_collective = types != ""
    is_kernel = kernel[rows]
    devices = cols.device[rows]
    out = []
    for device in np.unique(devices):  # a loop over devices
        sel = devices == device
        entry = device_communication(cols.start[rows][sel], cols.end[rows][sel], is_collective[sel], is_kernel[sel],
                                     types[sel])
        out.append({"device": int(device), **entry})
    total = sum(d["collective_count"] for d in out)
    return {"collective_count": total, "devices": out}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return communication_report(trace)
