"""The blocks' columns joined into the event table, device table and metadata of a :class:`Trace`."""

from __future__ import annotations

import math
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ...errors import InputError
from ...event_names import strip_api_suffix
from ...memory import reusing_array_pages
from ...trace import (
    ANNOTATION,
    EVENT_COLUMNS,
    GPU_SYNC,
    KERNEL,
    MEMCPY,
    NOT_NESTED_KINDS,
    STEP,
    DeferredColumn,
    EventStore,
    SparseColumn,
    Trace,
    TraceMetadata,
    depth_column,
    numpy_array,
)
from ...values import int_or_none
from ..profiler_log import kineto_log_lines, profiler_drops
from . import gpu_columns
from .appended import Appended
from .blocks import (
    DEVICE_SIDE,
    KIND_CODE,
    KINDS,
    NESTED_KIND,
    scanner,
)
from .devices import device_table
from .fields import DEVICE_FIELDS, OP_NUMBERS, OP_TEXTS
from .gpu_columns import field_at, geometry, gpu_placed, shared_memory, stream_column, with_fallback
from .labels import Interner, memcpy_kinds, sync_label
from .msgspec_engine import SOURCE_MEMBER, annotated_source, decoding_warnings
from .named_kinds import KIND_MASK, VALID_BIT, NameFlags, ready_block
from .placing import (
    LaunchIndex,
    in_table_order,
    joined_floats,
    joined_in_order,
    launch_pid,
    launches_by_id,
    placed_rows,
    records_taken,
    sorted_launches,
)
from .prepare import int_parts, prepare_block
from .start_order import start_order
from .stored import (
    NARROW,
    Stored,
    dictionary_array,
    dictionary_column,
    dictionary_column_at,
    int_column,
    int_column_at,
    op_text_column,
    sparse_column,
    store_columns,
)
from .stream_order import GPU_OP_KINDS, ends_ascending
from .threads import executor, thread_budget

# A block's arrays that finish reads joined: a value per row, then a record per GPU row, op row or launch.
# (``name``: the block's own string codes, looked up per block in finish; ``kind_valid``: named_kinds.)
_ROW_KEYS = ("start", "kind_valid", "name", "duration", "pid", "tid", "correlation", "external_id")
_RECORD_KEYS = (
    *DEVICE_FIELDS,
    "grid",
    "block",
    "sync_kind",
    "gpu_correlation",
    "gpu_pid",
    "gpu_tid",
    *OP_NUMBERS,
    *OP_TEXTS,
    "launch_correlation",
    "launch_pid",
)

# whether each kind code is a GPU op's (stream_order.py's kinds: their ends are checked in finish)
_GPU_OP = np.array([k in GPU_OP_KINDS for k in KINDS])


class Columns:
    """Accumulates blocks' numpy columns (each made ready by :func:`prepare_block`); :meth:`finish` builds the
    Trace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.names = Interner()
        # Each block's name codes as global codes (the blocks' "name" arrays keep their own codes: looked up once,
        # in finish), and the flags names give kinds (shared with the threads that make blocks ready).
        self.name_maps: list[np.ndarray] = []
        self.name_flags = NameFlags()
        self.sync_kinds = Interner()
        self.op_texts = {name: Interner() for name in OP_TEXTS}
        # The blocks' arrays by key (joined-block rows: rows of all blocks in file order; joined when read), and
        # what finish needs of the rest: whether all pid and tid values are held exactly by the int64 columns
        # (else each block's floats, by its first joined row), whether some host row nests on a thread, and
        # which names launch-side rows carry (per raw name code).
        self.appended = Appended()
        self.rows = 0
        self.ids_exactly = True
        self.floats: dict[str, list[tuple[int, np.ndarray]]] = {"pid": [], "tid": []}
        self.nested_any = False
        self.launch_name = np.zeros(0, dtype=bool)
        self.counts = {
            "events": 0,
            "flow": 0,
            "instant": 0,
            "metadata": 0,
            "other_phase": 0,
            "lenient_blocks": 0,
            "msgspec_blocks": 0,
            "surrogates": 0,
            "untimed": 0,
        }
        self.problem: str | None = None  # the first field of an unexpected type, with an example event
        # set by finish: whether the GPU ops' ends ascend in table order (stream_order.ends_ascending)
        self.gpu_op_ends_ascending = False

    def add(self, block: dict[str, Any]) -> None:
        # (names' kinds, kind_valid and the clamped durations: done by the worker that scanned the block, else here)
        block = ready_block(prepare_block(block), self.name_flags)
        for key, value in block.pop("counts").items():
            self.counts[key] += value
        problem = block.pop("problem", None)
        self.problem = self.problem or problem
        if "kind" not in block:
            return
        codes, uniques = block["name"]
        mapping = self.names.mapping(uniques)  # the block's names interned in file order, here
        self.name_maps.append(mapping)
        block["name"] = codes
        block["sync_kind"] = self.sync_kinds.merge(*block["sync_kind"])
        for text, interner in self.op_texts.items():
            block[text] = interner.merge(*block[text])
        # the names of launch-side rows, for the devices' vendor
        self.launch_name = np.concatenate(
            [self.launch_name, np.zeros(len(self.names.values) - self.launch_name.size, bool)]
        )
        self.launch_name[mapping[:-1][block["launch_names"]]] = True
        self._append(block)

    def _append(self, block: dict[str, Any]) -> None:
        """The block's arrays added to the others' (its row numbers made joined-block rows)."""
        # (the ids' validities are kept in kind_valid only: the block's own arrays are freed with it, their heap
        # memory taken by the next block's)
        for key in _ROW_KEYS + _RECORD_KEYS:
            self.appended.add(key, block[key])
        for key in ("gpu_rows", "op_rows", "launch_rows"):
            self.appended.add(key, block[key].astype(np.int64, copy=False), self.rows)
        self.ids_exactly &= bool(block["pid_exact"]) & bool(block["tid_exact"])
        for key in ("pid", "tid"):
            if f"{key}_float" in block:
                self.floats[key].append((self.rows, block[f"{key}_float"]))
        self.nested_any |= bool(block["nested"])
        self.rows += len(block["kind"])

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
        # The build's big temporaries (joined columns before their gather, masks) are freed as others are
        # made: within, a new big array takes freed pages instead of fresh ones the kernel faults in and zeroes.
        try:
            with reusing_array_pages():
                return self._finish(document, background)
        finally:
            background.shutdown(wait=True)

    def _finish(self, document: dict[str, Any], background: Executor) -> Trace:
        if not self.rows:
            if self.counts["events"] == 0:
                raise InputError("trace has no events", path=self.path)
            raise self._no_timed_events()
        parts, self.appended = self.appended, Appended()
        m = self.rows
        # Every row of a block is kept (prepare_block); ts decides the row order, and the row columns are
        # put in that order in one step each (below).
        start = parts.pop("start")
        op_rows = parts.pop("op_rows")
        # the op rows' starts (few), to place them once the starts are sorted
        op_starts = np.take(start, op_rows)
        # The order and the starts in it on the pool (start_order.py: the host and the GPU rows' own orders
        # merged where the extension is built), the joined starts, a row chunk (row_chunks.py), held there only:
        # freed as soon as they are read, so that the next big arrays take their pages.
        gpu_rows, launch_rows = (parts.pop(k) for k in ("gpu_rows", "launch_rows"))
        ordering = background.submit(start_order, [start], gpu_rows)
        del start
        # The launches (runtime and driver calls with a correlation id and a pid) indexed by correlation id in
        # the background while the order is computed, where no two share an id (else once they are placed);
        # queued first: the pool's second thread has nothing else to do before the order is known.
        launch_records = {k: parts.pop(k) for k in ("launch_correlation", "launch_pid")}
        by_id = background.submit(launches_by_id, *launch_records.values())
        name_blocks = parts.pop_blocks("name")
        kind_valid = parts.pop("kind_valid")
        # "cudaLaunchKernel_v7000" and "cudaLaunchKernel" are one name: merge codes after dropping suffixes.
        stripped = [strip_api_suffix(n) for n in self.names.values]
        names = sorted(set(stripped))
        index = {n: i for i, n in enumerate(names)}
        name_of_raw = np.array([index[n] for n in stripped] + [-1], dtype=np.int32)
        step_of_name = np.full(len(names) + 1, math.nan)
        step_of_name[name_of_raw[:-1]] = self.name_flags.steps(self.names.values)
        # The devices of the GPU rows (the device column holds no other value) found in the background while the
        # order is computed (queued before the names' codes below): the table holds them in another order, but
        # the device table lists them distinct.
        base = int_or_none(document.get("baseTimeNanoseconds")) or 0
        device_values = with_fallback(parts, "device", "gpu_pid")  # (GPU rows in file order)
        launch_codes = np.bincount(
            np.take(name_of_raw, np.flatnonzero(self.launch_name)), minlength=len(names)
        )
        api_names = [names[c] for c in np.flatnonzero(launch_codes)]  # distinct, in name order
        devices = background.submit(device_table, document.get("deviceProperties"), device_values, api_names)
        # in file order, on the pool while the sort runs (this thread is the build's pace once the order is known)
        file_names = background.submit(_names_in_file_order, name_blocks, self.name_maps, name_of_raw, m)
        del name_blocks
        # Whether the int64 pid and tid columns hold the ids exactly (a device row's pid is its launch's, a
        # host row's pid); where not (fractional or huge ids), the depth is computed now, from the floats.
        ids_exactly, nested_any = self.ids_exactly, self.nested_any
        order, rel_start, origin, merged_placing = ordering.result()
        floats = (
            None
            if ids_exactly or not nested_any
            else [
                joined_floats(parts, self.floats[k], order, k, _valid(kind_valid, k)) for k in ("pid", "tid")
            ]
        )
        # Joined and ordered in the background (numpy copies and gathers without holding the GIL) while this
        # thread orders the others and places the GPU rows.
        joined = {
            "duration": background.submit(joined_in_order, parts, order, "duration"),
            "pid": background.submit(
                _taken, parts, order, "pid"
            ),  # (int32 where the blocks held it so: NARROW)
        }
        kind_valid = np.take(kind_valid, order)
        kind = np.bitwise_and(kind_valid, KIND_MASK).view(np.int8)
        # The GPU rows placed in table order (`at`: their table rows, ascending; `kept_gpu`: the index of each
        # into the GPU rows in file order): by the start merge as it merged (start_order.py), else in the
        # background as the rows of the GPU kinds, found in the sorted kinds (no table-long gather).
        placing = merged_placing or background.submit(gpu_placed, kind, order, gpu_rows, m)
        # The id columns that need only the order and the validities: queued now, so that the pool builds them
        # while this thread places rows and looks up launches (it waited for this thread there, both threads
        # idle ~15 ms, and built the correlation ids last, alone, after the other columns).
        ids = {
            "tid": background.submit(_id_column_joined, parts, order, kind_valid, "tid", "tid"),
            "correlation_id": background.submit(
                _id_column_in_order, parts, order, kind_valid, "correlation", "correlation_id"
            ),
            "external_id": background.submit(
                _id_column_joined, parts, order, kind_valid, "external_id", "external_id"
            ),
        }
        # the names in table order on the pool too (this thread places rows meanwhile; read at the copies below)
        ordered_names = background.submit(_taken_result, file_names, order)
        # the op rows (few) placed by their starts among the sorted starts
        op_starts -= origin
        kept_op, at_op = placed_rows(op_rows, op_starts, rel_start, order)
        del op_rows, op_starts
        kept_gpu, at = placing if isinstance(placing, tuple) else placing.result()
        del gpu_rows
        op = records_taken(parts, kept_op, (*OP_NUMBERS, *OP_TEXTS))
        # the launches indexed by correlation id, for the device rows' pid below (launches with a shared id: the
        # first in table order of each id, found once they are placed)
        launches = by_id.result() or sorted_launches(
            {k: np.take(v, in_table_order(launch_rows, order, m)[0]) for k, v in launch_records.items()}
        )
        del launch_records, launch_rows, kept_op

        # `at`: where each GPU row lands in the sorted table, in table order (the rows of every GPU-only column
        # are then ascending, as a SparseColumn holds them). Each GPU field is taken (from the GPU rows in file
        # order) at the GPU rows that use it only: all of them, the device-side rows, the kernels or the syncs.
        gpu_kind = kind[at]
        gpu_is_kernel = gpu_kind == KIND_CODE[KERNEL]
        # Kineto's GPU "pid" is the device index and its "tid" the stream: fallbacks when args lack them (chosen
        # in file order, then put in table order: one gather each).
        device_values = np.take(device_values, kept_gpu)
        # The host pid of device rows: their launch's, by correlation id (GPU annotations: none).
        device_rows = np.flatnonzero(DEVICE_SIDE[gpu_kind])
        deviceless = gpu_columns.no_device_count(np.take(device_values, device_rows))  # (said in a warning)
        kept_device = np.take(kept_gpu, device_rows)
        device_correlation = np.take(parts.pop("gpu_correlation"), kept_device)
        at_device = at[device_rows]
        # the pid column with the device rows' looked up on the pool (here where the depth needs them now)
        device_pid = None if floats is None else launch_pid(launches, device_correlation)
        pid = background.submit(
            _with_device_rows,
            joined.pop("pid"),
            kind_valid,
            (launches, device_correlation) if device_pid is None else device_pid,
            at_device,
        )
        # the device-side and kernel rows among the GPU rows: their table rows and their index into the GPU
        # rows in file order (each found once)
        kernels = np.flatnonzero(gpu_is_kernel)
        # the kernels' table rows in their stored type once: the kernel columns' SparseColumns share one array
        kernel_rows = (np.take(kept_gpu, kernels), at[kernels].astype(np.int32 if m < 2**31 else np.int64))
        # The GPU fields' columns queued now, behind the pid: the pool builds them while this thread makes the
        # end and the copies', syncs' and steps' columns (queued after those, they left a pool thread idle).
        shared = background.submit(shared_memory, parts, *kernel_rows, m)
        grid = background.submit(geometry, parts, "grid", *kernel_rows, m)
        block = background.submit(geometry, parts, "block", *kernel_rows, m)
        gpu_fields = {
            "stream": background.submit(stream_column, parts, kept_gpu, at, m),
            # each null except on some GPU rows, taken at those rows (from the GPU rows in file order) there
            "bytes": background.submit(field_at, parts, "bytes", kept_device, at_device, m, "bytes"),
            "registers_per_thread": background.submit(
                field_at, parts, "registers", *kernel_rows, m, "registers_per_thread"
            ),
            "reported_occupancy": background.submit(
                field_at, parts, "occupancy_pct", *kernel_rows, m, "reported_occupancy", 100.0
            ),
        }
        # the end in the duration's array (not needed after): start + max(duration, 0), an end before the start
        # being the start (as build_store clamps it)
        end = joined.pop("duration").result()
        end += rel_start  # (the durations clamped at 0 in add)
        # the GPU ops' ends checked on the pool, at the ops' rows (`at`: no pass over the table's kinds after the build)
        ends_checked = background.submit(ends_ascending, end, at[_GPU_OP[gpu_kind]])

        # Copies and syncs are GPU rows: their columns are looked up at those rows (`at`, ascending) only.
        name_code = ordered_names.result()
        memcpy_rows = at[gpu_kind == KIND_CODE[MEMCPY]]
        copy_kind, src_kind, dst_kind = memcpy_kinds(names, np.take(name_code, memcpy_rows), memcpy_rows, m)
        # cuda_sync rows: cuda_sync_kind, or the event name when it is missing (both say the same thing).
        sync_labels = [sync_label(v.strip()) for v in self.sync_kinds.values]
        name_labels = [sync_label(n) for n in names]
        syncs = gpu_kind == KIND_CODE[GPU_SYNC]
        sync_rows = at[syncs]
        sync_code = np.take(parts.pop("sync_kind"), kept_gpu[syncs]).astype(np.int64)
        sync_name = np.take(name_code, sync_rows)
        # a row with neither a cuda_sync_kind nor a name stays null (-1: the lookup's null slot), not the last label
        sync_code = np.where(
            sync_code >= 0, sync_code, np.where(sync_name >= 0, len(sync_labels) + sync_name, -1)
        )
        sync_text = dictionary_column_at(sync_code, sync_labels + name_labels, sync_rows, m)
        del sync_code, sync_name
        step_rows = np.flatnonzero(kind == KIND_CODE[STEP])
        domains = ["tracelens" if n.startswith("tracelens/") else None for n in names]
        domain = (  # no name marks a domain (the common case): no row has one, nothing to scan
            None
            if all(d is None for d in domains)
            else dictionary_column(
                name_code, domains, (kind == KIND_CODE[ANNOTATION]) | (kind == KIND_CODE[STEP])
            )
        )
        columns: dict[str, Any] = {
            "kind": dictionary_array(kind, KINDS),
            "name": dictionary_array(name_code, names),  # shares name_code's memory (not written after)
            "start_ns": numpy_array(rel_start, pa.int64()),
            "end_ns": numpy_array(end, pa.int64()),
            "device": sparse_column(device_values, at, m, "device"),
            "stream": gpu_fields["stream"],
            "pid": pid,
            **ids,
            "bytes": gpu_fields["bytes"],
            "copy_kind": copy_kind,
            "src_kind": src_kind,
            "dst_kind": dst_kind,
            "sync_kind": sync_text,
            "domain": domain,
            "registers_per_thread": gpu_fields["registers_per_thread"],
            "step": sparse_column(step_of_name[name_code[step_rows]], step_rows, m, "step"),
            "reported_occupancy": gpu_fields["reported_occupancy"],
            **{
                name: background.submit(sparse_column, op[name], at_op, m, name)
                for name in OP_NUMBERS
                if not np.isnan(op[name]).all()
            },  # a column without values is left to build_events (nulls)
            **{name: op_text_column(op[name], at_op, m, self.op_texts[name].values) for name in OP_TEXTS},
        }
        depth: Future[Stored] | DeferredColumn | None = None
        if not nested_any:
            pass  # no host interval on a thread: no depth column (as build_store leaves it)
        elif floats is None:
            # No analysis reads the host nesting depth: the store computes it from its own columns on first
            # read (the same values: see _host_depth).
            depth = DeferredColumn(_host_depth)
        else:  # fractional or huge ids, which the int64 columns cannot hold: computed now from the floats
            pid_float, tid_float = floats
            pid_float[at_device] = device_pid
            nested = NESTED_KIND[kind] & ~np.isnan(tid_float)
            depth = background.submit(depth_column, nested, pid_float, tid_float, rel_start, end)
        columns["depth"] = depth if isinstance(depth, Future) else None
        background.shutdown(wait=True)
        del parts
        self.gpu_op_ends_ascending = ends_checked.result()
        # the columns built in twos and threes (one gather of their field each)
        columns["grid_x"], columns["grid_y"], columns["grid_z"] = grid.result()
        columns["block_x"], columns["block_y"], columns["block_z"] = block.result()
        # Kineto writes only static + dynamic shared memory; the sum is what occupancy needs.
        columns["static_shared_bytes"], columns["dynamic_shared_bytes"] = shared.result()
        built = {k: v.result() if isinstance(v, Future) else v for k, v in columns.items()}
        # The columns few rows carry come stored already (SparseColumn, as EventStore.from_columns would
        # store them); the others are stored as build_store(sort=False) stores them: every column is built in
        # its schema's type (store_columns casts any that is not) and the end is clamped above, so only
        # from_columns' choice between dense and sparse is left (no pyarrow.compute pass over the ends).
        held: dict[str, SparseColumn | DeferredColumn] = {
            k: v for k, v in built.items() if isinstance(v, SparseColumn)
        }
        if isinstance(depth, DeferredColumn):
            held["depth"] = depth
        dense = store_columns(len(kind), {k: v for k, v in built.items() if k not in held})
        del built
        events = EventStore(
            dense.num_rows,
            {c: held.get(c) or dense.columns[c] for c in EVENT_COLUMNS if c in held or c in dense.columns},
            dense.sentinel,
        )
        events.kernel_rows = kernel_rows[1]  # (the rows of the kernel kind: the load's enrich reads them)
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
        warnings = decoding_warnings(self.counts, self.problem)
        warnings += [gpu_columns.no_device_warning(deviceless)] if deviceless else []
        producer, version, framework = annotated_source(document.get(SOURCE_MEMBER), extra)
        metadata = TraceMetadata(
            source_format="kineto",
            source_path=str(self.path),
            producer=producer,
            producer_version=version,
            format_version=str(document.get("schemaVersion", "")),
            framework=framework,
            time_origin_ns=origin + base,
            clock="unix",
            rank=int_or_none(distributed.get("rank")),
            world_size=int_or_none(distributed.get("world_size")),
            warnings=warnings,
            extra=extra,
        )
        return Trace(events=events, devices=devices.result(), metadata=metadata)


def _host_depth(store: EventStore) -> pa.Array | SparseColumn:
    """The ``depth`` column of a Kineto trace's store, computed on first read: the nesting depth of the host
    rows (kinds in NESTED_KIND) that have a tid, on their (pid, tid) thread, with end = start + max(dur, 0).

    The store's rows are the reader's rows in its order (build_store(sort=False)), and its pid and tid are
    the reader's float ids (checked by prepare.stored_exactly), so this equals the depth the reader would have
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


def _names_in_file_order(
    blocks: list[np.ndarray], maps: list[np.ndarray], name_of_raw: np.ndarray, m: int
) -> np.ndarray:
    """The rows' name codes in file order, block by block (no join of the blocks' codes): each block's codes
    (``blocks``) through its names' raw codes (``maps``), then the raw codes' (``name_of_raw``); -1 (no name)
    takes the trailing -1 of both lookups."""
    name_code = np.empty(m, np.int32)
    first = 0
    for codes, mapping in zip(blocks, maps, strict=True):  # a loop over blocks
        rows = name_code[first : first + codes.size]
        np.take(np.take(name_of_raw, mapping), codes, out=rows, mode="wrap")
        first += codes.size
    return name_code


def _taken(parts: Appended, order: np.ndarray, key: str) -> np.ndarray:
    """The id ``key`` joined (dropped from ``parts``) and put in table ``order``, in the blocks' type (int32 ids
    stay int32: stored.NARROW)."""
    return np.take(parts.pop(key), order)


def _taken_result(values: Future[np.ndarray], order: np.ndarray) -> np.ndarray:
    """``values``' result (a task queued before this one: done or running) taken in ``order``."""
    return np.take(values.result(), order)


def _within(data: np.ndarray, dtype: np.dtype) -> bool:
    """Whether every value of the integer array ``data`` fits the integer type ``dtype``."""
    limits = np.iinfo(dtype)
    return bool(limits.min <= int(data.min()) and int(data.max()) <= limits.max)


def _valid(kind_valid: np.ndarray, key: str) -> np.ndarray:
    """Whether each row of the id column ``key`` has a value, from the rows' ``kind_valid`` bytes."""
    return np.bitwise_and(kind_valid, VALID_BIT[key]).astype(bool)


def _id_column(data: np.ndarray, kind_valid: np.ndarray, key: str, column: str) -> Stored:
    """:func:`int_column` of the id ``key`` (int64 data in table order; its validity in ``kind_valid``)."""
    return int_column(data, _valid(kind_valid, key), column)


def _id_column_joined(
    parts: Appended, order: np.ndarray, kind_valid: np.ndarray, key: str, column: str
) -> Stored:
    """:func:`_id_column` of the id ``key`` joined (dropped from ``parts``) and put in table ``order``; int32 where
    the blocks held it so and the store may hold it so (stored.NARROW), else int64."""
    data = _taken(parts, order, key) if column in NARROW else joined_in_order(parts, order, key)
    return _id_column(data, kind_valid, key, column)


def _id_column_in_order(
    parts: Appended, order: np.ndarray, kind_valid: np.ndarray, key: str, column: str
) -> Stored:
    """:func:`_id_column` of the id ``key`` joined (dropped from ``parts``) and put in table ``order``; where
    fewer than half the rows have a value (a SparseColumn: correlation ids, on launches and device rows only),
    taken at those rows only."""
    valid = _valid(kind_valid, key)
    count = int(np.count_nonzero(valid))
    if count * 2 >= valid.size:
        return int_column(joined_in_order(parts, order, key), valid, column)
    values = parts.pop(key)
    native = getattr(scanner(), "rows_with_bit", None)
    if native is not None and values.dtype in (np.int32, np.int64) and order.dtype == np.int64:
        # the rows and their values in one compiled pass (no row list, joined rows or cast of the rows to make)
        del valid
        at = np.empty(count, dtype=np.int32 if kind_valid.size < 2**31 else np.int64)
        data = np.empty(count, dtype=np.int64)
        native(
            np.ascontiguousarray(kind_valid),
            VALID_BIT[key],
            order,
            np.ascontiguousarray(values),
            at,
            data,
            values.dtype.itemsize,  # (the row chunks' int32 ids: row_chunks.NARROW_KEYS)
        )
        return int_column_at(data, at, kind_valid.size, column)
    rows = np.flatnonzero(valid)
    data = np.take(values, np.take(order, rows)).astype(np.int64, copy=False)
    return int_column_at(data, rows, valid.size, column)


def _with_device_rows(
    joined_pid: Future[np.ndarray],
    kind_valid: np.ndarray,
    device_pid: np.ndarray | tuple[LaunchIndex, np.ndarray],
    at_device: np.ndarray,
) -> Stored:
    """The pid column: the host rows' pids (``joined_pid``'s int64 data, their validity in ``kind_valid``; table
    order) with the device rows' (at ``at_device``: their launch's, NaN when none; or the launches and the device
    rows' correlation ids to look them up by: launch_pid) set."""
    if isinstance(device_pid, tuple):
        device_pid = launch_pid(*device_pid)
    pid = joined_pid.result()  # (queued before this task: done or running)
    valid = _valid(kind_valid, "pid")
    data, device_valid = int_parts(device_pid, "pid")
    if pid.dtype != data.dtype and data.size and not _within(data, pid.dtype):
        pid = pid.astype(data.dtype)  # a launch's pid the narrow column cannot hold
    pid[at_device] = data
    valid[at_device] = device_valid
    return int_column(pid, valid, "pid")
