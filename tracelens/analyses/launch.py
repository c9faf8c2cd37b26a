"""Launch stalls: how long GPU work waits after its launch call, and whether the host keeps up.

Definitions (docs/analyses.md, "launch"):
    launch call     = the runtime/driver row whose correlation_id equals the GPU op's (one per id: runtime
                      rows before driver rows, then the earliest)
    launch latency  = per launch call, its first GPU op's start - the call's end, clipped at 0 (negative values
                      counted as clock skew); one op per call but for graph launches
    short kernel    = kernel duration < its launch call's duration
    small kernel    = kernel duration < SMALL_KERNEL_NS; small_kernel_share = their summed time / all kernel time;
                      count_share = their number / all kernels
    issue rate      = launch calls that enqueued a GPU op / (last such call end - first such call start), per s
    execution rate  = GPU ops / device busy time, per second; issue_to_execution = the ops the launch calls
                      enqueued per second (one per call, all of its graph's for a graph launch) / (execution
                      rate x n_eff, the GPUs running at once); null where most GPU ops have no launch call
    queue depth     = per stream, ops launched and not finished: +1 at the launch call end, -1 at the GPU op
                      end (at equal times the -1 first); max and time-weighted mean over [first launch end, last op end)
    CUDA graphs     = (cuda|hip|cu)GraphLaunch calls, GPU ops with graph_id
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .. import arrow_calls
from ..arrow_read import arrow_filled, arrow_numpy
from ..trace import ALL_KINDS, DRIVER, GPU_ACTIVITY_KINDS, KERNEL, RUNTIME, SparseColumn, Trace, numpy_array
from ..values import first_seen_codes, sorted_distinct
from .call_join import keyed_calls, launch_rows, sorted_calls
from .columns import (
    EventColumns,
    LazyColumn,
    Table,
    api_calls,
    busy_gpu_equivalents,
    device_busy,
    dictionary_codes,
    event_columns,
    int_type,
    memo,
)
from .graph_launches import first_op_latency, graph_launches
from .id_split import split_id_rows
from .lean_columns import gathered, gathered_where, narrowed, scattered
from .stream_depth import merged_stream_depth, stream_of

SMALL_KERNEL_NS = 10_000
PERCENTILES = (50, 90, 99)


def launch_calls(trace: Trace) -> Table:
    """Runtime and driver rows that carry a correlation id, one per id (runtime first, then earliest).

    Sorted by correlation_id. Columns: correlation_id, launch_start, launch_end, pid, tid, is_driver,
    launch_name (code into ``event_columns(trace).names``), external_id, row (the call's event row).
    Not cached: :func:`launch_pairs` (cached) holds what the sections read of them.
    """
    cols = event_columns(trace)
    corr, keep, _ = _call_rows(trace)
    return Table(
        {
            "correlation_id": corr,
            "launch_start": cols.start[keep],
            "launch_end": cols.end[keep],
            "pid": cols.pid[keep],
            "tid": cols.tid[keep],
            "is_driver": cols.kind[keep] == ALL_KINDS.index(DRIVER),
            "launch_name": cols.name[keep],
            "external_id": cols.external_id[keep],
            "row": keep,
        }
    )


def _call_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray, bool]:
    """(correlation ids, ascending; the event row of each one's launch call (int64); whether no two calls share an
    id): the rows of :func:`launch_calls` without gathering their columns (8.8M calls on a training export, of
    which the GPU ops read a few)."""
    _, ids, rows, is_driver = _join_ids(trace, event_columns(trace), None)
    return sorted_calls(ids, rows, is_driver)


_RUNTIME_CODE, _DRIVER_CODE = ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER)
_GPU_CODES = tuple(sorted(ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS))


def _gpu_kind(kind: np.ndarray) -> np.ndarray:
    """Whether each kind code is a GPU activity kind (a comparison per kind, as ``EventColumns.of_kind``)."""
    mask = kind == _GPU_CODES[0]
    for code in _GPU_CODES[1:]:
        mask |= kind == code
    return mask


def _gpu_rows(cols: EventColumns) -> tuple[np.ndarray, np.ndarray | None]:
    """(the GPU ops' event rows, ascending (int32 or int64): kernel/memcpy/memset rows with a device; where the device
    column is stored sparse, their positions among the rows carrying it, else None)."""
    gpu, on_device, _ = _gpu_rows_and_kinds(cols)
    return gpu, on_device


def _gpu_rows_and_kinds(cols: EventColumns) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """:func:`_gpu_rows`, and the GPU ops' kinds where read (else None). Where few rows carry a device (the GPU ops of
    an Nsight export, a sixth of its rows), the kinds are read at those rows, not over the whole table."""
    stored = cols.store.columns.get("device") if cols.store is not None else None
    if not isinstance(stored, SparseColumn):
        return np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)), None, None
    kind = _kinds_at(cols, stored.rows)
    on = _gpu_kind(kind)
    on &= arrow_filled(stored.values, -1) >= 0  # the column's own values: no gather
    at = np.flatnonzero(on)
    return stored.rows[at], at, kind[at]  # the rows in their stored type (int32): read by Arrow's take below


def _kinds_at(cols: EventColumns, rows: np.ndarray) -> np.ndarray:
    """``cols.kind[rows]`` (read only) by Arrow's take: numpy converts int32 positions to int64 before its gather
    and gathers bytes slower (4.2M rows carrying an id at x400: 14 -> 5 ms)."""
    return _arrow_take(cols.kind, rows)


def _take(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` of a plain numeric array (read only where Arrow's take is used): Arrow's take for int32
    ``rows`` (numpy would widen them to int64 first), numpy's gather otherwise."""
    if (
        rows.dtype != np.int32
        or not isinstance(values, np.ndarray)
        or values.dtype.kind not in "iu"
        or not values.flags.c_contiguous
    ):
        return np.asarray(values[rows])
    return _arrow_take(values, rows)


def _arrow_take(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``values[rows]`` (read only) by Arrow's take, the arrays wrapped without ``pa.array`` and read back without
    ``to_numpy`` (both import pandas)."""
    taken = arrow_calls.take(_as_arrow(values), _as_arrow(rows))
    return arrow_numpy(taken)


def _as_arrow(values: np.ndarray) -> pa.Array:
    return numpy_array(values, pa.from_numpy_dtype(values.dtype))


def _join_ids(
    trace: Trace, cols: EventColumns, gpu: np.ndarray | None
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """(the correlation ids of the GPU ops ``gpu`` (from :func:`_gpu_rows`; None without them); the ids, event
    rows (int32 or int64) and driver flags of the runtime and driver calls that carry one, in row order).

    Where the id column is stored sparse (only calls and GPU ops carry one), the calls and the GPU ops are told
    apart by the kinds at the carrying rows: one gather of the kinds, not a table-long mask and a match against
    the carrying rows for each of the two (``columns.api_calls``, ``EventColumns.at``). The calls' ids are
    ``columns.api_calls``' shared value where every call carries one: stored for its other readers."""
    stored = cols.store.columns.get("correlation_id") if cols.store is not None else None
    if not isinstance(stored, SparseColumn):
        api, corr = api_calls(trace)
        with_id = corr >= 0
        if not with_id.all():  # every call has one on an Nsight export: no copy of the 8.8M calls then
            api, corr = api[with_id], corr[with_id]
        is_driver = cols.kind[api] == _DRIVER_CODE
        return (None if gpu is None else cols.at("correlation_id", gpu)), corr, api, is_driver
    dtype = int_type(stored)
    ids_at = arrow_filled(stored.values, -1)
    # one compiled pass over the carrying rows where built (id_split): the same arrays as the steps below
    split = split_id_rows(cols.kind, stored.rows, ids_at, gpu, dtype)
    if split is not None:
        op_ids = split.op_ids
        if gpu is not None and op_ids is None:  # the GPU ops among the carrying rows are not exactly gpu's
            op_ids = cols.at("correlation_id", gpu)
        return _calls_with_id(
            trace, op_ids, split.ids, split.rows, split.is_driver, split.runtimes + split.drivers
        )
    kind = _kinds_at(cols, stored.rows)
    op_ids = None
    if gpu is not None:
        is_op = _gpu_kind(kind)
        op_rows = stored.rows[is_op]
        # every GPU op carries an id and no GPU-kind row without a device does (an Nsight export): the ids as they
        # are stored; else matched at the GPU ops' rows
        if op_rows.size == gpu.size and np.array_equal(op_rows, gpu):
            op_ids = ids_at[is_op].astype(dtype, copy=False)
        else:
            op_ids = cols.at("correlation_id", gpu)
        del is_op, op_rows
    # boolean selections, not positions and gathers by them: one pass each; no driver call in the table (an Nsight
    # export's runtime calls only): no test of the calls' kinds
    drivers = np.count_nonzero(cols.kind == _DRIVER_CODE)
    is_call = kind == _RUNTIME_CODE
    if drivers:
        is_call |= kind == _DRIVER_CODE
    ids = ids_at[is_call].astype(dtype, copy=False)
    rows = stored.rows[is_call]  # int32 where stored so: match_calls packs them as they are
    is_driver = kind[is_call] == _DRIVER_CODE if drivers else np.zeros(ids.size, bool)
    del kind, is_call
    return _calls_with_id(
        trace, op_ids, ids, rows, is_driver, int(np.count_nonzero(cols.kind == _RUNTIME_CODE)) + drivers
    )


def _calls_with_id(
    trace: Trace,
    op_ids: np.ndarray | None,
    ids: np.ndarray,
    rows: np.ndarray,
    is_driver: np.ndarray,
    api_rows: int,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_join_ids`' answer from the carrying calls' ids, rows and driver flags: the ids shared as
    ``api_calls``' where every one of the table's ``api_rows`` runtime and driver calls carries one, then the calls
    without an id (-1) dropped."""
    if ids.size == api_rows:
        ids.flags.writeable = False  # shared: read only
        shared = ids
        memo(trace, "api_correlation", lambda: shared)
    with_id = ids >= 0
    if not with_id.all():
        ids, rows, is_driver = ids[with_id], rows[with_id], is_driver[with_id]
    return op_ids, ids, rows, is_driver


def launch_pairs(trace: Trace) -> Table:
    """One row per GPU op (kernel/memcpy/memset with a device) joined to its launch call where one exists.

    Columns: is_kernel, name (code), device, stream, start, end, graph_id, bytes, is_dtoh, correlation_id,
    matched, and from the launch call: launch_start, launch_end, pid, tid, launch_name (code), external_id,
    launch_row (0 or -1 where unmatched: read them only where ``matched``).

    Held for most of the analysis, so held lean (:mod:`.lean_columns`): the GPU ops' event rows and their launch
    calls' (int32 where the table's rows fit), matched, is_kernel and device as arrays; the columns read from the
    event columns at those rows (name, start, end and the launch call's) gathered again on each read of the whole
    table, as are bytes and is_dtoh (set at the copies only); stream and correlation_id held in fewer bytes and
    widened on each read. A reader reads each column of the whole table once (a new array each time), or selects
    rows first (``pairs[rows]["start"]``: one gather at those rows).
    """

    def compute() -> Table:
        cols = event_columns(trace)
        gpu, on_device, gpu_kind = _gpu_rows_and_kinds(cols)
        row_type = np.int32 if cols.start.size < 2**31 else np.int64
        op_corr, matched, launch_row, unique = _joined(trace, cols, gpu, row_type)
        memo(trace, "call_ids_unique", lambda: unique)

        def from_calls(name: str, fill: int) -> LazyColumn:
            return gathered_where(cols, name, launch_row, matched, fill)

        gpu_kind = _take(cols.kind, gpu) if gpu_kind is None else gpu_kind
        is_kernel = gpu_kind == ALL_KINDS.index(KERNEL)
        stream, graph_id, copy_bytes, is_dtoh = (
            _at_gpu_ops(cols, name, gpu, gpu_kind, on_device)
            for name in ("stream", "graph_id", "bytes", "is_dtoh")
        )
        del gpu_kind, on_device
        op_row = gpu.astype(row_type, copy=False)
        device = _take(cols.device, gpu)
        del gpu
        return Table(
            {
                "is_kernel": is_kernel,
                "name": gathered(cols, "name", op_row),
                "device": device,
                "stream": stream,
                "start": gathered(cols, "start", op_row),
                "end": gathered(cols, "end", op_row),
                "graph_id": graph_id,
                "bytes": copy_bytes,
                "is_dtoh": is_dtoh,
                "correlation_id": narrowed(op_corr),
                "matched": matched,
                "launch_start": from_calls("start", 0),
                "launch_end": from_calls("end", 0),
                "pid": from_calls("pid", -1),
                "tid": from_calls("tid", -1),
                "launch_name": from_calls("name", -1),
                "external_id": (
                    from_calls("external_id", -1) if _carried(cols, "external_id") else _none(op_row.size)
                ),
                "launch_row": launch_row,
            }
        )

    return memo(trace, "launch_pairs", compute)


def _joined(
    trace: Trace, cols: EventColumns, gpu: np.ndarray, row_type: type
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """(the GPU ops' ids; per op, whether a call carries its id, its launch call's row (-1 where none); whether no
    two calls share an id): by call_join.keyed_calls where it answers, else :func:`_join_ids` and launch_rows."""
    stored = cols.store.columns.get("correlation_id") if cols.store is not None else None
    keyed = None
    if isinstance(stored, SparseColumn):
        keyed = keyed_calls(cols.kind, stored.rows, arrow_filled(stored.values, -1), gpu, int_type(stored))
    if keyed is None:
        op_ids, ids, rows, is_driver = _join_ids(trace, cols, gpu)
        assert op_ids is not None
        return op_ids, *launch_rows(op_ids, ids, rows, is_driver, row_type)
    if keyed.call_ids.size == keyed.api_rows:  # every call carries an id: shared as api_calls' ids
        shared = keyed.call_ids
        shared.flags.writeable = False
        memo(trace, "api_correlation", lambda: shared)
    op_corr = cols.at("correlation_id", gpu) if keyed.op_ids is None else keyed.op_ids
    return op_corr, *keyed.join(op_corr, row_type)


def _at_gpu_ops(
    cols: EventColumns, name: str, gpu: np.ndarray, gpu_kind: np.ndarray, on_device: np.ndarray | None
) -> np.ndarray | LazyColumn:
    """``cols.at(name, gpu)`` (an integer column, or is_dtoh) without matching the GPU ops against the rows that
    carry the column (a mark per table row) where it is stored sparse at rows found more cheaply: the very rows
    that carry a device (an Nsight export's stream: read at ``on_device``, the GPU ops' positions among them,
    from :func:`_gpu_rows`), or exactly the GPU ops of the kinds found at its rows (the copies' bytes and copy
    kinds: found by ``gpu_kind``, the GPU ops' kind codes). Held lean (:mod:`.lean_columns`): narrowed, or
    set at the carrying rows on each read."""
    store = cols.store
    key = "copy_kind" if name == "is_dtoh" else name
    stored = store.columns.get(key) if store is not None else None
    # no row carries it (an Nsight export's graph ids without CUDA graphs: a sparse column of no rows)
    if not _carried(cols, key) or (isinstance(stored, SparseColumn) and stored.rows.size == 0):
        return _none(gpu.size, np.False_ if name == "is_dtoh" else np.int32(-1))
    if not isinstance(stored, SparseColumn):
        return narrowed(cols.at(name, gpu))
    device = store.columns.get("device") if store is not None else None
    if (
        on_device is not None
        and isinstance(device, SparseColumn)
        and (stored.rows is device.rows or np.array_equal(stored.rows, device.rows))
    ):
        at: np.ndarray | None = on_device  # every GPU op carries a device, so every one carries this column
        mine = None
    else:
        mine = _positions_by_kind(cols, gpu, gpu_kind, stored.rows)
        if mine is None:
            return narrowed(cols.at(name, gpu))
        at = None
    if name == "is_dtoh":
        codes, dictionary = dictionary_codes(stored.values)
        values: np.ndarray = np.array([v == "DtoH" for v in dictionary] + [False], bool)[codes]
        fill: Any = False
    else:
        values = arrow_filled(stored.values, -1)
        fill = -1
    dtype = bool if name == "is_dtoh" else int_type(stored)
    if at is not None:
        return narrowed(values[at], dtype)
    assert mine is not None
    return scattered(gpu.size, mine.astype(np.int32) if gpu.size < 2**31 else mine, values, fill, dtype)


def _carried(cols: EventColumns, name: str) -> bool:
    """Whether some row may carry the column (always where the columns have no store)."""
    return cols.store is None or cols.store.has(name)


def _none(size: int, value: np.generic | None = None) -> np.ndarray:
    """A column of a value no row carries (-1, or False), as ``EventColumns`` reads one (int32 -1, False): one
    read-only value viewed ``size`` times, no memory per GPU op (the pairs are held for the whole analysis)."""
    return np.broadcast_to(np.int32(-1) if value is None else value, (size,))


def _positions_by_kind(
    cols: EventColumns, gpu: np.ndarray, gpu_kind: np.ndarray, carried: np.ndarray
) -> np.ndarray | None:
    """The positions among the GPU ops ``gpu`` (kind codes ``gpu_kind``) of the rows ``carried`` (ascending) where
    these are exactly the GPU ops of the kinds found at them (a copy's bytes: every memcpy and memset); None
    otherwise."""
    if carried.size == 0:
        return np.zeros(0, np.int64)
    found = np.flatnonzero(np.bincount(_kinds_at(cols, carried) + 1, minlength=len(ALL_KINDS) + 1)) - 1
    if found[0] < 0:  # an unknown kind: not a GPU op
        return None
    candidate = gpu_kind == found[0]
    for code in found[1:]:
        candidate |= gpu_kind == code
    mine = np.flatnonzero(candidate)
    return mine if mine.size == carried.size and np.array_equal(gpu[mine], carried) else None


def call_ids_unique(trace: Trace) -> bool:
    """Whether no two runtime or driver calls share a correlation id (found by :func:`launch_pairs`, which is
    computed first): then a matched GPU op's ``launch_row`` is the one call carrying its id."""
    launch_pairs(trace)
    return memo(trace, "call_ids_unique", lambda: _call_rows(trace)[2])


def _rows_or(size: int, on: np.ndarray, rows: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """``rows`` at positions ``on`` of a ``size``-long array (int32 where the table's rows fit: a value per GPU op
    kept for the whole analysis), -1 elsewhere."""
    out: np.ndarray = np.full(size, -1, dtype)
    out[on] = rows
    return out


def _percentiles(values: np.ndarray) -> dict[str, Any]:
    if values.size == 0:
        return {"count": 0, "mean_ns": None, "max_ns": None, **{f"p{p}_ns": None for p in PERCENTILES}}
    pct = np.percentile(values, PERCENTILES, method="lower")
    return {
        "count": int(values.size),
        "mean_ns": float(values.mean()),
        "max_ns": int(values.max()),
        **{f"p{p}_ns": int(v) for p, v in zip(PERCENTILES, pct, strict=True)},
    }


# (stream, time, side) triples are packed into one int64 key below this size.
KEY_LIMIT = 2**62


def queue_depth(pairs: Table) -> list[dict[str, Any]]:
    """Outstanding launched-but-unfinished ops per (device, stream): max and time-weighted mean."""
    return _matched_queue_depth(matched_ops(pairs))


def matched_ops(pairs: Table) -> Table:
    """``pairs[pairs["matched"]]``, or ``pairs`` itself where every op is matched (a PyTorch profile's): its
    columns then read whole (a copy, or the held array), not gathered at every op's position."""
    matched = pairs["matched"]
    return pairs if bool(matched.all()) else pairs[matched]


def _matched_queue_depth(m: Table) -> list[dict[str, Any]]:
    """:func:`queue_depth` of the matched ops ``m``."""
    if m.empty:
        return []
    codes, uniques = first_seen_codes(
        m["device"].astype(np.int64) * (1 << 32) + (m["stream"].astype(np.int64) & 0xFFFFFFFF)
    )
    launch_end = m["launch_end"]
    gpu_end = np.maximum(m["end"], launch_end)
    del m  # and the columns it gathered (device, stream, end), where no caller holds it
    streams = len(uniques)
    # Each op adds 1 to its stream's depth for (gpu_end - launch_end): the depth's integral is their sum.
    outstanding = np.bincount(codes, weights=gpu_end - launch_end, minlength=streams)
    ops = np.bincount(codes, minlength=streams)
    lo = int(launch_end.min())
    width = int(gpu_end.max()) - lo + 1
    merged = merged_stream_depth(codes, launch_end, gpu_end, streams)  # (ops in order: one walk)
    if merged is not None:
        maxima, first, last = merged
    elif streams * width * 2 < KEY_LIMIT:
        maxima, first, last = _depth_by_sorted_keys(codes, launch_end - lo, gpu_end - lo, streams, width)
        first += lo
        last += lo
    else:  # a span no real trace has (a damaged timestamp): the same by a three-key sort
        maxima, first, last = _depth_by_lexsort(codes, launch_end, gpu_end, streams, lo)
    last = np.maximum(last, 0)  # as a maximum from 0
    out = []
    for i, key in enumerate(uniques):
        span = int(last[i] - first[i])
        out.append(
            {
                "device": int(key) >> 32,
                "stream": stream_of(int(key)),
                "max": int(maxima[i]),
                "mean": float(outstanding[i] / span) if span > 0 else 0.0,
                "ops": int(ops[i]),
            }
        )
    return sorted(out, key=lambda q: (q["device"], q["stream"]))


def _depth_by_sorted_keys(
    codes: np.ndarray, launch_end: np.ndarray, gpu_end: np.ndarray, streams: int, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stream code: (max depth, first event time, last event time), times relative to the first launch end
    and below ``width``. The events sorted as one int64 key each, (stream, time, -1 before +1), which holds all
    the sweep reads: no argsort, no gathers by its order."""
    base = np.multiply(codes, width, dtype=np.int64)
    key = np.empty(2 * codes.size, np.int64)  # the ends, then the launches: filled in place, no temporaries
    np.add(base, gpu_end, out=key[: codes.size])
    np.add(base, launch_end, out=key[codes.size :])
    del base
    key <<= 1
    key[codes.size :] |= 1  # a launch (+1) after an end (-1) at the same time
    # two ascending runs (one stream, its ops in order: a PyTorch profile's): merged by the stable sort (timsort
    # finds the runs: ~6x faster than the quicksort here); else the quicksort (equal keys are equal: the same)
    n = codes.size
    presorted = n > 1 and bool((key[1:n] >= key[: n - 1]).all() and (key[n + 1 :] >= key[n:-1]).all())
    key.sort(kind="stable" if presorted else "quicksort")
    depth = np.bitwise_and(key, 1)  # +1 a launch, -1 an end, summed in place: one array beside the keys
    depth <<= 1
    depth -= 1
    np.cumsum(depth, out=depth)
    group_start = np.searchsorted(key, np.arange(streams, dtype=np.int64) * (2 * width))
    before = np.concatenate([[0], depth[group_start[1:] - 1]])
    maxima = np.maximum.reduceat(depth, group_start) - before
    stream_base = np.arange(streams, dtype=np.int64) * width
    # an op's end is at or after its launch's: a stream's first event is a launch end, its last an op end
    first = (key[group_start] >> 1) - stream_base
    last = (key[np.r_[group_start[1:], key.size] - 1] >> 1) - stream_base
    return maxima, first, last


def _depth_by_lexsort(
    codes: np.ndarray, launch_end: np.ndarray, gpu_end: np.ndarray, streams: int, lo: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_depth_by_sorted_keys` by a three-key sort, for times too far apart to pack in one key."""
    first = np.full(streams, np.iinfo(np.int64).max)
    np.minimum.at(first, codes, launch_end)
    last = np.full(streams, np.iinfo(np.int64).min)
    np.maximum.at(last, codes, gpu_end)
    stream_code = np.concatenate([codes, codes]).astype(np.int64)
    times = np.concatenate([gpu_end, launch_end]) - lo
    is_launch = np.concatenate([np.zeros(codes.size, np.int64), np.ones(codes.size, np.int64)])
    order = np.lexsort((is_launch, times, stream_code))
    depth = np.cumsum(2 * is_launch[order] - 1)
    group_start = np.searchsorted(stream_code[order], np.arange(streams))
    before = np.concatenate([[0], depth[group_start[1:] - 1]])
    return np.maximum.reduceat(depth, group_start) - before, first, last


def launch_stats(trace: Trace) -> dict[str, Any]:
    # Each figure's arrays (row selections of the 6.6M GPU ops of the x1512 export, the columns they gather) go once
    # it is computed: a few live at once; the matched ops' columns, read by several, are gathered once.
    pairs = launch_pairs(trace)
    matched = matched_ops(pairs)
    matched_count = len(matched)
    # The launch calls that enqueued a GPU op: one per correlation id among the matched ops (each matched op
    # carries its call's times), so the calls themselves need not be kept.
    calls = int(sorted_distinct(matched["correlation_id"]).size)
    raw_latency = (
        first_op_latency(matched) if calls < matched_count else matched["start"] - matched["launch_end"]
    )
    latency = {**_percentiles(np.maximum(raw_latency, 0)), "negative_count": int((raw_latency < 0).sum())}
    del raw_latency
    issue_span = int(matched["launch_end"].max() - matched["launch_start"].min()) if calls else 0
    short_kernels, small_kernels = _kernel_figures(pairs, matched)
    depth = _matched_queue_depth(matched)
    del matched
    busy = device_busy(trace)
    total_busy, gpus = sum(b.busy_ns for b in busy.values()), busy_gpu_equivalents(busy)
    issue_rate = calls / (issue_span / 1e9) if issue_span > 0 else None
    exec_rate = len(pairs) / (total_busy / 1e9) if total_busy > 0 else None
    ops_issue_rate = matched_count / (issue_span / 1e9) if issue_span > 0 else None
    joint = exec_rate * gpus if exec_rate and 2 * matched_count > len(pairs) else None
    issue_to_execution = ops_issue_rate / joint if ops_issue_rate and joint else None

    # Nsight gives a graph's kernels a graph id; Kineto gives them the graph launch's correlation id instead.
    graph_calls, by_graph_launch = graph_launches(event_columns(trace), pairs)
    graph_ops = int(((pairs["graph_id"] >= 0) | by_graph_launch).sum())
    del by_graph_launch
    return {
        "gpu_ops": int(len(pairs)),
        "matched_ops": int(matched_count),
        "latency": latency,
        "short_kernels": short_kernels,
        "small_kernels": small_kernels,
        "rates": {
            "launch_calls": calls,
            "issue_span_ns": issue_span,
            "issue_per_s": issue_rate,
            "gpu_busy_ns": int(total_busy),
            "execution_per_s": exec_rate,
            "gpus": gpus,
            "issue_to_execution": issue_to_execution,
        },
        "queue_depth": depth,
        "cuda_graphs": {
            "in_use": bool(graph_calls or graph_ops),
            "graph_launch_calls": graph_calls,
            "graph_ops": graph_ops,
        },
    }


def _kernel_figures(pairs: Table, matched: Table) -> tuple[dict[str, Any], dict[str, Any]]:
    """launch_stats' ``short_kernels`` and ``small_kernels`` (``matched``: the matched ops of ``pairs``)."""
    kernels = pairs[pairs["is_kernel"]]
    k_dur = kernels["end"] - kernels["start"]
    del kernels
    is_kernel = matched["is_kernel"]  # the matched kernels, in row order as among the kernels
    km_dur = (matched["end"] - matched["start"])[is_kernel]
    call_dur = (matched["launch_end"] - matched["launch_start"])[is_kernel]
    del is_kernel
    short = km_dur < call_dur
    del call_dur
    short_kernels = {
        "count": int(short.sum()),
        "kernel_ns": int(km_dur[short].sum()),
        "of_matched_kernels": int(km_dur.size),
    }
    del km_dur, short
    small = k_dur < SMALL_KERNEL_NS
    total_kernel = int(k_dur.sum())
    small_kernels = {
        "threshold_ns": SMALL_KERNEL_NS,
        "count": int(small.sum()),
        "kernel_ns": int(k_dur[small].sum()),
        "total_kernel_ns": total_kernel,
        "share": float(k_dur[small].sum() / total_kernel) if total_kernel > 0 else 0.0,
        "count_share": float(small.sum() / k_dur.size) if k_dur.size else 0.0,
    }
    return short_kernels, small_kernels


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return launch_stats(trace)
