"""replay.launch_regions: the compiled pass (_replay_solve.c launch_regions) gives the points of the numpy
reference (region_heads_by_numpy), in order and type-independent, on made-up calls: any launch calls per op (ops
unlaunched, calls launching several ops or none), threads, steps (-1 included), blocking calls, calls whose regions
do not ascend (the pass declines, numpy answers), and empty ones; and on real traces' graphs. Also engine's
native_keys_settled: settled keys leave no edge stale; and the what-if section's critical task, which releases the
unchanged replay's times, leaves the remedies' entries as they were."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens.replay import engine, launch_regions
from tracelens.replay.remedies import Context

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")


def made_up_graph(
    threads: list[int], steps: list[int], waits: list[bool], launches: list[int], index_type: type
) -> tuple[SimpleNamespace, np.ndarray]:
    n_calls = len(threads)
    call_start = (2 * np.arange(n_calls)).astype(index_type)
    n_points = 2 * n_calls + 3  # a few GPU points after the host ones
    chain = np.zeros(n_points, index_type)
    chain[call_start] = threads
    chain[call_start + 1] = threads
    step_of = np.full(n_points, -1, np.int64)
    step_of[call_start] = steps
    graph = SimpleNamespace(
        op_launch_call=np.array([c if c < n_calls else -1 for c in launches], np.int64),
        call_start=call_start,
        chain=chain,
        call_waits=np.array(waits, bool),
        time=np.arange(n_points, dtype=np.int64) * 10,
    )
    return graph, step_of


@native
@settings(max_examples=300, deadline=None)
@given(
    calls=st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 4), st.booleans()), max_size=40),
    launches=st.lists(st.integers(-1, 45), max_size=60),
    sort_calls=st.booleans(),
    index_type=st.sampled_from([np.int32, np.int64]),
)
def test_the_pass_equals_the_numpy_reference(
    calls: list[tuple[int, int, bool]], launches: list[int], sort_calls: bool, index_type: type
) -> None:
    if sort_calls:  # the usual case: calls by thread, then step (the pass's own answer)
        calls = sorted(calls, key=lambda c: (c[0], c[1]))
    graph, step_of = made_up_graph(
        [c[0] for c in calls], [c[1] for c in calls], [c[2] for c in calls], launches, index_type
    )
    launched = graph.op_launch_call >= 0
    expected = launch_regions.region_heads_by_numpy(graph, step_of, launched)  # type: ignore[arg-type]
    found = launch_regions.region_heads(graph, step_of, launched)  # type: ignore[arg-type]
    np.testing.assert_array_equal(found, expected)


@native
def test_edge_cases() -> None:
    for threads, steps, waits, launches in [
        ([], [], [], []),  # no call
        ([0], [-1], [False], [0]),  # one call
        ([0], [2], [True], [-1, -1]),  # no launch
        ([0, 0, 0], [1, 1, 1], [False, True, False], [0, 1, 2, 2, 1]),  # a blocking call splits a region
        ([1, 0], [0, 0], [False, False], [1, 0]),  # threads descending: numpy's sort answers
        ([0, 0], [3, 1], [False, False], [0, 1]),  # steps descending within a thread
    ]:
        graph, step_of = made_up_graph(threads, steps, waits, launches, np.int32)
        launched = graph.op_launch_call >= 0
        np.testing.assert_array_equal(
            launch_regions.region_heads(graph, step_of, launched),  # type: ignore[arg-type]
            launch_regions.region_heads_by_numpy(graph, step_of, launched),  # type: ignore[arg-type]
        )


@native
@pytest.mark.parametrize(
    "name",
    [
        "gpu/cuda_graph_cuda.pt.trace.json.gz",
        "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
        "gpu/resnet18_train_cuda.pt.trace.json.gz",
    ],
)
def test_real_graphs(name: str) -> None:
    ctx = Context(tracelens.load(fixture_path(name)))
    g = ctx.graph
    launched = g.op_launch_call >= 0
    np.testing.assert_array_equal(
        launch_regions.region_heads(g, ctx.step_of, launched),
        launch_regions.region_heads_by_numpy(g, ctx.step_of, launched),
    )


@native
@settings(max_examples=150, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_settled_keys_leave_no_edge_stale(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    key, settled = engine.native_keys_settled(graph)
    np.testing.assert_array_equal(key, engine.schedule_keys(graph))
    if settled:
        assert not (key[graph.edge_src] >= key[graph.edge_dst]).any()


def test_release_base_times_keeps_what_the_entries_read() -> None:
    # the what-if section's critical task drops the unchanged replay's times once the critical path is read: the
    # span, mean step and step count the remedies' entries read stay, and a remedy's entry is the same either way
    from tracelens.analyses import whatif

    trace = tracelens.load(fixture_path("gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz"))
    kept, released = Context(trace), Context(trace)
    before = kept.base
    path = whatif._critical_task(released)
    assert path == whatif.critical_path(kept.graph, kept.base.times, trace, kept.step_of)
    after = released.base
    assert after.times.size == 0
    assert (after.span_ns, after.step_ns, after.step_count) == (
        before.span_ns,
        before.step_ns,
        before.step_count,
    )
    for cause in ("synchronization", "host_launch_overhead", "low_occupancy"):
        assert whatif._remedy_task(released, cause) == whatif._remedy_task(kept, cause)
