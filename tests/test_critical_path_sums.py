"""The critical path's sums in one compiled pass over its stretches (critical.path_sums_natively) equal the numpy
path (critical.path_sums_by_numpy over path_points_by_numpy's points, the fallback without the compiled helper and
the reference here): length, time per category, per step and the top name lists, bit for bit (float sums in path
order), on generated graphs with made-up event rows, kinds, names, waited calls and steps (ties, steps of -1, one
point, collective names), and on real traces through critical_path."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens.replay import critical, engine
from tracelens.replay import graph as graph_module
from tracelens.replay.remedies import Context
from tracelens.trace import ALL_KINDS, KERNEL, MEMCPY

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]
NAMES = np.array(
    ["aten::mm", "ncclKernel_AllReduce_RING", "cudaLaunchKernel", "gemm", "cudaMemcpyAsync"], object
)
KINDS = (graph_module.HOST_START, graph_module.HOST_END, graph_module.GPU_START, graph_module.GPU_END)


def assert_same_sums(got: critical.PathSums | None, expected: critical.PathSums) -> None:
    assert got is not None
    assert got.total == expected.total
    np.testing.assert_array_equal(got.by, expected.by)
    np.testing.assert_array_equal(got.listed, expected.listed)
    np.testing.assert_array_equal(got.by_step, expected.by_step)
    assert got.top_kernels == expected.top_kernels
    assert got.top_host_calls == expected.top_host_calls


def both(graph: engine.Graph, t: np.ndarray, trace: object, step_of: np.ndarray | None) -> None:
    stretches = critical.path_stretches(graph, t)
    assert stretches is not None
    path, setter = critical.path_points_by_numpy(graph, t)
    expected = critical.path_sums_by_numpy(graph, t, trace, path, setter, step_of)
    assert_same_sums(critical.path_sums_natively(graph, t, trace, stretches, step_of), expected)


@native
@settings(max_examples=100, deadline=None)
@given(
    **GRAPH_PARAMETERS,
    ties=st.booleans(),
    with_steps=st.booleans(),
    row_type=st.sampled_from([np.int32, np.int64]),
)
def test_path_sums_equal_the_numpy_path(
    seed: int,
    n_chains: int,
    max_len: int,
    edge_share: float,
    skew_share: float,
    ties: bool,
    with_steps: bool,
    row_type: type,
) -> None:
    rng = np.random.default_rng(seed)
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    n = graph.size
    n_rows = max(1, n // 2 + 1)
    n_calls = max(1, n // 3)
    graph = replace(
        graph,
        kind=rng.choice(np.array(KINDS, np.int8), n),
        row=rng.integers(0, n_rows, n).astype(row_type),
        call_end=rng.choice(n, n_calls).astype(np.int32),
        call_waited=rng.random(n_calls) < 0.4,
    )
    kinds = np.array([ALL_KINDS.index(KERNEL), ALL_KINDS.index(MEMCPY)], np.int8)
    trace = SimpleNamespace(  # what event_columns gives (found on the trace's own cache below)
        kind=rng.choice(kinds, n_rows),
        name=rng.integers(-1, len(NAMES), n_rows).astype(np.int32),
        names=NAMES,
    )
    if ties:  # a few values: many points whose setter's time is their own (seg 0), equal sums
        t = rng.integers(0, 4, n).astype(np.int64)
    else:
        t = engine.solve(graph)
    step_of = rng.integers(-1, 3, n).astype(np.int64) if with_steps else None
    critical_module_columns = critical.event_columns
    critical.event_columns = lambda _trace: trace  # type: ignore[assignment]
    try:
        both(graph, t, trace, step_of)
    finally:
        critical.event_columns = critical_module_columns  # type: ignore[assignment]


@native
@pytest.mark.parametrize("name", TRACES)
def test_path_sums_of_traces_equal_the_numpy_path(name: str) -> None:
    trace = tracelens.load(fixture_path(name))
    ctx = Context(trace)
    both(ctx.graph, ctx.base.times, trace, ctx.step_of)
    both(ctx.graph, ctx.base.times, trace, None)


@native
def test_many_steps_fall_back_to_numpy() -> None:
    # steps far beyond the path's points: no bins for each (None: numpy then)
    graph = random_graph(3, 2, 5, 0.3, 0.0)
    t = engine.solve(graph)
    stretches = critical.path_stretches(graph, t)
    assert stretches is not None
    step_of = np.full(graph.size, 10**9, np.int64)
    trace = SimpleNamespace(
        kind=np.zeros(graph.size, np.int8), name=np.zeros(graph.size, np.int32), names=NAMES
    )
    critical_module_columns = critical.event_columns
    critical.event_columns = lambda _trace: trace  # type: ignore[assignment]
    try:
        assert critical.path_sums_natively(graph, t, trace, stretches, step_of) is None
    finally:
        critical.event_columns = critical_module_columns  # type: ignore[assignment]


@native
@pytest.mark.parametrize("name", TRACES)
def test_dictionaries_beyond_the_limit_but_within_the_path_are_summed_natively(
    name: str, monkeypatch
) -> None:
    # a name dictionary larger than TOP_BY_DICTIONARY is summed over whole by the compiled pass where the path has
    # at least as many points (the x1000 Nsight export: 16,752 names, 4.4M path points), against the numpy path's
    # sums over the distinct codes the path uses; beyond the path's points the compiled pass declines
    from tracelens.analyses.columns import event_columns
    from tracelens.replay import name_tests

    trace = tracelens.load(fixture_path(name))
    ctx = Context(trace)
    monkeypatch.setattr(critical, "TOP_BY_DICTIONARY", 0)
    monkeypatch.setattr(
        name_tests, "SMALL_DICTIONARY", 0
    )  # (the collective names tested up to the path's size)
    name_tests._answers.clear()
    t = ctx.base.times
    stretches = critical.path_stretches(ctx.graph, t)
    assert stretches is not None
    path_points = int((stretches[1] - stretches[0] + 1).sum())
    if len(event_columns(trace).names) <= path_points:
        both(ctx.graph, t, trace, ctx.step_of)
    else:
        assert critical.path_sums_natively(ctx.graph, t, trace, stretches, ctx.step_of) is None
