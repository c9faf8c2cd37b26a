"""Assembly of the Nsight Systems reader: the per-table parts become one event store (shifted to the earliest
start, sorted once, columns gathered whole or stored sparse), and the host rows' nesting depth."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from ...trace import EVENT_SCHEMA, EventStore, SparseColumn, build_store, nesting_depth, with_sentinel_nulls
from .columns import Part, int64_numpy, storage_type


def assemble(parts: list[Part]) -> tuple[int, EventStore]:
    """Concatenate the parts, shift times to the earliest start, sort once, and store the columns."""
    if not parts:
        return 0, build_store({"kind": [], "start_ns": [], "end_ns": []})
    start = np.concatenate([int64_numpy(p.columns.pop("start_ns")) for p in parts])
    origin = int(start.min())
    start -= origin
    order = np.argsort(start, kind="stable")  # each table is nearly sorted: timsort merges its runs
    total = start.size
    columns: dict[str, Any] = {"start_ns": pa.array(start[order])}
    missing = np.iinfo(np.int64).min
    end = np.concatenate([int64_numpy(p.columns.pop("end_ns"), fill=missing) for p in parts])
    # An end missing (a range still open when capture stopped) runs to the end of the trace.
    open_ended = end == missing
    if open_ended.any():
        end[open_ended] = end.max()
    del open_ended
    end -= origin
    np.maximum(end, start, out=end)
    del start
    columns["end_ns"] = pa.array(end[order])
    del end
    # rank: the table row of each part row (parts concatenated), where a sparse column's values go
    rank = np.empty(total, np.int32 if total < 2**31 else np.int64)
    rank[order] = np.arange(total, dtype=rank.dtype)
    take = pa.array(order)
    del order
    _gather_columns(parts, columns, take, rank, total)
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


def _int32_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.int32()).fill_null(-1).to_numpy()


def host_depth(parts: list[Part]) -> list[pa.Array]:
    """Nesting depth of every row of the host parts (runtime, NVTX, OSRT, overhead) on its thread.

    The parts are nested together: a runtime call inside an NVTX range is one level deeper than the range.
    Times are the export's own (depth does not depend on the origin); an open range (null end) contains
    everything after its start.
    """
    start = np.concatenate([int64_numpy(p.columns["start_ns"]) for p in parts])
    end = np.concatenate([int64_numpy(p.columns["end_ns"], fill=np.iinfo(np.int64).max) for p in parts])
    # pid and tid stay int32 (their storage type): only their distinct values matter here
    pid = np.concatenate([_int32_numpy(p.columns["pid"]) for p in parts])
    tid = np.concatenate([_int32_numpy(p.columns["tid"]) for p in parts])
    np.maximum(end, start, out=end)
    depth = nesting_depth(pid, tid, start, end)
    del start, end, pid, tid
    out, at = [], 0
    for part in parts:
        out.append(pa.array(depth[at : at + part.n], pa.int16()))
        at += part.n
    return out


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
