"""The common timeline: one Arrow table of events, a device table and metadata, whatever the source.

Every reader returns a :class:`Trace`; every analysis reads one. The columns are documented in
``docs/schema.md``; change both together and bump :data:`TABLE_SCHEMA_VERSION`.

Longer than the ~600 lines the architecture page asks of a module, on purpose: the table's kinds and columns,
the dense/sparse event store behind it and the Trace value that carries them are one contract that every reader
and analysis depends on; split, each part would import the others' private layout.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa

from . import arrow_calls, intervals
from .arrow_read import arrow_filled, arrow_values
from .reads import log_column_read, released_error
from .values import dense_codes


class _Compute:
    """``pyarrow.compute``, imported on first use: a Kineto load needs none of it (~30 ms of a fresh process)."""

    def __getattr__(self, name: str) -> Any:
        import pyarrow.compute

        return getattr(pyarrow.compute, name)


pc: Any = _Compute()

if TYPE_CHECKING:  # pandas is imported where a frame is asked for: a load alone never needs it
    import pandas as pd

TABLE_SCHEMA_VERSION = "1.4"

# Values of the `kind` column. Readers map their own categories onto these and nothing else.
KERNEL = "kernel"
MEMCPY = "memcpy"
MEMSET = "memset"
GPU_SYNC = "gpu_sync"  # a GPU-side synchronization record (CUPTI SYNCHRONIZATION, Kineto cuda_sync)
RUNTIME = "runtime"  # CUDA/HIP runtime API call on a host thread
DRIVER = "driver"  # CUDA driver API call on a host thread
CPU_OP = "cpu_op"  # framework operator (aten::*, TF op)
ANNOTATION = "annotation"  # NVTX range, record_function, user annotation on a host thread
GPU_ANNOTATION = "gpu_annotation"  # an annotation projected by the profiler onto a GPU stream
PYTHON = "python"  # Python function (Kineto with_stack)
OSRT = "osrt"  # OS runtime call (nsys OSRT_API)
STEP = "step"  # a training/inference step marker (ProfilerStep#N, TF step, tracelens.nvtx.step)
OVERHEAD = "overhead"  # profiler overhead (buffer flush, ...)
OTHER = "other"

GPU_ACTIVITY_KINDS = (KERNEL, MEMCPY, MEMSET)
HOST_KINDS = (RUNTIME, DRIVER, CPU_OP, ANNOTATION, PYTHON, OSRT, STEP)
ALL_KINDS = (
    KERNEL,
    MEMCPY,
    MEMSET,
    GPU_SYNC,
    RUNTIME,
    DRIVER,
    CPU_OP,
    ANNOTATION,
    GPU_ANNOTATION,
    PYTHON,
    OSRT,
    STEP,
    OVERHEAD,
    OTHER,
)

_DICT = pa.dictionary(pa.int32(), pa.string())

# The event table's columns, in order. Every reader produces exactly these (missing ones null).
EVENT_SCHEMA = pa.schema(
    [
        pa.field("kind", _DICT, nullable=False),
        pa.field("name", _DICT),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("end_ns", pa.int64(), nullable=False),
        pa.field("device", pa.int32()),
        pa.field("stream", pa.int64()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("correlation_id", pa.int64()),
        pa.field("external_id", pa.int64()),
        pa.field("depth", pa.int16()),
        pa.field("bytes", pa.int64()),
        pa.field("copy_kind", _DICT),
        pa.field("src_kind", _DICT),
        pa.field("dst_kind", _DICT),
        pa.field("sync_kind", _DICT),
        pa.field("domain", _DICT),
        pa.field("grid_x", pa.int32()),
        pa.field("grid_y", pa.int32()),
        pa.field("grid_z", pa.int32()),
        pa.field("block_x", pa.int32()),
        pa.field("block_y", pa.int32()),
        pa.field("block_z", pa.int32()),
        pa.field("registers_per_thread", pa.int32()),
        pa.field("static_shared_bytes", pa.int32()),
        pa.field("dynamic_shared_bytes", pa.int32()),
        pa.field("graph_id", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("reported_occupancy", pa.float32()),
        pa.field("theoretical_occupancy", pa.float32()),
        pa.field("estimated_achieved_occupancy", pa.float32()),
        # Added in 1.1: what the producer recorded about an op's inputs and a collective's message.
        pa.field("input_dims", _DICT),
        pa.field("input_types", _DICT),
        pa.field("concrete_inputs", _DICT),
        pa.field("flops", pa.float64()),
        pa.field("msg_in_elems", pa.int64()),
        pa.field("msg_out_elems", pa.int64()),
        pa.field("msg_dtype", _DICT),
        pa.field("group_size", pa.int32()),
        # Added in 1.2: the framework op the producer recorded on a GPU op itself (xplane tf_op / hlo_op stats).
        pa.field("op", _DICT),
        # Added in 1.3: a collective's own record of its type and process group (Kineto args).
        pa.field("collective_name", _DICT),
        pa.field("process_group", _DICT),
        pa.field("group_ranks", _DICT),
        # Added in 1.4: the SMs a kernel's CUDA context may use where the producer records fewer than the device's
        # (a green context of CUDA 12.4+, Nsight's TARGET_INFO_CUDA_CONTEXT_INFO.numMultiprocessors).
        pa.field("context_sm_count", pa.int32()),
    ]
)
# Columns a table written before their schema version may lack (read back as null).
COLUMNS_ADDED_SINCE_1_0 = (
    "input_dims",
    "input_types",
    "concrete_inputs",
    "flops",
    "msg_in_elems",
    "msg_out_elems",
    "msg_dtype",
    "group_size",
    "op",
    "collective_name",
    "process_group",
    "group_ranks",
    "context_sm_count",
)
# The timeline is int64 ns; readers keep times within +-MAX_TIME_NS (about 146 years) so that sums and
# differences of two times cannot overflow. A reader given a time beyond it drops or rejects it.
MAX_TIME_NS = 2**62
EVENT_COLUMNS = tuple(EVENT_SCHEMA.names)

# Device table: one row per GPU seen in the trace. Limits are per SM and null when unknown.
DEVICE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("vendor", pa.string()),  # "nvidia" | "amd" | None
        pa.field("sm_count", pa.int32()),
        pa.field("compute_major", pa.int32()),
        pa.field("compute_minor", pa.int32()),
        pa.field("warp_size", pa.int32()),
        pa.field("max_threads_per_sm", pa.int32()),
        pa.field("max_threads_per_block", pa.int32()),
        pa.field("max_blocks_per_sm", pa.int32()),
        pa.field("regs_per_sm", pa.int32()),
        pa.field("regs_per_block", pa.int32()),
        pa.field("shared_mem_per_sm", pa.int64()),
        pa.field("shared_mem_per_block", pa.int64()),
        pa.field("shared_mem_per_block_optin", pa.int64()),
        pa.field("total_memory_bytes", pa.int64()),
        pa.field("memory_bandwidth_bytes_per_s", pa.float64()),
        pa.field("clock_rate_khz", pa.int64()),
    ]
)
DEVICE_COLUMNS = tuple(DEVICE_SCHEMA.names)


@dataclass
class TraceMetadata:
    """Where a trace came from and how to read its clock.

    ``start_ns``/``end_ns`` in the event table are nanoseconds after ``time_origin_ns``, an absolute
    timestamp on the producer's clock (``clock``). Readers put the origin at the trace's earliest event,
    so the table starts near 0 and ``time_origin_ns + start_ns`` recovers the producer's own value.
    """

    source_format: str  # "kineto" | "nsys" | "xplane" | "parquet"
    source_path: str = ""
    producer: str = ""  # "PyTorch Profiler", "Nsight Systems", "TensorFlow Profiler", ...
    producer_version: str = ""
    format_version: str = ""  # the file's own schema version where it states one
    framework: str = "unknown"  # "pytorch" | "tensorflow" | "jax" | "cuda" | "unknown"
    time_origin_ns: int = 0
    clock: str = "unknown"  # "unix" | "nsys-session" | "xplane" | "unknown"
    rank: int | None = None
    world_size: int | None = None
    table_schema_version: str = TABLE_SCHEMA_VERSION
    warnings: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceMetadata:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class SparseColumn:
    """A column stored only at the rows that carry it (kernel geometry, copy bytes, ...): null elsewhere."""

    rows: np.ndarray  # ascending row positions (int32 when the table has fewer than 2**31 rows)
    values: pa.Array  # one value per position, in the schema's type or a narrower one that holds every value


@dataclass(frozen=True)
class CodedColumn:
    """A column of few distinct values stored as one small code a row (``codes``: int8 or int16, each in
    ``[0, len(values))``) and each code's value (``values``: null where the rows of that code carry none). Every
    code occurs in some row, so the values are the column's distinct values (nulls aside). Columns of the same
    rows may share one codes array: an Nsight export's pid and tid, both read off the thread's global id, are one
    code per thread (a byte a row instead of eight)."""

    codes: np.ndarray
    values: pa.Array


def code_lookup(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]`` for small integer ``codes`` (int8/int16, each in ``[0, len(table))``), a block at a time:
    numpy widens an index array to intp before it gathers, eight bytes a row for the whole array at once. Blocks
    of 64K rows (their intp indices stay in cache) and no bounds check (``mode="wrap"``: the codes are in range):
    34M rows in 48 ms instead of 90 (blocks of 1M, checked)."""
    out = np.empty(codes.shape, table.dtype)
    for lo in range(0, codes.size, _LOOKUP_BLOCK):  # a loop over blocks of rows
        np.take(table, codes[lo : lo + _LOOKUP_BLOCK], out=out[lo : lo + _LOOKUP_BLOCK], mode="wrap")
    return out


_LOOKUP_BLOCK = 1 << 16


# A column as an EventStore holds it once computed.
Stored: TypeAlias = "pa.Array | SparseColumn | CodedColumn"


@dataclass(frozen=True)
class DeferredColumn:
    """A column the store computes from its other columns on first use, then keeps: a reader's work that the
    documented table shows but no analysis reads (the Nsight and Kineto readers' nesting ``depth``), so that loading a
    trace does not pay for it."""

    compute: Callable[[EventStore], pa.Array | SparseColumn]


@dataclass(frozen=True)
class ReleasedColumn:
    """A column the store no longer holds: ``analyze``, on a trace it owns, released it after the last section that
    reads it (``released_after``); a read of it raises."""

    released_after: str


class StoredColumns(dict[str, Any]):
    """The store's columns by name, each read noted (:func:`.reads.log_column_read`: how ``analyze``'s table of
    each column's readers is checked); a read of a :class:`ReleasedColumn` raises
    :class:`~tracelens.reads.ColumnReleasedError`, naming the column and the reader."""

    def get(self, name: str, default: Any = None) -> Any:
        log_column_read(name)
        value = dict.get(self, name, default)
        if type(value) is ReleasedColumn:
            raise released_error(name, value.released_after)
        return value

    def __getitem__(self, name: str) -> Any:
        log_column_read(name)
        value = dict.__getitem__(self, name)
        if type(value) is ReleasedColumn:
            raise released_error(name, value.released_after)
        return value

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str) or not dict.__contains__(self, name):
            return False
        self.get(name)  # noted, and a released column raises
        return True


class EventStore:
    """The event table held column by column, each column as cheaply as its rows allow.

    A column most rows carry is one dense Arrow array; a column few rows carry (kernel launch geometry on a
    trace that is mostly NVTX ranges) is a :class:`SparseColumn`; a column of a few distinct values may be a
    :class:`CodedColumn` (Nsight's pid and tid); a column no row carries is not stored.
    The documented table (:meth:`table`) is built from it on demand. On a 41M-row Nsight export that is mostly
    NVTX this holds the events in about half the memory of the dense table (docs/schema.md, "Storage").
    """

    def __init__(
        self,
        num_rows: int,
        columns: Mapping[str, Stored],
        sentinel: frozenset[str] = frozenset(),
    ) -> None:
        unknown = set(columns) - set(EVENT_COLUMNS)
        if unknown:
            raise ValueError(f"unknown event columns: {sorted(unknown)}")
        self.num_rows = num_rows
        # A DeferredColumn is replaced by what it computes on first read (_stored): read columns through the
        # methods below, not this dict.
        self.columns: dict[str, Stored | DeferredColumn] = StoredColumns(columns)
        # Dense integer columns whose null slots hold -1 (with_sentinel_nulls): numpy(name) reads them without
        # a copy.
        self.sentinel = frozenset(sentinel) & {
            n
            for n, c in self.columns.items()
            if not isinstance(c, (SparseColumn, DeferredColumn, CodedColumn))
        }
        # The rows of the kernel kind, ascending, where the reader that built the store placed them (the Kineto
        # table build): the load's enrich reads them instead of a pass over the kind column of every row.
        self.kernel_rows: np.ndarray | None = None

    @classmethod
    def from_table(cls, table: pa.Table) -> EventStore:
        """A store over an event table's own columns (no copy); all-null columns are not stored."""
        table = table.combine_chunks()
        columns = {}
        for name in EVENT_COLUMNS:
            array = table.column(name)
            array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
            if array.null_count < len(array) or name in _NEVER_NULL:
                columns[name] = array
        return cls(table.num_rows, columns)

    @classmethod
    def from_columns(cls, num_rows: int, columns: Mapping[str, pa.Array]) -> EventStore:
        """A store from full-length arrays in schema order, each kept dense or sparse by how many rows carry it."""
        stored: dict[str, pa.Array | SparseColumn] = {}
        for name, array in columns.items():
            valid = len(array) - array.null_count
            if valid == 0 and name not in _NEVER_NULL:
                continue
            if name not in _NEVER_NULL and valid * 2 < num_rows:
                mask = array.is_valid()
                stored[name] = SparseColumn(
                    _positions(np.flatnonzero(mask.to_numpy(zero_copy_only=False)), num_rows),
                    array.filter(mask),
                )
            else:
                stored[name] = array
        return cls(num_rows, stored)

    def __len__(self) -> int:
        return self.num_rows

    def _stored(self, name: str) -> Stored | None:
        """The stored column (None when no row carries it), a deferred one computed now."""
        stored = self.columns.get(name)
        if isinstance(stored, DeferredColumn):
            # No lock (the store stays a plain, copyable object): two threads reading it at once would both
            # compute the same column, and either result is kept.
            stored = self.columns[name] = stored.compute(self)
        return stored

    def has(self, name: str) -> bool:
        """Whether any row carries ``name``."""
        return name in self.columns

    def column(self, name: str) -> pa.Array:
        """The whole column, one value per row, in the schema's type (nulls where rows lack it)."""
        typ = EVENT_SCHEMA.field(name).type
        stored = self._stored(name)
        if stored is None:
            return _as_array(None, typ, self.num_rows)
        if isinstance(stored, SparseColumn):
            index = np.full(self.num_rows, -1, np.int64)
            index[stored.rows] = np.arange(stored.rows.size)
            return _cast(arrow_calls.take(stored.values, numpy_array(index, pa.int64(), index >= 0)), typ)
        if isinstance(stored, CodedColumn):
            return _cast(
                arrow_calls.take(
                    stored.values, numpy_array(stored.codes, pa.from_numpy_dtype(stored.codes.dtype))
                ),
                typ,
            )
        return _cast(stored, typ)

    def take(self, name: str, rows: np.ndarray) -> pa.Array:
        """The column's values at ``rows`` (row positions), in the schema's type."""
        rows = np.asarray(rows, dtype=np.int64)
        typ = EVENT_SCHEMA.field(name).type
        stored = self._stored(name)
        if stored is None:
            return _as_array(None, typ, rows.size)
        if isinstance(stored, SparseColumn):
            if rows.size == stored.rows.size and np.array_equal(stored.rows, rows):
                return _cast(stored.values, typ)  # exactly the rows that carry it (the kernel rows' geometry)
            at = intervals.search_near(stored.rows, rows)  # rows mostly ascending: a walk where built
            hit = at < stored.rows.size
            hit[hit] = stored.rows[at[hit]] == rows[hit]
            return _cast(
                arrow_calls.take(stored.values, numpy_array(np.where(hit, at, 0), pa.int64(), hit)), typ
            )
        if isinstance(stored, CodedColumn):
            return _cast(
                arrow_calls.take(
                    stored.values, numpy_array(stored.codes[rows], pa.from_numpy_dtype(stored.codes.dtype))
                ),
                typ,
            )
        return _cast(arrow_calls.take(stored, numpy_array(rows, pa.int64())), typ)

    def numpy(self, name: str, fill: int = -1, dtype: Any = np.int64) -> np.ndarray:
        """An integer column as numpy, nulls as ``fill``; without a copy where the stored array allows it."""
        stored = self._stored(name)
        if stored is None:
            return np.full(self.num_rows, fill, dtype)
        if isinstance(stored, SparseColumn):
            out = np.full(self.num_rows, fill, dtype)
            out[stored.rows] = arrow_filled(stored.values, fill)
            return out
        if isinstance(stored, CodedColumn):
            table = arrow_filled(stored.values, fill).astype(dtype)
            return code_lookup(table, stored.codes)
        if stored.null_count == 0:
            values = arrow_filled(stored, fill)
            return values if values.dtype == dtype else values.astype(dtype)
        if name in self.sentinel and fill == -1:
            values = np.frombuffer(
                stored.buffers()[1], dtype=stored.type.to_pandas_dtype(), count=len(stored)
            )
            return values if values.dtype == dtype else values.astype(dtype)
        return arrow_filled(stored, fill).astype(dtype, copy=False)

    def unique(self, name: str) -> list[Any]:
        """The distinct non-null values of a column."""
        stored = self._stored(name)
        if stored is None:
            return []
        values = stored.values if isinstance(stored, (SparseColumn, CodedColumn)) else stored
        # (arrow_calls: no pyarrow.compute import for it, test_lean_load)
        return arrow_calls.call("unique", arrow_calls.call("drop_null", values)).to_pylist()

    def release(self, names: Sequence[str], after: str) -> None:
        """Stop holding the columns ``names`` (their memory goes once no one else holds their arrays): ``analyze``
        on a trace it owns, after ``after``, the last section that reads them. A later read raises."""
        for name in names:
            if dict.__contains__(self.columns, name):
                dict.__setitem__(self.columns, name, ReleasedColumn(after))

    @property
    def released(self) -> dict[str, str]:
        """The columns :meth:`release` released, each with the section after which it was."""
        return {
            name: stored.released_after
            for name, stored in dict.items(self.columns)
            if type(stored) is ReleasedColumn
        }

    def table(self) -> pa.Table:
        """The documented event table (:data:`EVENT_SCHEMA`)."""
        arrays = [self.column(f.name) for f in EVENT_SCHEMA]
        return pa.Table.from_arrays(arrays, schema=EVENT_SCHEMA)

    def with_columns(self, updates: Mapping[str, Stored]) -> EventStore:
        """A new store with ``updates`` replacing those columns (the others shared, not copied)."""
        return EventStore(self.num_rows, {**self.columns, **updates}, self.sentinel - set(updates))

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored columns (positions included, once where sparse columns share them)."""
        total = 0
        positions: set[int] = set()
        for stored in dict.values(self.columns):
            if isinstance(stored, (DeferredColumn, ReleasedColumn)):
                continue  # nothing held (until computed, or any longer)
            if isinstance(stored, SparseColumn):
                total += stored.values.nbytes + (0 if id(stored.rows) in positions else stored.rows.nbytes)
                positions.add(id(stored.rows))
            elif isinstance(stored, CodedColumn):  # codes shared by columns counted once, as sparse rows
                total += stored.values.nbytes + (0 if id(stored.codes) in positions else stored.codes.nbytes)
                positions.add(id(stored.codes))
            else:
                total += stored.nbytes
        return total


_NEVER_NULL = ("kind", "start_ns", "end_ns")


def with_sentinel_nulls(array: pa.Array) -> pa.Array | None:
    """The integer array with -1 in the data slots of its nulls (same values, same validity), or None where
    its buffers are offset (sliced): an EventStore marks such a column ``sentinel`` and reads it without a
    copy."""
    if array.offset != 0 or not pa.types.is_integer(array.type):
        return None
    if array.null_count == 0:
        return array
    filled = pc.fill_null(array, -1)
    if filled.offset != 0:
        return None
    return pa.Array.from_buffers(
        array.type, len(array), [array.buffers()[0], filled.buffers()[1]], null_count=array.null_count
    )


def _cast(array: pa.Array, typ: pa.DataType) -> pa.Array:
    """A stored array in the schema's type (a reader may store narrower: pid and tid as int32, kind's
    dictionary with int8 indices)."""
    return array if array.type == typ else arrow_calls.cast(array, typ)


def _positions(rows: np.ndarray, num_rows: int) -> np.ndarray:
    return rows.astype(np.int32 if num_rows < 2**31 else np.int64)


class Trace:
    """A normalized trace: the events (an :class:`EventStore`, the documented Arrow table on demand), a device
    table (Arrow) and metadata.

    Treat it as a value: analyses read it and never change it.
    """

    def __init__(self, events: pa.Table | EventStore, devices: pa.Table, metadata: TraceMetadata) -> None:
        if isinstance(events, EventStore):
            self.store = events
        else:
            self.store = EventStore.from_table(events)
            self.__dict__["events"] = events  # already built: :attr:`events` returns it as is
        self.devices = devices
        self.metadata = metadata

    @cached_property
    def events(self) -> pa.Table:
        """The documented event table (docs/schema.md), built from the store on first use."""
        return self.store.table()

    @property
    def num_events(self) -> int:
        return self.store.num_rows

    @cached_property
    def df(self) -> pd.DataFrame:
        """The event table as pandas (dictionary columns become categoricals; nullable ints stay nullable)."""
        return events_to_pandas(self.events)

    def frame(self, rows: np.ndarray, columns: list[str]) -> pd.DataFrame:
        """Selected rows (bool mask or indices) and columns as pandas, typed like :attr:`df`.

        Converts only what is asked for: analyses that need a few columns of a few kinds stay clear of the
        full conversion of a multi-million-row table.
        """
        rows = np.asarray(rows)
        indices = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        table = pa.Table.from_arrays(
            [self.store.take(c, indices) for c in columns],
            schema=pa.schema([EVENT_SCHEMA.field(c) for c in columns]),
        )
        frame = events_to_pandas(table)
        frame.index = indices
        return frame

    def arrays(self, rows: np.ndarray, columns: list[str]) -> dict[str, np.ndarray]:
        """:meth:`frame`'s selection as numpy arrays, without pandas (whose import costs an analyze 0.17 s): each
        column as :func:`arrow_values` gives it (integers with nulls as float64 with NaN there, dictionary and
        string columns as object arrays with None)."""
        rows = np.asarray(rows)
        indices = np.flatnonzero(rows) if rows.dtype == bool else rows.astype(np.int64)
        return {column: arrow_values(self.store.take(column, indices)) for column in columns}

    def take(self, column: str, rows: np.ndarray) -> pa.Array:
        """One column's values at the given row positions (Arrow, the schema's type)."""
        return self.store.take(column, rows)

    @cached_property
    def devices_df(self) -> pd.DataFrame:
        import pandas  # noqa: F401  (to_pandas needs it; imported here, not with the module)

        return self.devices.to_pandas(types_mapper=_nullable_types)

    def of_kind(self, *kinds: str) -> pd.DataFrame:
        """Rows whose kind is one of ``kinds``, as a pandas frame (a view-friendly filtered copy)."""
        frame = self.df
        return frame[frame["kind"].isin(kinds)]

    @property
    def gpu_ids(self) -> list[int]:
        """Devices that have GPU activity (kernel, memcpy or memset), sorted."""
        gpu = self.of_kind(*GPU_ACTIVITY_KINDS)
        return sorted(int(d) for d in gpu["device"].dropna().unique())

    def device_info(self, device: int) -> dict[str, Any]:
        """The device table's row for ``device`` as a dict (empty when the trace lacks it)."""
        ids = self.devices.column("id").to_pylist()
        if device not in ids:
            return {}
        row = self.devices.slice(ids.index(device), 1).to_pylist()[0]
        return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}

    @classmethod
    def from_rows(
        cls,
        rows: list[Mapping[str, Any]],
        devices: list[Mapping[str, Any]] | None = None,
        metadata: TraceMetadata | None = None,
    ) -> Trace:
        """Build a trace from event dicts keyed by :data:`EVENT_COLUMNS` (hand-made cases, tests)."""
        columns = {name: [row.get(name) for row in rows] for name in EVENT_COLUMNS}
        columns = {
            k: v
            for k, v in columns.items()
            if any(x is not None for x in v) or k in ("kind", "start_ns", "end_ns")
        }
        return cls(
            events=build_store(columns),
            devices=build_devices(list(devices or [])),
            metadata=metadata or TraceMetadata(source_format="handmade", framework="unknown"),
        )

    def save(self, path: str | Path, *, cache: bool = False) -> None:
        """Write the event table as Parquet; devices and metadata travel in the file's key-value metadata.

        Parquet dictionary encoding only for the columns that are dictionaries already (smaller and faster
        than encoding every column). ``cache``: written for speed, not size (LZ4 instead of zstd, column
        statistics only for the columns the multi-rank queries filter on): 13 ms instead of 22 ms for a
        45k-event trace, 2x the size.
        """
        import json

        import pyarrow.parquet as pq

        events = self.events
        meta = dict(events.schema.metadata or {})
        meta[b"tracelens.metadata"] = json.dumps(self.metadata.to_dict(), default=str).encode()
        meta[b"tracelens.devices"] = json.dumps(self.devices.to_pylist(), default=str).encode()
        dictionaries = [f.name for f in EVENT_SCHEMA if pa.types.is_dictionary(f.type)]
        options: dict[str, Any] = {"compression": "zstd"}
        if cache:
            options = {
                "compression": "lz4",
                "write_statistics": ["kind", "name", "start_ns", "step", "device"],
            }
        pq.write_table(
            events.replace_schema_metadata(meta), str(path), use_dictionary=dictionaries, **options
        )


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _nullable_types(arrow_type: pa.DataType) -> Any:
    import pandas as pd

    mapping = {
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.float32(): pd.Float32Dtype(),
        pa.float64(): pd.Float64Dtype(),
    }
    return mapping.get(arrow_type)


def events_to_pandas(table: pa.Table) -> pd.DataFrame:
    """Convert an event table to pandas. ``start_ns``/``end_ns`` are plain int64; other ints nullable."""

    import pandas  # noqa: F401  (to_pandas needs it; imported here, not with the module)

    def types(arrow_type: pa.DataType) -> Any:
        return _nullable_types(arrow_type)

    frame = table.to_pandas(types_mapper=types)
    for col in ("start_ns", "end_ns"):
        if col in frame:
            frame[col] = frame[col].astype("int64")
    return frame


# Arrow arrays from numpy buffers and string lists, without pa.array: its first call imports pandas (~0.4 s),
# which a load never needs otherwise.
def numpy_array(values: np.ndarray, typ: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """``values`` (numpy; cast to ``typ``'s numpy type where it differs) as an Arrow array of fixed-width
    ``typ``, null where ``valid`` is False."""
    data = np.ascontiguousarray(values, dtype=np.dtype(typ.to_pandas_dtype()))
    nulls = 0 if valid is None else data.size - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls and valid is not None else None
    return pa.Array.from_buffers(typ, data.size, [bitmap, pa.py_buffer(data)], null_count=nulls)


def string_array(values: Sequence[str | None]) -> pa.Array:
    """Python strings (None: null) as an Arrow string array, as ``pa.array(values, pa.string())`` makes it."""
    try:
        encoded = [b"" if v is None else v.encode() for v in values]
    except (UnicodeEncodeError, AttributeError):  # lone surrogates, not strings: as pa.array takes them
        return pa.array(values, pa.string())
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    valid = np.array([v is not None for v in values], dtype=bool)
    nulls = len(values) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(encoded), buffers, null_count=nulls)


def _as_array(values: Any, typ: pa.DataType, n: int) -> pa.Array:
    if values is None:
        if pa.types.is_dictionary(typ):
            return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), string_array([]))
        return pa.nulls(n, typ)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(typ):
        if isinstance(values, pa.Array) and pa.types.is_dictionary(values.type):
            return values.cast(typ) if values.type != typ else values
        arr = values if isinstance(values, pa.Array) else pa.array(_to_list_or_array(values), pa.string())
        if not pa.types.is_string(arr.type):
            arr = arr.cast(pa.string())
        return pc.dictionary_encode(arr).cast(typ)
    if isinstance(values, pa.Array):
        return values if values.type == typ else values.cast(typ)
    pd = sys.modules.get("pandas")  # not imported: the values are no Series
    if pd is not None and isinstance(values, pd.Series):
        return pa.Array.from_pandas(values, type=typ)
    if isinstance(values, np.ndarray) and values.dtype.kind == "f" and pa.types.is_integer(typ):
        mask = np.isnan(values)
        return pa.array(np.where(mask, 0, values).astype(np.int64), type=typ, mask=mask)
    return pa.array(_to_list_or_array(values), type=typ, from_pandas=True)


def _to_list_or_array(values: Any) -> Any:
    if isinstance(values, (np.ndarray, list)):
        return values
    return list(values)


def build_store(columns: Mapping[str, Any], *, sort: bool = True, derive_depth: bool = True) -> EventStore:
    """Assemble events from a mapping of column name -> values (list, numpy, pandas or Arrow).

    Missing columns become nulls; every column is cast to :data:`EVENT_SCHEMA`. Rows are sorted by
    ``start_ns`` (stable) so that every consumer can rely on time order. ``end_ns`` below ``start_ns``
    is clamped to ``start_ns`` (some producers emit negative durations on clock skew). Columns few rows
    carry are stored sparse (:class:`EventStore`). A missing ``depth`` is computed from the other columns
    unless ``derive_depth`` is false (a reader that stores its own, deferred, depth).
    """
    unknown = set(columns) - set(EVENT_COLUMNS)
    if unknown:
        raise ValueError(f"unknown event columns: {sorted(unknown)}")
    lengths = {len(v) for v in columns.values() if v is not None}
    if len(lengths) > 1:
        raise ValueError(f"event columns differ in length: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    arrays: dict[str, pa.Array] = {}
    for f in EVENT_SCHEMA:
        values = columns.get(f.name)
        if values is None and f.name not in _NEVER_NULL:
            continue
        arrays[f.name] = _as_array(values, f.type, n)
    arrays["end_ns"] = pc.max_element_wise(arrays["end_ns"], arrays["start_ns"])
    if sort and n:
        start = arrays["start_ns"].to_numpy(zero_copy_only=False)
        order = np.argsort(start, kind="stable")
        if (order[1:] < order[:-1]).any():  # already in time order: keep the arrays as they are
            take = pa.array(order)
            arrays = {name: array.take(take) for name, array in arrays.items()}
    if derive_depth and n and (arrays.get("depth") is None or arrays["depth"].null_count == n):
        depth = _depth(arrays, n)
        if depth is not None:
            arrays["depth"] = depth
    arrays = {name: _unified(array) for name, array in arrays.items()}
    return EventStore.from_columns(n, {f.name: arrays[f.name] for f in EVENT_SCHEMA if f.name in arrays})


def _unified(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def build_events(columns: Mapping[str, Any], *, sort: bool = True) -> pa.Table:
    """:func:`build_store`, as the documented Arrow table."""
    return build_store(columns, sort=sort).table()


NOT_NESTED_KINDS = (KERNEL, MEMCPY, MEMSET, GPU_SYNC, GPU_ANNOTATION)


def nesting_depth(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nesting depth of each interval on its (pid, tid) thread, 0 for outermost; assumes proper nesting.

    depth = intervals on the thread that started before it (parents first on equal starts) minus those of
    them already ended at its start. Loops over threads only; within a thread it is two sorts and a search.
    Threads are numbered with two factorizes and one stable sort (a pandas groupby cost more than the rest).
    """
    n = start.size
    depth = np.zeros(n, dtype=np.int16)
    if n == 0:
        return depth
    # Thread number per row; NaN/None pids and tids form their own thread (as groupby(dropna=False) did).
    # Codes by binary search in the distinct values (dense_codes): a factorize hash table is sized by the
    # row count, gigabytes for the tens of millions of NVTX ranges of a training export.
    pid_code = dense_codes(pid)[0]
    tid_code, tid_uniques = dense_codes(tid)
    pid_code *= max(len(tid_uniques), 1)
    pid_code += tid_code
    del tid_code
    thread = dense_codes(pid_code)[0]
    del pid_code
    small = thread.astype(np.int16) if thread.max() < np.iinfo(np.int16).max else thread
    by_thread = np.argsort(small, kind="stable")  # rows of each thread in row order (a radix sort)
    bounds = np.flatnonzero(np.diff(small[by_thread])) + 1
    del thread, small
    for idx in np.split(by_thread, bounds):
        depth[idx] = _thread_depth(start, end, idx)
    return depth


def _start_order(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``np.lexsort((-e, s))``: by start, longer first on equal starts. Where the starts are in order already
    (a table sorted by start, as the readers build it) only the runs of equal starts are sorted (a few
    percent of the rows, instead of a sort of all of them)."""
    if s.size > 1 and bool(np.all(s[1:] >= s[:-1])):
        order = np.arange(s.size)
        tie = np.flatnonzero(s[1:] == s[:-1])
        if tie.size:
            in_run = np.zeros(s.size, dtype=bool)
            in_run[tie] = True
            in_run[tie + 1] = True
            run = np.flatnonzero(in_run)  # whole runs: sorting them keeps each run in its own positions
            order[run] = run[np.lexsort((np.negative(e[run]), s[run]))]
        return order
    return np.lexsort((np.negative(e), s))


def _thread_depth(start: np.ndarray, end: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Nesting depth of the intervals ``idx`` of one thread (each array freed as soon as used: one thread may
    hold tens of millions of NVTX ranges)."""
    s, e = start[idx], end[idx]
    order = _start_order(s, e)  # by start, longer first on ties: parents before children
    s_sorted = s[order]
    del s
    ends_sorted = np.sort(e, kind="stable")  # timsort: ends in start order are nearly sorted (4x faster)
    e_sorted = e[order]
    del e
    ended = np.searchsorted(ends_sorted, s_sorted, side="right")
    del ends_sorted
    # A zero-length interval at exactly s counts as "ended" before anything starting at s, including
    # itself and later-ordered ones: remove those not ordered before this interval.
    zero = e_sorted == s_sorted
    del e_sorted
    if zero.any():
        cz = np.cumsum(zero)
        last_same_start = np.searchsorted(s_sorted, s_sorted, side="right") - 1
        ended -= cz[last_same_start] - cz + zero
        del cz, last_same_start
    del s_sorted, zero
    # depth = rank in start order - intervals ended before it, in place
    np.subtract(np.arange(order.size, dtype=ended.dtype), ended, out=ended)
    np.clip(ended, 0, np.iinfo(np.int16).max, out=ended)
    out = np.empty(order.size, dtype=np.int16)
    out[order] = ended
    return out


def depth_column(
    nested: np.ndarray, pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray
) -> pa.Array:
    """The ``depth`` column: :func:`nesting_depth` of the rows where ``nested`` holds, null elsewhere.

    Rows that nest are host intervals with a thread (not kinds in ``NOT_NESTED_KINDS``); ``pid``/``tid`` are
    float64 with NaN for missing, ``end`` already at least ``start``.
    """
    rows = np.flatnonzero(nested)
    values = np.zeros(len(nested), dtype=np.int16)
    if rows.size:
        values[rows] = nesting_depth(pid[rows], tid[rows], start[rows], end[rows])
    return pa.array(values, type=pa.int16(), mask=~nested)


def _depth(arrays: Mapping[str, pa.Array], n: int) -> pa.Array | None:
    """The ``depth`` column for rows in ``arrays`` (None when no row nests)."""
    kind, tid = arrays["kind"], arrays.get("tid")
    if tid is None:
        return None
    not_nested = np.isin(np.asarray(kind.dictionary.to_pylist(), dtype=object), NOT_NESTED_KINDS)
    nested = ~not_nested[kind.indices.to_numpy(zero_copy_only=False)] & tid.is_valid().to_numpy(
        zero_copy_only=False
    )
    if not nested.any():
        return None
    pid = arrays.get("pid")
    pid_values = (
        pid.to_numpy(zero_copy_only=False).astype(np.float64) if pid is not None else np.full(n, np.nan)
    )
    return depth_column(
        nested,
        pid_values,
        tid.to_numpy(zero_copy_only=False).astype(np.float64),
        arrays["start_ns"].to_numpy(),
        arrays["end_ns"].to_numpy(),
    )


def build_devices(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Assemble the device table from dicts keyed by :data:`DEVICE_COLUMNS` (missing keys are null)."""
    data = {name: [row.get(name) for row in rows] for name in DEVICE_COLUMNS}
    plain = [_plain_column(data[f.name], f.type) for f in DEVICE_SCHEMA]
    if all(column is not None for column in plain) and None not in data["id"]:
        return pa.Table.from_arrays(plain, schema=DEVICE_SCHEMA)
    return pa.Table.from_pydict(data, schema=DEVICE_SCHEMA)  # values to convert, or to reject as before


def _plain_column(values: list[Any], typ: pa.DataType) -> pa.Array | None:
    """``values`` as ``pa.array(values, typ)`` makes them, without pa.array (see :func:`numpy_array`), where
    each is None or plainly of the type (an int in range, a float, a str); None otherwise."""
    if pa.types.is_string(typ):
        return string_array(values) if all(v is None or type(v) is str for v in values) else None
    dtype = np.dtype(typ.to_pandas_dtype())
    if dtype.kind == "f":
        if not all(v is None or type(v) is float for v in values):
            return None
    else:
        bound = 2 ** (8 * dtype.itemsize - 1)
        if not all(v is None or (type(v) is int and -bound <= v < bound) for v in values):
            return None
    valid = np.array([v is not None for v in values], dtype=bool)
    data = np.array([0 if v is None else v for v in values], dtype=dtype)
    return numpy_array(data, typ, valid)
