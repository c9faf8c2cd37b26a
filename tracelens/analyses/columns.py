"""The event table as shared numpy columns, each GPU's busy union and the step windows: what every section reads.

Computed once per trace and cached on it (``memo``), so sections share one Arrow-to-numpy conversion and
one busy-union merge instead of each converting the table again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import arrow_calls, intervals
from ..arrow_read import arrow_filled, values_and_validity
from ..document.summary import gpu_equivalents, windows_union
from ..reads import log_column_read, released_error, untracked
from ..trace import (
    ALL_KINDS,
    DRIVER,
    GPU_ACTIVITY_KINDS,
    RUNTIME,
    CodedColumn,
    DeferredColumn,
    EventStore,
    SparseColumn,
    Trace,
    numpy_array,
)
from ..values import dense_codes
from .beside import import_numpy_ma, start_beside
from .busy_scan import merged_busy
from .coded import CodedInts, coded_lookup
from .derived import (
    held,
    memo,  # noqa: F401 (the store lives in .derived; sections import memo from here)
)
from .table import LazyColumn, Table  # noqa: F401 (sections import them from here)


def thread_key(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 per (pid, tid) pair."""
    if isinstance(pid, CodedInts) and isinstance(tid, CodedInts) and pid.codes is tid.codes:
        # held as thread codes (.coded): a key per thread, read at the rows' codes
        return coded_lookup(thread_key(pid.table, tid.table), pid.codes)
    # Thread ids fit in 32 bits on every platform seen (Linux tids, nsys 24-bit ids); -1 stays distinct.
    pid, tid = np.asarray(pid), np.asarray(tid)
    if (
        _LITTLE_ENDIAN
        and pid.shape == tid.shape
        and pid.ndim == 1
        and pid.dtype.kind == "i"
        and tid.dtype.kind == "i"
        and pid.itemsize <= 4
        and tid.itemsize <= 4
    ):
        # The same bits written as two int32 halves of one int64 (tid low, pid high): one array, two passes.
        pair = np.empty((pid.size, 2), np.int32)
        pair[:, 0] = tid
        pair[:, 1] = pid
        return pair.view(np.int64).reshape(pid.size)
    key = np.array(pid, np.int64)  # in place from here: two arrays at a time, not five
    key <<= 32
    low = np.array(tid, np.int64)
    low &= 0xFFFFFFFF
    key ^= low
    return key


_LITTLE_ENDIAN = sys.byteorder == "little"

# (thread, time) pairs are packed into one int64 below this product of threads and span.
PACKED_KEY_LIMIT = 2**62


def thread_time_positions(groups: list[tuple[np.ndarray, list[np.ndarray]]]) -> list[np.ndarray]:
    """One int64 per (thread, time), ordered by thread key, then time, and comparable across all the arrays given.

    ``groups``: (thread keys, [time arrays of the same length]) pairs; the result lists one position array per
    time array, in order. Sorting one array and searching another in it finds, per thread, the neighbours in
    time. Spans too long to pack (about 1e4 threads over 5 days) use the times' ranks: same order and ties.
    """
    all_keys = np.concatenate([keys for keys, _ in groups])
    # Sorted distinct keys and a binary search, not pd.factorize: its hash table is sized by the row count
    # (tens of millions of NVTX ranges) though a trace has a handful of threads.
    codes, uniques = dense_codes(all_keys)
    del all_keys
    times = [t for _, ts in groups for t in ts]
    present = [t for t in times if t.size]
    lo = min(int(t.min()) for t in present) if present else 0
    width = (max(int(t.max()) for t in present) if present else 0) - lo + 2
    if len(uniques) * width >= PACKED_KEY_LIMIT:
        _, ranks = np.unique(np.concatenate(times), return_inverse=True)
        times = np.split(ranks.astype(np.int64), np.cumsum([t.size for t in times])[:-1])
        lo, width = 0, int(ranks.max()) + 2
    out, at, i = [], 0, 0
    for keys, ts in groups:
        # multiplied straight into int64: no int64 copy of the codes first
        thread = np.multiply(codes[at : at + keys.size], width, dtype=np.int64)
        at += keys.size
        for _ in ts:
            position = np.subtract(times[i], lo, dtype=np.int64)
            position += thread  # in place: one new array per time array, not two
            out.append(position)
            i += 1
        del thread
    return out


def range_running_at(
    range_keys: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    keys: np.ndarray,
    t: np.ndarray,
    *,
    overlapping: bool = False,
) -> np.ndarray:
    """For each (key, time), a key being a thread or a device: the index of the range of that key running then
    (:func:`tracelens.intervals.running_at`: the latest-starting, if not ended; with ``overlapping``,
    :func:`tracelens.intervals.reaching_at`: the one reaching furthest); -1 where none. The ranges (``range_keys``,
    ``starts``, ``ends``) are sorted by (key, start). (key, time) pairs are packed into one comparable number
    (:func:`thread_time_positions`), ends included: a range of another key then never holds the time."""
    t = np.asarray(t, dtype=np.int64)
    if len(range_keys) == 0 or t.size == 0:
        return np.full(t.size, -1, np.int64)
    start_pos, end_pos, t_pos = thread_time_positions(
        [
            (np.asarray(range_keys), [np.asarray(starts, np.int64), np.asarray(ends, np.int64)]),
            (np.asarray(keys), [t]),
        ]
    )
    find = intervals.reaching_at if overlapping else intervals.running_at
    return find(start_pos, end_pos, t_pos)


# The event column each field of :class:`EventColumns` holds (its numpy form), and the one each column it reads
# on demand comes from.
FIELD_COLUMNS = {
    "kind": "kind",
    "name": "name",
    "names": "name",
    "start": "start_ns",
    "end": "end_ns",
    "device": "device",
    "pid": "pid",
    "tid": "tid",
    "external_id": "external_id",
}
ON_DEMAND_COLUMNS = {
    "correlation_id": "correlation_id",
    "stream": "stream",
    "graph_id": "graph_id",
    "bytes": "bytes",
    "step": "step",
    "is_dtoh": "copy_kind",
}


class EventColumns:
    """The event table as plain numpy arrays (nulls as -1), read once from Arrow and shared by the sections.

    ``kind`` indexes :data:`ALL_KINDS`; ``name`` indexes ``names`` (the name dictionary, -1 for null).
    correlation_id, stream, graph_id, bytes, step and is_dtoh: fewer than half the rows carry them (runtime calls
    and GPU ops, copies, step markers), so they are read at the rows asked for (``at``), or as whole columns on
    first access. Each read is noted (:func:`tracelens.reads.log_column_read`), and :meth:`release` drops the
    arrays of columns ``analyze`` releases (a later read raises, naming the column and the reader).
    """

    def __init__(
        self,
        kind: np.ndarray | None,  # each None where its column was released before this view was built
        name: np.ndarray | None,
        names: np.ndarray | None,
        start: np.ndarray | None,
        end: np.ndarray | None,
        device: np.ndarray | None,
        pid: np.ndarray | CodedInts | None,  # CodedInts: the store's codes, read as an array (.coded)
        tid: np.ndarray | CodedInts | None,
        external_id: np.ndarray | None,
        store: EventStore | None = None,
    ) -> None:
        self._fields: dict[str, Any] = {  # arrays (pid, tid: maybe CodedInts), None once released
            "kind": kind,
            "name": name,
            "names": names,
            "start": start,
            "end": end,
            "device": device,
            "pid": pid,
            "tid": tid,
            "external_id": external_id,
        }
        self.store = store
        self._whole: dict[str, np.ndarray] = {}
        self._released: dict[str, str] = {}  # column -> the section after which it was released

    def _field(self, key: str) -> np.ndarray:
        column = FIELD_COLUMNS[key]
        log_column_read(column)
        value = self._fields[key]
        if value is None:
            raise released_error(column, self._released[column])
        return value

    def release(self, columns: Collection[str], after: str) -> None:
        """Drop the arrays of the event ``columns`` (released by ``analyze`` after section ``after``)."""
        for key, column in FIELD_COLUMNS.items():
            if column in columns:
                self._fields[key] = None
        for key, column in ON_DEMAND_COLUMNS.items():
            if column in columns:
                self._whole.pop(key, None)
        self._released.update((column, after) for column in columns)

    # The fields, each read noted (and refused once released); the on-demand columns read whole on first access.
    kind = property(lambda self: self._field("kind"))
    name = property(lambda self: self._field("name"))
    names = property(lambda self: self._field("names"))
    start = property(lambda self: self._field("start"))
    end = property(lambda self: self._field("end"))
    device = property(lambda self: self._field("device"))
    pid = property(lambda self: self._field("pid"))
    tid = property(lambda self: self._field("tid"))
    external_id = property(lambda self: self._field("external_id"))
    correlation_id = property(lambda self: self._column("correlation_id"))
    stream = property(lambda self: self._column("stream"))
    graph_id = property(lambda self: self._column("graph_id"))
    bytes = property(lambda self: self._column("bytes"))
    step = property(lambda self: self._column("step"))
    is_dtoh = property(lambda self: self._column("is_dtoh"))

    def _noted(self, name: str) -> None:
        """Note a read of the on-demand column ``name``; raise where it was released."""
        column = ON_DEMAND_COLUMNS.get(name, name)
        log_column_read(column)
        if column in self._released:
            raise released_error(column, self._released[column])

    def _column(self, name: str) -> np.ndarray:
        self._noted(name)
        if name not in self._whole:
            assert self.store is not None
            self._whole[name] = (
                _equals(self.store, "copy_kind", "DtoH") if name == "is_dtoh" else _ints(self.store, name)
            )
        return self._whole[name]

    def at(self, name: str, rows: np.ndarray) -> np.ndarray:
        """One of those columns at the given rows (ascending positions), as ``getattr(self,
        name)[rows]`` reads it but without building the whole column: a 41M-row array of -1 for the 6.6M GPU
        ops (stream), 1.4M copies (bytes) or no row at all (graph_id) of a training export."""
        self._noted(name)
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        stored = (
            None if self.store is None else self.store.columns.get("copy_kind" if name == "is_dtoh" else name)
        )
        if name in self._whole or (stored is not None and not isinstance(stored, SparseColumn)):
            return getattr(self, name)[rows]  # a dense column: read whole once, and kept
        assert self.store is not None
        if name == "is_dtoh":
            return _equals_at(self.store, "copy_kind", "DtoH", rows)
        return _ints_at(self.store, name, rows)

    def of_kind(self, *kinds: str) -> np.ndarray:
        """Boolean mask of rows whose kind is one of ``kinds``."""
        codes = sorted({ALL_KINDS.index(k) for k in kinds})
        if not codes:
            return np.zeros(self.kind.shape, bool)
        if len(codes) <= 4:  # a comparison per kind: 4x faster than the gather, and no int64 index temporary
            mask = self.kind == codes[0]
            for code in codes[1:]:
                mask |= self.kind == code
            return mask
        lookup = np.zeros(len(ALL_KINDS) + 1, bool)  # the extra slot is kind -1 (unknown)
        lookup[codes] = True
        return lookup[self.kind]


def dictionary_codes(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[Any]]:
    """A dictionary (or plain string) column as int64 codes (null -> -1) and its dictionary values."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_dictionary(array.type):
        array = arrow_calls.dictionary_encode(array)
    codes = arrow_filled(array.indices, -1).astype(np.int64)
    return codes, array.dictionary.to_pylist()


# Narrowed columns hold values below this, so that doubling one or adding two cannot overflow int32.
_NARROW_MAX = 2**30


def _ints(store: EventStore, name: str, narrow: bool = True) -> np.ndarray:
    """An integer column as numpy with nulls as -1: int32 where every value is below 2^30 (halves the memory
    of the id columns on a 41M-row trace) and ``narrow``, int64 otherwise."""
    stored = store.columns.get(name)
    if stored is None:  # no row carries it: a read-only view of one -1, no memory per row
        return np.broadcast_to(np.int32(-1), (store.num_rows,))
    return _filled(store, name, int_type(stored, narrow))


def _filled(store: EventStore, name: str, dtype: type) -> np.ndarray:
    """``store.numpy(name, -1, dtype)``: a dense integer column with nulls (a Kineto trace's pid, tid, external id)
    narrowed straight from Arrow's values, then -1 written at its nulls, not filled in a copy of its own width and
    narrowed after (one 8-byte copy of the column less: 13 -> 5 ms for the 406 MB tile's pid, in the serial start
    of analyze); the same values, since the null slots are overwritten either way."""
    stored = store.columns.get(name)
    if (
        isinstance(stored, pa.Array)
        and pa.types.is_integer(stored.type)
        and stored.null_count
        and name not in store.sentinel
    ):
        values, valid = values_and_validity(stored)
        out: np.ndarray = values.astype(dtype)
        if valid is not None:  # it has nulls
            out[~valid] = -1
        return out
    return store.numpy(name, -1, dtype)


def _thread_ints(store: EventStore, name: str) -> np.ndarray | CodedInts:
    """``_ints(store, name)``, held as the store's codes where it holds the column so (pid and tid of an Nsight
    export: :class:`.coded.CodedInts`)."""
    stored = store.columns.get(name)
    if not isinstance(stored, CodedColumn):
        return _ints(store, name)
    table: np.ndarray = arrow_filled(stored.values, -1).astype(int_type(stored))
    return CodedInts(stored.codes, table)


def int_type(stored: pa.Array | SparseColumn | CodedColumn, narrow: bool = True) -> type:
    """The numpy integer type a stored integer column is read as: int32 where ``narrow`` and every value lies in
    [-1, 2^30) (_NARROW_MAX) (-1 standing for null), int64 otherwise."""
    values = stored.values if isinstance(stored, (SparseColumn, CodedColumn)) else stored
    bounds = arrow_calls.min_max(values)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    fits = narrow and (lo is None or (lo >= -1 and hi < _NARROW_MAX))
    return np.int32 if fits else np.int64


def _small_ints(store: EventStore, name: str) -> np.ndarray:
    """``_ints`` of a column of a few small ids (device): int8 where every value is below 2^6, int16 below 2^14
    (a byte a row instead of four: 120 MB less for the whole analysis on a 41M-row trace); adding or doubling
    two values still cannot overflow."""
    stored = store.columns.get(name)
    if stored is None:
        return np.broadcast_to(np.int8(-1), (store.num_rows,))
    values = stored.values if isinstance(stored, SparseColumn) else stored
    bounds = arrow_calls.min_max(values)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    for dtype, limit in ((np.int8, 2**6), (np.int16, 2**14)):
        if lo is None or (lo >= -1 and hi < limit):
            return store.numpy(name, -1, dtype)
    return _ints(store, name)


def _ints_at(store: EventStore, name: str, rows: np.ndarray) -> np.ndarray:
    """``_ints(store, name)[rows]`` (rows ascending) without the whole column where the column is sparse."""
    stored = store.columns.get(name)
    if stored is None:
        return np.full(rows.size, -1, np.int32)
    if not isinstance(stored, SparseColumn):
        return _ints(store, name)[rows]
    dtype = int_type(stored)
    mine, theirs = _matches(rows, stored.rows)
    if stored.values.null_count:
        out: np.ndarray = np.full(rows.size, -1, dtype)
        out[mine] = arrow_filled(
            arrow_calls.take(stored.values, numpy_array(theirs, pa.from_numpy_dtype(theirs.dtype))), -1
        )
        return out
    # no nulls: the stored values read in place (no copy) and gathered by numpy, not by an Arrow take and a copy
    values = arrow_filled(stored.values, -1)
    if mine.size == rows.size:  # every row carries it (the GPU ops' correlation ids and streams): no fill
        return values[theirs].astype(dtype, copy=False)
    out = np.full(rows.size, -1, dtype)
    out[mine] = values[theirs]
    return out


# _matches marks the table's rows where the two row sets hold at least one in this many of them.
_MARK_RATIO = 16


def _matches(rows: np.ndarray, carried: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions in ``rows``, positions in ``carried``) of the rows in both; both ascending without repeats.
    The smaller is searched in the larger (the 1.4M copies among 6.6M GPU ops, not the other way round)."""
    if rows.size == carried.size and np.array_equal(rows, carried):  # the very rows that carry the column
        every = np.arange(rows.size)
        return every, every
    table_rows = max(int(rows[-1]), int(carried[-1])) + 1 if rows.size and carried.size else 0
    if (
        table_rows
        and rows.size + carried.size >= table_rows // _MARK_RATIO
        and bool((rows[1:] > rows[:-1]).all())  # some callers' rows are not in row order: searched below
    ):
        # Many rows of the table: a mark per table row and two gathers in row order, not a binary search per row
        # (the 6.6M GPU ops against the 15.7M rows carrying a correlation id: 0.4 s -> 0.2 s)
        # The rows in both are found at the carried marks; unmarking them there leaves the carried rows that are
        # not in both marked (one scatter of the rows in both, not a reset of every carried row and a scatter of
        # every row).
        mark = np.zeros(table_rows, bool)
        mark[carried] = True
        mine = np.flatnonzero(mark[rows])
        mark[rows[mine]] = False
        theirs = mark[carried]
        del mark
        np.logical_not(theirs, out=theirs)
        return mine, np.flatnonzero(theirs)
    if carried.size <= rows.size:
        at = intervals.search_sorted(rows, carried)
        hit = at < rows.size
        hit[hit] = rows[at[hit]] == carried[hit]
        return at[hit], np.flatnonzero(hit)
    at = intervals.search_sorted(carried, rows)
    hit = at < carried.size
    hit[hit] = carried[at[hit]] == rows[hit]
    return np.flatnonzero(hit), at[hit]


def event_columns(trace: Trace) -> EventColumns:
    def compute() -> EventColumns:
        store = trace.store
        released = store.released  # columns analyze released before this view was first built: left out

        def read(column: str, how: Callable[[], Any]) -> Any:
            return None if column in released else how()

        with untracked():  # the sections' reads are noted where they read this view
            # the thread ids (int64 with nulls in a Kineto trace: the dearest read) on a second thread meanwhile, and
            # there numpy.ma imported (numpy's first plain unique imports it: Python work on a section thread)
            tid = start_beside(lambda: read("tid", lambda: _thread_ints(store, "tid")), import_numpy_ma)
            name = read("name", lambda: _codes(store, "name"))  # (codes, values)
            cols = EventColumns(
                kind=read("kind", lambda: kind_positions(store)),
                name=None if name is None else name[0],
                names=None if name is None else np.array(name[1], dtype=object),
                start=read("start_ns", lambda: store.numpy("start_ns")),
                end=read("end_ns", lambda: store.numpy("end_ns")),
                device=read("device", lambda: _small_ints(store, "device")),
                # the store's codes where it holds them so (an Nsight export's): read as arrays, not held as such
                pid=read("pid", lambda: _thread_ints(store, "pid")),
                # a join key: int32 below 2^30 as the others (the one sort key built from them widens first)
                external_id=read("external_id", lambda: _ints(store, "external_id")),
                tid=tid(),
                store=store,
            )
        for column, after in released.items():
            cols.release([column], after)
        return cols

    return memo(trace, "event_columns", compute)


def release_columns(trace: Trace, columns: Collection[str], after: str) -> None:
    """Stop holding the event ``columns`` of ``trace`` (``analyze``, on a trace it owns, after ``after``, their
    last reader): the store's arrays and the numpy views of them in :func:`event_columns`. A later read of one
    raises :class:`~tracelens.reads.ColumnReleasedError`."""
    if not columns:
        return
    cols = held(trace, "event_columns")
    if isinstance(cols, EventColumns):
        cols.release(columns, after)
    trace.store.release(list(columns), after)


def kind_positions(store: EventStore) -> np.ndarray:
    """Each row's kind as its position in ALL_KINDS (int8; -1 for a null or unknown kind). Where the store keeps
    the kinds as int8 codes into ALL_KINDS itself (the Nsight reader), those codes, read in place: no copy of
    a byte a row held through the analysis, and no int32 copy of the codes on the way (41 + 166 MB at 41M rows)."""
    stored = store.columns.get("kind")
    if (
        isinstance(stored, pa.DictionaryArray)
        and stored.indices.type == pa.int8()
        and stored.null_count == 0
        and stored.dictionary.to_pylist() == list(ALL_KINDS[: len(stored.dictionary)])
    ):
        return arrow_filled(stored.indices, -1)
    kind_codes, kind_values = _codes(store, "kind")
    kind_map = np.array([ALL_KINDS.index(k) if k in ALL_KINDS else -1 for k in kind_values] + [-1], np.int8)
    return kind_map[kind_codes]  # a null code (-1) picks the trailing -1


def _codes(store: EventStore, name: str) -> tuple[np.ndarray, list[Any]]:
    """A dense dictionary column's indices (null -> -1; int32, no copy when nothing is null) and values."""
    stored = store.columns.get(name)
    if stored is None or isinstance(stored, (SparseColumn, CodedColumn, DeferredColumn)):
        return dictionary_codes(store.column(name))
    array = stored if pa.types.is_dictionary(stored.type) else arrow_calls.dictionary_encode(stored)
    indices = array.indices
    if indices.null_count == 0 and indices.type == pa.int32():
        return arrow_filled(indices, -1), array.dictionary.to_pylist()
    return arrow_filled(indices, -1).astype(np.int32), array.dictionary.to_pylist()


def _equals_at(store: EventStore, name: str, value: str, rows: np.ndarray) -> np.ndarray:
    """``_equals(store, name, value)[rows]`` (rows ascending) without the whole column where it is sparse."""
    stored = store.columns.get(name)
    if stored is None or not isinstance(stored, SparseColumn):
        return _equals(store, name, value)[rows]
    codes, dictionary = dictionary_codes(stored.values)
    match = np.array([v == value for v in dictionary] + [False], bool)[codes]
    out = np.zeros(rows.size, bool)
    mine, theirs = _matches(rows, stored.rows)
    out[mine] = match[theirs]
    return out


def _equals(store: EventStore, name: str, value: str) -> np.ndarray:
    """Rows whose dictionary column ``name`` equals ``value`` (False where null), read from the stored values."""
    out = np.zeros(store.num_rows, bool)
    stored = store.columns.get(name)
    if stored is None:
        return out
    values = stored.values if isinstance(stored, SparseColumn) else stored
    codes, dictionary = dictionary_codes(values)
    match = np.array([v == value for v in dictionary] + [False], bool)[codes]
    if isinstance(stored, SparseColumn):
        out[stored.rows] = match
        return out
    return match


def api_calls(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(event rows of the runtime and driver calls, ascending; their correlation ids, -1 where none): the ids read
    once per trace for the sections that join calls to GPU ops (launch pairs, memcpy's launch mode, the
    completeness check). Only the ids are kept (4 bytes per call); the rows are found again on each call."""
    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER))

    def compute() -> np.ndarray:
        ids = cols.at("correlation_id", rows)
        ids.flags.writeable = False  # shared: read only
        return ids

    return rows, memo(trace, "api_correlation", compute)


@dataclass
class DeviceBusy:
    device: int
    busy_starts: np.ndarray  # merged, sorted, disjoint
    busy_ends: np.ndarray
    first_start_ns: int
    last_end_ns: int

    @property
    def span_ns(self) -> int:
        return self.last_end_ns - self.first_start_ns

    @property
    def busy_ns(self) -> int:
        return int((self.busy_ends - self.busy_starts).sum())

    @property
    def gap_starts(self) -> np.ndarray:
        return self.busy_ends[:-1]

    @property
    def gap_ends(self) -> np.ndarray:
        return self.busy_starts[1:]


def busy_gpu_equivalents(busy: dict[int, DeviceBusy]) -> float:
    """n_eff of the GPUs with activity (``document.summary.gpu_equivalents``, docs/analyses.md "GPU-time
    weighting"): Σ span_ns / the union of their windows (the diagnosis span); 1.0 for one GPU, n for n GPUs over
    one window. A per-GPU figure is a sum over the GPUs / n_eff."""
    windows = [(b.first_start_ns, b.last_end_ns) for b in busy.values()]
    return gpu_equivalents([b.span_ns for b in busy.values()], windows_union(windows))


def device_busy(trace: Trace) -> dict[int, DeviceBusy]:
    """The merged busy intervals of every GPU with activity, keyed by device id."""

    def compute() -> dict[int, DeviceBusy]:
        cols = event_columns(trace)
        # one compiled pass over the event rows where it applies (busy_scan): the same merged intervals
        scanned = merged_busy(cols.kind, cols.device, cols.start, cols.end)
        if scanned is not None:
            return {d: DeviceBusy(d, s, e, least, largest) for d, s, e, least, largest in scanned}
        gpu = np.flatnonzero(
            cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)
        )  # gathers by index: faster
        devices, starts_all, ends_all = cols.device[gpu], cols.start[gpu], cols.end[gpu]
        out: dict[int, DeviceBusy] = {}
        for device in np.unique(devices):
            sel = devices == device
            starts, ends = starts_all[sel], ends_all[sel]
            s, e = intervals.merge(starts, ends)
            out[int(device)] = DeviceBusy(int(device), s, e, int(starts.min()), int(ends.max()))
        return out

    return memo(trace, "device_busy", compute)
