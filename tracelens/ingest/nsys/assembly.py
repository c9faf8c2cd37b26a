"""Assembly of the Nsight Systems reader: the per-table parts become one event store (shifted to the earliest
start, sorted once, columns gathered whole or stored sparse), with the host rows' nesting depth deferred."""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...memory import release_free_memory
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
from .columns import Part, int64_numpy, narrow_type, storage_type
from .threads import thread_columns

try:  # the merge of sorted runs in C (optional: built at install time where a C compiler is there)
    from ... import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


def assemble(parts: list[Part]) -> tuple[int, EventStore]:
    """Concatenate the parts, shift times to the earliest start, sort once, and store the columns."""
    if not parts:
        return 0, build_store({"kind": [], "start_ns": [], "end_ns": []})
    total = sum(p.n for p in parts)
    index = np.int32 if total < 2**31 else np.int64
    offsets = np.cumsum([0] + [p.n for p in parts])
    # rank: the table row of each part row (parts concatenated). Every other column is scattered there a part
    # at a time (no concatenated copy of a column: at most one of its parts and the whole column live at once).
    order_by_time = _merge_order if _compiled is not None else _sort_order
    origin, start, rank = order_by_time(parts, offsets, total, index)
    columns: dict[str, Any] = {"start_ns": pa.array(start)}
    with ThreadPoolExecutor(max_workers=1) as pool:
        sparse = _SparseColumns(parts, rank, offsets, total, pool)
        # The sparse columns but pid and tid (a kernel's geometry, correlation ids, ...) are built in the pool's
        # thread (numpy's sorts and Arrow's take release the GIL) while this one stores the others.
        early = sparse.submit_all(set(columns) | {"end_ns", "pid", "tid"})
        missing = np.iinfo(np.int64).min
        gpu_missing = missing + 1  # a GPU row's missing end (a damaged export): not a range left open
        end = np.empty(total, np.int64)
        for i, p in enumerate(parts):
            at = offsets[i]
            for piece in _int64_pieces(p.columns.pop("end_ns"), fill=missing if p.host else gpu_missing):
                end[rank[at : at + piece.size]] = piece
                at += piece.size
        release_free_memory()  # the parts' end columns
        # An end missing (a range still open when capture stopped) runs to the end of the trace; a GPU row's
        # (nsys writes every GPU end) is read as zero-length: stretched to the end, it made up busy time.
        open_ended = np.flatnonzero(end == missing)  # table rows, ascending
        if open_ended.size:
            last = int(end.max())
            if last <= gpu_missing:  # no row has an end (only open ranges): the last start is the trace's end
                last = int(start[-1]) + origin  # start: shifted, in time order
            end[open_ended] = last
        end[end == gpu_missing] = origin  # at the origin: the start, after the shift and the clamp below
        end -= origin
        np.maximum(end, start, out=end)
        del start
        columns["end_ns"] = pa.array(end)
        del end
        threads = thread_columns(parts, rank, offsets, total)  # pid and tid: one small code a row per thread
        if threads is not None:
            columns["pid"], columns["tid"] = threads
            del threads
        sentinel = _gather_columns(parts, columns, sparse)
        for name, future in early:
            columns[name] = future.result()
            release_free_memory()  # its temporaries, freed in the other thread (kept by its heap)
        del early, sparse
    if any(p.host for p in parts):
        columns["depth"] = DeferredColumn(_HostDepth(open_ended))
    del rank
    release_free_memory()
    for name in ("pid", "tid"):  # read by every analysis: -1 in their null slots spares a filled copy
        if (
            name not in sentinel
            and isinstance(columns.get(name), pa.Array)
            and (marked := with_sentinel_nulls(columns[name])) is not None
        ):
            columns[name] = marked
            sentinel.add(name)
    return origin, EventStore(
        total, {f.name: columns[f.name] for f in EVENT_SCHEMA if f.name in columns}, frozenset(sentinel)
    )


_RANK_BLOCK = 1 << 22
# The merge of the tables' starts runs in up to this many ranges of times, each at least this many rows.
_MERGE_RANGES = 16
_RANGE_MIN_ROWS = 1 << 20


def _sort_order(
    parts: list[Part], offsets: np.ndarray, total: int, index: type[np.signedinteger[Any]]
) -> tuple[int, np.ndarray, np.ndarray]:
    """(the earliest start, every start in time order shifted to it, ``rank``), by one stable sort of the parts'
    starts concatenated; the parts' start columns popped. Where the compiled merge is absent."""
    start = np.concatenate([piece for p in parts for piece in _int64_pieces(p.columns.pop("start_ns"))])
    release_free_memory()  # the parts' start columns, before the sort's temporaries
    origin = int(start.min())
    start -= origin
    # each table is nearly sorted: timsort merges its runs; positions kept int32 (half the memory)
    order = np.argsort(start, kind="stable").astype(index, copy=False)
    start.sort(kind="stable")  # = start[order], in place: no second copy of the column
    rank = np.empty(total, index)
    for lo in range(0, total, _RANK_BLOCK):  # a block of positions at a time: no arange of every row
        hi = min(lo + _RANK_BLOCK, total)
        rank[order[lo:hi]] = np.arange(lo, hi, dtype=index)
    del order
    release_free_memory()  # the sort's temporaries
    return origin, start, rank


def _merge_order(
    parts: list[Part], offsets: np.ndarray, total: int, index: type[np.signedinteger[Any]]
) -> tuple[int, np.ndarray, np.ndarray]:
    """:func:`_sort_order` by the compiled merge of sorted runs: each table is sorted by start already (a
    chunk that is not is sorted alone), so the tables are merged (``_merge_search.merge_runs``: ordered by
    start, then table row, as the stable sort orders them), in two threads (the times below and from a pivot
    on), without a concatenated copy of the starts nor a sort's temporaries."""
    assert _compiled is not None
    runs: list[np.ndarray] = []
    rows: list[np.ndarray | None] = []  # a run's table rows, where not its base's and the next ones
    bases: list[int] = []
    for i, p in enumerate(parts):
        at = int(offsets[i])
        for piece in _int64_pieces(p.columns.pop("start_ns")):
            if piece.size > 1 and bool((piece[1:] < piece[:-1]).any()):
                order = np.argsort(piece, kind="stable")
                piece = piece[order]
                order += at
                rows.append(order)
            else:
                rows.append(None)
            runs.append(piece)
            bases.append(at)
            at += piece.size
    origin = min((int(r[0]) for r in runs if r.size), default=0)
    start = np.empty(total, np.int64)
    rank = np.empty(total, index)
    if not total:
        return origin, start, rank
    # The merge by ranges of times (cut at the longest run's quantiles), two at once: a range's rows come after
    # the previous range's in the order; the merge's temporaries (about 12 bytes a row of all runs but the
    # longest, per range) stay small.
    longest = max(runs, key=len)
    ranges = max(1, min(_MERGE_RANGES, total // _RANGE_MIN_ROWS))
    pivots = longest[(np.arange(1, ranges) * longest.size) // ranges]
    cuts = np.array([np.searchsorted(r, pivots, "left") for r in runs], np.int64).reshape(len(runs), -1)
    cuts = np.hstack([np.zeros((len(runs), 1), np.int64), cuts, [[r.size] for r in runs]])
    firsts = cuts.sum(axis=0)  # where each range's rows begin in the order

    def merge_range(j: int) -> None:
        lo, hi = cuts[:, j], cuts[:, j + 1]
        merge_runs(
            [r[a:b] for r, a, b in zip(runs, lo, hi, strict=True)],
            [None if o is None else o[a:b] for o, a, b in zip(rows, lo, hi, strict=True)],
            [int(base + a) for base, a in zip(bases, lo, strict=True)],
            start[firsts[j] : firsts[j + 1]],
            rank,
            int(firsts[j]),
            origin,
        )

    merge_runs = _compiled.merge_runs
    if ranges == 1:
        merge_range(0)
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(merge_range, range(ranges)))
    runs.clear()  # the parts' start columns (read in place)
    rows.clear()
    release_free_memory()  # the merge's temporaries, freed in two threads' heaps
    return origin, start, rank


def _int64_pieces(values: pa.Array | pa.ChunkedArray, fill: int = 0) -> list[np.ndarray]:
    """An integer column as int64 numpy, a piece per chunk (a part's NVTX times stay in their fetched chunks),
    nulls replaced by ``fill``: no copy of a chunk that is int64 without nulls."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    # an int64 chunk without nulls is read in place (read-only): no copy of the column
    return [
        chunk.to_numpy()
        if chunk.type == pa.int64() and not chunk.null_count
        else int64_numpy(chunk, fill=fill)
        for chunk in chunks
    ]


def _gather_columns(parts: list[Part], columns: dict[str, Any], sparse: _SparseColumns) -> set[str]:
    """Fill ``columns`` with every event column some part has that ``columns`` lacks, in table order; returns
    the integer columns whose null slots hold -1 (an EventStore's ``sentinel`` columns).

    A column most rows have is scattered whole (:func:`_scatter`); one that only the parts of fewer than half
    the rows have (kernel geometry, copy bytes, ...) is stored sparse (``sparse``, built in its thread while
    the next column is prepared: at most one waits).
    """
    in_flight: deque[tuple[str, Future[Any]]] = deque()
    sentinel: set[str] = set()
    for fld, having, last in sparse.fields(set(columns)):
        if sparse.is_sparse(having):
            in_flight.append((fld.name, sparse.submit(fld, having, last)))
        else:
            columns[fld.name], filled = _scatter(parts, fld, sparse.rank, sparse.offsets, sparse.total)
            if filled:
                sentinel.add(fld.name)
            release_free_memory()
        while len(in_flight) > 1:
            name, future = in_flight.popleft()
            columns[name] = future.result()
            release_free_memory()  # its temporaries, freed in the other thread (kept by its heap)
    for name, future in in_flight:
        columns[name] = future.result()
    return sentinel


class _SparseColumns:
    """Builds the sparse columns of the store (:func:`_sparse`) in ``pool``'s one thread, in the order they are
    handed over. Sparse columns of the same parts (a kernel's nine geometry columns) share one array of table
    rows (:class:`_Placement`), made in that thread for the first of them and let go with the last."""

    def __init__(
        self, parts: list[Part], rank: np.ndarray, offsets: np.ndarray, total: int, pool: ThreadPoolExecutor
    ) -> None:
        self.parts, self.rank, self.offsets, self.total, self.pool = parts, rank, offsets, total, pool
        self.shared_null = _SharedNulls(total)
        self._placements: dict[tuple[int, ...], _Placement] = {}  # used in the pool's thread alone

    def fields(self, skip: set[str]) -> list[tuple[pa.Field, tuple[int, ...], bool]]:
        """The event columns not in ``skip`` that some part has: (field, the parts that have it, whether it is
        the last sparse column of those parts)."""
        fields = [
            (fld, having)
            for fld in EVENT_SCHEMA
            if fld.name not in skip
            and (having := tuple(i for i, p in enumerate(self.parts) if p.columns.get(fld.name) is not None))
        ]
        last_of = {having: fld.name for fld, having in fields if self.is_sparse(having)}
        return [(fld, having, last_of.get(having) == fld.name) for fld, having in fields]

    def is_sparse(self, having: tuple[int, ...]) -> bool:
        """Whether a column that parts ``having`` have is stored sparse: they hold fewer than half the rows."""
        return 2 * sum(self.parts[i].n for i in having) < self.total

    def submit(self, fld: pa.Field, having: tuple[int, ...], last: bool) -> Future[SparseColumn]:
        """The column's values merged (in this thread: the parts' columns are popped) and handed to the pool."""
        values = _merged_column([self.parts[i] for i in having], fld, self.shared_null)
        return self.pool.submit(self._build, having, values, fld.name in _UNSIGNED_IDS, last)

    def submit_all(self, skip: set[str]) -> list[tuple[str, Future[SparseColumn]]]:
        """Every sparse column not in ``skip``, handed to the pool at once."""
        return [
            (fld.name, self.submit(fld, having, last))
            for fld, having, last in self.fields(skip)
            if self.is_sparse(having)
        ]

    def _build(
        self, having: tuple[int, ...], values: pa.ChunkedArray, unsigned: bool, last: bool
    ) -> SparseColumn:
        placement = self._placements.get(having)
        if placement is None:
            placement = _Placement(
                np.concatenate([self.rank[self.offsets[i] : self.offsets[i + 1]] for i in having])
            )
            self._placements[having] = placement
        if last:
            del self._placements[having]
        return _sparse(placement, values, unsigned)


def _scatter(
    parts: list[Part], fld: pa.Field, rank: np.ndarray, offsets: np.ndarray, total: int
) -> tuple[pa.Array, bool]:
    """One dense column in table order: each part's values written at its rows' table rows (``rank``) and let
    go. Dictionary columns get the dictionary Arrow's ``unify_dictionaries`` gives the parts' chunks (each
    value in order of first appearance), their indices mapped onto it. Returns (the column, whether its null
    slots hold -1: integer columns)."""
    typ = storage_type(fld.name)
    is_dict = pa.types.is_dictionary(typ)
    value_type = typ.index_type if is_dict else typ
    fill = 0 if is_dict or not pa.types.is_integer(typ) else -1
    out = np.full(total, fill, value_type.to_pandas_dtype())
    valid: np.ndarray | None = None
    dictionary = pa.array([], typ.value_type) if is_dict else None
    for i, p in enumerate(parts):
        rows = rank[offsets[i] : offsets[i + 1]]
        values = p.columns.pop(fld.name, None)
        if values is None:
            if valid is None:
                valid = np.ones(total, bool)
            valid[rows] = False
            continue
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if values.type != typ:
            values = values.cast(typ)
        if values.null_count:
            if valid is None:
                valid = np.ones(total, bool)
            valid[rows] = values.is_valid().to_numpy(zero_copy_only=False)
        if is_dict:
            dictionary = pc.unique(pa.concat_arrays([dictionary, values.dictionary]))
            transpose = pc.index_in(values.dictionary, value_set=dictionary).to_numpy(zero_copy_only=False)
            codes = values.indices
            codes = (codes.fill_null(0) if codes.null_count else codes).to_numpy(zero_copy_only=False)
            out[rows] = transpose.astype(out.dtype, copy=False)[codes] if transpose.size else codes
        else:
            out[rows] = (values.fill_null(fill) if values.null_count else values).to_numpy(
                zero_copy_only=False
            )
        del values
    mask = None if valid is None else ~valid
    del valid
    if is_dict:
        indices = pa.array(out, type=value_type, mask=mask)
        return pa.DictionaryArray.from_arrays(indices, dictionary), False
    return pa.array(out, type=typ, mask=mask), fill == -1 and mask is not None


def _merged_column(parts: list[Part], fld: pa.Field, shared_null: _SharedNulls) -> pa.ChunkedArray | None:
    """One column over all parts (in part order), or None when no part has it."""
    if not any(p.columns.get(fld.name) is not None for p in parts):
        return None
    typ = storage_type(fld.name) if fld.name != "depth" else fld.type
    if pa.types.is_signed_integer(typ):
        # The parts keep integer columns narrow (Part): merged in the widest of their types that holds a value
        # (what narrowest gives the merged column anyway), not widened back to eight bytes a row first.
        held = [p.columns.get(fld.name) for p in parts]
        typ = max(
            (v.type for v in held if v is not None and v.null_count < len(v)),
            key=lambda t: t.bit_width,
            default=typ,
        )
        del held
    chunks = []
    for p in parts:
        # pop: each part's column is released as soon as it is merged, keeping the peak low
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


class _Placement:
    """The table rows of the values of some parts' sparse columns (one per value, parts concatenated), sorted
    once for all the columns those parts carry: the columns without nulls share one array of rows."""

    def __init__(self, positions: np.ndarray) -> None:
        self.positions = positions
        self._lock = threading.Lock()
        self._sorted: tuple[np.ndarray, pa.Array] | None = None

    def sorted(self) -> tuple[np.ndarray, pa.Array]:
        """(the rows in ascending order, where each comes from in ``positions``)."""
        with self._lock:
            if self._sorted is None:
                order = np.argsort(self.positions, kind="stable")
                order = order.astype(self.positions.dtype, copy=False)  # int32 below 2^31 rows
                self._sorted = (self.positions[order], pa.array(order))
            return self._sorted


# Sparse id columns whose values, all non-negative and below 2^32 but not all below 2^31, are stored as uint32 (half
# of int64): correlation ids, join keys read through the store in int64 (up to 2.3e9 on the x1512 benchmark export:
# 120 -> 60 MiB for its 15.7M ids).
_UNSIGNED_IDS = frozenset({"correlation_id"})


def _sparse(placement: _Placement, values: pa.ChunkedArray, unsigned: bool = False) -> SparseColumn:
    """A column's non-null values at their table rows (``placement``, one per value), in row order, as the
    narrowest integer type that holds them (an int64 id column whose ids are below 2^31, block sizes); with
    ``unsigned``, int64 values in [0, 2^32) as uint32. Narrowed before they are gathered (their range is the same
    before as after: the gather only reorders them, leaving out the nulls): the copies are of the narrow values."""
    typ = narrow_type(values)
    if unsigned and typ == pa.int64() and len(values) > values.null_count:
        bounds = pc.min_max(values)
        if bounds["min"].as_py() >= 0 and bounds["max"].as_py() < 2**32:
            typ = pa.uint32()
    values = (values.cast(typ) if typ != values.type else values).combine_chunks()
    if values.null_count:
        valid = values.is_valid()
        positions = placement.positions[valid.to_numpy(zero_copy_only=False)]
        values = values.filter(valid)
        order = np.argsort(positions, kind="stable")
        rows, take = positions[order], pa.array(order)
    else:
        rows, take = placement.sorted()
    stored = values.take(take)
    column = SparseColumn(rows, stored)
    del stored
    del values, take
    release_free_memory()  # this thread's temporaries: its heap keeps what it freed until it collects
    return column


class _SharedNulls:
    """All-null columns that share one zeroed buffer, so a wide mostly-null table costs memory once."""

    def __init__(self, n: int) -> None:
        self.n = n
        # numpy's zeros come from calloc: pages never written cost no resident memory (bytearray(n) would write
        # every byte: 350 MiB resident at 41M rows)
        self._data = pa.py_buffer(np.zeros(max(8 * n, 8), np.uint8))
        self._validity = pa.py_buffer(np.zeros(max((n + 7) // 8, 1), np.uint8))

    def array(self, typ: pa.DataType, n: int | None = None) -> pa.Array:
        n = self.n if n is None else n
        if pa.types.is_dictionary(typ):
            indices = pa.Array.from_buffers(typ.index_type, n, [self._validity, self._data], null_count=n)
            return pa.DictionaryArray.from_arrays(indices, pa.array([], typ.value_type))
        return pa.Array.from_buffers(typ, n, [self._validity, self._data], null_count=n)
