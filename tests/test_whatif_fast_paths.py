"""The what-if replay's newer fast paths give exactly what the paths they replace gave (speed lives in benchmarks/).

- engine._chain_cummax: one running max per chain's slice (few chains) vs the packed (chain, key) running max;
- host_calls._segmented_max_accumulate: one running max per run's slice (few runs) vs the packed running max;
- critical.setters: the edges' binding tested at their targets only vs at every point (the earlier function, kept
  here as the reference);
- engine.schedule_keys: the phase added as one comparison, the boundaries' keys set at once, vs the phase array
  it replaces (the earlier function, kept here as the reference);
- occupancy_model._input_bytes: op_flops' bytes per distinct signature found on dictionary codes vs the frame of
  Python strings, drop_duplicates and merge it replaces (kept here as the reference);
- remedies.Context.step_of: the step found for host points only (GPU points read their launch call's) vs every
  point searched;
- remedies.Context.input_rows: read from the host categories (input rows, and syncs with an input name) vs every
  row of the input kinds tested by name;
- graph.unique_ints (critical path's steps and names, devices and streams of the graph build and the traffic
  floor): the values in use marked in a table and ranked (no sort) vs np.unique (and its return_inverse);
- wake_edges._of_thread_key: a thread's rows by one comparison per column vs thread_key of every row compared (the
  graphs of traces built both ways: tests/test_replay_fast_paths.py's wake coverage test).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens import flop_model, intervals
from tracelens.analyses.columns import event_columns, thread_key
from tracelens.analyses.names import code_mask, is_input
from tracelens.analyses.ops import op_of_gpu_ops
from tracelens.analyses.step_arrays import step_window_arrays
from tracelens.replay import critical, engine, wake_edges
from tracelens.replay import graph as graph_module
from tracelens.replay import host_calls as host_calls_module
from tracelens.replay.occupancy_model import _input_bytes
from tracelens.replay.remedies import _INPUT_KINDS, REMEDIES, Context
from tracelens.values import sorted_distinct

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/pytorch_pageable-copies_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


# runs (chains, threads) of integers, for the per-run accumulations against their packed-key references
RUNS_OF_INTEGERS = st.lists(
    st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=12), min_size=1, max_size=8
)


@settings(max_examples=150, deadline=None)
@given(RUNS_OF_INTEGERS, st.sampled_from([np.int64, np.int32]))
def test_chain_cummax_per_slice_equals_the_packed_keys(chains: list, dtype: type) -> None:
    key = np.concatenate([np.array(c, np.int64) for c in chains])
    if dtype is np.int32:
        key = (key % 2**20).astype(np.int32)  # non-negative, as schedule keys are
    else:
        key = np.abs(key)
    first = np.zeros(key.size, bool)
    first[np.cumsum([0] + [len(c) for c in chains[:-1]])] = True
    fast = engine._chain_cummax(key, first)
    old = engine.FEW_CHAINS
    try:
        engine.FEW_CHAINS = 0
        packed = engine._chain_cummax(key, first)
    finally:
        engine.FEW_CHAINS = old
    expected = np.concatenate(
        [np.maximum.accumulate(np.array(c)) for c in np.split(key, np.flatnonzero(first)[1:])]
    )
    np.testing.assert_array_equal(fast, expected)
    np.testing.assert_array_equal(packed, expected)
    assert fast.dtype == packed.dtype


def _input_bytes_reference(trace: tracelens.Trace, rows: np.ndarray) -> np.ndarray:
    """What _traffic_floor computed before: a frame of the rows' strings, op_flops per drop_duplicates row, a merge."""
    cols = event_columns(trace)
    frame = trace.frame(rows, ["input_dims", "input_types", "concrete_inputs"]).astype(object)
    codes = cols.name[rows]
    used, at = np.unique(codes, return_inverse=True)
    text = np.array([str(cols.names[c]) if c >= 0 else "" for c in used.tolist()], dtype=object)
    frame["name"] = text[at.reshape(-1)].tolist() if codes.size else []
    frame = frame.where(frame.notna(), None)
    keys = list(frame.columns)
    signatures = frame.drop_duplicates().reset_index(drop=True)
    signatures["bytes"] = [
        flop_model.op_flops(s.name, s.input_dims, s.input_types, s.concrete_inputs).bytes
        for s in signatures.itertuples(index=False)
    ]
    return pd.to_numeric(frame.merge(signatures, on=keys, how="left")["bytes"], errors="coerce").to_numpy(
        float
    )


@pytest.mark.parametrize("name", TRACES)
def test_input_bytes_equal_the_frame_reference(name: str) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    owner = op_of_gpu_ops(trace)
    # every framework op that launched GPU work (the floor reads a subset)
    rows = np.unique(owner[owner >= 0])
    if rows.size == 0:
        pytest.skip("no framework op launched GPU work")
    for pick in (rows, rows[::3], rows[1:2]):
        fast, reference = _input_bytes(trace, pick), _input_bytes_reference(trace, pick)
        assert fast.dtype == reference.dtype == np.float64
        np.testing.assert_array_equal(fast, reference)
    assert np.isfinite(_input_bytes(trace, rows)).any() or name.startswith("nsys"), (
        "the trace has bytes to read"
    )


@pytest.mark.parametrize("name", TRACES)
def test_step_of_equals_every_point_searched(name: str) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    ctx = Context(trace)
    g, windows = ctx.graph, step_window_arrays(trace)
    expected = np.full(g.size, -1, np.int64)
    if len(windows) and g.size:
        starts = windows.start
        limit = np.append(starts[1:], windows.end[-1])
        when = g.time.copy()
        launched = g.op_launch_call >= 0
        when[g.op_start[launched]] = g.time[g.call_start[g.op_launch_call[launched]]]
        when[g.op_end[launched]] = g.time[g.call_start[g.op_launch_call[launched]]]
        expected = intervals.running_at(starts, limit + 1, when)
    assert ctx.step_of.dtype == expected.dtype
    np.testing.assert_array_equal(ctx.step_of, expected)


@pytest.mark.parametrize("name", TRACES)
def test_input_rows_equal_every_row_of_the_input_kinds_tested(name: str) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    cols = event_columns(trace)
    expected = np.flatnonzero(cols.of_kind(*_INPUT_KINDS) & code_mask(cols.name, cols.names, is_input))
    found = Context(trace).input_rows
    assert found.dtype == expected.dtype
    np.testing.assert_array_equal(found, expected)
    if "slow-input" in name:
        assert expected.size > 0, "the trace has input waits"


def _schedule_keys_reference(graph: graph_module.Graph) -> np.ndarray:
    """engine.schedule_keys as it was before the phase became one comparison."""
    coupling = graph.edge_is_wait | graph.edge_is_wake | graph.edge_is_collective
    boundaries = sorted_distinct(graph.edge_dst[coupling])
    order = np.lexsort((boundaries, graph.time[boundaries]))
    boundary_sorted = boundaries[order]
    seg = np.searchsorted(graph.time[boundary_sorted], graph.time, side="left").astype(np.int64, copy=False)
    seg[boundary_sorted] = np.arange(boundary_sorted.size)
    is_gpu = (graph.kind == graph_module.GPU_START) | (graph.kind == graph_module.GPU_END)
    phase = np.where(is_gpu, engine.GPU_PHASE, engine.HOST_PHASE).astype(np.int8)
    phase[boundaries] = engine.WAIT_PHASE
    seg *= 3
    seg += phase
    key = engine._chain_cummax(seg, graph.chain_first)
    src, dst = graph.edge_src, graph.edge_dst
    rounds = max(engine.MAX_KEY_ROUNDS, engine.MAX_KEY_WORK // max(key.size + src.size, 1))
    ceiling = (int(key.max()) if key.size else 0) + key.size
    for done in range(rounds):
        needed = key[src] + 1
        late = needed > key[dst]
        if not late.any():
            break
        if done >= engine.MAX_KEY_ROUNDS and int(needed[late].max()) > ceiling:
            break
        np.maximum.at(key, dst[late], needed[late])
        key = engine._chain_cummax(key, graph.chain_first)
    return key


def test_point_kinds_and_phases_allow_one_comparison() -> None:
    host_kinds = (graph_module.HOST_START, graph_module.HOST_END)
    gpu_kinds = (graph_module.GPU_START, graph_module.GPU_END)
    assert max(host_kinds) < engine.FIRST_GPU_KIND == min(gpu_kinds)
    assert (engine.HOST_PHASE, engine.GPU_PHASE) == (0, 1)


@settings(max_examples=60, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_schedule_keys_equal_the_phase_array_reference(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    np.testing.assert_array_equal(engine.schedule_keys(graph), _schedule_keys_reference(graph))


@pytest.mark.parametrize("name", TRACES)
def test_schedule_keys_of_traces_equal_the_reference(name: str) -> None:
    path = fixture_path(name)
    ctx = Context(tracelens.load(path))
    graphs = [ctx.graph] + [g for g, _ in (model(ctx) for _, model in REMEDIES.values()) if g is not None]
    for graph in graphs:
        fast, reference = engine.schedule_keys(graph), _schedule_keys_reference(graph)
        assert fast.dtype == reference.dtype
        np.testing.assert_array_equal(fast, reference)


@settings(max_examples=150, deadline=None)
@given(RUNS_OF_INTEGERS, st.sampled_from([np.int64, np.int32]))
def test_segmented_max_per_run_equals_the_packed_values(runs: list, dtype: type) -> None:
    values = np.concatenate([np.array(r, np.int64) for r in runs])
    if dtype is np.int32:
        values = (values % 2**20 - 2**19).astype(np.int32)
    lengths = [len(r) for r in runs]
    head = np.repeat(np.cumsum([0] + lengths[:-1]), lengths)
    fast = host_calls_module._segmented_max_accumulate(values, head)
    old = host_calls_module.FEW_RUNS
    try:
        host_calls_module.FEW_RUNS = -1
        packed = host_calls_module._segmented_max_accumulate(values, head)
    finally:
        host_calls_module.FEW_RUNS = old
    expected = np.concatenate([np.maximum.accumulate(v) for v in np.split(values, np.cumsum(lengths)[:-1])])
    np.testing.assert_array_equal(fast, expected)
    np.testing.assert_array_equal(packed, expected)
    assert fast.dtype == packed.dtype


def _setters_reference(graph: graph_module.Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """critical.setters as it was before the edges were tested at their targets only."""
    n = graph.size
    via_chain = np.empty(n, np.int64)
    np.add(t[:-1], graph.lag[1:], out=via_chain[1:])
    if n:
        via_chain[0] = t[-1] + graph.lag[0]
    via_chain[graph.chain_first] = graph_module.NONE
    not_first = ~graph.chain_first
    via_edge = np.full(n, graph_module.NONE, np.int64)
    edge_source = np.full(n, -1, np.int64)
    if graph.edge_src.size:
        ready = t[graph.edge_src] + graph.edge_lag
        np.maximum.at(via_edge, graph.edge_dst, ready)
        best = ready == via_edge[graph.edge_dst]
        edge_source[graph.edge_dst[best]] = graph.edge_src[best]
    use_edge = (via_edge >= t) & (via_edge > graph_module.NONE // 2)
    use_chain = ~use_edge & not_first & (via_chain >= t)
    return np.where(use_edge, edge_source, np.where(use_chain, np.arange(n) - 1, -1)), use_edge


def _check_setters(graph: graph_module.Graph) -> None:
    t = engine.solve(graph)
    for times in (t, graph.time):  # the replayed times, and times no replay gives (edges binding anywhere)
        fast, reference = critical.setters(graph, times), _setters_reference(graph, times)
        for got, want in zip(fast, reference, strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_setters_equal_every_point_tested(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    _check_setters(random_graph(seed, n_chains, max_len, edge_share, skew_share))


@pytest.mark.parametrize("name", TRACES)
def test_setters_of_traces_equal_the_reference(name: str) -> None:
    path = fixture_path(name)
    ctx = Context(tracelens.load(path))
    _check_setters(ctx.graph)
    _check_setters(ctx.graph.at_typical_lags())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-1, 300), max_size=80),
    st.sampled_from([np.int64, np.int32, np.int8]),
    st.integers(-(2**40), 2**40),
)
def test_unique_ints_equal_np_unique(codes: list, dtype: type, offset: int) -> None:
    values = np.array(codes, np.int64)
    arrays = [values.astype(dtype) if dtype is not np.int8 else (values % 256 - 128).astype(np.int8)]
    # far from 0, and spread wider than a table: np.unique itself
    arrays += [values + offset, values * (2**20) + offset]
    for array in arrays:
        assert np.array_equal(graph_module.unique_ints(array), np.unique(array))
        assert graph_module.unique_ints(array).dtype == np.unique(array).dtype
        want_unique, want_inverse = np.unique(array, return_inverse=True)
        got_unique, got_inverse = graph_module.unique_ints(array, return_inverse=True)
        assert got_unique.dtype == want_unique.dtype
        np.testing.assert_array_equal(got_unique, want_unique)
        np.testing.assert_array_equal(got_inverse.reshape(-1), want_inverse.reshape(-1))


THREAD_IDS = st.one_of(st.integers(-1, 5), st.integers(-(2**40), 2**40), st.integers(2**31 - 3, 2**32 + 3))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(THREAD_IDS, THREAD_IDS), min_size=1, max_size=30),
    st.sampled_from([np.int64, np.int32]),
    st.sampled_from([np.int64, np.int32]),
    st.data(),
)
def test_of_thread_key_equals_thread_key_compared(pairs: list, pid_type: type, tid_type: type, data) -> None:
    def column(values: list, dtype: type) -> np.ndarray:
        array = np.array(values, np.int64)
        if dtype is np.int32:  # an int32 column holds what fits
            array = ((array + 2**31) % 2**32 - 2**31).astype(np.int32)
        return array

    pid, tid = column([p for p, _ in pairs], pid_type), column([t for _, t in pairs], tid_type)
    cols = SimpleNamespace(pid=pid, tid=tid)
    keys = thread_key(pid, tid)
    among = np.array(data.draw(st.lists(st.booleans(), min_size=pid.size, max_size=pid.size)), bool)
    halves = wake_edges._thread_key_halves(cols)  # type: ignore[arg-type]
    for key in [*keys.tolist(), 0, -1]:
        got = wake_edges._of_thread_key(halves, among, int(key))
        np.testing.assert_array_equal(got, among & (keys == key))
