"""Collective communication on each GPU: how much of it computation hides, and the device's time breakdown.

Definitions (docs/analyses.md, "communication"), per device, over its span [first GPU op start, last end):
    C  = union of collective kernels: NCCL/RCCL kernels by name (every generation: ``ncclKernel_*``,
         ``ncclDevKernel_*``, ``rcclGenericKernel``, ...) and kernels held by an XLA collective op on the same
         device (``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``, ``collective-permute``,
         with their ``-start``/``-done`` halves): the latest-started op still running at the kernel's start;
         the ops themselves are annotations, not GPU time, so busy time and the breakdown agree with gaps
    K  = union of the other kernels (computation)
    M  = union of memcpy and memset
    collective_ns                = |C|
    exposed_ns                   = |C \\ K|: collective time with no other kernel running on the device
    overlap_share                = |C ∩ K| / |C|
    breakdown (sums to the span) = computation only |K \\ C| + communication overlapped |C ∩ K|
                                   + communication exposed |C \\ K| + memcpy/memset not overlapped |M \\ (K ∪ C)|
                                   + idle (span − |K ∪ C ∪ M|)
Per collective type: count, summed duration and exposed time; message bytes, algorithm and bus bandwidth
(nccl-tests' definitions, doc/PERFORMANCE.md) where the trace records message sizes:
    bytes S   = elements x element size; the elements are nccl-tests' S: the output for all_gather (the
                gathered array), the input for reduce_scatter (the array being reduced), else the input
                (the output where only it is recorded)
    algbw     = sum S / sum duration over the collectives with a size
    busbw     = sum (S x factor) / the same duration; factor by type with n the group size: all_reduce
                2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast, reduce, send_recv,
                collective_permute 1; unknown (null busbw) for `other` or without the group size
A collective's message comes from its own row, else from the framework op with its External id (Kineto's
``record_param_comms`` / ``c10d::`` ops carry the sizes when its kernels do not), else from the NCCL NVTX range
(domain ``NCCL``, ``ncclAllReduce``, ...) holding its launch call on the launching thread. Its type: the
``Collective name`` the producer recorded (the same sources, in that order: ``allreduce``, ``_allgather_base``,
...), else its kernel's name, else that NVTX range's (a generic ``ncclDevKernel_Generic`` kernel).
Peers: per process group (Kineto ``Process Group Name`` / ``Process Group Ranks`` / ``Group size``), its
collectives' count and time. On the compute stream: the collectives on a stream that also runs computation
kernels (same device), which nothing can overlap there.
Over 600 lines, one module on purpose: the typing, message and breakdown steps share its name patterns.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from .. import intervals
from ..arrow_read import arrow_codes, arrow_floats
from ..trace import ALL_KINDS, ANNOTATION, CPU_OP, GPU_ACTIVITY_KINDS, GPU_ANNOTATION, KERNEL, Trace
from ..values import first_seen_codes, is_missing, sorted_distinct
from .columns import device_busy, event_columns, range_running_at, thread_key
from .frame_free import sort_order, text_rank
from .grouping import sum_per_slot
from .launch import launch_pairs
from .memcpy import device_kernel_union
from .names import code_map, code_mask, is_collective_kernel, names_in_use

# Collective types, in report order. NCCL kernel names carry the type in CamelCase after the prefix; XLA op
# names in kebab-case.
TYPES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "send_recv",
    "collective_permute",
    "other",
)
_NCCL_TYPE = re.compile(
    r"(?i)(?:nccl|rccl)\w*?(AllReduce|AllGather|ReduceScatter|AllToAll|Broadcast|Reduce|"
    r"SendRecv|Send|Recv)"
)
_XLA_COLLECTIVE = re.compile(
    r"^%?(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
    r"collective-broadcast)(-start|-done)?(\.\d+)?$"
)
_TYPE_OF = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "send_recv",
    "send": "send_recv",
    "recv": "send_recv",
    "all-reduce": "all_reduce",
    "all-gather": "all_gather",
    "reduce-scatter": "reduce_scatter",
    "all-to-all": "all_to_all",
    "collective-permute": "collective_permute",
    "collective-broadcast": "broadcast",
}


# NCCL's own NVTX ranges (NCCL >= 2.19, domain "NCCL"): one per API call on the calling thread, named after the
# function (RCCL appends "_impl"); the kernels launched inside one belong to that collective.
NCCL_DOMAIN = "NCCL"
_NCCL_RANGE = re.compile(
    r"^nccl(AllReduce|AllGather|ReduceScatter|Broadcast|Bcast|Reduce|AllToAll|AlltoAll|Send|Recv)"
    r"(_impl)?$"
)
_RANGE_TYPE = {**_TYPE_OF, "bcast": "broadcast"}  # ncclBcast is NCCL's older broadcast API


def nccl_range_type(name: str) -> str | None:
    """The collective type of an NCCL NVTX range name (``ncclAllReduce``, ...), None for other names."""
    match = _NCCL_RANGE.match(name)
    return _RANGE_TYPE[match.group(1).lower()] if match else None


MESSAGE_COLUMNS = [
    "msg_in_elems",
    "msg_out_elems",
    "msg_dtype",
    "group_size",
    "collective_name",
    "process_group",
    "group_ranks",
]

# Bytes per element of the dtype names producers write, matched lower-case: PyTorch ScalarType names (Kineto's
# `dtype` arg, c10/core/ScalarType.h), NCCL's ncclDataType_t names (nccl.h) and `bytes`, the readers' name for a
# message counted in bytes (NCCL's NVTX payloads, docs/schema.md).
DTYPE_BYTES = {
    **dict.fromkeys(
        [
            "bytes",
            "byte",
            "char",
            "bool",
            "qint8",
            "quint8",
            "quint4x2",
            "quint2x4",
            "bits1x8",
            "bits2x4",
            "bits4x2",
            "bits8",
            "float8_e5m2",
            "float8_e4m3fn",
            "float8_e5m2fnuz",
            "float8_e4m3fnuz",
            "float8_e8m0fnu",
            "uint8",
            "int8",
            "ncclint8",
            "ncclchar",
            "nccluint8",
            "ncclfloat8e4m3",
            "ncclfloat8e5m2",
        ],
        1,
    ),
    **dict.fromkeys(
        [
            "short",
            "half",
            "bfloat16",
            "bits16",
            "uint16",
            "int16",
            "float16",
            "ncclfloat16",
            "ncclhalf",
            "ncclbfloat16",
        ],
        2,
    ),
    **dict.fromkeys(
        [
            "int",
            "float",
            "complexhalf",
            "qint32",
            "uint32",
            "int32",
            "float32",
            "ncclint32",
            "ncclint",
            "nccluint32",
            "ncclfloat32",
            "ncclfloat",
        ],
        4,
    ),
    **dict.fromkeys(
        [
            "long",
            "double",
            "complexfloat",
            "uint64",
            "int64",
            "float64",
            "ncclint64",
            "nccluint64",
            "ncclfloat64",
            "nccldouble",
        ],
        8,
    ),
    "complexdouble": 16,
}
# nccl-tests' bus-bandwidth factor per type: (a, b) for a(n-1)/n + b; a type not listed (other) has none.
_BUS_FACTOR = {
    "all_reduce": (2.0, 0.0),
    "all_gather": (1.0, 0.0),
    "reduce_scatter": (1.0, 0.0),
    "all_to_all": (1.0, 0.0),
    "broadcast": (0.0, 1.0),
    "reduce": (0.0, 1.0),
    "send_recv": (0.0, 1.0),
    "collective_permute": (0.0, 1.0),
}


# PyTorch's collective names (c10d ``Collective name``: ``allreduce``, ``_allgather_base``,
# ``allgather_into_tensor_coalesced``, ``_reduce_scatter_base``, ``all_to_all``, ``send``, ...): the type is what
# remains once the leading underscores and the variant suffixes are dropped.
_PG_VARIANT = re.compile(r"(_into_tensor|_tensor|_base|_coalesced|_single)+$")
_PG_TYPES = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "send": "send_recv",
    "recv": "send_recv",
    "sendrecv": "send_recv",
    "gather": "other",
    "scatter": "other",
}


def recorded_collective_type(name: str) -> str | None:
    """The collective type of a recorded ``Collective name`` (``allreduce`` -> ``all_reduce``,
    ``_allgather_base`` -> ``all_gather``), None for a name that is not a collective's (``wait``, ``barrier``)."""
    core = _PG_VARIANT.sub("", name.strip().lower().lstrip("_"))
    return _PG_TYPES.get(core.replace("_", ""))


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


def message_bytes(
    types: np.ndarray,
    in_elems: np.ndarray,
    out_elems: np.ndarray,
    elem_bytes: np.ndarray,
    group_size: np.ndarray | None = None,
) -> np.ndarray:
    """nccl-tests' message size S in bytes per collective (float, NaN where not recorded).

    all_gather counts the gathered output, reduce_scatter the input being reduced: n x the per-rank count, so
    n x the per-rank side where only that is recorded (NCCL's NVTX payload) and n is known; the other types
    their input, or the output where only it is recorded (they are equal there).
    """
    in_elems, out_elems = np.asarray(in_elems, float), np.asarray(out_elems, float)
    n = np.full(in_elems.size, np.nan) if group_size is None else np.asarray(group_size, float)
    gathered = np.where(np.isnan(out_elems), in_elems * n, out_elems)
    reduced = np.where(np.isnan(in_elems), out_elems * n, in_elems)
    elems = np.where(
        types == "all_gather",
        gathered,
        np.where(types == "reduce_scatter", reduced, np.where(np.isnan(in_elems), out_elems, in_elems)),
    )
    return elems * np.asarray(elem_bytes, float)


def bus_factor(types: np.ndarray, group_size: np.ndarray) -> np.ndarray:
    """nccl-tests' bus-bandwidth factor per collective (NaN where undefined or the group size is unknown)."""
    n = np.asarray(group_size, float)
    kinds, at = np.unique(np.asarray(types, dtype=str), return_inverse=True)  # per distinct type, not per row
    a = np.array([_BUS_FACTOR.get(t, (np.nan, np.nan))[0] for t in kinds])[at]
    b = np.array([_BUS_FACTOR.get(t, (np.nan, np.nan))[1] for t in kinds])[at]
    # A factor that does not depend on n (b only) needs no group size: 0 x NaN would hide that.
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(a == 0, 0.0, a * (n - 1) / n)
    return scaled + b


def device_communication(
    starts: np.ndarray,
    ends: np.ndarray,
    is_collective: np.ndarray,
    is_kernel: np.ndarray,
    types: np.ndarray,
    nbytes: np.ndarray | None = None,
    factor: np.ndarray | None = None,
) -> dict[str, Any]:
    """One device's figures from its GPU rows (kernels, collectives, copies) as parallel arrays.

    ``nbytes`` / ``factor``: each row's message size S and bus-bandwidth factor (NaN where unknown; None: none).
    """
    nbytes = np.full(starts.size, np.nan) if nbytes is None else np.asarray(nbytes, float)
    factor = np.full(starts.size, np.nan) if factor is None else np.asarray(factor, float)
    coll = np.flatnonzero(is_collective)
    c = intervals.merge(starts[coll], ends[coll])
    computation = is_kernel & ~is_collective
    k = intervals.merge(starts[computation], ends[computation])
    computation |= is_collective  # from here: not a copy
    m = intervals.merge(starts[~computation], ends[~computation])
    del computation
    span = int(ends.max() - starts.min()) if starts.size else 0
    out = _breakdown(
        c, k, m, bool((ends >= starts).all()), span, lambda: intervals.union_length(starts, ends)
    )
    by_type = []
    # The collective rows only (the type comparisons on an object array: a string comparison per row).
    coll_types, coll_duration = types[coll], ends[coll] - starts[coll]
    # Each collective's own time with no computation kernel beside it (summed per type, not merged).
    coll_alone = coll_duration - intervals.overlap_with_union(starts[coll], ends[coll], *k)
    coll_bytes, coll_factor = nbytes[coll], factor[coll]
    for kind in TYPES if coll.size else ():  # a loop over the collective types
        sel = coll_types == kind
        if not sel.any():
            continue
        sized = sel & ~np.isnan(coll_bytes)
        measured_ns = int(coll_duration[sized].sum())
        total = float(coll_bytes[sized].sum())
        with_factor = bool(sized.any()) and not np.isnan(coll_factor[sized]).any()
        by_type.append(
            {
                "type": kind,
                "count": int(sel.sum()),
                "time_ns": int(coll_duration[sel].sum()),
                "bytes": int(round(total)) if sized.any() else None,
                "algbw_bytes_per_s": total / measured_ns * 1e9 if measured_ns else None,
                "busbw_bytes_per_s": float((coll_bytes[sized] * coll_factor[sized]).sum()) / measured_ns * 1e9
                if measured_ns and with_factor
                else None,
                "exposed_ns": int(coll_alone[sel].sum()),
                "measured_count": int(sized.sum()),
                "measured_ns": measured_ns,
            }
        )
    return {"collective_count": int(is_collective.sum()), **out, "by_type": by_type}


def _breakdown(
    c: tuple[np.ndarray, np.ndarray],
    k: tuple[np.ndarray, np.ndarray],
    m: tuple[np.ndarray, np.ndarray],
    proper: bool,
    span: int,
    union_of_rows: Any,
) -> dict[str, Any]:
    """A device's collective_ns, exposed_ns, overlap_share and breakdown from the unions of its collectives
    (``c``), other kernels (``k``) and copies and memsets (``m``); ``proper``: no row ends before it starts;
    ``union_of_rows``: a function giving the union length of all its rows (read only where not ``proper``)."""
    kc = intervals.merge(np.concatenate([c[0], k[0]]), np.concatenate([c[1], k[1]])) if c[0].size else k
    collective = _union_ns(*c)
    if proper:
        # Unions of proper intervals: |C \ K| = |C u K| - |K|, |M \ (K u C)| = |M| - |M n (K u C)| and
        # |K u C u M| = |K u C| + |M \ (K u C)|, from the unions at hand instead of two subtractions and a merge
        # of every row.
        exposed = _union_ns(*kc) - _union_ns(*k)
        memcpy_exposed = _union_ns(*m) - int(intervals.overlap_with_union(*m, *kc).sum())
        everything = _union_ns(*kc) + memcpy_exposed
    else:  # a row ending before it starts: the merges' own arithmetic
        exposed = _union_ns(*intervals.subtract(*c, *k))
        memcpy_exposed = _union_ns(*intervals.subtract(*m, *kc))
        everything = union_of_rows()
    overlapped = collective - exposed
    return {
        "collective_ns": collective,
        "exposed_ns": exposed,
        "overlap_share": overlapped / collective if collective else None,
        "breakdown": {
            "span_ns": span,
            "computation_only_ns": _union_ns(*k) - overlapped,
            "communication_overlapped_ns": overlapped,
            "communication_exposed_ns": exposed,
            "memcpy_exposed_ns": memcpy_exposed,
            "idle_ns": span - everything,
        },
    }


def device_without_collectives(
    starts: np.ndarray,
    ends: np.ndarray,
    on_device: np.ndarray,
    is_kernel: np.ndarray,
    busy_ns: int | None = None,
    span_ns: int | None = None,
    proper: bool | None = None,
    kernels_union: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """:func:`device_communication` of a device without collectives, read from the columns of every GPU op
    (``on_device``: the device's rows among them): each union gathered from the columns by one mask, not the
    device's rows gathered first and each union's rows from those. Where the caller holds them (``device_busy``),
    ``busy_ns`` and ``span_ns``: the length of the union of all the device's rows and their span; ``proper``: True
    where no row of the device ends before it starts (None: found here); ``kernels_union``: the union of its
    kernels (None: merged here)."""
    empty = np.zeros(0, np.int64)
    kernels = on_device & is_kernel
    k = intervals.merge(starts[kernels], ends[kernels]) if kernels_union is None else kernels_union
    if span_ns is not None and proper is not None:
        span = span_ns
    else:
        count = int(np.count_nonzero(on_device))
        span = 0
        proper = True
        if count:
            first = int(np.min(starts, where=on_device, initial=np.iinfo(np.int64).max))
            span = int(np.max(ends, where=on_device, initial=np.iinfo(np.int64).min)) - first
            proper = bool(np.all(ends >= starts, where=on_device))
    if busy_ns is not None and proper:
        # The busy union is K u M (kernels, copies and memsets): |M \ K| = busy - |K|, and everything is busy;
        # no union of the copies and memsets nor its overlap with K (what _breakdown computes, with C empty).
        kernel_ns = _union_ns(*k)
        breakdown = {
            "span_ns": span,
            "computation_only_ns": kernel_ns,
            "communication_overlapped_ns": 0,
            "communication_exposed_ns": 0,
            "memcpy_exposed_ns": busy_ns - kernel_ns,
            "idle_ns": span - busy_ns,
        }
        out = {"collective_ns": 0, "exposed_ns": 0, "overlap_share": None, "breakdown": breakdown}
        return {"collective_count": 0, **out, "by_type": []}
    np.logical_xor(kernels, on_device, out=kernels)  # the device's copies and memsets
    m = intervals.merge(starts[kernels], ends[kernels])
    del kernels
    out = _breakdown(
        (empty, empty), k, m, proper, span, lambda: intervals.union_length(starts[on_device], ends[on_device])
    )
    return {"collective_count": 0, **out, "by_type": []}


def _inside_xla_ops(
    cols: Any, rows: np.ndarray, types: np.ndarray, ops: np.ndarray, op_types: np.ndarray
) -> None:
    """Type, in place, the kernels in ``rows`` without a collective type of their own by the XLA op of their
    device that holds their start (``ops``: every XLA op row, ``op_types``: each one's collective type, "" for
    computation). The op holding a kernel is the latest-started op that still runs at its start, else the
    earlier op reaching furthest past it: an async collective's window holds the compute kernels of the ops
    started inside it, which are computation, not communication."""
    for device in np.unique(cols.device[ops]):  # a loop over devices
        on_device = cols.device[ops] == device
        mine = ops[on_device]
        order = np.argsort(cols.start[mine], kind="stable")
        op_start, op_end, op_type = cols.start[mine][order], cols.end[mine][order], op_types[on_device][order]
        candidates = np.flatnonzero((cols.device[rows] == device) & (types == ""))
        start = cols.start[rows][candidates]
        # The latest-started op if it still runs, else the one reaching furthest (ties to the later).
        reaching = intervals.reaching_at(op_start, op_end, start)
        running = intervals.running_at(op_start, op_end, start)
        owner = np.where(running >= 0, running, reaching)
        inside = reaching >= 0
        types[candidates[inside]] = op_type[owner[inside]]


def nccl_ranges_of(trace: Trace, cols: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For GPU ``rows`` (indices): the NCCL NVTX range row holding each one's launch call (-1 where none) and
    that range's collective type ("" where none). The range holding a launch is the latest-started NCCL range on
    the launching thread that still runs at the call's start (NCCL's API ranges do not nest)."""
    none = np.full(rows.size, -1, np.int64), np.full(rows.size, "", dtype=object)
    named = np.flatnonzero(
        cols.of_kind(ANNOTATION) & code_mask(cols.name, cols.names, lambda n: bool(_NCCL_RANGE.match(n)))
    )
    if not named.size:
        return none
    domain_code, domains = arrow_codes(trace.take("domain", named))
    domain = np.array([*domains, None], dtype=object)[domain_code]
    ranges = named[domain == NCCL_DOMAIN]
    pairs = launch_pairs(trace)
    at = np.searchsorted(
        np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)), rows
    )  # its row
    matched = pairs["matched"][at]
    if not ranges.size or not matched.any():
        return none
    launch_key = thread_key(pairs["pid"][at], pairs["tid"][at])
    range_key = thread_key(cols.pid[ranges], cols.tid[ranges])
    order = np.lexsort((cols.start[ranges], range_key))
    ranges, range_key = ranges[order], range_key[order]
    near = range_running_at(
        range_key, cols.start[ranges], cols.end[ranges], launch_key, pairs["launch_start"][at]
    )
    safe = np.maximum(near, 0)
    held = matched & (near >= 0)
    found = np.where(held, ranges[safe], -1)
    kinds = code_map(cols.name[ranges], cols.names, lambda n: nccl_range_type(n) or "", "")
    return found, np.where(held, kinds[safe], "")


def _external_id_ops(cols: Any, rows: np.ndarray) -> np.ndarray:
    """Per row (indices): the first framework op (``cpu_op``) with its External id, -1 where none."""
    ext = cols.external_id[rows]
    ops = np.flatnonzero(cols.of_kind(CPU_OP) & np.isin(cols.external_id, np.unique(ext[ext >= 0])))
    if not ops.size:
        return np.full(rows.size, -1, np.int64)
    ids, first = np.unique(cols.external_id[ops], return_index=True)  # rows are in start order: the first op
    at = np.minimum(np.searchsorted(ids, ext), ids.size - 1)
    return np.where((ext >= 0) & (ids[at] == ext), ops[first][at], -1)


# MESSAGE_COLUMNS, a row per collective: the texts as object arrays (None: not recorded), the counts as float64
# (NaN: not recorded; every reader takes them as floats: pd.to_numeric(...).to_numpy(float))
Messages = dict[str, np.ndarray]


def _message_columns(trace: Trace, rows: np.ndarray) -> Messages:
    """The message columns at ``rows``: the texts as object arrays (None where null), the counts as float64 (NaN
    where null): ``trace.frame(rows, MESSAGE_COLUMNS)`` without the frame."""
    out: Messages = {}
    for column in MESSAGE_COLUMNS:  # a loop over the seven columns
        array = trace.take(column, rows)
        if pa.types.is_dictionary(array.type):
            codes, texts = arrow_codes(array)
            out[column] = np.array([*texts, None], dtype=object)[codes]
        else:
            out[column] = arrow_floats(array)
    return out


def _messages(trace: Trace, cols: Any, rows: np.ndarray, linked: list[np.ndarray]) -> Messages:
    """The message columns of the collective ``rows`` (indices), positionally. A row without a message takes
    the one of its first ``linked`` row (arrays of row indices, -1 for none, tried in order) that has one."""
    own = _message_columns(trace, rows)
    for link in linked:  # a loop over the few sources (framework op, NVTX range)
        missing = (
            (is_missing(own["msg_in_elems"]) & is_missing(own["msg_out_elems"]))
            | is_missing(own["collective_name"])
        ) & (link >= 0)
        if not missing.any():
            continue
        other = _message_columns(trace, link[missing])
        at = np.flatnonzero(missing)
        for column in MESSAGE_COLUMNS:  # a loop over the columns
            values = own[column].copy()
            fill = other[column]
            take = is_missing(values[at])
            values[at[take]] = fill[take]
            own[column] = values
    return own


def _message_sizes(msgs: Messages, types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per collective (the rows of ``msgs``, from :func:`_messages`): S in bytes and the bus-bandwidth factor
    (NaN where unknown)."""
    # dtype.where(notna, "").astype(str).str.lower().map(DTYPE_BYTES): once per distinct dtype text
    code, texts = first_seen_codes(msgs["msg_dtype"])
    per_text = [DTYPE_BYTES.get(str(d).lower(), np.nan) for d in texts.tolist()]
    elem = np.array([*per_text, DTYPE_BYTES.get("", np.nan)], np.float64)[code]  # code -1: no dtype
    group = msgs["group_size"]
    nbytes = message_bytes(types, msgs["msg_in_elems"], msgs["msg_out_elems"], elem, group)
    return nbytes, bus_factor(types, group)


def _recorded_types(msgs: Messages) -> np.ndarray:
    """Per collective, the type of its recorded ``Collective name`` ("" where none, or not a collective's)."""
    code, names = first_seen_codes(msgs["collective_name"])
    return np.array([*(recorded_collective_type(str(n)) or "" for n in names.tolist()), ""], dtype=object)[
        code
    ]


def _none_as_empty(texts: np.ndarray) -> np.ndarray:
    """``fillna("")`` of a text column."""
    out = texts.copy()
    out[is_missing(out)] = ""
    return out


def process_groups(msgs: Messages, duration: np.ndarray) -> list[dict[str, Any]]:
    """The collectives by recorded process group (name, ranks, size): count and summed time, most time first;
    empty when no collective records a process group."""
    name, ranks = msgs["process_group"], msgs["group_ranks"]
    kept = ~(is_missing(name) & is_missing(ranks))
    if not kept.any():
        return []
    # fillna({"name": "", "ranks": "", "group": -1}).groupby(["name", "ranks", "group"])["ns"].agg(size, sum):
    # the groups sorted by their keys (each key column as its rank among its sorted values), then
    # sort_values(["time_ns", "name"], ascending=[False, True])
    names = _none_as_empty(name[kept])
    rankss = _none_as_empty(ranks[kept])
    group = msgs["group_size"][kept]
    group = np.where(np.isnan(group), -1.0, group)
    key = np.zeros(names.size, np.int64)
    for column in (names, rankss, group):  # a loop over the three keys
        distinct_values, rank = np.unique(column, return_inverse=True)
        key = key * distinct_values.size + rank.reshape(-1)
    keys, first, slot = np.unique(key, return_index=True, return_inverse=True)
    slot = slot.reshape(-1)
    count = np.bincount(slot, minlength=keys.size)
    time_ns = sum_per_slot(slot, np.asarray(duration, np.int64)[kept], keys.size)
    distinct = list(zip(names[first].tolist(), rankss[first].tolist(), group[first].tolist(), strict=True))
    order = sort_order([time_ns, text_rank(names[first])], [False, True])
    return [
        {
            "name": distinct[i][0] or None,
            "ranks": distinct[i][1] or None,
            "group_size": int(distinct[i][2]) if distinct[i][2] >= 0 else None,
            "count": int(count[i]),
            "time_ns": int(time_ns[i]),
        }
        for i in order.tolist()
    ]


def compute_stream_collectives(
    streams: np.ndarray, is_collective: np.ndarray, is_kernel: np.ndarray
) -> np.ndarray:
    """Per row of one device: whether it is a collective on a stream that also runs computation kernels (where
    nothing can overlap it: a stream runs its kernels one after another)."""
    compute_streams = np.unique(streams[is_kernel & ~is_collective & (streams >= 0)])
    return is_collective & (streams >= 0) & np.isin(streams, compute_streams)


def _collective_types(
    cols: Any, rows: np.ndarray, kernel: np.ndarray, on_device: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(types, is_collective, is_kernel) of the GPU ``rows``: each row's collective type ("" where none: copies,
    memsets and other kernels; an XLA collective op's type for the kernels it holds), whether it has one, and
    whether it is a kernel (``kernel``, ``on_device``: the table's kernel and device masks)."""
    is_kernel = kernel[rows]
    # A copy's or memset's name counts as null (no type): one gather of the types by code, no np.where over them
    kernel_name = cols.name[rows]
    kernel_name[~is_kernel] = -1
    # names tested at these rows, not every row
    ops = np.flatnonzero(cols.of_kind(GPU_ANNOTATION) & on_device)
    if not (ops.size and code_mask(cols.name[ops], cols.names, is_xla_collective).any()):
        # Each used name's type once; the rows' types written at the collectives only (a fill of the others'
        # "", not a gather of a string object per row), whether a row is one from the same per-name table.
        lookup = np.full(len(cols.names) + 1, "", dtype=object)  # code -1 picks the last slot
        for i in names_in_use(kernel_name, len(cols.names)):  # a loop over distinct names, not rows
            lookup[i] = collective_type(str(cols.names[i])) or ""
        is_collective = (lookup != "")[kernel_name]
        types = np.empty(rows.size, dtype=object)
        types[:] = ""
        coll = np.flatnonzero(is_collective)
        types[coll] = lookup[kernel_name[coll]]
        return types, is_collective, is_kernel
    # XLA collective ops: every op of the device decides which kernels it holds
    types = code_map(kernel_name, cols.names, lambda n: collective_type(n) or "", "")
    xla_type = code_map(
        cols.name[ops], cols.names, lambda n: collective_type(n) if is_xla_collective(n) else "", ""
    )
    _inside_xla_ops(cols, rows, types, ops, xla_type)
    return types, types != "", is_kernel


def _kernel_collectives(cols: Any, ops: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """(each GPU op's collective flag, the collectives' types) from the launch pairs' columns (``ops``: one row per
    GPU op), each used name typed once; None where XLA collective ops decide (the rows' own path then)."""
    kind = cols.kind
    annotations = np.flatnonzero(kind == ALL_KINDS.index(GPU_ANNOTATION))
    annotations = annotations[cols.device[annotations] >= 0]
    if annotations.size and code_mask(cols.name[annotations], cols.names, is_xla_collective).any():
        return None
    name, is_kernel = ops["name"], ops["is_kernel"]
    lookup = np.full(len(cols.names) + 1, "", dtype=object)  # code -1 picks the last slot
    for i in names_in_use(name, len(cols.names)):  # a loop over distinct names, not rows
        lookup[i] = collective_type(str(cols.names[i])) or ""
    is_collective = (lookup != "")[name]
    is_collective &= is_kernel  # a copy's or memset's name has no type
    return is_collective, lookup[name[np.flatnonzero(is_collective)]]


def _gpu_rows(cols: Any) -> np.ndarray:
    """The event rows of the GPU ops (kernels, copies, memsets with a device), as the launch pairs hold them."""
    return np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))


def communication_report(trace: Trace) -> dict[str, Any]:
    """The ``communication`` block: per device with GPU activity, its collectives and time breakdown.

    The GPU ops' columns are the launch pairs' (one row per GPU op, shared with the other sections): no mask of
    the whole table, no gather of the ops' times; a device without collectives reads its unions straight from
    them (:func:`device_without_collectives`)."""
    cols = event_columns(trace)
    ops = launch_pairs(trace)
    is_kernel, devices, starts, ends = ops["is_kernel"], ops["device"], ops["start"], ops["end"]
    typed = _kernel_collectives(cols, ops)
    rows = None
    if typed is None:  # XLA collective ops: every op of the device decides which kernels it holds
        on_device = cols.device >= 0
        kernel = cols.of_kind(KERNEL) & on_device
        rows = _gpu_rows(cols)
        types, is_collective, _ = _collective_types(cols, rows, kernel, on_device)
        del kernel, on_device
        coll = np.flatnonzero(is_collective)
        coll_types = types[coll]
        del types
    else:
        is_collective, coll_types = typed
        coll = np.flatnonzero(is_collective)
    msgs: Messages | None = None  # the collectives' messages: read only where there are collectives
    # Message sizes and factors, read at collectives only: none allocated for a trace without one.
    coll_bytes = coll_factor = np.zeros(0)
    if coll.size:
        coll_rows = (_gpu_rows(cols) if rows is None else rows)[coll]
        ranges, kinds = nccl_ranges_of(trace, cols, coll_rows)
        msgs = _messages(trace, cols, coll_rows, [_external_id_ops(cols, coll_rows), ranges])
        # The recorded Collective name first; a generic NCCL kernel (ncclDevKernel_Generic) without one takes
        # the type of the API call that launched it.
        recorded = _recorded_types(msgs)
        coll_types = np.where(recorded != "", recorded, coll_types)
        generic = (coll_types == "other") & (kinds != "")
        coll_types[generic] = kinds[generic]
        coll_bytes, coll_factor = _message_sizes(msgs, coll_types)
    del rows
    # (read only where some collective may share a stream with computation)
    streams = ops["stream"] if coll.size else None
    duration = ends[coll] - starts[coll]
    coll_devices = devices[coll]
    out = []
    every_proper: bool | None = None
    # int8/int16 device ids (a PyTorch profile's) by numpy's stable sort, a radix sort there: 0.09 vs 0.57 ms for
    # the 207K GPU ops of the 406 MB Kineto tile; wider ones (an Nsight export's millions) by np.unique's hashing
    distinct = sorted_distinct(devices) if devices.dtype.itemsize <= 2 else np.unique(devices)
    for device in distinct:  # a loop over devices
        sel = devices == device
        mine = coll_devices == device
        if not mine.any():
            # the device's busy union (shared: device_busy) gives its copies' and memsets' exposed time and its span
            busy = device_busy(trace).get(int(device))
            if busy is None:
                entry = device_without_collectives(starts, ends, sel, is_kernel)
            else:
                if every_proper is None:  # one pass over every GPU op, not one per device
                    every_proper = bool((ends >= starts).all())
                # and the kernels' union is memcpy's (shared: device_kernel_union)
                entry = device_without_collectives(
                    starts,
                    ends,
                    sel,
                    is_kernel,
                    busy.busy_ns,
                    busy.span_ns,
                    True if every_proper else None,
                    device_kernel_union(trace, int(device)),
                )
            shared_count = shared_ns = 0
        else:
            collective_here = is_collective[sel]
            # types, sizes and factors written at the device's collectives, "" and NaN elsewhere
            types = np.empty(collective_here.size, dtype=object)
            types[:] = ""
            nbytes, factor = np.full(collective_here.size, np.nan), np.full(collective_here.size, np.nan)
            here = np.flatnonzero(collective_here)
            types[here], nbytes[here], factor[here] = coll_types[mine], coll_bytes[mine], coll_factor[mine]
            entry = device_communication(
                starts[sel], ends[sel], collective_here, is_kernel[sel], types, nbytes, factor
            )
            assert streams is not None
            shared = compute_stream_collectives(streams[sel], collective_here, is_kernel[sel])
            shared_count, shared_ns = int(shared.sum()), int((ends[sel] - starts[sel])[shared].sum())
        entry.update(
            on_compute_stream_count=shared_count,
            on_compute_stream_ns=shared_ns,
            # (a device without collectives has no process group: no frame to build)
            process_groups=(
                process_groups({column: values[mine] for column, values in msgs.items()}, duration[mine])
                if msgs is not None and mine.any()
                else []
            ),
        )
        out.append({"device": int(device), **entry})
    total = sum(d["collective_count"] for d in out)
    return {"collective_count": total, "devices": out}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return communication_report(trace)
