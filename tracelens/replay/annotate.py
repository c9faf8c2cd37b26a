"""The trace as a Chrome trace-event file (Perfetto, chrome://tracing) with tracelens's findings as added tracks.

The trace's own events are written in Kineto's shape (categories ``kernel``, ``gpu_memcpy``, ``cuda_runtime``,
``cpu_op``, ``user_annotation``, ...; GPU ops on pid = device, tid = stream; ``args.correlation``; kernels' grid,
block, registers and shared memory, ops' recorded shapes, flops and collective args under Kineto's keys; the device
table as ``deviceProperties``; an XSpace's or Nsight export's producer as ``tracelensSource``, so that it reads back
as that producer's: :func:`source_of`), so tracelens and Perfetto read the file back: read back, a Kineto or Nsight
trace gives the source's summary (an xplane's step rows, named ``step#N`` by its reader, are written as ``tracelens/step#N``
so that they are found again: :func:`_step_names`). The added tracks live in their own process, ANNOTATION_PID
("tracelens"), as slices of their own category, ``tracelens`` (TRACK_CATEGORY: the Kineto reader skips it, so a read-back trace is
the program's alone):

    tid 1              steps (the steps section's windows)
    tid 2              the critical path: runs of one category (host, sync_waits, kernels, copies,
                       communication), in replayed time, end to end (args.ns: the run's time in the document)
    tid 10 + k         what-if: fixing the k-th remedy, a slice from the first point to the predicted end
    tid 100 + device   the largest GPU idle gaps (attribution section), each named by its largest cause

Each GPU op whose correlation id names exactly one launch call gets Kineto's launch-to-op flow (``ac2g``: "s" on the
call, "f" bound to the op), the arrow Perfetto draws from a launch to its kernel (``_flows``).

A host thread keeps its tid where it fits Perfetto's unsigned 32-bit tids and is no GPU stream's track; else (an
xplane's line ids) it gets a free one counted down from 2^32 - 1, named ``thread <its own id>`` (``_host_thread_ids``).

A run (several ranks' traces, ``write_annotated_run``) is one timeline: each rank is one process, pid = its
rank, named ``rank R (file)``; its host threads keep their tids, its GPU streams get tids GPU_TID_BASE + k
(named ``GPU d stream s``), and its tracelens tracks the tids above at TRACK_TID_BASE + tid. GPU events carry
``args.device``/``args.stream``, which the reader uses: the device is numbered across the run (rank by rank,
each rank's devices in order: rank 0's GPU 0 is 0, rank 1's GPU 0 is 1 when rank 0 has one GPU) so that the
read-back keeps the ranks' GPUs apart, and ``args.local_device`` keeps the rank's own number. Times are aligned on the ranks' own clocks: each
rank's table time + (its time origin - the earliest rank's), so simultaneous events line up where the ranks'
clocks agree (the same host clock; across hosts, as far as their clocks are synchronized).

One module on purpose (about 610 lines): the program's events and the added tracks share one pid/tid numbering,
written in one place.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from ..analyses.columns import event_columns
from ..event_names import step_number
from ..report.whatif_text import remedy_lines
from ..trace import (
    ALL_KINDS,
    ANNOTATION,
    CPU_OP,
    DRIVER,
    GPU_ANNOTATION,
    GPU_SYNC,
    KERNEL,
    MEMCPY,
    MEMSET,
    OSRT,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    STEP,
    Trace,
)
from .critical import CATEGORIES, path_categories, path_points
from .remedies import Context

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

ANNOTATION_PID = 999_999_999
# The added tracks' category: not one of the program's (a user_annotation read back was taken for the program's own
# range); tracelens's Kineto reader skips it (ingest/kineto/blocks.py), Perfetto shows it like any other.
TRACK_CATEGORY = "tracelens"
STEPS_TID, PATH_TID, WHATIF_TID, GAPS_TID = 1, 2, 10, 100
# run mode: a rank's GPU streams and tracelens tracks within its process (host tids are OS thread ids, below)
GPU_TID_BASE = 1_000_000_000
TRACK_TID_BASE = 2_000_000_000

# Kineto category per kind (kinds not listed are not written).
CATEGORY = {
    KERNEL: "kernel",
    MEMCPY: "gpu_memcpy",
    MEMSET: "gpu_memset",
    GPU_SYNC: "cuda_sync",
    RUNTIME: "cuda_runtime",
    DRIVER: "cuda_driver",
    CPU_OP: "cpu_op",
    ANNOTATION: "user_annotation",
    STEP: "user_annotation",
    PYTHON: "python_function",
    OSRT: "cpu_op",
    OVERHEAD: "overhead",
    GPU_ANNOTATION: "gpu_user_annotation",
}
_GPU_KINDS = (KERNEL, MEMCPY, MEMSET, GPU_SYNC, GPU_ANNOTATION)


# Perfetto reads pid and tid as unsigned 32-bit numbers (its json_utils CoerceToUint32)
UINT32_MAX = 2**32 - 1


def _host_thread_ids(
    pid: np.ndarray, tid: np.ndarray, gpu_pid: np.ndarray, gpu_tid: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """The host rows' tids as written: each thread's own id where it fits Perfetto's unsigned 32-bit tid and is no GPU
    stream's track in the same process; else (an xplane's line ids, -1 for none) one free id per thread, counted down
    from 2^32 - 1 (Perfetto puts an event whose tid does not fit on the track tid = pid: every such thread on one
    track, their slices overlapping). Returns the tids and (pid, written tid, own tid) of each thread given a new one."""
    pid, tid = pid.astype(np.int64), tid.astype(np.int64)
    fits = (tid >= 0) & (tid <= UINT32_MAX)
    key = pid * (UINT32_MAX + 1) + np.where(fits, tid, 0)
    gpu_key = gpu_pid.astype(np.int64) * (UINT32_MAX + 1) + gpu_tid.astype(np.int64)
    moved = ~fits | np.isin(key, gpu_key)
    if not moved.any():
        return tid, []
    threads, inverse = np.unique(np.stack([pid[moved], tid[moved]], axis=1), axis=0, return_inverse=True)
    taken = np.unique(np.concatenate([tid[~moved], gpu_tid.astype(np.int64)]))
    candidates = np.arange(UINT32_MAX - len(threads) - taken.size, UINT32_MAX + 1, dtype=np.int64)
    free = np.setdiff1d(candidates, taken)[::-1][: len(threads)]  # from the top down
    out = tid.copy()
    out[moved] = free[inverse.reshape(-1)]
    named = [(int(p), int(f), int(t)) for (p, t), f in zip(threads.tolist(), free.tolist(), strict=True)]
    return out, named


def _json_strings(values: np.ndarray) -> np.ndarray:
    """Each distinct string JSON-encoded once (quotes included); gathered by the caller."""
    return np.array([msgspec.json.encode(str(v)).decode() for v in values], dtype=object)


def _us(ns: np.ndarray) -> pd.Series:
    """Nanoseconds as microsecond text with three decimals (exact: Kineto readers round ts x 1000)."""
    import pandas as pd

    ns = np.asarray(ns, np.int64)
    sign = np.where(ns < 0, "-", "")
    a = np.abs(ns)
    return (
        pd.Series(sign, dtype=object)
        + pd.Series(a // 1000).astype(str)
        + "."
        + pd.Series(a % 1000).astype(str).str.zfill(3)
    )


def _trace_events(
    trace: Trace, shift_ns: int = 0, rank_pid: int | None = None, device_base: int = 0
) -> list[str]:
    """The trace's events as Chrome JSON objects (text), built column-wise. ``rank_pid``: run mode (every event
    in that process, GPU streams on GPU_TID_BASE + k, named by metadata events, devices numbered from
    ``device_base``: see the module docstring); times + ``shift_ns``."""
    import pandas as pd

    cols = event_columns(trace)
    out: list[str] = []
    gpu_rows = np.flatnonzero(cols.of_kind(*_GPU_KINDS))
    stream_key = np.maximum(cols.device, 0).astype(np.int64) * 2**32 + (
        cols.at("stream", np.arange(cols.kind.size)).astype(np.int64) & 0xFFFFFFFF
    )
    keys, first = np.unique(stream_key[gpu_rows], return_index=True)
    if rank_pid is not None:
        for k, row in enumerate(gpu_rows[first].tolist()):  # a loop over streams (metadata events)
            label = f"GPU {max(int(cols.device[row]), 0)} stream {int(cols.at('stream', np.array([row]))[0])}"
            out.append(
                msgspec.json.encode(
                    {
                        "ph": "M",
                        "name": "thread_name",
                        "pid": rank_pid,
                        "tid": GPU_TID_BASE + k,
                        "args": {"name": label},
                    }
                ).decode()
            )
    # the host rows' pids and tids as written, every GPU stream's track kept apart from them
    host_rows = np.flatnonzero(~cols.of_kind(*_GPU_KINDS))
    host_pid = cols.pid[host_rows] if rank_pid is None else np.full(host_rows.size, rank_pid)
    if rank_pid is None:
        gpu_pid = np.maximum(cols.device[gpu_rows], 0)
        gpu_tid = np.maximum(cols.at("stream", gpu_rows), 0)
    else:
        gpu_pid = np.full(keys.size + 1, rank_pid)
        gpu_tid = np.append(GPU_TID_BASE + np.arange(keys.size), TRACK_TID_BASE)
    host_tid, renamed = _host_thread_ids(host_pid, cols.tid[host_rows], gpu_pid, gpu_tid)
    # every row's pid and tid as written (GPU ops: the device and stream, or in run mode the rank and the stream's
    # tid), read by the rows' events and the flows
    written_pid = np.zeros(cols.kind.size, np.int64)
    written_tid = np.zeros(cols.kind.size, np.int64)
    written_pid[host_rows], written_tid[host_rows] = host_pid, host_tid
    if rank_pid is None:
        written_pid[gpu_rows], written_tid[gpu_rows] = gpu_pid, gpu_tid
    else:
        written_pid[gpu_rows] = rank_pid
        written_tid[gpu_rows] = GPU_TID_BASE + np.searchsorted(keys, stream_key[gpu_rows])
    for pid_, new_tid, own_tid in renamed:  # a loop over the threads given a new id (metadata events)
        out.append(
            msgspec.json.encode(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": pid_,
                    "tid": new_tid,
                    "args": {"name": f"thread {own_tid}"},
                }
            ).decode()
        )
    names = _json_strings(cols.names) if cols.names.size else np.zeros(0, dtype=object)
    for kind, category in CATEGORY.items():  # a loop over kinds
        rows = np.flatnonzero(cols.kind == ALL_KINDS.index(kind))
        if rows.size == 0:
            continue
        gpu = kind in _GPU_KINDS
        code = cols.name[rows]
        name = np.where(code >= 0, names[np.maximum(code, 0)] if names.size else '""', '""')
        if kind == STEP:
            name = _step_names(cols, rows, code, name)
        start, end = cols.start[rows], cols.end[rows]
        corr = cols.at("correlation_id", rows).astype(np.int64)
        ext = cols.external_id[rows].astype(np.int64)
        pid, tid = pd.Series(written_pid[rows]).astype(str), pd.Series(written_tid[rows]).astype(str)
        if gpu:
            device = pd.Series(np.maximum(cols.device[rows], 0)).astype(str)
            stream = pd.Series(np.maximum(cols.at("stream", rows), 0)).astype(str)
            if rank_pid is not None:
                local = device
                run_devices = np.unique(np.maximum(cols.device[gpu_rows], 0))
                device = (
                    pd.Series(
                        device_base + np.searchsorted(run_devices, np.maximum(cols.device[rows], 0))
                    ).astype(str)
                    + ',"local_device":'
                    + local
                )
        args = '"correlation":' + pd.Series(corr).astype(str) + ',"External id":' + pd.Series(ext).astype(str)
        if gpu:
            args += ',"device":' + device + ',"stream":' + stream
            nbytes = cols.at("bytes", rows).astype(np.int64)
            args += pd.Series(
                np.where(nbytes >= 0, ',"bytes":' + pd.Series(nbytes).astype(str), ""), dtype=object
            )
        if kind == KERNEL:
            args += _kernel_args(cols, rows, trace)
        args += _op_args(trace, rows)
        text = (
            '{"ph":"X","cat":"'
            + category
            + '","name":'
            + pd.Series(name, dtype=object)
            + ',"pid":'
            + pid
            + ',"tid":'
            + tid
            + ',"ts":'
            + _us(start + shift_ns)
            + ',"dur":'
            + _us(end - start)
            + ',"args":{'
            + args
            + "}}"
        )
        out.extend(text.tolist())
    out.extend(_flows(cols, written_pid, written_tid, shift_ns, 0 if rank_pid is None else rank_pid))
    return out


def _step_names(cols: Any, rows: np.ndarray, code: np.ndarray, name: np.ndarray) -> np.ndarray:
    """The step rows' names as written: a name that no reader takes for a step marker (the xplane readers' ``step#N``
    rows, made from step_num stats or Steps lines) under tracelens's own step name, ``tracelens/step#N``, so that the
    file read back has its steps (it had none: "no step markers in this trace")."""
    number = cols.at("step", rows).astype(np.int64)
    marker = np.array(
        [c >= 0 and step_number(str(cols.names[c])) is not None for c in code.tolist()], bool
    )  # a loop over the step rows (one per step)
    renamed = ~marker & (number >= 0)
    if not renamed.any():
        return name
    out = name.astype(object)
    out[renamed] = [f'"tracelens/step#{n}"' for n in number[renamed].tolist()]
    return out


# The device table's columns under Kineto's deviceProperties keys (the names its reader takes them from).
KINETO_DEVICE_KEYS = {
    "name": "name",
    "sm_count": "numSms",
    "compute_major": "computeMajor",
    "compute_minor": "computeMinor",
    "warp_size": "warpSize",
    "max_threads_per_sm": "maxThreadsPerMultiprocessor",
    "max_threads_per_block": "maxThreadsPerBlock",
    "max_blocks_per_sm": "maxBlocksPerMultiprocessor",
    "regs_per_sm": "regsPerMultiprocessor",
    "regs_per_block": "regsPerBlock",
    "shared_mem_per_sm": "sharedMemPerMultiprocessor",
    "shared_mem_per_block": "sharedMemPerBlock",
    "shared_mem_per_block_optin": "sharedMemPerBlockOptin",
    "total_memory_bytes": "totalGlobalMem",
    "clock_rate_khz": "clockRate",
}


def device_properties(trace: Trace, ids: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """The trace's device table as Kineto's ``deviceProperties`` (the GPU's name, SM count, compute capability and
    limits that occupancy needs), each device under ``ids[its id]`` (a run's numbering) or its own id."""
    out = []
    for device in trace.devices.to_pylist():  # a loop over the few devices
        own = int(device["id"])
        entry: dict[str, Any] = {"id": (ids or {}).get(own, own)}
        entry.update(
            {key: device[col] for col, key in KINETO_DEVICE_KEYS.items() if device.get(col) is not None}
        )
        out.append(entry)
    return out


def _kernel_args(cols: Any, rows: np.ndarray, trace: Trace) -> pd.Series:
    """Kernels' geometry args as Kineto writes them (``grid``, ``block``, ``registers per thread``, ``shared memory``:
    static + dynamic; ``est. achieved occupancy %``: the producer's own estimate), each where the kernel has it: what
    occupancy is computed from, and shown on the slice."""
    import pandas as pd

    text = [
        pd.Series(cols.at(column, rows).astype(np.int64)).astype(str)
        for column in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
    ]
    geometry = ',"grid":[' + text[0] + "," + text[1] + "," + text[2] + '],"block":['
    geometry += text[3] + "," + text[4] + "," + text[5] + "]"
    has_geometry = (cols.at("grid_x", rows) >= 0) & (cols.at("block_x", rows) >= 0)
    registers = cols.at("registers_per_thread", rows).astype(np.int64)
    static, dynamic = cols.at("static_shared_bytes", rows), cols.at("dynamic_shared_bytes", rows)
    shared = np.maximum(static, 0).astype(np.int64) + np.maximum(dynamic, 0)
    out = pd.Series(np.where(has_geometry, geometry, ""), dtype=object)
    out += pd.Series(
        np.where(registers >= 0, ',"registers per thread":' + pd.Series(registers).astype(str), ""),
        dtype=object,
    )
    out += pd.Series(
        np.where((static >= 0) | (dynamic >= 0), ',"shared memory":' + pd.Series(shared).astype(str), ""),
        dtype=object,
    )
    if "reported_occupancy" in trace.events.column_names:
        reported = trace.events.column("reported_occupancy").take(rows).to_numpy(zero_copy_only=False)
        percent = reported.astype(np.float64) * 100
        out += pd.Series(
            np.where(
                np.isfinite(percent), ',"est. achieved occupancy %":' + pd.Series(percent).astype(str), ""
            ),
            dtype=object,
        )
    return out


# The op columns (docs/schema.md, since 1.1) under the Kineto args keys they are read from: JSON text written as it
# is (canonical JSON), numbers as numbers, texts as JSON strings.
KINETO_OP_KEYS = (
    ("input_dims", "Input Dims", "json"),
    ("input_types", "Input type", "json"),
    ("concrete_inputs", "Concrete Inputs", "json"),
    ("flops", "flops", "number"),
    ("msg_in_elems", "In msg nelems", "number"),
    ("msg_out_elems", "Out msg nelems", "number"),
    ("msg_dtype", "dtype", "text"),
    ("group_size", "Group size", "number"),
    ("collective_name", "Collective name", "text"),
    ("process_group", "Process Group Name", "text"),
    ("group_ranks", "Process Group Ranks", "text"),
)


def _op_args(trace: Trace, rows: np.ndarray) -> pd.Series | str:
    """The rows' recorded op args (shapes, flops, a collective's message and group) as Kineto writes them, each where
    the row has it: what the FLOP count and the communication analysis read ("" where a kind's rows have none). Texts
    are JSON-encoded once per distinct value (dictionary columns), numbers cast by Arrow (shortest round-trip text)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    out: pd.Series | str = ""
    names = trace.events.column_names
    for column, key, form in KINETO_OP_KEYS:  # a loop over the few op columns
        if column not in names:
            continue
        values = trace.events.column(column).take(pa.array(rows)).combine_chunks()
        if values.null_count == len(values):
            continue
        present = pc.is_valid(values).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(values.type):
            # NaN or infinity: no JSON number, left out as a missing value is
            present &= np.isfinite(values.to_numpy(zero_copy_only=False))
        if pa.types.is_dictionary(values.type):
            distinct = values.dictionary.to_pylist()
            encoded = np.array(
                [v if form == "json" else msgspec.json.encode(v).decode() for v in distinct] or [""],
                dtype=object,
            )
            index = values.indices.to_numpy(zero_copy_only=False)[present].astype(np.int64)
            text = encoded[index]
        else:
            text = pc.cast(values.filter(pa.array(present)), pa.string()).to_numpy(zero_copy_only=False)
            if form == "text":
                text = np.array([msgspec.json.encode(v).decode() for v in text], dtype=object)
        part = np.full(rows.size, "", dtype=object)
        part[present] = f',"{key}":' + pd.Series(text, dtype=object)
        out = out + pd.Series(part, dtype=object)
    return out


def _flows(cols: Any, pid: np.ndarray, tid: np.ndarray, shift_ns: int, rank: int) -> list[str]:
    """Kineto's launch-to-GPU-op flows (cat ``ac2g``): for each kernel, copy or memset whose correlation id names
    exactly one launch call (a runtime or driver call; an id two calls share, e.g. two processes', links none), a
    flow start ("s") on the call's track at its start and an end ("f", bound to the enclosing slice: ``bp`` "e") on
    the op's track at its start, so Perfetto draws the arrow the source trace had. One id per GPU op: its row, plus
    rank x 2^32 in a run (every rank's ids apart, below 2^53 for JavaScript readers)."""
    import pandas as pd

    corr = cols.at("correlation_id", np.arange(cols.kind.size)).astype(np.int64)
    launches = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER) & (corr >= 0))
    ids, first, counts = np.unique(corr[launches], return_index=True, return_counts=True)
    if ids.size == 0:
        return []
    ops = np.flatnonzero(cols.of_kind(KERNEL, MEMCPY, MEMSET) & (corr >= 0))
    at = np.minimum(np.searchsorted(ids, corr[ops]), ids.size - 1)
    linked = (ids[at] == corr[ops]) & (counts[at] == 1)
    ops = ops[linked]
    if ops.size == 0:
        return []
    calls = launches[first[at[linked]]]
    flow_id = pd.Series(rank * 2**32 + ops).astype(str)

    def _event(phase: str, rows: np.ndarray) -> pd.Series:
        return (
            '{"ph":"'
            + phase
            + '","cat":"ac2g","name":"ac2g","id":'
            + flow_id
            + ',"pid":'
            + pd.Series(pid[rows]).astype(str)
            + ',"tid":'
            + pd.Series(tid[rows]).astype(str)
            + ',"ts":'
            + _us(cols.start[rows] + shift_ns)
            + ("}" if phase == "s" else ',"bp":"e"}')
        )

    return _event("s", calls).tolist() + _event("f", ops).tolist()


def added_tracks(
    trace: Trace,
    doc: dict[str, Any],
    pid: int = ANNOTATION_PID,
    tid_base: int = 0,
    shift_ns: int = 0,
    process_name: str | None = "tracelens",
) -> list[dict[str, Any]]:
    """The tracelens tracks (see the module docstring) for a trace and its analysis document; in run mode in
    the rank's process (``pid``), tids + ``tid_base``, times + ``shift_ns``."""

    def _slice(name: str, tid: int, start: int, end: int, **args: Any) -> dict[str, Any]:
        return {
            "ph": "X",
            "cat": TRACK_CATEGORY,
            "name": name,
            "pid": pid,
            "tid": tid_base + tid,
            "ts": (start + shift_ns) / 1000,
            "dur": max(end - start, 0) / 1000,
            "args": args,
        }

    def _thread(tid: int, name: str) -> dict[str, Any]:
        return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid_base + tid, "args": {"name": name}}

    events: list[dict[str, Any]] = [_thread(STEPS_TID, "steps"), _thread(PATH_TID, "critical path")]
    if process_name is not None:
        events.insert(0, {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": process_name}})
    for step in (doc.get("steps") or {}).get("steps") or []:
        events.append(_slice(f"step {step['step']}", STEPS_TID, step["start_ns"], step["end_ns"]))
    ctx = Context(trace)
    if ctx.graph.size:
        times = ctx.base.times
        path, setter = path_points(ctx.graph, times)
        category, seg = path_categories(ctx.graph, times, trace, path, setter)
        # A point may be recorded before its setter (a sync call ending a few µs before the copy it waited for: host
        # and GPU clocks apart), owning a negative time: slices bounded by the points' own times would then overlap
        # without nesting, which Perfetto drops. Bounded by the running latest time along the path, the slices tile
        # the path end to end; each keeps the document's time (args.ns).
        first_time = times[path[0]] if setter[0] < 0 else min(times[setter[0]], times[path[0]])
        reached = np.maximum.accumulate(np.maximum(times[path], first_time))
        # runs of one category along the path become one slice each
        new = np.ones(path.size, bool)
        new[1:] = category[1:] != category[:-1]
        starts = np.flatnonzero(new)
        stops = np.append(starts[1:], path.size)
        for a, b in zip(starts.tolist(), stops.tolist(), strict=True):  # a loop over category runs
            events.append(
                _slice(
                    CATEGORIES[category[a]],
                    PATH_TID,
                    int(reached[a - 1]) if a else int(first_time),
                    int(reached[b - 1]),
                    ns=int(seg[a:b].sum()),
                )
            )
        whatif = doc.get("whatif") or {}
        first = int(times.min())
        lines = {line.split(" ", 2)[1]: line for line in remedy_lines(doc)}  # "fixing <cause> (...": by cause
        for k, remedy in enumerate(whatif.get("remedies") or []):
            label = lines.get(remedy["cause"], f"fixing {remedy['cause']}: no gain")
            events.append(_thread(WHATIF_TID + k, f"what-if: {remedy['cause']}"))
            events.append(
                _slice(
                    label,
                    WHATIF_TID + k,
                    first,
                    first + int(remedy["predicted_span_ns"]),
                    cause=remedy["cause"],
                    gain_ns=remedy["gain_ns"],
                )
            )
    for device in (doc.get("attribution") or {}).get("devices") or []:
        tid = GAPS_TID + int(device["device"])
        events.append(_thread(tid, f"GPU {device['device']} idle gaps"))
        for gap in device.get("largest") or []:
            by_cause = gap.get("by_cause") or {}
            cause = max(by_cause, key=lambda c: by_cause[c]) if by_cause else "unknown"
            events.append(
                _slice(
                    f"idle: {cause}",
                    tid,
                    gap["start_ns"],
                    gap["start_ns"] + gap["duration_ns"],
                    cause=cause,
                    **{f"{c}_ns": v for c, v in by_cause.items()},
                )
            )
    return events


def source_of(traces: list[Trace]) -> dict[str, str] | None:
    """What the traces were, as the file's ``tracelensSource``: read back, it is that producer's trace, not PyTorch's
    (the Kineto reader's default). None for PyTorch's own traces, or a run of mixed producers."""
    seen = {
        (m.source_format, m.framework, m.producer, m.producer_version) for m in (t.metadata for t in traces)
    }
    if len(seen) != 1 or next(iter(seen))[:2] == ("kineto", "pytorch"):
        return None
    return dict(zip(("format", "framework", "producer", "producer_version"), seen.pop(), strict=True))


def _write(
    events: list[str],
    path: str | Path,
    devices: list[dict[str, Any]] | None = None,
    source: dict[str, str] | None = None,
) -> int:
    head = "{"
    if source:  # before the events, where the reader's header is
        head += '"tracelensSource":' + msgspec.json.encode(source).decode() + ","
    if devices:
        head += '"deviceProperties":' + msgspec.json.encode(devices).decode() + ","
    data = (head + '"traceEvents":[' + ",".join(events) + "]}").encode()
    target = Path(path)
    target.write_bytes(gzip.compress(data) if target.name.endswith(".gz") else data)
    return len(events)


def write_annotated(trace: Trace, doc: dict[str, Any], path: str | Path) -> int:
    """Write the annotated Chrome trace (gzip when the name ends in .gz); return the number of events."""
    own = _trace_events(trace)
    added = [msgspec.json.encode(e).decode() for e in added_tracks(trace, doc)]
    return _write(own + added, path, device_properties(trace), source_of([trace]))


def rank_shifts(traces: list[Trace]) -> list[int]:
    """Per trace, what its table times move by on the run's timeline: its time origin - the earliest one's."""
    origins = [int(t.metadata.time_origin_ns) for t in traces]
    return [o - min(origins) for o in origins] if origins else []


def write_annotated_run(ranks: list[tuple[int, str, Trace, dict[str, Any]]], path: str | Path) -> int:
    """Write several ranks' traces, (rank, label, trace, document) each, as one annotated Chrome trace: a
    process per rank (pid = rank), clocks aligned (``rank_shifts``); return the number of events."""
    shifts = rank_shifts([trace for _, _, trace, _ in ranks])
    events: list[str] = []
    devices: list[dict[str, Any]] = []
    device_base = 0
    for (rank, label, trace, doc), shift in zip(ranks, shifts, strict=True):  # a loop over ranks
        events.append(
            msgspec.json.encode(
                {"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank} ({label})"}}
            ).decode()
        )
        events.extend(_trace_events(trace, shift, rank_pid=rank, device_base=device_base))
        cols = event_columns(trace)
        run_devices = np.unique(np.maximum(cols.device[cols.of_kind(*_GPU_KINDS)], 0)).tolist()
        # the rank's devices under the run's numbers (as its GPU rows' args.device), those without a GPU row left out
        ids = {int(d): device_base + k for k, d in enumerate(run_devices)}
        devices += [p for p in device_properties(trace, ids) if int(p["id"]) in ids.values()]
        device_base += len(run_devices)
        events.extend(
            msgspec.json.encode(e).decode()
            for e in added_tracks(
                trace, doc, pid=rank, tid_base=TRACK_TID_BASE, shift_ns=shift, process_name=None
            )
        )
    return _write(events, path, devices, source_of([trace for _, _, trace, _ in ranks]))
