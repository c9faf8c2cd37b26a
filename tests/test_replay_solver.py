"""The replay's one-pass solver (engine.solve through _replay_solve.c) gives exactly the times of the numpy batches
it replaced (engine.solve_by_batches, the reference kept for installs without a C compiler), and both equal a
plain point-by-point reading of the recurrence, on hypothesis-generated dependency graphs: chains of random
lengths, cross edges of every kind (launch, wait, wake, collective), anchors, and edges that run backwards in
the recording (clock skew, cycles) which every path reads at the source's recorded time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracelens.replay import engine
from tracelens.replay.graph import GPU_END, GPU_START, HOST_END, HOST_START, NONE, Graph

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")


# random_graph's arguments, as hypothesis draws them for the replay's property tests
GRAPH_PARAMETERS = {
    "seed": st.integers(0, 2**32 - 1),
    "n_chains": st.integers(1, 7),
    "max_len": st.integers(1, 120),
    "edge_share": st.sampled_from([0.0, 0.05, 0.3, 1.0]),
    "skew_share": st.sampled_from([0.0, 0.1, 1.0]),
}


def random_graph(seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float) -> Graph:
    """A graph with ``n_chains`` chains (the first half host threads, the rest streams) of up to ``max_len``
    points, recorded times increasing along each chain, cross edges mostly forward in recorded time (a share
    ``skew_share`` backwards), a few lags and anchors."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, n_chains)
    chain = np.repeat(np.arange(n_chains), lengths)
    n = int(chain.size)
    first = np.ones(n, bool)
    first[1:] = chain[1:] != chain[:-1]
    steps = rng.integers(0, 50, n)
    steps[first] = rng.integers(0, 400, int(first.sum()))
    start_of = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    time = np.cumsum(steps) - np.cumsum(steps)[start_of] + steps[start_of]
    host = chain < max(n_chains // 2, 1)
    within = np.arange(n) - start_of
    kind = np.where(
        host, np.where(within % 2 == 0, HOST_START, HOST_END), np.where(within % 2 == 0, GPU_START, GPU_END)
    )
    lag = np.zeros(n, np.int64)
    lag[1:] = time[1:] - time[:-1]
    lag = np.where(rng.random(n) < 0.3, rng.integers(0, 60, n), lag)
    lag[first] = rng.integers(0, 5, int(first.sum()))
    anchor = np.where(first | (rng.random(n) < 0.05), time, NONE)
    n_edges = int(edge_share * n)
    src = rng.integers(0, n, n_edges)
    dst = rng.integers(0, n, n_edges)
    backwards = time[src] > time[dst]
    keep = (src != dst) & (chain[src] != chain[dst]) & (~backwards | (rng.random(n_edges) < skew_share))
    src, dst = src[keep], dst[keep]
    e = src.size
    edge_kind = rng.integers(0, 4, e)  # 0 launch, 1 wait, 2 wake, 3 collective
    e_lag = np.where(rng.random(e) < 0.5, np.maximum(time[dst] - time[src], 0), rng.integers(0, 80, e))
    zeros = np.zeros(0, np.int64)
    return Graph(
        time=time.astype(np.int64),
        chain=chain.astype(np.int64),
        kind=kind.astype(np.int8),
        lag=lag,
        anchor=anchor.astype(np.int64),
        row=np.arange(n, dtype=np.int64),
        chain_first=first,
        edge_src=src.astype(np.int64),
        edge_dst=dst.astype(np.int64),
        edge_lag=e_lag.astype(np.int64),
        edge_is_wait=edge_kind == 1,
        edge_is_wake=edge_kind == 2,
        edge_is_collective=edge_kind == 3,
        edge_typical=e_lag.astype(np.int64),
        call_start=zeros,
        call_end=zeros,
        call_row=zeros,
        call_thread=zeros,
        call_name=zeros,
        call_waits=np.zeros(0, bool),
        call_queued=np.zeros(0, bool),
        call_waited=np.zeros(0, bool),
        call_is_sync=np.zeros(0, bool),
        call_is_marker=np.zeros(0, bool),
        thread_keys=zeros,
        op_start=zeros,
        op_end=zeros,
        op_row=zeros,
        op_device=zeros,
        op_launch_call=zeros,
        op_is_kernel=np.zeros(0, bool),
        op_is_copy=np.zeros(0, bool),
        op_graph=np.zeros(0, bool),
        op_bytes=zeros,
        op_collective=zeros,
        op_stream_typical=zeros,
    )


def point_by_point(graph: Graph, shared: engine.Plan) -> np.ndarray:
    """The recurrence read literally, one point at a time in the plan's order: a source scheduled at or after
    its target (``key``) is read at its recorded time, as the batches read it."""
    t = graph.time.copy()
    key = engine.schedule_keys(graph)
    incoming: dict[int, list[tuple[int, int]]] = {}
    for s, d, lag in zip(
        graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_lag.tolist(), strict=True
    ):
        incoming.setdefault(d, []).append((s, lag))
    for p in shared.order.tolist():
        best = (NONE if graph.chain_first[p] else int(t[p - 1])) + int(graph.lag[p])
        best = max(best, int(graph.anchor[p]))
        for s, lag in incoming.get(p, ()):
            source = int(graph.time[s]) if key[s] >= key[p] else int(t[s])
            best = max(best, source + lag)
        t[p] = best
    return t


def check(graph: Graph, monkeypatch: Any) -> None:
    shared = engine.plan(graph)
    fast = engine.solve(graph, shared)
    batches = engine.solve_by_batches(graph, shared)
    with monkeypatch.context() as m:
        m.setattr(engine, "SMALL_BATCH", 1)  # every batch through the numpy calls
        numpy_only = engine.solve_by_batches(graph, shared)
    literal = point_by_point(graph, shared)
    assert fast.dtype == batches.dtype == np.int64
    np.testing.assert_array_equal(fast, batches)
    np.testing.assert_array_equal(numpy_only, batches)
    np.testing.assert_array_equal(literal, batches)
    times, span = engine.solve_with_span(graph, shared)  # the span the compiled pass finds as it goes
    np.testing.assert_array_equal(times, batches)
    assert span == (int(batches.max() - batches.min()) if batches.size else 0)
    # lags changed, structure kept: the plan is shared and still gives the batches' times
    lag = np.maximum(graph.lag - 7, 0)
    changed = graph.with_changes(lag=lag, edge_lag=graph.edge_lag // 2)
    np.testing.assert_array_equal(engine.solve(changed, shared), engine.solve_by_batches(changed, shared))


@native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**GRAPH_PARAMETERS)
def test_one_pass_equals_the_batches(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float, monkeypatch: Any
) -> None:
    check(random_graph(seed, n_chains, max_len, edge_share, skew_share), monkeypatch)


@native
def test_one_pass_equals_the_batches_on_a_large_graph(monkeypatch: Any) -> None:
    # large batches too (the numpy path's packed segmented maximum over many runs)
    check(random_graph(11, 12, 3000, 0.2, 0.01), monkeypatch)


@native
@settings(max_examples=60, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_times_written_over_the_lags_equal_a_fresh_solve(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    # a remedy's replay writes its times over its own lag copy (over_lag): the same times and span as a replay
    # into an array of its own, and the unchanged graph's lags untouched
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    shared = engine.plan(graph)
    kept = graph.lag.copy()
    changed = graph.with_changes(lag=np.maximum(graph.lag - 3, 0))
    expected, expected_span = engine.solve_with_span(changed.with_changes(lag=changed.lag.copy()), shared)
    own = changed.lag
    t, span = engine.solve_with_span(changed, shared, over_lag=True)
    assert t is own
    np.testing.assert_array_equal(t, expected)
    assert span == expected_span
    np.testing.assert_array_equal(graph.lag, kept)


def _solve_sorted(graph: Graph, shared: Any, out: np.ndarray, **changed: np.ndarray) -> None:
    """The compiled solve over ``shared``'s plan of ``graph``, with the plan arrays named in ``changed`` replaced
    (order, e_pos, e_src): how the tests below hand it a broken plan."""
    plan = {"order": shared.order, "e_pos": shared.e_pos, "e_src": shared.e_src, **changed}
    engine._replay_solve.solve_sorted_edges(
        plan["order"],
        graph.chain_first.view(np.uint8),
        graph.lag,
        graph.anchor,
        graph.time,
        plan["e_pos"],
        plan["e_src"],
        graph.edge_lag[shared.e_order],
        shared.e_stale.view(np.uint8),
        out,
    )


@native
def test_bad_plan_raises_instead_of_reading_out_of_bounds() -> None:
    graph = random_graph(3, 3, 20, 0.3, 0.0)
    shared = engine.plan(graph)
    bad_src = shared.e_src.copy()
    if bad_src.size == 0:
        pytest.skip("no edges drawn")
    bad_src[0] = graph.size + 5
    out = np.empty(graph.size, np.int64)
    with pytest.raises(ValueError, match="out of range"):
        _solve_sorted(graph, shared, out, e_src=bad_src)
    with pytest.raises(ValueError, match="lengths"):
        _solve_sorted(graph, shared, out, order=shared.order[:-1])


def staircase_graph(steps: int) -> Graph:
    """``steps`` one-point host chains, each point's recorded time after the next one's, and an edge from each
    point to the one recorded before it: acyclic, but every edge runs against the recorded order, so the keys
    settle only after one round per step."""
    n = steps
    time = np.arange(n, 0, -1, dtype=np.int64) * 10
    base = random_graph(0, 1, 1, 0.0, 0.0)
    zeros = np.zeros(n, np.int64)
    edges = np.arange(n - 1, dtype=np.int64)
    return Graph(
        **{
            **base.__dict__,
            "time": time,
            "chain": np.arange(n, dtype=np.int64),
            "kind": np.full(n, HOST_START),
            "lag": zeros.copy(),
            "anchor": time.copy(),
            "row": np.arange(n, dtype=np.int64),
            "chain_first": np.ones(n, bool),
            "edge_src": edges + 1,  # point i+1 (recorded earlier) feeds point i
            "edge_dst": edges.copy(),
            "edge_lag": np.full(n - 1, 30, np.int64),  # longer than the recorded 10 ns steps: the edges bind
            "edge_is_wait": np.zeros(n - 1, bool),
            "edge_is_wake": np.zeros(n - 1, bool),
            "edge_is_collective": np.zeros(n - 1, bool),
            "edge_typical": np.full(n - 1, 30, np.int64),
        }
    )


def test_schedule_keys_settle_beyond_the_minimum_rounds_on_an_acyclic_graph() -> None:
    # 200 steps need 199 rounds, over MAX_KEY_ROUNDS: every edge's source is scheduled before its target, so no
    # edge is read at its recorded time and the replayed times follow every edge
    graph = staircase_graph(200)
    assert graph.size - 1 > engine.MAX_KEY_ROUNDS
    key = engine.schedule_keys(graph)
    assert (key[graph.edge_src] < key[graph.edge_dst]).all()
    shared = engine.plan(graph)
    assert not shared.e_stale.any()
    times = engine.solve_by_batches(graph, shared)
    # by hand: point n-1 at its anchor 10, then each point max(its anchor, the one before + 30) = 10 + 30 k
    np.testing.assert_array_equal(times, 10 + 30 * np.arange(graph.size)[::-1])


def test_schedule_keys_stop_on_a_cycle() -> None:
    # the same staircase closed into a cycle never settles: the rounds stop (a key passing every acyclic bound)
    # and the plan reads the edges it could not order at their recorded times
    graph = staircase_graph(50)
    graph = Graph(
        **{
            **graph.__dict__,
            "edge_src": np.append(graph.edge_src, 0),
            "edge_dst": np.append(graph.edge_dst, 49),
            "edge_lag": np.append(graph.edge_lag, 3),
            "edge_is_wait": np.append(graph.edge_is_wait, False),
            "edge_is_wake": np.append(graph.edge_is_wake, False),
            "edge_is_collective": np.append(graph.edge_is_collective, False),
            "edge_typical": np.append(graph.edge_typical, 3),
        }
    )
    shared = engine.plan(graph)
    assert shared.e_stale.any()
    np.testing.assert_array_equal(engine.solve(graph, shared), engine.solve_by_batches(graph, shared))


def assert_same_plan(graph: Graph) -> None:
    """The compiled plan (keys, points by key, edges by target) equals the numpy one, array for array."""
    reference, native_plan = engine.plan_by_numpy(graph), engine.plan_natively(graph)
    np.testing.assert_array_equal(engine.native_schedule_keys(graph), engine.schedule_keys(graph))
    for name in ("order", "e_order", "e_pos", "e_src", "e_ptr", "e_stale"):
        a, b = getattr(native_plan, name), getattr(reference, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(engine.solve(graph, native_plan), engine.solve_by_batches(graph, reference))


@native
@settings(max_examples=80, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_compiled_plan_equals_the_numpy_plan(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    assert_same_plan(random_graph(seed, n_chains, max_len, edge_share, skew_share))


@native
@pytest.mark.parametrize("steps", [1, 2, 50, 200])
def test_compiled_plan_equals_the_numpy_plan_past_the_minimum_rounds_and_on_a_cycle(steps: int) -> None:
    graph = staircase_graph(steps)  # 200: more rounds than MAX_KEY_ROUNDS
    assert_same_plan(graph)
    if steps > 1:  # closed into a cycle: the rounds stop at the ceiling, the same edges read as recorded
        cycle = Graph(
            **{
                **graph.__dict__,
                "edge_src": np.append(graph.edge_src, 0),
                "edge_dst": np.append(graph.edge_dst, steps - 1),
                "edge_lag": np.append(graph.edge_lag, 3),
                "edge_is_wait": np.append(graph.edge_is_wait, True),
                "edge_is_wake": np.append(graph.edge_is_wake, False),
                "edge_is_collective": np.append(graph.edge_is_collective, False),
                "edge_typical": np.append(graph.edge_typical, 3),
            }
        )
        assert_same_plan(cycle)


@native
def test_compiled_plan_equals_the_numpy_plan_on_a_large_graph_and_wide_keys(monkeypatch: Any) -> None:
    graph = random_graph(5, 12, 3000, 0.3, 0.02)
    assert_same_plan(graph)  # the chains merged
    monkeypatch.setattr(engine, "MERGE_CHAINS", 0)  # by counting
    assert_same_plan(graph)
    monkeypatch.setattr(engine, "COUNTING_SPAN_PER_POINT", -1)  # every key span through numpy's stable sort
    assert_same_plan(graph)


@native
def test_compiled_plan_equals_the_numpy_plan_past_one_radix_digit() -> None:
    # over 2**16 points: the edges sorted by target position in two radix passes (an even count: the sorted
    # pairs end in the output buffers; one pass, an odd count, in every smaller graph above)
    graph = random_graph(7, 4, 60_000, 0.05, 0.01)
    assert graph.size > 2**16
    assert_same_plan(graph)


@native
def test_edges_sorted_by_position_break_ties_by_edge_index() -> None:
    position = np.array([2, 0, 1, 3], np.int64)  # point -> its position in the order
    key = np.array([0, 1, 2, 3], np.int64)
    src = np.array([0, 1, 0, 2, 1], np.int64)
    dst = np.array([3, 2, 2, 1, 3], np.int64)  # positions 3, 1, 1, 0, 3
    e_order, e_pos, e_src = (np.empty(5, np.int64) for _ in range(3))
    e_stale = np.empty(5, bool)
    engine._replay_solve.edges_by_position(
        position, key, src, dst, e_order, e_pos, e_src, e_stale.view(np.uint8)
    )
    np.testing.assert_array_equal(e_order, [3, 1, 2, 0, 4])
    np.testing.assert_array_equal(e_pos, [0, 1, 1, 3, 3])
    np.testing.assert_array_equal(e_src, src[[3, 1, 2, 0, 4]])
    np.testing.assert_array_equal(e_stale, key[src[[3, 1, 2, 0, 4]]] >= key[dst[[3, 1, 2, 0, 4]]])


@native
def test_solve_refuses_edge_positions_out_of_order() -> None:
    graph = random_graph(3, 4, 200, 0.3, 0.0)
    shared = engine.plan(graph)
    assert shared.e_pos.size >= 2 and shared.e_pos[0] < shared.e_pos[-1]
    out = np.empty(graph.size, np.int64)
    for e_pos in (
        shared.e_pos[::-1].copy(),
        np.append(shared.e_pos[:-1], graph.size),
    ):  # descending; past the end
        with pytest.raises(ValueError, match="out of range"):
            _solve_sorted(graph, shared, out, e_pos=e_pos)


@native
@settings(max_examples=40, deadline=None)
@given(**GRAPH_PARAMETERS)
def test_compiled_plan_by_counting_equals_the_numpy_plan(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float
) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(engine, "MERGE_CHAINS", 0)
        assert_same_plan(random_graph(seed, n_chains, max_len, edge_share, skew_share))


@native
def test_merging_the_chains_refuses_keys_that_step_down() -> None:
    key = np.array([0, 2, 1, 0, 5], np.int64)  # chain 0: points 0-2 (2 then 1: down), chain 1: points 3-4
    order, position = np.empty(5, np.int64), np.empty(5, np.int64)
    assert engine._replay_solve.order_by_chains(key, np.array([0, 3, 5]), order, position) == -1
    key[2] = 2
    assert engine._replay_solve.order_by_chains(key, np.array([0, 3, 5]), order, position) == 0
    np.testing.assert_array_equal(order, np.argsort(key, kind="stable"))
    np.testing.assert_array_equal(position[order], np.arange(5))


def without_edges(graph: Graph, keep: np.ndarray) -> Graph:
    """``graph`` with only the edges ``keep`` (as remedies.Context.without_edges makes it)."""
    names = (
        "edge_src",
        "edge_dst",
        "edge_lag",
        "edge_is_wait",
        "edge_is_wake",
        "edge_is_collective",
        "edge_typical",
    )
    return graph.with_changes(**{name: getattr(graph, name)[keep] for name in names})


def assert_plan_without_edges_solves_as_a_new_plan(
    graph: Graph, keep: np.ndarray
) -> tuple[engine.Plan, engine.Plan]:
    """The plan of ``graph`` and the one derived from it for ``graph`` with only the edges ``keep``, whose solve
    equals the numpy reference's with the reduced graph's own plan."""
    shared = engine.plan(graph)
    reduced = without_edges(graph, keep)
    derived = engine.plan_without_edges(shared, reduced, keep)
    assert derived.fits(reduced)
    expected = engine.solve_by_batches(reduced, engine.plan_by_numpy(reduced))  # the reference, its own plan
    t, span = engine.solve_with_span(reduced, derived)
    np.testing.assert_array_equal(t, expected)
    assert span == (int(expected.max() - expected.min()) if expected.size else 0)
    np.testing.assert_array_equal(engine.solve(reduced), expected)  # the compiled path's own plan
    # the keys written into a caller's scratch array (a remedy's lag copy to be): the same plan, none of it kept
    scratch = np.full(reduced.size, -7, np.int64)
    again = engine.plan_without_edges(shared, reduced, keep, scratch)
    for name in ("order", "e_order", "e_pos", "e_src", "e_stale"):
        np.testing.assert_array_equal(getattr(again, name), getattr(derived, name))
        assert not np.shares_memory(getattr(again, name), scratch)
    return shared, derived


@settings(max_examples=80, deadline=None)
@given(**GRAPH_PARAMETERS, drop_share=st.sampled_from([0.0, 0.2, 0.7, 1.0]))
def test_a_plan_without_some_edges_solves_as_the_graphs_own_plan(
    seed: int, n_chains: int, max_len: int, edge_share: float, skew_share: float, drop_share: float
) -> None:
    graph = random_graph(seed, n_chains, max_len, edge_share, skew_share)
    keep = np.random.default_rng(seed + 1).random(graph.edge_src.size) >= drop_share
    assert_plan_without_edges_solves_as_a_new_plan(graph, keep)


@native
def test_a_plan_without_some_edges_keeps_the_order_only_where_no_edge_is_read_as_recorded() -> None:
    graph = random_graph(5, 6, 400, 0.3, 0.0)  # every edge forward in the recording: no stale edge
    keep = np.random.default_rng(0).random(graph.edge_src.size) >= 0.3
    shared, derived = assert_plan_without_edges_solves_as_a_new_plan(graph, keep)
    assert not shared.e_stale.any()
    assert derived.order is shared.order and derived.e_order.size == int(keep.sum())
    # points not those of the plan's graph (another time array): a plan of its own
    moved = without_edges(graph, keep).with_changes(time=graph.time + 1)
    own = engine.plan_without_edges(shared, moved, keep)
    assert own.order is not shared.order and own.fits(moved)
    np.testing.assert_array_equal(
        engine.solve(moved, own), engine.solve_by_batches(moved, engine.plan_by_numpy(moved))
    )
    # a cycle (each edge against the recorded order, closed): its edges read as recorded, so a new plan
    steps = 50
    stairs = staircase_graph(steps)
    cycle = stairs.with_changes(
        edge_src=np.append(stairs.edge_src, 0),
        edge_dst=np.append(stairs.edge_dst, steps - 1),
        edge_lag=np.append(stairs.edge_lag, 3),
        edge_is_wait=np.append(stairs.edge_is_wait, True),
        edge_is_wake=np.append(stairs.edge_is_wake, False),
        edge_is_collective=np.append(stairs.edge_is_collective, False),
        edge_typical=np.append(stairs.edge_typical, 3),
    )
    assert engine.plan(cycle).e_stale.any()
    for keep in (np.ones(cycle.edge_src.size, bool), np.arange(cycle.edge_src.size) != 0):
        shared, derived = assert_plan_without_edges_solves_as_a_new_plan(cycle, keep)
        assert derived.order is not shared.order
    # no edge kept; no point
    assert_plan_without_edges_solves_as_a_new_plan(graph, np.zeros(graph.edge_src.size, bool))
    empty = random_graph(1, 1, 1, 0.0, 0.0)
    assert_plan_without_edges_solves_as_a_new_plan(empty, np.zeros(empty.edge_src.size, bool))
