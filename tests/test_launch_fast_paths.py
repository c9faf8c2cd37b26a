"""launch's fast paths give what the earlier computations give (speed lives in benchmarks/).

- queue_depth: the events sorted as packed keys (no argsort), first and last times read at each stream's run,
  and the three-key fallback, against the argsort sweep with np.minimum.at / np.maximum.at it replaced.
- launch_pairs / launch_calls: the GPU ops found at the rows carrying a device, the calls and the GPU ops told
  apart at the rows carrying a correlation id, the calls sorted as packed keys, the stream read at the device
  rows' positions, against the table-long masks, api_calls, EventColumns.at and the stable argsort they replaced
  (reference_launch_pairs, reference_call_rows: also read by benchmarks/bench_launch_pairs.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import call_join, launch
from tracelens.analyses.columns import Table, api_calls, event_columns
from tracelens.trace import ALL_KINDS, DRIVER, GPU_ACTIVITY_KINDS, KERNEL, EventStore, SparseColumn, Trace


def reference_queue_depth(pairs: Table) -> list[dict[str, Any]]:
    """The computation queue_depth replaced (argsort of the packed key, ufunc.at for the first/last times)."""
    m = pairs[pairs["matched"]]
    if m.empty:
        return []
    codes, uniques = pd.factorize(
        m["device"].astype(np.int64) * (1 << 32) + (m["stream"].astype(np.int64) & 0xFFFFFFFF)
    )
    launch_end = m["launch_end"]
    gpu_end = np.maximum(m["end"], launch_end)
    outstanding = np.bincount(codes, weights=gpu_end - launch_end, minlength=len(uniques))
    first = np.full(len(uniques), np.iinfo(np.int64).max)
    np.minimum.at(first, codes, launch_end)
    last = np.zeros(len(uniques), np.int64)
    np.maximum.at(last, codes, gpu_end)
    ops = np.bincount(codes, minlength=len(uniques))
    lo = int(launch_end.min())
    stream_code = np.concatenate([codes, codes]).astype(np.int64)
    times = np.concatenate([gpu_end, launch_end]) - lo
    is_launch = np.concatenate([np.zeros(codes.size, np.int64), np.ones(codes.size, np.int64)])
    order = np.lexsort((is_launch, times, stream_code))
    csum = np.cumsum(2 * is_launch[order] - 1)
    group_start = np.searchsorted(stream_code[order], np.arange(len(uniques)))
    base = np.concatenate([[0], csum[group_start[1:] - 1]])
    maxima = np.maximum.reduceat(csum, group_start) - base
    out = []
    for i, key in enumerate(uniques):
        span = int(last[i] - first[i])
        low = int(key) & 0xFFFFFFFF
        out.append(
            {
                "device": int(key) >> 32,
                "stream": low - (1 << 32) if low >= (1 << 31) else low,
                "max": int(maxima[i]),
                "mean": float(outstanding[i] / span) if span > 0 else 0.0,
                "ops": int(ops[i]),
            }
        )
    return sorted(out, key=lambda q: (q["device"], q["stream"]))


ops_strategy = st.lists(
    st.tuples(
        st.integers(0, 2),  # device
        st.integers(-2, 3),  # stream (negative: a stream id read as signed)
        st.integers(-5, 40),  # launch end
        st.integers(-3, 30),  # op end minus launch end (negative: an op ending before its launch call)
        st.booleans(),  # matched
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops_strategy, st.sampled_from([0, 10**6]))
def test_queue_depth_equals_the_argsort_sweep(ops: list[tuple[int, int, int, int, bool]], shift: int) -> None:
    launch_end = np.array([o[2] + shift for o in ops], np.int64)
    pairs = Table(
        {
            "device": np.array([o[0] for o in ops], np.int8),
            "stream": np.array([o[1] for o in ops], np.int32),
            "launch_end": launch_end,
            "end": launch_end + np.array([o[3] for o in ops], np.int64),
            "matched": np.array([o[4] for o in ops], bool),
        }
    )
    want = reference_queue_depth(pairs)
    assert launch.queue_depth(pairs) == want
    saved = launch.KEY_LIMIT
    launch.KEY_LIMIT = 0  # every span too wide to pack: the three-key sort
    try:
        assert launch.queue_depth(pairs) == want
    finally:
        launch.KEY_LIMIT = saved


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 4), st.integers(0, 30)), min_size=1, max_size=40))
def test_sync_calls_by_position_equal_a_stable_sort(calls: list[tuple[int, int, int]]) -> None:
    """sync._by_position: calls in start order grouped by thread vs the stable sort of their (thread, start)
    positions; out of start order, that sort itself."""
    from tracelens.analyses import sync
    from tracelens.analyses.columns import thread_key, thread_time_positions

    for in_order in (True, False):
        rows = sorted(calls, key=lambda c: c[2]) if in_order else calls
        key = thread_key(np.array([c[0] for c in rows], np.int32), np.array([c[1] for c in rows], np.int32))
        start = np.array([c[2] for c in rows], np.int64)
        (positions,) = thread_time_positions([(key, [start])])
        want = np.argsort(positions, kind="stable")
        assert sync._by_position(key, positions, start).tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, 8), st.booleans(), st.integers(0, 50)),  # id (-1: none), driver, start
        max_size=25,
    )
)
def test_call_rows_equal_a_sort_by_id_runtime_first_then_earliest(calls: list[tuple[int, bool, int]]) -> None:
    """launch._call_rows (a sort on the id alone where no call is a driver call; no selection where every id
    is once) against the rule: per id, the runtime call before driver calls, then the earliest (row order)."""
    from tracelens.analyses.columns import event_columns
    from tracelens.trace import ALL_KINDS, Trace

    rows = [
        {
            "kind": "driver" if driver else "runtime",
            "name": "cuLaunchKernel" if driver else "cudaLaunchKernel",
            "start_ns": start,
            "end_ns": start + 1,
            "pid": 1,
            "tid": 1,
            "correlation_id": None if corr < 0 else corr,
        }
        for corr, driver, start in sorted(calls, key=lambda c: c[2])
    ]
    trace = Trace.from_rows(rows or [{"kind": "runtime", "name": "x", "start_ns": 0, "end_ns": 1}])
    cols = event_columns(trace)
    table_rows = [
        (int(cols.at("correlation_id", np.array([r]))[0]), int(cols.kind[r]), r)
        for r in range(cols.kind.size)
    ]
    best: dict[int, tuple[int, int]] = {}
    for corr, kind, row in table_rows:
        if corr >= 0:
            rank = (kind == ALL_KINDS.index("driver"), row)
            best[corr] = min(best.get(corr, rank), rank)
    ids, call_rows, unique = launch._call_rows(trace)
    assert ids.tolist() == sorted(best)
    assert call_rows.tolist() == [best[c][1] for c in sorted(best)]
    with_id = [c for c, _, _ in table_rows if c >= 0]
    assert unique == (len(with_id) == len(set(with_id)))


def reference_call_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray, bool]:
    """launch._call_rows as it was: the calls from api_calls (a table-long mask, a match of the calls against
    the rows carrying an id), a stable argsort on (id, driver) and two gathers by its order."""
    cols = event_columns(trace)
    api, corr = api_calls(trace)
    with_id = corr >= 0
    if not with_id.all():
        api, corr = api[with_id], corr[with_id]
    del with_id
    is_driver = cols.kind[api] == ALL_KINDS.index(DRIVER)
    key = corr.astype(np.int64) * 2 + is_driver if is_driver.any() else corr
    del is_driver
    order = np.argsort(key, kind="stable")
    del key
    corr = corr[order]
    first = np.ones(order.size, bool)
    first[1:] = corr[1:] != corr[:-1]
    if first.all():
        return corr, api[order], True
    return corr[first], api[order[first]], False


def reference_launch_pairs(trace: Trace) -> tuple[Table, bool]:
    """launch_pairs' computation as it was (not memoized): (the pairs, whether every call's id is its own)."""
    cols = event_columns(trace)
    gpu = np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))
    call_corr, call_rows, unique = reference_call_rows(trace)
    op_corr = cols.at("correlation_id", gpu)
    idx = np.minimum(np.searchsorted(call_corr, op_corr), max(call_corr.size - 1, 0))
    matched = (op_corr >= 0) & (call_corr.size > 0) & (call_corr[idx] == op_corr if call_corr.size else False)
    on = np.flatnonzero(matched)
    launch_row = call_rows[idx[on]]
    del call_corr, call_rows, idx

    def from_calls(column: np.ndarray, fill: int) -> np.ndarray:
        out = np.full(gpu.size, fill, column.dtype)
        out[on] = column[launch_row]
        return out

    return Table(
        {
            "is_kernel": cols.kind[gpu] == ALL_KINDS.index(KERNEL),
            "name": cols.name[gpu],
            "device": cols.device[gpu],
            "stream": cols.at("stream", gpu),
            "start": cols.start[gpu],
            "end": cols.end[gpu],
            "graph_id": cols.at("graph_id", gpu),
            "bytes": cols.at("bytes", gpu),
            "is_dtoh": cols.at("is_dtoh", gpu),
            "correlation_id": op_corr,
            "matched": matched,
            "launch_start": from_calls(cols.start, 0),
            "launch_end": from_calls(cols.end, 0),
            "pid": from_calls(cols.pid, -1),
            "tid": from_calls(cols.tid, -1),
            "launch_name": from_calls(cols.name, -1),
            "external_id": from_calls(cols.external_id, -1),
            "launch_row": launch._rows_or(
                gpu.size, on, launch_row, np.int32 if cols.start.size < 2**31 else np.int64
            ),
        }
    ), unique


PAIRS_COLUMNS = (
    "is_kernel name device stream start end graph_id bytes is_dtoh correlation_id matched launch_start launch_end "
    "pid tid launch_name external_id launch_row"
).split()

event_strategy = st.tuples(
    st.sampled_from(["kernel", "memcpy", "memset", "gpu_sync", "runtime", "driver", "cpu_op"]),
    st.sampled_from([None, 0, 1]),  # device
    st.sampled_from([None, 0, 7, 2**20]),  # stream
    st.integers(-1, 9),  # correlation id (-1: none)
    st.integers(0, 60),  # start
    st.integers(0, 5),  # duration
    st.sampled_from([None, 3, 5]),  # graph id
    st.booleans(),  # a device-to-host copy (memcpy)
)


def _rows(events: list[tuple[Any, ...]], fillers: int, id_offset: int) -> list[dict[str, Any]]:
    rows = []
    for kind, device, stream, corr, start, duration, graph, dtoh in events:
        gpu = kind in ("kernel", "memcpy", "memset", "gpu_sync")
        rows.append(
            {
                "kind": kind,
                "name": f"{kind}{corr % 3}",
                "start_ns": start,
                "end_ns": start + duration,
                "device": device if gpu else None,
                "stream": stream if gpu else None,
                "pid": None if gpu else 1 + corr % 2,
                "tid": None if gpu else 10 + corr % 3,
                "correlation_id": None if corr < 0 else corr + id_offset,
                "external_id": None if gpu or corr % 2 else corr * 5,
                "graph_id": graph if kind == "kernel" else None,
                "bytes": 64 * (corr + 2) if kind in ("memcpy", "memset") else None,
                "copy_kind": ("DtoH" if dtoh else "HtoD") if kind == "memcpy" else None,
            }
        )
    # host rows carrying none of the join's columns: with many, the columns are stored sparse
    rows += [
        {"kind": "cpu_op", "name": "op", "start_ns": i, "end_ns": i + 1, "pid": 1, "tid": 10}
        for i in range(fillers)
    ]
    return rows


def _with_empty_columns(trace: Trace) -> Trace:
    """The trace with graph ids and copy kinds stored as sparse columns of no rows (as the Nsight reader stores a
    column no row carries), replacing what its rows carry."""
    columns = dict(trace.store.columns)
    columns["graph_id"] = SparseColumn(np.zeros(0, np.int32), pa.array([], pa.int64()))
    columns["copy_kind"] = SparseColumn(
        np.zeros(0, np.int32), pa.array([], pa.dictionary(pa.int32(), pa.string()))
    )
    return Trace(EventStore(trace.store.num_rows, columns), trace.devices, trace.metadata)


def _with_null_ids(trace: Trace) -> Trace:
    """The trace with its correlation ids stored sparse at every call and GPU op row, null where one has none."""
    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind("runtime", "driver", *GPU_ACTIVITY_KINDS)).astype(np.int32)
    ids = trace.store.take("correlation_id", rows)
    columns = dict(trace.store.columns)
    columns["correlation_id"] = SparseColumn(rows, ids)
    return Trace(EventStore(trace.store.num_rows, columns), trace.devices, trace.metadata)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(event_strategy, max_size=30),
    st.sampled_from([0, 4, 80]),
    st.sampled_from([0, 2**29, 2**31]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_launch_pairs_equal_the_table_long_masks_and_stable_argsort(
    events: list[tuple[Any, ...]], fillers: int, id_offset: int, null_ids: bool, packed: bool, empty: bool
) -> None:
    """Every column (values and dtypes) of launch_pairs, launch_calls' rows, call_ids_unique and the api ids
    launch_pairs stores for columns.api_calls, against the code they replaced: dense and sparse columns (few or
    many host rows), ids past the packed sort's limit, ids null in a sparse column, repeated ids, driver calls,
    GPU ops without a device or an id, stream rows that are not the device rows (gpu_sync), columns no row
    carries (absent, or sparse with no rows)."""
    rows = _rows(events, fillers, id_offset) or [{"kind": "runtime", "name": "x", "start_ns": 0, "end_ns": 1}]

    def build() -> Trace:
        trace = Trace.from_rows(rows)
        trace = _with_empty_columns(trace) if empty else trace
        return _with_null_ids(trace) if null_ids else trace

    want, want_unique = reference_launch_pairs(build())
    want_calls = reference_call_rows(build())
    reference = build()
    want_api = api_calls(reference)[1]
    saved = call_join.PACKED_BITS
    if not packed:
        call_join.PACKED_BITS = 0  # no key fits: the stable argsort
    try:
        trace = build()
        got = launch.launch_pairs(trace)
        got_calls = launch._call_rows(build())
        got_unique = launch.call_ids_unique(trace)
    finally:
        call_join.PACKED_BITS = saved
    for name in PAIRS_COLUMNS:
        assert got[name].dtype == want[name].dtype, name
        assert np.array_equal(got[name], want[name]), name
    _assert_selections_equal(got, want)
    assert got_unique == want_unique
    assert got_calls[2] == want_calls[2]
    for mine, theirs in zip(got_calls[:2], want_calls[:2], strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
    # the api ids as columns.api_calls computes them (launch_pairs stored them where every call carries one)
    api_ids = api_calls(trace)[1]
    assert api_ids.dtype == want_api.dtype and np.array_equal(api_ids, want_api)
    assert not api_ids.flags.writeable
    table = launch.launch_calls(build())
    assert np.array_equal(table["correlation_id"], want_calls[0])
    assert np.array_equal(table["row"], want_calls[1])


def _assert_selections_equal(got: Table, want: Table) -> None:
    """The lean pairs read as the materialized ones: each column read again (a gathered column anew, not changed by
    a reader writing into the array of the previous read), and at row selections (a mask, positions out of order
    and repeated, none), read straight at the selected rows."""
    size = len(want)
    assert len(got) == size
    rng = np.random.default_rng(size)
    selections = [
        rng.random(size) < 0.5,
        rng.integers(0, size, 2 * size) if size else np.zeros(0, np.int64),
        np.zeros(0, np.int64),
        want["matched"],
    ]
    for name in PAIRS_COLUMNS:
        first = got[name]
        if first is not got[name] and first.flags.writeable and first.size:  # a new array on each read
            first[:] = first[::-1].copy()  # a reader's in-place work on the array it was given
        again = got[name]
        assert again.dtype == want[name].dtype and np.array_equal(again, want[name]), name
        for rows in selections:
            picked, expected = got[rows], want[rows]
            assert len(picked) == len(expected)
            assert picked[name].dtype == expected[name].dtype, name
            assert np.array_equal(picked[name], expected[name]), name
            # a selection of a selection
            half = picked[np.arange(len(picked))[::2]]
            assert np.array_equal(half[name], expected[name][::2]), name


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint16]),
    st.sampled_from([None, np.int32, np.int64]),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, 255, 256, 2**16, 2**32 - 1, 2**32]),
)
def test_narrowed_columns_read_as_the_values(
    values_type: Any, out_type: Any, raw: list[int], base: int, spread: int
) -> None:
    """lean_columns.narrowed (offsets from the least value in 1, 2 or 4 bytes) reads as ``values.astype(dtype)``,
    whole and at rows, for values near the type's ends and spans at the edges of each offset type."""
    from tracelens.analyses.columns import LazyColumn
    from tracelens.analyses.lean_columns import narrowed

    info = np.iinfo(values_type)
    lo = min(max(base, info.min), info.max)
    hi = min(lo + spread, info.max)
    values = np.array([lo + (r % (hi - lo + 1)) for r in raw] + [lo, hi], values_type)
    dtype = np.dtype(values_type if out_type is None else out_type)
    if dtype.itemsize < values.itemsize or (dtype.kind == "i" and values.dtype.kind == "u"):
        return  # not a widening: the readers never ask for one
    want = values.astype(dtype)
    got = narrowed(values, out_type)
    table = Table({"v": got})
    assert table["v"].dtype == dtype and np.array_equal(table["v"], want)
    rows = np.array([r % values.size for r in raw], np.int64)[::-1]
    assert table[rows]["v"].dtype == dtype and np.array_equal(table[rows]["v"], want[rows])
    if isinstance(got, LazyColumn):
        (offsets,) = got.held
        assert offsets.itemsize < dtype.itemsize
