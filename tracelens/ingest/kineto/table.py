"""The blocks' columns joined into the event table, device table and metadata of a :class:`Trace`."""

from __future__ import annotations

import math
import re
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...errors import InputError
from ...event_names import step_number, strip_api_suffix
from ...trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    EVENT_COLUMNS,
    GPU_ANNOTATION,
    GPU_SYNC,
    KERNEL,
    MEMCPY,
    NOT_NESTED_KINDS,
    RUNTIME,
    STEP,
    DeferredColumn,
    EventStore,
    SparseColumn,
    Trace,
    TraceMetadata,
    build_devices,
    build_store,
    depth_column,
    numpy_array,
    string_array,
)
from ...values import int_or_none
from ..profiler_log import kineto_log_lines, profiler_drops
from .blocks import (
    DEVICE_SIDE,
    KIND_CODE,
    KINDS,
    LAUNCH_SIDE,
    NESTED_KIND,
    SKIP,
    placeable,
)
from .fields import DEVICE_FIELDS, OP_NUMBERS, OP_TEXTS
from .stored import (
    Stored,
    dictionary_column,
    dictionary_indices,
    float_column,
    op_text_column,
    sparse_column,
    unrepresentable,
)
from .threads import executor, thread_budget

_DRIVER_NAME = re.compile(r"^cu[A-Z]")


_MEMCPY_NAME = re.compile(r"^Memcpy (\w+) \((\w+) -> (\w+)\)")
_SYNC_KINDS = {
    "stream sync": "stream_sync",
    "event sync": "event_sync",
    "stream wait event": "stream_wait_event",
    "context sync": "context_sync",
}
_MEMORY_KINDS = {
    "pageable": "pageable",
    "pinned": "pinned",
    "device": "device",
    "managed": "managed",
    "array": "array",
    "host": "host",
}


class _Interner:
    """Strings -> stable small ints across blocks (names, sync kinds)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []

    def merge(self, codes: np.ndarray, uniques: list[str]) -> np.ndarray:
        """A block's local codes as global codes."""
        # Looked up in one pass (most of a block's strings were seen in earlier blocks); only the new ones
        # are added, in the block's order. This runs on the thread that inflates the file, once per block.
        found = list(map(self.codes.get, uniques))
        if None in found:
            found = [self._code(u) if c is None else c for u, c in zip(uniques, found, strict=True)]
        mapping = np.array(found + [-1], dtype=np.int32)
        return mapping[codes]  # -1 (missing) indexes the trailing -1

    def _code(self, value: str) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code


class Columns:
    """Accumulates blocks' numpy columns; :meth:`finish` builds the Trace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.names = _Interner()
        self.sync_kinds = _Interner()
        self.op_texts = {name: _Interner() for name in OP_TEXTS}
        self.parts: list[dict[str, np.ndarray]] = []
        self.counts = {
            "events": 0,
            "flow": 0,
            "instant": 0,
            "metadata": 0,
            "other_phase": 0,
            "lenient_blocks": 0,
            "msgspec_blocks": 0,
        }
        self.problem: str | None = None  # the first field of an unexpected type, with an example event

    def add(self, block: dict[str, Any]) -> None:
        for key, value in block.pop("counts").items():
            self.counts[key] += value
        problem = block.pop("problem", None)
        self.problem = self.problem or problem
        if "kind" not in block:
            return
        # Each row's start in int64 ns and whether its ts lies on the timeline, per block (elementwise, so the
        # same as over the joined column) while the other blocks are still being scanned: less left for finish.
        ts = block.pop("ts")
        block["start"] = _microseconds_to_ns(ts)
        block["placeable"] = placeable(ts)
        del ts
        block["name"] = self.names.merge(*block["name"])
        block["sync_kind"] = self.sync_kinds.merge(*block["sync_kind"])
        for name, interner in self.op_texts.items():
            block[name] = interner.merge(*block[name])
        self.parts.append(block)

    def _no_timed_events(self) -> InputError:
        return InputError(
            f"trace has no timed events: none of its {self.counts['events']:,} "
            f"event{'' if self.counts['events'] == 1 else 's'} is a complete "
            'event ("ph": "X") with a timestamp',
            path=self.path,
        )

    def finish(self, document: dict[str, Any]) -> Trace:
        # One pool of two threads for the whole build: the columns that do not depend on each other are
        # built on it while this thread builds others (numpy's sorts, gathers, casts and ufuncs release the
        # GIL), so the second core is not idle after the scan.
        background = executor(min(2, thread_budget()))
        try:
            return self._finish(document, background)
        finally:
            background.shutdown(wait=True)

    def _finish(self, document: dict[str, Any], background: Executor) -> Trace:
        if not self.parts:
            if self.counts["events"] == 0:
                raise InputError("trace has no events", path=self.path)
            raise self._no_timed_events()
        offsets = np.cumsum([0] + [len(p["kind"]) for p in self.parts[:-1]])
        gpu_rows = np.concatenate(
            [p.pop("gpu_rows") + off for p, off in zip(self.parts, offsets, strict=True)]
        )
        op_rows = np.concatenate([p.pop("op_rows") + off for p, off in zip(self.parts, offsets, strict=True)])
        # kind, ts and name decide the row order; the other row columns are then joined and put in that
        # order in one step each (below).
        kind, start, placed, raw_name = (
            np.concatenate([p.pop(k) for p in self.parts]) for k in ("kind", "start", "placeable", "name")
        )
        keep = (kind != SKIP) & placed
        del placed
        # The row order in the background while this thread codes names and kinds.
        timed = background.submit(_time_order, start, keep)
        # "cudaLaunchKernel_v7000" and "cudaLaunchKernel" are one name: merge codes after dropping suffixes.
        stripped = [strip_api_suffix(n) for n in self.names.values]
        names = sorted(set(stripped))
        index = {n: i for i, n in enumerate(names)}
        name_code = np.array([index[n] for n in stripped] + [-1], dtype=np.int32)[raw_name]
        del raw_name

        # Names decide steps (host annotations), driver calls and memcpy kinds; evaluated once per name.
        step_of_name = np.array([_step_number(n) for n in names] + [math.nan], dtype=np.float64)
        is_driver_name = np.array([bool(_DRIVER_NAME.match(n)) for n in names] + [False])
        host_marker = (kind == KIND_CODE[ANNOTATION]) | (kind == KIND_CODE[CPU_OP])
        kind = np.where(host_marker & ~np.isnan(step_of_name[name_code]), KIND_CODE[STEP], kind).astype(
            np.int8
        )
        kind = np.where((kind == KIND_CODE[RUNTIME]) & is_driver_name[name_code], KIND_CODE[DRIVER], kind)
        kind = kind.astype(np.int8)
        del host_marker

        base = int_or_none(document.get("baseTimeNanoseconds")) or 0
        order_keep, every_row = timed.result()
        if not every_row and order_keep.size == 0:
            raise self._no_timed_events()
        m = order_keep.size
        kind = kind[order_keep]
        start = start[order_keep]
        name_code = name_code[order_keep]
        # Joined and ordered in the background (numpy copies and gathers without holding the GIL) while this
        # thread places the GPU and op rows; each block's arrays are popped by one thread only.
        parts, self.parts = self.parts, []
        joined = {
            key: background.submit(_joined_in_order, parts, order_keep, key)
            for key in ("dur", "pid", "tid", "correlation", "external_id")
        }
        # Device-side fields stay compact (GPU rows only); `at` is where each lands in the sorted table.
        position = np.full(len(keep), -1, dtype=np.int64)
        position[order_keep] = np.arange(m)
        at = position[gpu_rows]
        # in table order: the rows of every GPU-only column are then ascending, as a SparseColumn holds them
        kept_gpu = np.flatnonzero(at >= 0)
        kept_gpu = kept_gpu[np.argsort(at[kept_gpu])]
        at = at[kept_gpu]
        gpu = {
            k: np.concatenate([p.pop(k) for p in parts])[kept_gpu]
            for k in (*DEVICE_FIELDS, "grid", "block", "sync_kind")
        }
        # The op fields likewise stay on the few rows that have one.
        at_op = position[op_rows]
        kept_op = np.flatnonzero(at_op >= 0)
        kept_op = kept_op[np.argsort(at_op[kept_op])]
        at_op = at_op[kept_op]
        op = {k: np.concatenate([p.pop(k) for p in parts])[kept_op] for k in (*OP_NUMBERS, *OP_TEXTS)}
        del op_rows, kept_op
        dur, kineto_pid, kineto_tid, correlation_all, external_id = (
            joined.pop(key).result() for key in ("dur", "pid", "tid", "correlation", "external_id")
        )
        del parts, position, keep, order_keep
        duration = np.rint(np.where(placeable(dur), dur, 0.0) * 1000).astype(np.int64)
        del dur

        device_side = DEVICE_SIDE[kind]
        gpu_annotation = kind == KIND_CODE[GPU_ANNOTATION]
        launch_side = LAUNCH_SIDE[kind]
        gpu_kind = kind[at]
        gpu_is_kernel = gpu_kind == KIND_CODE[KERNEL]
        origin = int(start.min())
        rel_start = start - origin
        del start

        def sparse(values: np.ndarray, field: str, rows: np.ndarray | None = None) -> Future[Stored]:
            """A column that is null except on GPU rows (``rows``: a mask over them), built in the background."""
            if rows is None:
                return background.submit(sparse_column, values, at, m, field)
            return background.submit(sparse_column, values[rows], at[rows], m, field)

        # Kineto's GPU "pid" is the device index and its "tid" the stream: fallbacks when args lack them.
        device_values = np.where(np.isnan(gpu["device"]), kineto_pid[at], gpu["device"])
        stream_values = np.where(np.isnan(gpu["stream"]), kineto_tid[at], gpu["stream"])
        correlation = np.where(device_side | launch_side, correlation_all, np.nan)
        del correlation_all
        # The host pid (device rows: their launch's, by correlation id) in the background, with the tid here.
        host_pid = background.submit(
            _host_pid, correlation, launch_side, kineto_pid, device_side, gpu_annotation
        )
        tid = np.where(device_side | gpu_annotation, np.nan, kineto_tid)
        del kineto_tid
        nested = NESTED_KIND[kind] & ~np.isnan(tid)
        pid, pid_exactly = host_pid.result()
        del kineto_pid
        depth: Future[Stored] | DeferredColumn | None = None
        if not nested.any():
            pass  # no host interval on a thread: no depth column (as build_store leaves it)
        elif pid_exactly and _stored_exactly(tid):
            # No analysis reads the host nesting depth: the store computes it from its own columns on first
            # read (the same values: see _host_depth).
            depth = DeferredColumn(_host_depth)
        else:  # fractional or huge ids, which the int64 columns cannot hold: computed now from the floats
            depth = background.submit(
                depth_column, nested, pid, tid, rel_start, rel_start + np.maximum(duration, 0)
            )
        del nested

        is_memcpy = kind == KIND_CODE[MEMCPY]
        copy_kind, src_kind, dst_kind = _memcpy_kinds(names, name_code, is_memcpy)
        # cuda_sync rows: cuda_sync_kind, or the event name when it is missing (both say the same thing).
        sync_labels = [
            _SYNC_KINDS.get(v.strip().lower(), v.strip().lower().replace(" ", "_"))
            for v in self.sync_kinds.values
        ]
        name_labels = [_SYNC_KINDS.get(n.lower(), n.lower().replace(" ", "_")) for n in names]
        sync_code = np.full(m, -1, dtype=np.int64)
        sync_code[at] = gpu["sync_kind"]
        # a row with neither a cuda_sync_kind nor a name stays null (-1: the lookup's null slot), not the last label
        sync_code = np.where(
            sync_code >= 0, sync_code, np.where(name_code >= 0, len(sync_labels) + name_code, -1)
        )
        sync_text = dictionary_column(sync_code, sync_labels + name_labels, kind == KIND_CODE[GPU_SYNC])
        del sync_code
        step_rows = np.flatnonzero(kind == KIND_CODE[STEP])
        domain = dictionary_column(
            name_code,
            ["tracelens" if n.startswith("tracelens/") else None for n in names],
            (kind == KIND_CODE[ANNOTATION]) | (kind == KIND_CODE[STEP]),
        )
        shared_total = gpu["shared_memory"]

        columns: dict[str, Any] = {
            "kind": pa.DictionaryArray.from_arrays(dictionary_indices(kind), string_array(KINDS)),
            "name": pa.DictionaryArray.from_arrays(dictionary_indices(name_code), string_array(names)),
            "start_ns": numpy_array(rel_start, pa.int64()),
            "end_ns": numpy_array(rel_start + duration, pa.int64()),
            "device": sparse_column(device_values, at, m, "device"),
            "stream": sparse(stream_values, "stream"),
            "pid": background.submit(float_column, pid, "pid"),
            "tid": background.submit(float_column, tid, "tid"),
            "correlation_id": background.submit(float_column, correlation, "correlation_id"),
            "external_id": background.submit(float_column, external_id, "external_id"),
            "bytes": sparse(gpu["bytes"], "bytes", DEVICE_SIDE[gpu_kind]),
            "copy_kind": copy_kind,
            "src_kind": src_kind,
            "dst_kind": dst_kind,
            "sync_kind": sync_text,
            "domain": domain,
            "grid_x": sparse(gpu["grid"][:, 0], "grid_x", gpu_is_kernel),
            "grid_y": sparse(gpu["grid"][:, 1], "grid_y", gpu_is_kernel),
            "grid_z": sparse(gpu["grid"][:, 2], "grid_z", gpu_is_kernel),
            "block_x": sparse(gpu["block"][:, 0], "block_x", gpu_is_kernel),
            "block_y": sparse(gpu["block"][:, 1], "block_y", gpu_is_kernel),
            "block_z": sparse(gpu["block"][:, 2], "block_z", gpu_is_kernel),
            "registers_per_thread": sparse(gpu["registers"], "registers_per_thread", gpu_is_kernel),
            # Kineto writes only static + dynamic shared memory; the sum is what occupancy needs.
            "static_shared_bytes": sparse(shared_total, "static_shared_bytes", gpu_is_kernel),
            "dynamic_shared_bytes": sparse(
                np.where(np.isnan(shared_total), np.nan, 0.0), "dynamic_shared_bytes", gpu_is_kernel
            ),
            "step": sparse_column(step_of_name[name_code[step_rows]], step_rows, m, "step"),
            "depth": depth if isinstance(depth, Future) else None,
            "reported_occupancy": sparse(gpu["occupancy_pct"] / 100.0, "reported_occupancy", gpu_is_kernel),
            **{
                name: background.submit(sparse_column, op[name], at_op, m, name)
                for name in OP_NUMBERS
                if not np.isnan(op[name]).all()
            },  # a column without values is left to build_events (nulls)
            **{name: op_text_column(op[name], at_op, m, self.op_texts[name].values) for name in OP_TEXTS},
        }
        background.shutdown(wait=True)
        built = {k: v.result() if isinstance(v, Future) else v for k, v in columns.items()}
        # The columns few rows carry come stored already (SparseColumn, as EventStore.from_columns would
        # store them): only the others go through build_store, which would make them full-length to store
        # them sparse again.
        held: dict[str, SparseColumn | DeferredColumn] = {
            k: v for k, v in built.items() if isinstance(v, SparseColumn)
        }
        if isinstance(depth, DeferredColumn):
            held["depth"] = depth
        dense = build_store({k: v for k, v in built.items() if k not in held}, sort=False, derive_depth=False)
        del built
        events = EventStore(
            dense.num_rows,
            {c: held.get(c) or dense.columns[c] for c in EVENT_COLUMNS if c in held or c in dense.columns},
            dense.sentinel,
        )
        # the devices of the GPU rows: the device column holds no other value
        devices = _device_rows(document.get("deviceProperties"), device_values, names, name_code, kind)
        info = document.get("distributedInfo")
        distributed: dict[str, Any] = info if isinstance(info, dict) else {}
        extra = {
            "counts": {**self.counts, "kept": len(kind)},
            "display_time_unit": document.get("displayTimeUnit"),
            "base_time_ns": int_or_none(document.get("baseTimeNanoseconds")),
            "trace_name": document.get("traceName"),
            "device_properties": len(properties)
            if isinstance(properties := document.get("deviceProperties"), list)
            else 0,
        }
        drops = profiler_drops(kineto_log_lines(document))
        if drops:
            extra["profiler_drops"] = drops
        warnings = []
        if self.counts["lenient_blocks"]:
            warnings.append(
                "some events had fields of unexpected types; unreadable values were left empty"
                + (f" (first: {self.problem})" if self.problem else "")
            )
        metadata = TraceMetadata(
            source_format="kineto",
            source_path=str(self.path),
            producer="PyTorch Profiler (Kineto)",
            format_version=str(document.get("schemaVersion", "")),
            framework="pytorch",
            time_origin_ns=origin + base,
            clock="unix",
            rank=int_or_none(distributed.get("rank")),
            world_size=int_or_none(distributed.get("world_size")),
            warnings=warnings,
            extra=extra,
        )
        return Trace(events=events, devices=devices, metadata=metadata)


def _stored_exactly(ids: np.ndarray) -> bool:
    """Whether every non-NaN value of a float64 id column (pid, tid) is an integer an int64 column holds as
    is, so that the stored column, read back as float64, is the same array (nulls as NaN)."""
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isnan(ids) | ((np.abs(ids) < 2.0**63) & (np.trunc(ids) == ids))))


def _host_depth(store: EventStore) -> pa.Array | SparseColumn:
    """The ``depth`` column of a Kineto trace's store, computed on first read: the nesting depth of the host
    rows (kinds in NESTED_KIND) that have a tid, on their (pid, tid) thread, with end = start + max(dur, 0).

    The store's rows are the reader's rows in its order (build_store(sort=False)), and its pid and tid are
    the reader's float ids (checked by _stored_exactly), so this equals the depth the reader would have
    computed at load: ties (equal starts and ends) resolve by the same row order.
    """
    kinds = store.column("kind")
    nested = ~np.isin(np.asarray(kinds.dictionary.to_pylist(), dtype=object), NOT_NESTED_KINDS)
    nested = nested[kinds.indices.to_numpy(zero_copy_only=False)]
    del kinds
    tid = store.column("tid")
    nested &= tid.is_valid().to_numpy(zero_copy_only=False)
    values = depth_column(
        nested,
        store.column("pid").to_numpy(zero_copy_only=False).astype(np.float64),
        tid.to_numpy(zero_copy_only=False).astype(np.float64),
        store.numpy("start_ns"),
        store.numpy("end_ns"),  # the store's end is start + max(dur, 0) (build_store clamps it)
    )
    # stored as EventStore.from_columns would store it (sparse when fewer than half the rows nest)
    # (deferred only where some row nests, so the column has values)
    return EventStore.from_columns(store.num_rows, {"depth": values}).columns["depth"]


def _step_number(name: str) -> float:
    number = step_number(name)
    return math.nan if number is None else float(number)


def _time_order(start: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, bool]:
    """The kept rows in start order (stable), and whether every row is kept."""
    if keep.all():  # the blocks drop what is not kept; only a lenient block may leave a row to drop
        return np.argsort(start, kind="stable"), True
    order_keep = np.flatnonzero(keep)
    return order_keep[np.argsort(start[order_keep], kind="stable")], False


def _host_pid(
    correlation: np.ndarray,
    launch_side: np.ndarray,
    kineto_pid: np.ndarray,
    device_side: np.ndarray,
    gpu_annotation: np.ndarray,
) -> tuple[np.ndarray, bool]:
    """The pid column (device rows: the pid of their launch, GPU annotations: none) and whether the int64
    column holds it exactly (_stored_exactly)."""
    pid = np.where(device_side | gpu_annotation, np.nan, kineto_pid)
    pid = np.where(device_side, _launch_pid(correlation, launch_side, kineto_pid, device_side), pid)
    return pid, _stored_exactly(pid)


def _joined_in_order(parts: list[dict[str, Any]], order: np.ndarray, key: str) -> np.ndarray:
    """Column ``key`` of all blocks, joined (each block's array dropped) and taken in ``order``."""
    return np.concatenate([p.pop(key) for p in parts])[order]


def _microseconds_to_ns(ts: np.ndarray) -> np.ndarray:
    """Float microseconds -> int64 ns: whole microseconds times 1000 plus the rounded fraction (0 where
    the time is not finite), so that large absolute timestamps keep their exact ns digits."""
    finite = np.isfinite(ts)
    if finite.all():
        # whole * 1000 + rint((ts - whole) * 1000), with the temporaries reused (the same values)
        whole_us = np.floor(ts)
        fraction_ns = np.subtract(ts, whole_us)
        fraction_ns *= 1000
        np.rint(fraction_ns, out=fraction_ns)
        start = whole_us.astype(np.int64)
        start *= 1000
        start += fraction_ns.astype(np.int64)
        return start
    start = np.zeros(len(ts), dtype=np.int64)
    start[finite] = _microseconds_to_ns(ts[finite])
    return start


def _memcpy_kinds(names: list[str], name_code: np.ndarray, is_memcpy: np.ndarray) -> tuple[Stored, ...]:
    parsed = [_MEMCPY_NAME.match(n) for n in names]
    copy = [m.group(1) if m else None for m in parsed]
    src = [_MEMORY_KINDS.get(m.group(2).lower(), m.group(2).lower()) if m else None for m in parsed]
    dst = [_MEMORY_KINDS.get(m.group(3).lower(), m.group(3).lower()) if m else None for m in parsed]
    return tuple(dictionary_column(name_code, v, is_memcpy) for v in (copy, src, dst))


def _launch_pid(
    correlation: np.ndarray, launch_side: np.ndarray, host_pid: np.ndarray, device_side: np.ndarray
) -> np.ndarray:
    """For each row, the pid of the runtime/driver call with the same correlation id (NaN if none)."""
    launches = launch_side & ~np.isnan(correlation) & ~np.isnan(host_pid)
    corr = correlation[launches]
    pids = host_pid[launches]
    order = np.argsort(corr, kind="stable")
    corr, pids = corr[order], pids[order]
    out = np.full(len(correlation), np.nan)
    if corr.size == 0:
        return out
    rows = np.flatnonzero(device_side & ~np.isnan(correlation))
    pos = np.searchsorted(corr, correlation[rows])
    pos_clipped = np.minimum(pos, corr.size - 1)
    hit = corr[pos_clipped] == correlation[rows]
    out[rows[hit]] = pids[pos_clipped[hit]]
    return out


def _vendor(device_names: list[str], api_names: list[str]) -> str:
    text = " ".join(device_names).lower()
    if any(w in text for w in ("amd", "radeon", "instinct", "gfx")) or any(
        n.startswith("hip") for n in api_names
    ):
        return "amd"
    return "nvidia"


def _device_rows(
    properties: Any, device: np.ndarray, names: list[str], name_code: np.ndarray, kind: np.ndarray
) -> pa.Table:
    """Devices seen in the event table, with deviceProperties where the trace has them."""
    seen = sorted({int(d) for d in np.unique(device[~unrepresentable(device, np.dtype(np.int32))])})
    listed = properties if isinstance(properties, list) else []
    props = {int(p["id"]): p for p in listed if isinstance(p, dict) and isinstance(p.get("id"), int)}
    api_codes = np.flatnonzero(  # the distinct codes, ascending: a count per name, not a sort of the rows
        np.bincount(name_code[LAUNCH_SIDE[kind] & (name_code >= 0)], minlength=len(names))
    )
    api_names = [names[c] for c in api_codes]
    vendor = _vendor([str(p.get("name", "")) for p in props.values()], api_names)
    rows = []
    for dev in seen:
        p = props.get(dev, {})
        rows.append(
            {
                "id": dev,
                "name": p.get("name"),
                "vendor": vendor,
                "sm_count": p.get("numSms"),
                "compute_major": p.get("computeMajor"),
                "compute_minor": p.get("computeMinor"),
                "warp_size": p.get("warpSize"),
                "max_threads_per_sm": p.get("maxThreadsPerMultiprocessor"),
                "max_threads_per_block": p.get("maxThreadsPerBlock"),
                "max_blocks_per_sm": p.get("maxBlocksPerMultiprocessor"),
                "regs_per_sm": p.get("regsPerMultiprocessor"),
                "regs_per_block": p.get("regsPerBlock"),
                "shared_mem_per_sm": p.get(
                    "sharedMemPerMultiprocessor", p.get("maxSharedMemoryPerMultiProcessor")
                ),
                "shared_mem_per_block": p.get("sharedMemPerBlock"),
                "shared_mem_per_block_optin": p.get("sharedMemPerBlockOptin"),
                "total_memory_bytes": p.get("totalGlobalMem"),
                "clock_rate_khz": p.get("clockRate"),
            }
        )
    clean = [{k: (v if not isinstance(v, (dict, list)) else None) for k, v in r.items()} for r in rows]
    try:
        return build_devices(clean)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        TypeError,
        OverflowError,
    ):  # odd property types: ids and names
        return build_devices(
            [{"id": r["id"], "name": str(r["name"]) if r["name"] else None, "vendor": vendor} for r in rows]
        )
