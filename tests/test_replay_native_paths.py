"""The replay's compiled walks give exactly what the numpy paths they replace give (those are kept as the fallback
where no C compiler was found, and as the reference here): the critical path's walk (critical.path_points against
path_points_by_numpy, which reads every point's setter), on generated graphs with their replayed times and with
arbitrary times full of ties (edges and chain predecessors reaching a point together), and on real traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import FIXTURES
from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens import intervals
from tracelens.replay import critical, engine
from tracelens.replay.remedies import Context

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


def assert_same_path(graph: engine.Graph, t: np.ndarray) -> None:
    path, setter = critical.path_points(graph, t)
    ref_path, ref_setter = critical.path_points_by_numpy(graph, t)
    assert path.dtype == ref_path.dtype == np.int64
    np.testing.assert_array_equal(path, ref_path)
    np.testing.assert_array_equal(setter, ref_setter)


@native
@settings(max_examples=80, deadline=None)
@given(**GRAPH_PARAMETERS, ties=st.booleans())
def test_critical_walk_equals_the_numpy_path(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float, ties: bool
) -> None:
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    if ties:  # times drawn from a few values: many edges and predecessors reach a point at once
        t = np.random.default_rng(seed).integers(0, 6, graph.size).astype(np.int64)
    else:
        t = engine.solve(graph)
    assert_same_path(graph, t)


@native
@pytest.mark.parametrize("name", TRACES)
def test_critical_walk_of_traces_equals_the_numpy_path(name: str) -> None:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{name} absent")
    ctx = Context(tracelens.load(path))
    assert_same_path(ctx.graph, ctx.base.times)


@native
@settings(max_examples=80, deadline=None)
@given(
    starts=st.lists(st.integers(-50, 50), max_size=30),
    lengths=st.lists(st.integers(-3, 20), min_size=30, max_size=30),
    times=st.lists(st.integers(-60, 80), max_size=200),
    ascending=st.booleans(),
)
def test_running_at_equals_the_intervals_reference(
    starts: list[int], lengths: list[int], times: list[int], ascending: bool
) -> None:
    # ranges that overlap, repeat a start or end before they start; times in any order or mostly ascending
    s = np.sort(np.array(starts, np.int64))
    e = s + np.array(lengths[: s.size], np.int64)
    t = np.array(sorted(times) if ascending else times, np.int64)
    np.testing.assert_array_equal(engine.running_at(s, e, t), intervals.running_at(s, e, t))
