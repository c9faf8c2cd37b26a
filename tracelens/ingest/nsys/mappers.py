"""Per-table rows of the Nsight Systems reader: one fetched CUPTI or host table -> one :class:`.columns.Part`
(NVTX_EVENTS, the biggest and most involved, is :mod:`.nvtx`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...trace import DRIVER, GPU_SYNC, KERNEL, MEMCPY, MEMSET, RUNTIME
from . import pages
from .columns import (
    KIND_INDEX,
    Part,
    const_dict,
    decode_pid,
    decode_tid,
    dict_array,
    gpu_ordinals,
    id_numpy,
    int64_numpy,
    kind_column,
    kind_const,
)
from .contexts import context_sm_counts
from .database import Database
from .enums import coded_column, copy_labels, mem_labels, sync_labels
from .strings import MISSING, UNNAMED, Strings

# The name of a kernel row with neither a demangled nor a short name.
NO_KERNEL_NAME = "<kernel name not in the export>"

# RUNTIME eventClass values (ENUM_NSYS_EVENT_CLASS): driver API classes, and the backtrace classes under
# which some exports repeat a call that already has its own row.
_DRIVER_CLASSES = (1, 13)
_BACKTRACE_CLASSES = (67, 68, 69)


def _gpu_common(t: pa.Table) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A GPU table's times (:func:`_times`), device, stream and correlation id, and which columns the part owns."""
    cols, owned = _times(t)
    return {
        **cols,
        "device": gpu_ordinals(t.column("deviceId")),
        "stream": t.column("streamId"),
        "correlation_id": t.column("correlationId"),
        "pid": decode_pid(t.column("globalPid")),
    }, owned


def _times(t: pa.Table) -> tuple[dict[str, Any], tuple[str, ...]]:
    """start_ns and end_ns, and which of them the part may keep as fetched (its ``owned``): an int64 column of a
    table whose columns hold buffers of their own (the page reader's) is kept without the copy a column of
    ADBC's batch needs (which would keep the whole batch alive)."""
    times = {"start_ns": t.column("start"), "end_ns": t.column("end")}
    if not pages.owns_buffers(t):
        return times, ()
    owned = []
    for name, column in times.items():
        if column.type == pa.int64() and column.num_chunks == 1:
            times[name] = column.chunk(0)
            owned.append(name)
    return times, tuple(owned)


def kernel_rows(
    t: pa.Table, strings: Strings, green_sms: dict[tuple[int, int], int] | None = None
) -> tuple[Part, dict[str, str]]:
    """CUPTI_ACTIVITY_KIND_KERNEL: the kernels, and their short names by demangled name; with ``green_sms``
    (:func:`.processes.green_context_sms`), each green-context kernel's SMs (``context_sm_count``)."""
    name = strings.lookup(t.column("demangledName"))
    short_ids = t.column("shortName")
    values = strings.values
    if (name < 0).any():
        # The short name stands in for a null, empty or missing demangled name; a row with neither is
        # named after its missing id (the demangled one first).
        short = strings.lookup(short_ids)
        fallback = np.where((short == UNNAMED) & (name == MISSING), MISSING, short)
        missing_id = np.where(name == MISSING, id_numpy(t.column("demangledName")), id_numpy(short_ids))
        name = np.where(name >= 0, name, fallback).astype(np.int32)
        name, values = strings.placeholders(name, missing_id, values)
        if (name == UNNAMED).any():
            # neither name (null ids; a newer schema's renamed columns, read as NULL): one name that says so, not a
            # null that every by-name table showed as one kernel named ""
            name = np.where(name == UNNAMED, len(values), name).astype(np.int32)
            values = pa.concat_arrays([values, pa.array([NO_KERNEL_NAME], values.type)])
    cols, owned = _gpu_common(t)
    cols.update(
        {
            "kind": kind_const(t.num_rows, KERNEL),
            "name": dict_array(name, values),
            "grid_x": t.column("gridX"),
            "grid_y": t.column("gridY"),
            "grid_z": t.column("gridZ"),
            "block_x": t.column("blockX"),
            "block_y": t.column("blockY"),
            "block_z": t.column("blockZ"),
            "registers_per_thread": t.column("registersPerThread"),
            "static_shared_bytes": t.column("staticSharedMemory"),
            "dynamic_shared_bytes": t.column("dynamicSharedMemory"),
            "graph_id": t.column("graphId"),
        }
    )
    if green_sms and "greenContextId" in t.column_names:
        cols["context_sm_count"] = context_sm_counts(
            int64_numpy(cols["pid"], fill=-1),
            int64_numpy(t.column("greenContextId"), fill=0),
            int64_numpy(t.column("contextId"), fill=0),
            green_sms,
        )
    # Keep the short names reachable: demangled name -> short name, read at each name's first row.
    first_row = np.full(len(values) + 1, -1, np.int64)
    rows = np.arange(name.size, dtype=np.int64)
    first_row[name[::-1]] = rows[::-1]  # the last write wins: reversed, that is the first occurrence
    first_row = first_row[:-1]  # slot -1 collected the unnamed rows
    named = np.flatnonzero(first_row >= 0)
    short = strings.lookup(short_ids.take(pa.array(first_row[named]))) if named.size else named
    short_names = {
        values[int(d)].as_py(): strings.values[int(s)].as_py()
        for d, s in zip(named, short, strict=True)
        if s >= 0 and d != s
    }
    return Part(t.num_rows, cols, owned=owned), short_names


def graph_trace_rows(t: pa.Table) -> Part:
    """CUPTI_ACTIVITY_KIND_GRAPH_TRACE (``nsys --cuda-graph-trace=graph``): each CUDA graph execution as one
    kernel row named ``[CUDA graph N]`` that spans the graph's kernels and the gaps between them."""
    graph = t.column("graphId").combine_chunks()
    labels = pc.if_else(
        graph.is_null(),
        pa.scalar("[CUDA graph]"),
        pc.binary_join_element_wise("[CUDA graph ", graph.cast(pa.string()), "]", ""),
    )
    cols, owned = _gpu_common(t)
    cols.update(
        {
            "kind": kind_const(t.num_rows, KERNEL),
            "name": labels.dictionary_encode(),
            "graph_id": t.column("graphId"),
        }
    )
    return Part(t.num_rows, cols, owned=owned)


def memcpy_rows(t: pa.Table, db: Database) -> Part:
    """CUPTI_ACTIVITY_KIND_MEMCPY: the copies, named ``[CUDA memcpy HtoD]`` etc."""
    copy_kinds = copy_labels(db)
    mem_kinds = mem_labels(db)
    copy_kind = coded_column(t.column("copyKind"), copy_kinds)
    names = {k: f"[CUDA memcpy {v}]" for k, v in copy_kinds.items() if v}
    cols, owned = _gpu_common(t)
    cols.update(
        {
            "kind": kind_const(t.num_rows, MEMCPY),
            "name": coded_column(t.column("copyKind"), names, default="[CUDA memcpy]"),
            "bytes": t.column("bytes"),
            "copy_kind": copy_kind,
            "src_kind": coded_column(t.column("srcKind"), mem_kinds),
            "dst_kind": coded_column(t.column("dstKind"), mem_kinds),
        }
    )
    return Part(t.num_rows, cols, owned=owned)


def memset_rows(t: pa.Table, db: Database) -> Part:
    """CUPTI_ACTIVITY_KIND_MEMSET: the memsets."""
    cols, owned = _gpu_common(t)
    cols.update(
        {
            "kind": kind_const(t.num_rows, MEMSET),
            "name": const_dict(t.num_rows, "[CUDA memset]", pa.array(["[CUDA memset]"])),
            "bytes": t.column("bytes"),
            "dst_kind": coded_column(t.column("memKind"), mem_labels(db)),
        }
    )
    return Part(t.num_rows, cols, owned=owned)


def sync_rows(t: pa.Table, db: Database) -> Part:
    """CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: the GPU-side syncs, named ``[CUDA sync stream_sync]`` etc."""
    labels = sync_labels(db)
    sync_kind = coded_column(t.column("syncType"), labels)
    cols, owned = _gpu_common(t)
    cols.update(
        {
            "kind": kind_const(t.num_rows, GPU_SYNC),
            "name": coded_column(
                t.column("syncType"),
                {k: f"[CUDA sync {v}]" for k, v in labels.items() if v},
                default="[CUDA sync]",
            ),
            "sync_kind": sync_kind,
        }
    )
    return Part(t.num_rows, cols, owned=owned)


def runtime_rows(t: pa.Table, strings: Strings) -> Part:
    """CUPTI_ACTIVITY_KIND_RUNTIME: runtime and driver API calls (backtrace repeats dropped)."""
    event_class = int64_numpy(t.column("eventClass"), fill=-1)
    backtrace = np.isin(event_class, _BACKTRACE_CLASSES)
    if backtrace.any():
        # A backtrace row repeats a call already recorded under its own class: drop it unless it is
        # the only row for that (thread, correlation id).
        tid = int64_numpy(t.column("globalTid"), fill=-1)
        corr = int64_numpy(t.column("correlationId"), fill=-1)
        # Sort by (thread, correlation id) with non-backtrace rows first in each group: a backtrace row
        # is a repeat when it is not the first row of its group.
        order = np.lexsort((backtrace, corr, tid))
        t_sorted, c_sorted = tid[order], corr[order]
        first = np.ones(order.size, bool)
        first[1:] = (t_sorted[1:] != t_sorted[:-1]) | (c_sorted[1:] != c_sorted[:-1])
        keep = np.ones(order.size, bool)
        keep[order] = ~(backtrace[order] & ~first)
        if not keep.all():
            t = t.filter(pa.array(keep))
            event_class = event_class[keep]
    kinds = np.where(np.isin(event_class, _DRIVER_CLASSES), KIND_INDEX[DRIVER], KIND_INDEX[RUNTIME])
    gtid = t.column("globalTid")
    times, owned = _times(t)  # the part copies the rest (narrowing them where it can)
    cols = {
        "kind": kind_column(kinds),
        "name": strings.api_names(t.column("nameId")),
        **times,
        "pid": decode_pid(gtid),
        "tid": decode_tid(gtid),
        "correlation_id": t.column("correlationId"),
    }
    return Part(t.num_rows, cols, owned=owned)


def host_named_rows(t: pa.Table, strings: Strings, kind: str) -> Part:
    """A host table of named calls (OSRT_API, the overhead tables) as rows of ``kind``."""
    gtid = t.column("globalTid")
    times, owned = _times(t)
    cols = {
        "kind": kind_const(t.num_rows, kind),
        "name": strings.names(t.column("nameId")),
        **times,
        "pid": decode_pid(gtid),
        "tid": decode_tid(gtid),
    }
    return Part(t.num_rows, cols, owned=owned)
