"""Column helpers of the Nsight Systems reader: integer and id columns as numpy, dictionary columns, pid and
tid from nsys's global ids, and :class:`Part`, one table's rows in the event columns' storage types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...trace import ALL_KINDS, EVENT_SCHEMA

KIND_INDEX = {kind: i for i, kind in enumerate(ALL_KINDS)}
_KIND_VALUES = pa.array(list(ALL_KINDS), pa.string())
MASK24 = 0xFFFFFF


def dict_array(indices: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    mask = indices < 0
    idx = pa.array(np.where(mask, 0, indices).astype(np.int32), pa.int32(), mask=mask if mask.any() else None)
    return pa.DictionaryArray.from_arrays(idx, values)


def int64_numpy(arr: pa.Array | pa.ChunkedArray, fill: int = 0) -> np.ndarray:
    """An integer column as int64 numpy, nulls replaced by ``fill``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_integer(arr.type):
        arr = arr.cast(pa.int64(), safe=False)
    return arr.fill_null(fill).to_numpy().astype(np.int64, copy=False)


def id_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A string id column as int64 numpy (nulls read 0: callers mask them). Unlike ``int64_numpy`` the cast is
    checked: a real where nsys writes an integer id (a fraction, or beyond int64) raises ArrowInvalid, which
    the reader reports as one InputError, rather than wrapping to an arbitrary id."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_integer(arr.type):
        arr = arr.cast(pa.int64())
    return arr.fill_null(0).to_numpy().astype(np.int64, copy=False)


def detach(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A copy of a column, so that keeping it does not keep its whole fetched batch alive.

    An Arrow batch imported from ADBC is released only when every one of its columns is: holding the
    two time columns of NVTX_EVENTS would otherwise pin its text column too.
    """
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return pa.concat_arrays(chunks) if chunks else pa.array([], arr.type)


def const_dict(n: int, value: str | None, values: pa.Array) -> pa.DictionaryArray:
    """A dictionary column holding one value (or null) on every row."""
    if value is None:
        return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), values)
    index = values.to_pylist().index(value)
    return pa.DictionaryArray.from_arrays(pa.array(np.full(n, index, np.int32)), values)


def kind_column(kinds: np.ndarray) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(kinds.astype(np.int8)), _KIND_VALUES)


def kind_const(n: int, kind: str) -> pa.DictionaryArray:
    return kind_column(np.full(n, KIND_INDEX[kind], np.int8))


def decode_pid(global_ids: pa.Array) -> pa.Array:
    return pc.bit_wise_and(pc.shift_right(global_ids.cast(pa.int64()), 24), MASK24).cast(pa.int32())


def decode_tid(global_tids: pa.Array) -> pa.Array:
    return pc.bit_wise_and(global_tids.cast(pa.int64()), MASK24).cast(pa.int32())


def as_int64(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """An integer column as int64 (a chunk where every value is null may come back typed null); a value of
    another type raises ArrowInvalid, reported by the reader as a damaged export."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array if array.type == pa.int64() else array.cast(pa.int64())


# How a part stores a column when narrower than the schema: nsys's pid and tid are 24-bit fields of a global
# id, and there are 14 kinds. The store casts back on the way out (EventStore.column).
_STORAGE_TYPES = {"kind": pa.dictionary(pa.int8(), pa.string()), "pid": pa.int32(), "tid": pa.int32()}


def storage_type(name: str) -> pa.DataType:
    return _STORAGE_TYPES.get(name, EVENT_SCHEMA.field(name).type)


_NARROWER = (pa.int8(), pa.int16(), pa.int32())
# Columns a part keeps in their storage type: the assembly sorts on the times and reads them as int64.
_KEPT_WIDE = frozenset({"start_ns", "end_ns"})


def narrow_type(values: pa.Array) -> pa.DataType:
    """The narrowest signed integer type that holds every value of signed integer ``values`` (their own type
    when they are of another type, empty, all null, or need it)."""
    if not pa.types.is_signed_integer(values.type) or not len(values):
        return values.type
    bounds = pc.min_max(values)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None:
        return values.type
    for typ in _NARROWER:
        if typ.bit_width >= values.type.bit_width:
            break
        if -(2 ** (typ.bit_width - 1)) <= lo and hi < 2 ** (typ.bit_width - 1):
            return typ
    return values.type


def narrowest(values: pa.Array) -> pa.Array:
    """Signed integer ``values`` in the narrowest signed integer type that holds each of them (the store reads
    them back in the schema's type); other types as they are."""
    typ = narrow_type(values)
    return values if typ == values.type else values.cast(typ)


@dataclass
class Part:
    """Rows of one kind group, as Arrow arrays keyed by event column (absent columns are null).

    Every column is the part's own copy in its storage type: a column left pointing into the fetched batch
    would keep the whole batch (every column the query read) alive until the assembly. Integer columns other
    than the times are kept in the narrowest type that holds their values (:func:`narrowest`: a kernel's
    launch geometry in one or two bytes instead of eight), so the parts waiting for the assembly hold less; the
    assembly widens them back to the storage type (or stores them narrow, as sparse columns).
    """

    n: int
    columns: dict[str, Any]
    owned: tuple[str, ...] = ()  # columns already the part's own copies, in their storage type
    host: bool = False  # rows of a host table (runtime, NVTX, OSRT, overhead), which nest on their thread

    def __post_init__(self) -> None:
        for name, values in self.columns.items():
            if values is None or name == "depth" or name in self.owned:
                continue
            typ = storage_type(name)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if name not in _KEPT_WIDE and pa.types.is_signed_integer(typ):
                schema_type = typ
                # all null (a kernel table without graphs): one byte a row until the assembly
                typ = (
                    pa.int8()
                    if len(values) and values.null_count == len(values)
                    else narrow_type(values if pa.types.is_signed_integer(values.type) else values.cast(typ))
                )
                if typ.bit_width > schema_type.bit_width:
                    # a value past the column's type (a grid dimension beyond int32: a damaged export): the safe
                    # cast raises here, in the reader (one InputError), not when an analysis widens the column
                    typ = schema_type
            self.columns[name] = values.cast(typ) if values.type != typ else detach(values)


# Largest device ordinal the event table holds (its device column is int32).
_MAX_ORDINAL = 2**31 - 1


def gpu_ordinals(device_ids: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A GPU table's ``deviceId`` column, the values that are no CUDA device ordinal (negative, or beyond int32:
    CUPTI writes 0xFFFFFFFF, ``CUPTI_UNIFIED_MEMORY_CPU_DEVICE_ID``, where a record is of no device) made null.
    The schema's INTEGER holds any int64; kept, such a value failed the int32 device column and refused the whole
    file. The nulls are then left out, with their count, as the rows of no device (:func:`drop_rows_without_device`)."""
    if not len(device_ids) or not pa.types.is_integer(device_ids.type):
        return device_ids  # empty, all null (typed null) or not integers (the Part's cast reports those)
    bounds = pc.min_max(device_ids)  # one pass, no copy: the column is kept as fetched where all are ordinals
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None or (lo >= 0 and hi <= _MAX_ORDINAL):
        return device_ids
    ids = device_ids.combine_chunks() if isinstance(device_ids, pa.ChunkedArray) else device_ids
    foreign = pc.or_(pc.less(ids, 0), pc.greater(ids, _MAX_ORDINAL))
    return pc.if_else(foreign, pa.scalar(None, ids.type), ids)


def drop_rows_without_device(parts: list[Part]) -> int:
    """Remove the GPU rows whose device is null from the GPU parts (in place); how many there were. A GPU op of
    no device is on no GPU's timeline: kept, it counted as a kernel while every per-GPU figure left it out."""
    dropped = 0
    for part in parts:
        device = part.columns.get("device")
        # GPU sync rows keep theirs: CUPTI's synchronization record has no device (nothing reads theirs)
        if part.host or device is None or not device.null_count or "sync_kind" in part.columns:
            continue
        dropped += _keep_rows(part, device.is_valid(), device.null_count)
    return dropped


def drop_rows_without_start(parts: list[Part]) -> int:
    """Remove the rows (of any table) whose start is null (in place); how many there were. nsys writes every
    ``start`` (NOT NULL); a null (a damaged or hand-edited export) was read as 0, the session's start: a kernel
    then ran from there to its end, the GPU "busy" the whole time and the trace called healthy."""
    dropped = 0
    for part in parts:
        start = part.columns.get("start_ns")
        if start is None or not start.null_count:
            continue
        dropped += _keep_rows(part, start.is_valid(), start.null_count)
    return dropped


def drop_untimed_rows(parts: list[Part]) -> int:
    """Remove the GPU rows (ops and syncs) whose start and end are both 0 (in place); how many there were. CUPTI
    writes 0 for both where it could collect no timestamp (CUpti_ActivityKernel's start/end), and nsys times are ns
    since the session began: kept, such a row put the trace's origin at 0 and made the GPU idle until its first
    real op. A row at 0 with an end after it carries a time and is kept."""
    dropped = 0
    for part in parts:
        start, end = part.columns.get("start_ns"), part.columns.get("end_ns")
        if part.host or start is None or end is None or not part.n:
            continue
        untimed = pc.fill_null(pc.and_(pc.equal(start, 0), pc.equal(end, 0)), False)
        count = pc.sum(untimed).as_py() or 0
        if not count:
            continue
        dropped += _keep_rows(part, pc.invert(untimed), count)
    return dropped


def _keep_rows(part: Part, keep: pa.Array, dropped: int) -> int:
    """``part``'s rows where ``keep`` is true, in place (``dropped``: how many are not); returns ``dropped``."""
    for name, values in part.columns.items():
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            part.columns[name] = values.filter(keep)
    part.n -= dropped
    return dropped
