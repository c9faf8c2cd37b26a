"""The replay's compiled walks give exactly what the numpy paths they replace give (those are kept as the fallback
where no C compiler was found, and as the reference here): the critical path's walk (critical.path_points against
path_points_by_numpy, which reads every point's setter), on generated graphs with their replayed times and with
arbitrary times full of ties (edges and chain predecessors reaching a point together), and on real traces; the
step of each point (engine.running_at against intervals.running_at); a thread's idle gaps' coverage by its own rows
in one pass (wake_edges._covered_by_rows against intervals.merge and overlap_with_union); the CUDA graph remedy's
regions found by one stable sort of a packed key (launch_regions.heads_of_regions against the lexsort it replaces)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens import intervals
from tracelens.replay import critical, engine, launch_regions, wake_edges
from tracelens.replay import graph as graph_module
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
    path = fixture_path(name)
    ctx = Context(tracelens.load(path))
    assert_same_path(ctx.graph, ctx.base.times)
    # the host points by one comparison (the host kinds are the lowest) against the two kinds tested
    kind = ctx.graph.kind
    np.testing.assert_array_equal(
        ctx.is_host, (kind == graph_module.HOST_START) | (kind == graph_module.HOST_END)
    )


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


@native
@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 60), st.booleans()), max_size=60),
    gaps=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 60)), max_size=12),
    in_start_order=st.booleans(),
)
def test_gap_coverage_equals_the_merged_union_reference(
    rows: list[tuple[int, int, bool]], gaps: list[tuple[int, int]], in_start_order: bool
) -> None:
    # a thread's idle gaps (in order, touching or apart) against the union of its own rows (masked among others;
    # overlapping, nested, touching, of length 0; in start order as the event table is, or not: the fallback)
    if in_start_order:
        rows = sorted(rows)
    start = np.array([r[0] for r in rows], np.int64)
    end = start + np.array([r[1] for r in rows], np.int64)
    mask = np.array([r[2] for r in rows], bool)
    lo, hi, at = [], [], 0
    for skip, width in gaps:
        lo.append(at + skip)
        hi.append(at + skip + width)
        at = hi[-1]
    lo_a, hi_a = np.array(lo, np.int64), np.array(hi, np.int64)
    cols = SimpleNamespace(start=start, end=end)
    mine = np.flatnonzero(mask)
    us, ue = intervals.merge(start[mine], end[mine])
    expected = intervals.overlap_with_union(lo_a, hi_a, us, ue)
    np.testing.assert_array_equal(wake_edges._covered_by_rows(cols, mask, lo_a, hi_a), expected)


@settings(max_examples=80, deadline=None)
@given(
    calls=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(-1, 4), st.integers(0, 5)), max_size=60
    ),
    wide=st.booleans(),
)
def test_graph_regions_equal_the_lexsort_reference(
    calls: list[tuple[int, int, int, int]], wide: bool
) -> None:
    # launching calls in (thread, time) order (times tied or not) with any step (-1: none) and blocking-call count:
    # the first of each (thread, step, blocking calls before) region, by the packed stable sort (or the lexsort
    # where the three do not fit in an int64) against the lexsort by the four and the comparison of the three
    calls = sorted(calls, key=lambda c: (c[0], c[1]))
    thread = np.array([c[0] for c in calls], np.int64)
    time = np.array([c[1] for c in calls], np.int64)
    step = np.array([c[2] for c in calls], np.int64)
    blocking = np.array([c[3] for c in calls], np.int64) + (2**61 if wide else 0)
    points = 2 * np.arange(thread.size, dtype=np.int64) + 10
    order = np.lexsort((time, blocking, step, thread))
    key = np.stack([thread[order], step[order], blocking[order]])
    head = np.ones(order.size, bool)
    head[1:] = (key[:, 1:] != key[:, :-1]).any(axis=0)
    expected = points[order][head]
    np.testing.assert_array_equal(
        launch_regions.heads_of_regions(points, time, thread, step, blocking), expected
    )


@native
def test_the_built_helper_has_every_function_the_engine_calls() -> None:
    # a build from an older _replay_solve.c lacks some and is set aside (engine.NATIVE_FUNCTIONS): this one has them
    assert all(hasattr(engine._replay_solve, name) for name in engine.NATIVE_FUNCTIONS)
