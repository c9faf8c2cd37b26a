"""Event table columns built as an :class:`~tracelens.trace.EventStore` stores them (``Stored``): a full-length
Arrow array, a :class:`~tracelens.trace.SparseColumn` of the rows that carry a value when they are fewer than
half (EventStore.from_columns' rule), or None when no row does. The Kineto table (:mod:`.table`) builds each
column straight in that form from numpy buffers: a column few rows carry is never made full-length only to
be filtered back to those rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa

from ...trace import EVENT_SCHEMA, EventStore, SparseColumn, string_array

# A column as an EventStore holds it: a full-length array, a SparseColumn, or None (no row has a value).
Stored: TypeAlias = "pa.Array | SparseColumn | None"


def dictionary_column(codes: np.ndarray, values: Sequence[str | None], where: np.ndarray) -> Stored:
    """Dictionary-encoded strings: ``values[codes]`` where ``where`` holds and the value exists, else null;
    stored as an EventStore stores it (None: no value; a SparseColumn when fewer than half the rows have one).
    Looked up at the rows ``where`` selects only."""
    rows = np.flatnonzero(where)
    return dictionary_column_at(np.take(codes, rows), values, rows, where.size)


def dictionary_column_at(codes: np.ndarray, values: Sequence[str | None], rows: np.ndarray, n: int) -> Stored:
    """:func:`dictionary_column` of ``n`` rows from the codes at the only rows it may hold values at (``rows``,
    ascending: memcpy rows, sync rows, which the GPU rows' compact columns give without a full-length mask)."""
    distinct = sorted({v for v in values if v is not None})
    index = {v: i for i, v in enumerate(distinct)}
    lookup = np.array([index[v] if v is not None else -1 for v in values] + [-1], dtype=np.int32)
    found = np.take(lookup, codes)
    has_value = found >= 0
    rows, found = rows[has_value], found[has_value]
    if rows.size == 0:
        return None
    dictionary = string_array(distinct)
    if _sparse(rows.size, n):
        return SparseColumn(
            _row_positions(rows, n),
            pa.DictionaryArray.from_arrays(from_buffers(pa.int32(), found, None, 0), dictionary),
        )
    indices = np.full(n, -1, dtype=np.int32)
    indices[rows] = found
    return pa.DictionaryArray.from_arrays(dictionary_indices(indices), dictionary)


def op_text_column(codes: np.ndarray, rows: np.ndarray, n: int, values: list[str]) -> Stored:
    """A dictionary string column of ``n`` rows: ``values[codes]`` at ``rows``, null elsewhere (None: all
    null, which build_events makes without a buffer; fewer than half the rows: a SparseColumn). Built from
    the few rows that have a value."""
    present = codes >= 0
    if not present.any():
        return None
    distinct = sorted(set(values))  # one value may come from several texts (canonical JSON)
    index = {v: i for i, v in enumerate(distinct)}
    recode = np.array([index[v] for v in values], dtype=np.int32)
    if _sparse(int(np.count_nonzero(present)), n):
        at, data = _in_row_order(rows[present], recode[codes[present]])
        return SparseColumn(
            _row_positions(at, n),
            pa.DictionaryArray.from_arrays(from_buffers(pa.int32(), data, None, 0), string_array(distinct)),
        )
    data = np.zeros(n, dtype=np.int32)
    data[rows[present]] = recode[codes[present]]
    valid = np.zeros(n, dtype=bool)
    valid[rows[present]] = True
    indices = from_buffers(pa.int32(), data, valid, n - int(present.sum()))
    return pa.DictionaryArray.from_arrays(indices, string_array(distinct))


def dictionary_indices(codes: np.ndarray) -> pa.Array:
    """int32 dictionary indices, null where ``codes`` < 0, built from buffers. int32 codes with no null are
    used as they are (the array shares their memory: not to be written after)."""
    if codes.size == 0 or codes.min() >= 0:  # no null (a kind or name on every row): no mask to make
        return from_buffers(pa.int32(), codes.astype(np.int32, copy=False), None, 0)
    missing = codes < 0
    nulls = int(np.count_nonzero(missing))
    data = codes.astype(np.int32)
    data[missing] = 0
    return from_buffers(pa.int32(), data, ~missing, nulls)


def dictionary_array(codes: np.ndarray, values: Sequence[str | None]) -> pa.DictionaryArray:
    """``values[codes]`` dictionary-encoded (null where ``codes`` < 0; every other code indexes ``values``):
    :func:`dictionary_indices` with the dictionary, whose indices are not checked again (a pass over them)."""
    return pa.DictionaryArray.from_arrays(dictionary_indices(codes), string_array(values), safe=False)


def unrepresentable(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """NaN, infinite, or outside ``dtype``'s range: such values become nulls, never wrapped-around numbers."""
    return ~representable(values, dtype)


def representable(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Not :func:`unrepresentable`: the values a column of ``dtype`` holds (finite, in its range)."""
    bound = 2.0 ** (8 * dtype.itemsize - 1) if dtype.kind in "iu" else np.finfo(dtype).max
    return np.abs(values) < bound


def int_column(data: np.ndarray, valid: np.ndarray, column: str) -> Stored:
    """An integer column (``column``'s Arrow type) from its data and validity (null: a value that was missing
    or that the type cannot hold, table.prepare_block), stored as an EventStore stores it (None: no value; a
    SparseColumn of the rows with one when they are fewer than half). Built from buffers, without a copy of
    a dense column."""
    typ = pa.int32() if data.dtype == np.int32 else EVENT_SCHEMA.field(column).type  # (narrow ids: NARROW)
    nulls = valid.size - int(np.count_nonzero(valid))
    if nulls == valid.size:
        return None
    if _sparse(valid.size - nulls, valid.size):
        rows = np.flatnonzero(valid)
        return SparseColumn(_row_positions(rows, valid.size), from_buffers(typ, data[rows], None, 0))
    return from_buffers(typ, data, valid, nulls)


def int_column_at(data: np.ndarray, rows: np.ndarray, n: int, column: str) -> Stored:
    """:func:`int_column` of ``n`` rows that have a value at ``rows`` only (ascending, fewer than half of them;
    ``data``: the values there): None where no row has one, else a SparseColumn."""
    if rows.size == 0:
        return None
    typ = EVENT_SCHEMA.field(column).type
    return SparseColumn(_row_positions(rows, n), from_buffers(typ, data, None, 0))


def _sparse(valid: int, n: int) -> bool:
    """Whether a column with ``valid`` values in ``n`` rows is stored sparse (EventStore.from_columns' rule)."""
    return valid * 2 < n


def _row_positions(rows: np.ndarray, n: int) -> np.ndarray:
    """A SparseColumn's row positions: int32 below 2**31 rows (as EventStore.from_columns stores them); ``rows``
    itself where it is of that type (columns of the same rows share it)."""
    return rows.astype(np.int32 if n < 2**31 else np.int64, copy=False)


def _in_row_order(rows: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` (distinct) ascending, with their ``values``."""
    if rows.size < 2 or bool(np.all(rows[1:] > rows[:-1])):  # the GPU and op rows come in table order
        return rows, values
    order = np.argsort(rows)
    return rows[order], values[order]


def sparse_column(values: np.ndarray, rows: np.ndarray, n: int, column: str) -> Stored:
    """A column of ``n`` rows, null except ``values`` (NaN = missing) at ``rows``, in ``column``'s Arrow type,
    as an EventStore stores it: None when no row has a value, a SparseColumn (built from the rows that have
    one) when fewer than half do, else a full-length array."""
    typ = EVENT_SCHEMA.field(column).type
    dtype = np.dtype(typ.to_pandas_dtype())
    present = representable(values, dtype)
    if not present.all():  # (else every row keeps its value: no selection to copy)
        rows, values = rows[present], values[present]
    if rows.size == 0:
        return None
    if _sparse(rows.size, n):
        at, kept = _in_row_order(rows, values)
        return SparseColumn(_row_positions(at, n), from_buffers(typ, kept.astype(dtype), None, 0))
    data = np.zeros(n, dtype=dtype)
    data[rows] = values
    valid = np.zeros(n, dtype=bool)
    valid[rows] = True
    return from_buffers(typ, data, valid, n - rows.size)


def from_buffers(typ: pa.DataType, data: np.ndarray, valid: np.ndarray | None, nulls: int) -> pa.Array:
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls and valid is not None else None
    return pa.Array.from_buffers(typ, data.size, [bitmap, pa.py_buffer(data)], null_count=nulls)


# Id columns the table may hold as int32 where every id fits (the row chunks' ids: row_chunks.NARROW_KEYS): the
# store reads them in the schema's int64 (EventStore.column, numpy), and the table build writes half the bytes.
NARROW = frozenset(("pid", "tid", "external_id"))


def store_columns(n: int, columns: Mapping[str, pa.Array | None]) -> EventStore:
    """``build_store(columns, sort=False, derive_depth=False)`` for full-length Arrow arrays of ``n`` rows whose
    end is already at least their start (None: no value): each cast to its schema type where it is not (the
    reader builds them in it), then stored dense or sparse by EventStore.from_columns, in schema order."""
    arrays = {}
    for field in EVENT_SCHEMA:
        array = columns.get(field.name)
        if array is not None:
            narrow = field.name in NARROW and array.type == pa.int32()
            arrays[field.name] = array if array.type == field.type or narrow else array.cast(field.type)
    return EventStore.from_columns(n, arrays)
