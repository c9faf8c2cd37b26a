"""The replay's compiled edge sorts where the edges already ascend but for a short tail (a built graph's: the launch
edges first, by ascending target, the few event, wait, wake and collective edges after them; _replay_solve.c
sorted_tail_order merges the tail in instead of radix passes): the plan's edges by target position
(engine.plan_natively) against a stable argsort of the positions, the replay against the numpy batches, and the
critical path's walk (it sorts the edges by target) against critical.path_points_by_numpy, on generated graphs
whose edges are put in that shape (ties of targets across the prefix and the tail included), and with the tail too
long for the merge (the radix passes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_replay_native_paths import assert_same_path
from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens.replay import engine
from tracelens.replay.graph import Graph

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")

EDGE_FIELDS = (
    "edge_src",
    "edge_dst",
    "edge_lag",
    "edge_is_wait",
    "edge_is_wake",
    "edge_is_collective",
    "edge_typical",
)


def with_sorted_prefix(graph: Graph, key: np.ndarray, tail_share: float, seed: int) -> Graph:
    """The graph with its edges reordered: all but a random tail (``tail_share`` of them) stably by ``key`` (a
    value per edge), the tail after them in a random order."""
    rng = np.random.default_rng(seed)
    n = graph.edge_src.size
    in_tail = rng.random(n) < tail_share
    prefix = np.flatnonzero(~in_tail)
    prefix = prefix[np.argsort(key[prefix], kind="stable")]
    order = np.concatenate([prefix, rng.permutation(np.flatnonzero(in_tail))])
    return graph.with_changes(**{name: getattr(graph, name)[order] for name in EDGE_FIELDS})


@native
@settings(max_examples=120, deadline=None)
@given(**GRAPH_PARAMETERS, tail_share=st.sampled_from([0.0, 0.02, 0.1, 0.5]))
def test_edges_sorted_but_a_tail_give_the_plan_replay_and_walk_of_a_stable_sort(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float, tail_share: float
) -> None:
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    # the plan's edges by their target's position: a prefix ascending in position
    position = np.empty(graph.size, np.int64)
    position[engine.plan_natively(graph).order] = np.arange(graph.size)
    by_position = with_sorted_prefix(graph, position[graph.edge_dst], tail_share, seed)
    plan = engine.plan_natively(by_position)
    e_pos = position[by_position.edge_dst]
    want = np.argsort(e_pos, kind="stable")
    np.testing.assert_array_equal(plan.e_order, want)
    np.testing.assert_array_equal(plan.e_pos, e_pos[want])
    np.testing.assert_array_equal(plan.e_src, by_position.edge_src[want])
    np.testing.assert_array_equal(engine.solve(by_position), engine.solve_by_batches(by_position))
    # the walk's edges by target point: a prefix ascending in target
    by_target = with_sorted_prefix(graph, graph.edge_dst, tail_share, seed)
    assert_same_path(by_target, engine.solve(by_target))
    ties = np.random.default_rng(seed).integers(0, 6, graph.size).astype(np.int64)
    assert_same_path(by_target, ties)
