"""Assembly of the Nsight Systems reader: the per-table parts become one event store (shifted to the earliest
start, sorted once, columns gathered whole or stored sparse), with the host rows' nesting depth deferred."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from ...trace import (
    EVENT_SCHEMA,
    NOT_NESTED_KINDS,
    DeferredColumn,
    EventStore,
    SparseColumn,
    build_store,
    nesting_depth,
    with_sentinel_nulls,
)
from .columns import Part, int64_numpy, storage_type


def assemble(parts: list[Part]) -> tuple[int, EventStore]:
    """Concatenate the parts, shift times to the earliest start, sort once, and store the columns."""
    if not parts:
        return 0, build_store({"kind": [], "start_ns": [], "end_ns": []})
    start = np.concatenate([int64_numpy(p.columns.pop("start_ns")) for p in parts])
    origin = int(start.min())
    start -= origin
    total = start.size
    index = np.int32 if total < 2**31 else np.int64
    # each table is nearly sorted: timsort merges its runs; positions kept int32 (half the memory)
    order = np.argsort(start, kind="stable").astype(index, copy=False)
    # Each time column is sorted as soon as it is whole and its unsorted copy let go: at most two arrays of
    # every row's times live at once (41M rows: 330 MB each).
    start = start[order]
    columns: dict[str, Any] = {"start_ns": pa.array(start)}
    missing = np.iinfo(np.int64).min
    end = np.concatenate([int64_numpy(p.columns.pop("end_ns"), fill=missing) for p in parts])
    # An end missing (a range still open when capture stopped) runs to the end of the trace.
    open_ended = np.flatnonzero(end == missing)
    if open_ended.size:
        end[open_ended] = end.max()
    end -= origin
    end = end[order]
    np.maximum(end, start, out=end)
    del start
    columns["end_ns"] = pa.array(end)
    del end
    # rank: the table row of each part row (parts concatenated), where a sparse column's values go
    rank = np.empty(total, index)
    rank[order] = np.arange(total, dtype=index)
    take = pa.array(order)
    del order
    _gather_columns(parts, columns, take, rank, total)
    if any(p.host for p in parts):
        columns["depth"] = DeferredColumn(_HostDepth(np.sort(rank[open_ended])))
    del take, rank
    sentinel = set()
    for name in ("pid", "tid"):  # read by every analysis: -1 in their null slots spares a filled copy
        if (
            isinstance(columns.get(name), pa.Array)
            and (marked := with_sentinel_nulls(columns[name])) is not None
        ):
            columns[name] = marked
            sentinel.add(name)
    return origin, EventStore(
        total, {f.name: columns[f.name] for f in EVENT_SCHEMA if f.name in columns}, frozenset(sentinel)
    )


def _gather_columns(
    parts: list[Part], columns: dict[str, Any], take: pa.Array, rank: np.ndarray, total: int
) -> None:
    """Fill ``columns`` with every event column some part has, in table order.

    A column most rows have is gathered whole (``take``); one that only the parts of fewer than half the
    rows have (kernel geometry, copy bytes, ...) is stored sparse, at the table rows of those parts
    (``rank``). Two gathers run at once (Arrow's take releases the GIL); at most one more column waits
    prepared, so the parts' columns are still released about as fast as the gathered ones appear.
    """
    shared_null = _SharedNulls(total)
    in_flight: deque[tuple[str, Future[Any]]] = deque()
    offsets = np.cumsum([0] + [p.n for p in parts])

    def gather(column: pa.ChunkedArray) -> pa.Array:
        return column.take(take).combine_chunks()

    with ThreadPoolExecutor(max_workers=2) as pool:
        for fld in EVENT_SCHEMA:
            if fld.name in columns:
                continue
            having = [i for i, p in enumerate(parts) if p.columns.get(fld.name) is not None]
            if not having:
                continue
            if 2 * sum(parts[i].n for i in having) < total:
                positions = np.concatenate([rank[offsets[i] : offsets[i + 1]] for i in having])
                values = _merged_column([parts[i] for i in having], fld, shared_null)
                in_flight.append((fld.name, pool.submit(_sparse, positions, values)))
            else:
                column = _merged_column(parts, fld, shared_null)
                in_flight.append((fld.name, pool.submit(gather, column)))
                del column
            while len(in_flight) > 1:
                name, future = in_flight.popleft()
                columns[name] = future.result()
        for name, future in in_flight:
            columns[name] = future.result()


def _merged_column(parts: list[Part], fld: pa.Field, shared_null: _SharedNulls) -> pa.ChunkedArray | None:
    """One column over all parts (in part order), or None when no part has it."""
    if not any(p.columns.get(fld.name) is not None for p in parts):
        return None
    chunks = []
    for p in parts:
        # pop: each part's column is released as soon as it is merged, keeping the peak low
        typ = storage_type(fld.name) if fld.name != "depth" else fld.type
        values = p.columns.pop(fld.name, None)
        if values is None:
            chunks.append(shared_null.array(typ, p.n))
            continue
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        chunks.append(values if values.type == typ else values.cast(typ))
    if pa.types.is_dictionary(typ):
        merged = pa.Table.from_arrays([pa.chunked_array(chunks, typ)], names=["x"])
        return merged.unify_dictionaries().column(0)
    return pa.chunked_array(chunks, typ)


class _HostDepth:
    """The ``depth`` column of an Nsight export's store, computed on first read (no analysis reads it): the
    nesting depth of every host row (runtime, NVTX, OSRT, overhead: every kind but the GPU's) on its thread.

    The host tables are nested together: a runtime call inside an NVTX range is one level deeper than the range.
    A range still open at the end of capture (``open_rows``, their store rows) contains everything after its
    start. Rows are in the store's order, the tables' rows stably sorted by start, so rows with equal start
    and end keep their table order, which decides which of them is the parent.
    """

    def __init__(self, open_rows: np.ndarray) -> None:
        self.open_rows = open_rows

    def __call__(self, store: EventStore) -> pa.Array | SparseColumn:
        kinds = store.column("kind")
        nested = ~np.isin(np.asarray(kinds.dictionary.to_pylist(), dtype=object), NOT_NESTED_KINDS)
        rows = np.flatnonzero(nested[kinds.indices.to_numpy(zero_copy_only=False)])
        del kinds
        start = store.numpy("start_ns")[rows]
        end = store.numpy("end_ns")[rows]
        at = np.searchsorted(rows, self.open_rows)
        at = at[(at < rows.size) & (rows[np.minimum(at, rows.size - 1)] == self.open_rows)]
        end[at] = np.iinfo(np.int64).max
        # pid and tid stay int32 (their storage type; a null reads -1): only their distinct values matter here
        depth = nesting_depth(
            store.numpy("pid", dtype=np.int32)[rows], store.numpy("tid", dtype=np.int32)[rows], start, end
        )
        del start, end
        if 2 * rows.size < store.num_rows:
            return SparseColumn(
                rows.astype(np.int32 if store.num_rows < 2**31 else np.int64), pa.array(depth)
            )
        values = np.zeros(store.num_rows, np.int16)
        values[rows] = depth
        del depth
        mask = np.ones(store.num_rows, bool)
        mask[rows] = False
        return pa.array(values, pa.int16(), mask=mask)


def _sparse(positions: np.ndarray, values: pa.ChunkedArray) -> SparseColumn:
    """A column's non-null values at their table rows (``positions``, one per value), in row order."""
    values = values.combine_chunks()
    if values.null_count:
        valid = values.is_valid()
        positions = positions[valid.to_numpy(zero_copy_only=False)]
        values = values.filter(valid)
    order = np.argsort(positions)
    return SparseColumn(positions[order], values.take(pa.array(order)))


class _SharedNulls:
    """All-null columns that share one zeroed buffer, so a wide mostly-null table costs memory once."""

    def __init__(self, n: int) -> None:
        self.n = n
        # bytearray memory comes zeroed from calloc: untouched pages cost no resident memory at all.
        self._data = pa.py_buffer(bytearray(max(8 * n, 8)))
        self._validity = pa.py_buffer(bytearray(max((n + 7) // 8, 1)))

    def array(self, typ: pa.DataType, n: int | None = None) -> pa.Array:
        n = self.n if n is None else n
        if pa.types.is_dictionary(typ):
            indices = pa.Array.from_buffers(typ.index_type, n, [self._validity, self._data], null_count=n)
            return pa.DictionaryArray.from_arrays(indices, pa.array([], typ.value_type))
        return pa.Array.from_buffers(typ, n, [self._validity, self._data], null_count=n)
