"""The replay graph's host points written by the compiled walk that finds the host calls
(host_calls.host_points_by_thread_runs: each call's two points written as the walk finds it, into point arrays with room
for every row a call and the GPU ops after them) equal the numpy path (host_calls.host_points_by_numpy over the calls
found row by row, the fallback without a C compiler) and a plain-Python reference of the points: rows with ties,
nesting (fewer calls than rows: the points moved to arrays of their size), zero-length rows, step markers, several
threads, none and one row; and the GPU ops' launch calls read with the calls' starts among the points' times
(host_calls.launch_calls with call_start_step 2) against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_replay_host_calls import CALL, MARKER, OTHER, ROWS, reference, table
from tracelens.replay import call_names, engine, typical_lags
from tracelens.replay import graph as graph_module
from tracelens.replay import host_calls as host_calls_module

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")

POINT_FIELDS = ("time", "lag", "anchor", "chain", "row", "kind", "chain_first")


def reference_points(calls: dict[str, Any], kind_of_row: np.ndarray, n_ops: int) -> dict[str, np.ndarray]:
    """The host part of the point arrays in plain Python, call by call (GPU part: chain_first False, the rest
    unwritten), and each call's step-marker flag."""
    rows, threads, starts, ends = (
        calls[name] for name in ("call_row", "call_thread", "call_start", "call_end")
    )
    n_host = 2 * len(rows)
    out: dict[str, list[int]] = {name: [] for name in POINT_FIELDS}
    for c, (r, t, s, e) in enumerate(zip(rows, threads, starts, ends, strict=True)):
        first = c == 0 or threads[c - 1] != t
        gap = 0 if first else max(s - ends[c - 1], 0)
        for name, pair in (
            ("time", (s, e)),
            ("lag", (gap, e - s)),
            ("anchor", (s if first else graph_module.NONE, graph_module.NONE)),
            ("chain", (t, t)),
            ("row", (r, r)),
            ("kind", (graph_module.HOST_START, graph_module.HOST_END)),
            ("chain_first", (int(first), 0)),
        ):
            out[name].extend(pair)
    result = {name: np.asarray(values, np.int64).reshape(n_host) for name, values in out.items()}
    result["chain_first"] = np.concatenate([result["chain_first"].astype(bool), np.zeros(2 * n_ops, bool)])
    result["call_is_marker"] = np.asarray([kind_of_row[r] == MARKER for r in rows], bool).reshape(len(rows))
    return result


def assert_points(
    got: host_calls_module.HostPoints, want: dict[str, np.ndarray], n_host: int, n_ops: int
) -> None:
    for name in POINT_FIELDS:
        value = getattr(got, name)
        assert value.size == n_host + 2 * n_ops, name
        if name == "chain_first":
            np.testing.assert_array_equal(value, want[name], err_msg=name)
        else:
            np.testing.assert_array_equal(value[:n_host].astype(np.int64), want[name], err_msg=name)
    assert got.time.dtype == got.lag.dtype == got.anchor.dtype == np.int64
    assert got.chain.dtype == got.row.dtype == np.int32 and got.kind.dtype == np.int8
    np.testing.assert_array_equal(got.first_call, want["chain_first"][:n_host:2])
    np.testing.assert_array_equal(got.call_is_marker, want["call_is_marker"])
    assert got.call_is_marker.dtype == bool
    # the calls' starts and ends are the points' times
    np.testing.assert_array_equal(got.calls.call_start, got.time[0:n_host:2])
    np.testing.assert_array_equal(got.calls.call_end, got.time[1:n_host:2])


def with_threads(cols: Any, api: np.ndarray, thread: np.ndarray) -> None:
    """pid and tid columns of every row from the host rows' thread codes (two threads per pid)."""
    thread_of = np.zeros(cols.kind.size, np.int64)
    thread_of[api] = thread
    cols.pid = (100 + thread_of // 2).astype(np.int32)
    cols.tid = (7 + thread_of % 2).astype(np.int64)


def both_ways(cols: Any, api: np.ndarray, n_ops: int) -> tuple[host_calls_module.HostPoints | None, Any]:
    """(the compiled walk's points, or None where it declines; the numpy path's over the calls found row by
    row)."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(host_calls_module, "THREAD_RUNS_SHARE", 1.0)  # the runs path whatever their number
        got = host_calls_module.host_points_by_thread_runs(cols, api, n_ops)
    codes, keys = host_calls_module._thread_codes_at(cols, api)
    calls = host_calls_module.host_calls_by_numpy(cols, api, codes)
    return got, (host_calls_module.host_points_by_numpy(cols, calls, keys, n_ops), calls, codes, keys)


@native
@settings(max_examples=200, deadline=None)
@given(rows=ROWS, n_ops=st.integers(0, 3))
def test_host_points_of_the_walk_equal_numpy_and_the_reference(
    rows: list[tuple[int, int, int, int]], n_ops: int
) -> None:
    cols, api, thread = table(rows, True)
    with_threads(cols, api, thread)
    got, (expected, calls, codes, keys) = both_ways(cols, api, n_ops)
    want = reference_points(reference(cols.start, cols.end, cols.kind, api, codes), cols.kind, n_ops)
    n_host = 2 * calls.call_row.size
    assert_points(expected, want, n_host, n_ops)
    if api.size == 0:
        assert got is None
        return
    assert got is not None
    assert_points(got, want, n_host, n_ops)
    np.testing.assert_array_equal(got.thread_keys, keys)
    assert got.calls.call_of.dtype == np.int64
    np.testing.assert_array_equal(got.calls.call_of, calls.call_of)
    # the calls' rows and threads: views of their start points' rows and chains (int32 here), both ways
    for name, of_points in (("call_row", "row"), ("call_thread", "chain")):
        for way in (got, expected):
            value = getattr(way.calls, name)
            assert value.dtype == np.int32 and np.shares_memory(value, getattr(way, of_points)), name
            np.testing.assert_array_equal(value, getattr(calls, name), err_msg=name)


@native
def test_nested_rows_cut_the_points_to_size() -> None:
    # rows nested in an earlier row of their thread (and a tie at one start): fewer calls than rows
    rows = [
        (0, 0, 10, CALL),
        (0, 2, 3, CALL),
        (0, 2, 5, CALL),
        (1, 4, 2, CALL),
        (0, 12, 0, MARKER),
        (0, 12, 4, CALL),
    ]
    cols, api, thread = table(rows, True)
    with_threads(cols, api, thread)
    got, (expected, calls, codes, _) = both_ways(cols, api, 2)
    assert got is not None and calls.call_row.size < api.size
    want = reference_points(reference(cols.start, cols.end, cols.kind, api, codes), cols.kind, 2)
    assert_points(got, want, 2 * calls.call_row.size, 2)
    assert_points(expected, want, 2 * calls.call_row.size, 2)


@native
@pytest.mark.parametrize(
    "rows", [[(0, 3, 2, CALL)], [(0, 3, 0, MARKER)], [(1, 3, 2, OTHER), (0, 5, 1, CALL)]]
)
def test_one_call(rows: list[tuple[int, int, int, int]]) -> None:
    cols, api, thread = table(rows, True)
    with_threads(cols, api, thread)
    got, (expected, calls, codes, _) = both_ways(cols, api, 1)
    want = reference_points(reference(cols.start, cols.end, cols.kind, api, codes), cols.kind, 1)
    assert got is not None
    assert_points(got, want, 2, 1)
    assert_points(expected, want, 2, 1)


@native
def test_rows_out_of_start_order_leave_it_to_numpy() -> None:
    rows = [(0, 5, 1, CALL), (0, 2, 1, CALL)]  # (not sorted by start: the walk declines)
    cols, api, thread = table(rows, False)
    with_threads(cols, api, thread)
    got, _ = both_ways(cols, api, 0)
    assert got is None


@native
@settings(max_examples=100, deadline=None)
@given(n_ops=st.integers(0, 40), n_rows=st.integers(1, 30), seed=st.integers(0, 2**16))
def test_launch_calls_read_the_starts_among_the_points_times(n_ops: int, n_rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 1000, n_rows).astype(np.int64)
    n_host = int(rng.integers(1, n_rows + 1))
    call_of = np.sort(rng.integers(0, n_host, n_host)).astype(np.int64)
    times = rng.integers(0, 1000, 2 * n_host).astype(np.int64)  # a call's start and end in turn
    found = rng.random(n_ops) < 0.7
    at = rng.integers(0, n_host, n_ops).astype(np.int64)
    launch_row = np.where(found, rng.integers(0, n_rows, n_ops), -1).astype(np.int64)
    got = host_calls_module.launch_calls(found, at, launch_row, call_of, start, times, call_start_step=2)
    expected = host_calls_module.launch_calls_by_numpy(
        found, at, launch_row, call_of, start, times[0::2].copy()
    )
    for value, want in zip(got, expected, strict=True):
        np.testing.assert_array_equal(value, want)


CALL_NAMES = [
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize_v2",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cuMemcpyDtoH_v2",
    "hipMemcpy",
    "cudaStreamWaitEvent",
    "cuStreamWaitEvent_ptsz",
    "cudaEventRecord",
    "cudaEventRecordWithFlags",
    "hipEventRecord",
    "cudaLaunchKernel",
    "ProfilerStep#3",
    "aten::mm",
    "cutlass_kernel",
    "hipLaunchKernel",
    "cudaStreamSynchronize_x",
]


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(CALL_NAMES) - 1), min_size=0, max_size=len(CALL_NAMES)),
    calls=st.lists(st.integers(-1, 40), max_size=60),
    large=st.booleans(),
)
def test_call_rules_equal_the_bits_of_every_call(picks: list[int], calls: list[int], large: bool) -> None:
    # the calls' name rules from the names that may pass, found by comparing codes (few) or a table (many),
    # against code_bits gathered at every call; a dictionary tested whole or at the names in use
    from tracelens.analyses.names import code_bits

    names = np.array([CALL_NAMES[i] for i in picks] + [None], dtype=object)
    codes = np.array([c % names.size if c >= 0 else -1 for c in calls], np.int32)
    with pytest.MonkeyPatch.context() as patched:
        if large:
            patched.setattr(call_names, "SMALL_DICTIONARY", 0)
        is_sync, sync_copy, waits, records = call_names.call_rules(codes, names)
    rules = (call_names._is_sync_call, call_names.is_sync_copy, call_names._is_stream_wait)
    bits = code_bits(codes, names, (*rules, call_names._is_event_record))[codes]
    np.testing.assert_array_equal(is_sync, (bits & 1) != 0)
    np.testing.assert_array_equal(sync_copy, (bits & 2) != 0)
    np.testing.assert_array_equal(waits, np.flatnonzero(bits & 4))
    np.testing.assert_array_equal(records, np.flatnonzero(bits & 8))
    assert is_sync.dtype == sync_copy.dtype == bool and waits.dtype == records.dtype == np.int64


@settings(max_examples=150, deadline=None)
@given(
    n_ops=st.integers(0, 40),
    devices=st.integers(1, 3),
    streams=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_one_device_typical_lags_and_stream_codes_equal_the_general_path(
    n_ops: int, devices: int, streams: int, seed: int
) -> None:
    # the medians (ties, even counts, none steady or queued) and the per-op values of one device or several, and
    # the (device, stream) codes of one stream or several, against the device-by-device path and dense_codes
    from tracelens.values import dense_codes

    rng = np.random.default_rng(seed)
    op_dev = rng.integers(0, devices, n_ops).astype(np.int64) + 3
    # (stream -1 packed as 0xFFFFFFFF; the streams' own type, int32 or int64)
    op_stream = (rng.integers(0, streams, n_ops) - 1).astype(np.int32 if seed % 2 else np.int64)
    op_order = rng.permutation(n_ops)
    steady, queued = rng.random(n_ops) < 0.6, rng.random(n_ops) < rng.random()
    launch_lags = rng.integers(0, 5, int(steady.sum())).astype(np.int64) * 1000
    stream_gaps = rng.integers(0, 5, int(queued.sum())).astype(np.int64) * 500
    args = (op_dev, op_order, launch_lags, steady, stream_gaps, queued)
    got, want = typical_lags.typical_lags(*args), typical_lags.typical_lags_by_device(*args)
    assert got[:2] == want[:2]
    for value, expected in zip(got[2:], want[2:], strict=True):
        assert value.dtype == expected.dtype == np.int64
        np.testing.assert_array_equal(value, expected)
    codes = graph_module.stream_codes(op_dev, op_stream)
    expected_codes = dense_codes(op_dev * (2**32) + (op_stream.astype(np.int64) & 0xFFFFFFFF))[0]
    assert codes.dtype == expected_codes.dtype
    np.testing.assert_array_equal(codes, expected_codes)
