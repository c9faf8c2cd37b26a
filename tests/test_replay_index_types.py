"""A plan's point indices held as int32 (engine.point_index_type: the order every solve reads, the positions the
edges are sorted by) give the same orders, positions and replayed times as int64 ones, through every compiled
function that reads or writes them (order_by_key, order_by_chains, edges_by_position, solve_sorted_edges)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings

from tests.test_replay_solver import GRAPH_PARAMETERS, random_graph
from tracelens.replay import engine
from tracelens.replay.graph import point_index_type

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")


def test_point_index_type() -> None:
    assert point_index_type(0) is np.int32 and point_index_type(2**31 - 1) is np.int32
    assert point_index_type(2**31) is np.int64


@native
@settings(max_examples=60, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_int32_and_int64_indices_plan_and_solve_alike(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    solver = engine._replay_solve
    key = engine.native_schedule_keys(graph)
    n = graph.size
    low, span = int(key.min()), int(key.max() - key.min()) + 1
    heads = np.append(np.flatnonzero(graph.chain_first), n)
    outputs = {}
    for dtype in (np.int32, np.int64):
        order, position = np.empty(n, dtype), np.empty(n, dtype)
        solver.order_by_key(key, low, span, order, position)
        merged_order, merged_position = np.empty(n, dtype), np.empty(n, dtype)
        merged = solver.order_by_chains(key, heads, merged_order, merged_position)
        edges = [np.empty(graph.edge_src.size, np.int64) for _ in range(3)]
        stale = np.empty(graph.edge_src.size, bool)
        solver.edges_by_position(position, key, graph.edge_src, graph.edge_dst, *edges, stale.view(np.uint8))
        outputs[dtype] = (order, position, merged, merged_order if merged == 0 else None, *edges, stale)
    for a, b in zip(outputs[np.int32], outputs[np.int64], strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b
    shared = engine.plan_natively(graph)
    assert shared.order.dtype == np.int32
    wide = replace(shared, order=shared.order.astype(np.int64))
    np.testing.assert_array_equal(engine.solve(graph, shared), engine.solve(graph, wide))
    np.testing.assert_array_equal(engine.solve(graph, shared), engine.solve_by_batches(graph, shared))
