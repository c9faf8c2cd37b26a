"""The replay graph's host calls (host_calls.host_calls: the outermost host API rows and step markers per
thread, each row's call) by the compiled one-pass helper equal the numpy path (kept as the fallback without a
C compiler) and a plain-Python reference: rows in start order (the event table's) with ties, nesting,
zero-length rows and step markers; rows out of start order and more ties at one start than the helper sorts
(it declines, numpy answers); the same calls walked by runs of one thread
(host_calls.host_calls_by_thread_runs: threads given per run, pid and tid read at the rows) against the
row-by-row codes; the GPU ops' launch calls in one pass (host_calls.launch_calls) against numpy; and whole
graphs of real traces built both ways."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tracelens.replay import engine
from tracelens.replay import graph as graph_module
from tracelens.replay import host_calls as host_calls_module
from tracelens.trace import ALL_KINDS, RUNTIME, STEP

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")

CALL, MARKER, OTHER = ALL_KINDS.index(RUNTIME), ALL_KINDS.index(STEP), ALL_KINDS.index(STEP) + 1
FIELDS = ("call_of", "call_row", "call_thread", "call_start", "call_end")


def reference(
    start: np.ndarray, end: np.ndarray, kind: np.ndarray, api: np.ndarray, thread: np.ndarray
) -> dict:
    """The host calls in plain Python: rows by (thread, start, longest first, row); a row is nested where an earlier
    row of its thread ends at or after its end."""
    ends = {int(r): int(start[r] if kind[r] == MARKER else end[r]) for r in api}
    by_time = sorted(range(api.size), key=lambda i: (thread[i], start[api[i]], -ends[int(api[i])], api[i]))
    call_of = [0] * api.size
    calls: list[tuple[int, int, int, int]] = []
    latest: dict[int, int] = {}
    for i in by_time:
        r, t = int(api[i]), int(thread[i])
        if t not in latest or latest[t] < ends[r]:
            calls.append((r, t, int(start[r]), ends[r]))
        latest[t] = max(latest.get(t, ends[r]), ends[r])
        call_of[i] = len(calls) - 1
    columns = list(zip(*calls, strict=True)) if calls else [[], [], [], []]
    return dict(zip(FIELDS, [call_of, *columns], strict=True))


def assert_same(got: host_calls_module.HostCalls, expected: Any) -> None:
    for name in FIELDS:
        value = getattr(got, name)
        want = (
            getattr(expected, name) if isinstance(expected, host_calls_module.HostCalls) else expected[name]
        )
        assert value.dtype == np.int64, name
        np.testing.assert_array_equal(value, np.asarray(want, np.int64), err_msg=name)


def table(rows: list[tuple[int, int, int, int]], in_start_order: bool) -> tuple[SimpleNamespace, Any, Any]:
    """Event columns of rows (thread, start, length, kind) and the host rows among them with their thread codes."""
    if in_start_order:
        rows = sorted(rows, key=lambda r: r[1])
    thread_of = np.array([r[0] for r in rows], np.int64)
    start = np.array([r[1] for r in rows], np.int64)
    end = start + np.array([r[2] for r in rows], np.int64)
    kind = np.array([r[3] for r in rows], np.int8)
    cols = SimpleNamespace(start=start, end=end, kind=kind)
    api = np.flatnonzero(kind != OTHER)
    return cols, api, thread_of[api]


ROWS = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.integers(0, 12),
        st.integers(0, 8),
        st.sampled_from([CALL, CALL, CALL, MARKER, OTHER]),
    ),
    max_size=80,
)


@native
@settings(max_examples=150, deadline=None)
@given(rows=ROWS, in_start_order=st.booleans())
def test_host_calls_equal_the_numpy_path_and_the_reference(
    rows: list[tuple[int, int, int, int]], in_start_order: bool
) -> None:
    cols, api, thread = table(rows, in_start_order)
    got = host_calls_module.host_calls(cols, api, thread, 4)  # type: ignore[arg-type]
    assert_same(got, host_calls_module.host_calls_by_numpy(cols, api, thread))  # type: ignore[arg-type]
    assert_same(got, reference(cols.start, cols.end, cols.kind, api, thread))


@native
@pytest.mark.parametrize("ties", [1, 64, 65, 200])
def test_many_rows_at_one_start(ties: int) -> None:
    # up to HOST_TIES rows of a thread at one start are ordered by the helper, more by numpy: the same calls
    rows = [(0, 5, length % 7, CALL) for length in range(ties)] + [(1, 5, 3, CALL), (0, 9, 0, MARKER)]
    cols, api, thread = table(rows, True)
    got = host_calls_module.host_calls(cols, api, thread, 2)  # type: ignore[arg-type]
    assert_same(got, host_calls_module.host_calls_by_numpy(cols, api, thread))  # type: ignore[arg-type]
    assert_same(got, reference(cols.start, cols.end, cols.kind, api, thread))
    # and walked by runs of one thread (three runs): the same calls, more ties than it orders left to the rows' path
    cols.pid, cols.tid = np.zeros(cols.kind.size, np.int32), np.zeros(cols.kind.size, np.int64)
    cols.tid[api] = thread
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(host_calls_module, "THREAD_RUNS_SHARE", 1.0)
        by_runs = host_calls_module.host_calls_by_thread_runs(cols, api)  # type: ignore[arg-type]
    assert by_runs is not None
    assert_same(by_runs[0], got)


@native
@settings(max_examples=150, deadline=None)
@given(rows=ROWS, in_start_order=st.booleans(), wide_pid=st.booleans())
def test_host_calls_by_thread_runs_equal_the_row_by_row_path(
    rows: list[tuple[int, int, int, int]],
    in_start_order: bool,
    wide_pid: bool,
) -> None:
    cols, api, thread = table(rows, in_start_order)
    # threads as (pid, tid) columns of every row (4- or 8-byte pids), the rows' own thread codes from them
    thread_of = np.zeros(cols.kind.size, np.int64)
    thread_of[api] = thread
    cols.pid = (100 + thread_of // 2).astype(np.int64 if wide_pid else np.int32)
    cols.tid = (7 + thread_of % 2).astype(np.int64)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(host_calls_module, "THREAD_RUNS_SHARE", 1.0)  # the runs path whatever their number
        got = host_calls_module.host_calls_by_thread_runs(cols, api)  # type: ignore[arg-type]
    if api.size == 0:
        assert got is None
        return
    assert got is not None
    codes, keys = host_calls_module._thread_codes_at(cols, api)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got[1], keys)
    assert_same(got[0], host_calls_module.host_calls_by_numpy(cols, api, codes))  # type: ignore[arg-type]
    assert_same(got[0], reference(cols.start, cols.end, cols.kind, api, codes))


@native
def test_many_runs_go_row_by_row() -> None:
    # threads alternating row by row: more runs than THREAD_RUNS_SHARE of the rows, so no runs path
    rows = [(i % 2, i, 1, CALL) for i in range(40)]
    cols, api, thread = table(rows, True)
    cols.pid, cols.tid = np.zeros(api.size, np.int32), thread.astype(np.int64)
    assert host_calls_module.host_calls_by_thread_runs(cols, api) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("rows", [[], [(0, 3, 2, CALL)], [(0, 3, 0, MARKER)], [(1, 3, 2, OTHER)]])
def test_no_row_and_one_row(rows: list[tuple[int, int, int, int]]) -> None:
    cols, api, thread = table(rows, True)
    got = host_calls_module.host_calls(cols, api, thread, 2)  # type: ignore[arg-type]
    assert_same(got, reference(cols.start, cols.end, cols.kind, api, thread))
    assert_same(host_calls_module.host_calls_by_numpy(cols, api, thread), got)  # type: ignore[arg-type]


@native
@pytest.mark.parametrize(
    "name",
    [
        "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
        "gpu/resnet18_train_cuda.pt.trace.json.gz",
        "nsys/handmade_nsys2026.sqlite",
        "demo.pt.trace.json.gz",
    ],
)
def test_graphs_of_traces_equal_without_the_helper(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    native_graph = graph_module.build(trace)
    monkeypatch.setattr(engine, "_replay_solve", None)
    numpy_graph = graph_module.build(trace)
    for name_, value in vars(native_graph).items():
        other = getattr(numpy_graph, name_)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype, name_
            np.testing.assert_array_equal(value, other, err_msg=name_)
        else:
            assert value == other, name_


@native
@settings(max_examples=100, deadline=None)
@given(
    n_ops=st.integers(0, 40),
    n_rows=st.integers(1, 30),
    seed=st.integers(0, 2**16),
    narrow=st.booleans(),
)
def test_launch_calls_in_one_pass_equal_numpy(n_ops: int, n_rows: int, seed: int, narrow: bool) -> None:
    # ops found or not (launch row -1 among the unfound), calls of several rows: the same three arrays
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 1000, n_rows).astype(np.int64)
    n_host = int(rng.integers(1, n_rows + 1))
    call_of = np.sort(rng.integers(0, n_host, n_host)).astype(np.int64)
    call_start = rng.integers(0, 1000, n_host).astype(np.int64)
    found = rng.random(n_ops) < 0.7
    at = rng.integers(0, n_host, n_ops).astype(np.int64)
    launch_row = np.where(found, rng.integers(0, n_rows, n_ops), -1).astype(np.int32 if narrow else np.int64)
    got = host_calls_module.launch_calls(found, at, launch_row, call_of, start, call_start)
    expected = host_calls_module.launch_calls_by_numpy(found, at, launch_row, call_of, start, call_start)
    for value, want in zip(got, expected, strict=True):
        assert value.dtype == want.dtype == np.int64
        np.testing.assert_array_equal(value, want)
