"""The replay's fast paths give exactly what the reference paths give (speed lives in benchmarks/).

- engine.solve: the one-pass compiled solver (where built) vs the numpy batches (solve_by_batches); in the
  batches, batches of up to SMALL_BATCH points solved point by point vs every batch through the numpy path
  (SMALL_BATCH = 1), and a plan shared from the unchanged graph vs one made for the graph itself
  (tests/test_replay_solver.py: the same on generated graphs);
- call_names.text_mask (per dictionary word) vs the per-row str() it replaces;
- completeness._member (sort + binary search) vs np.isin;
- wake_edges._latest_point_before (binary searches per thread) vs one stable sort of every call's start and end;
- wake_edges.wake_edges' coverage thread by thread vs one join of every thread's rows;
- host_calls._thread_time_order (a stable sort by thread of rows in start order) vs the lexsort.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import FIXTURES, fixture_path
from tracelens.analyses.completeness import _member
from tracelens.replay import engine, wake_edges
from tracelens.replay import graph as graph_module
from tracelens.replay.call_names import lower_is, text_mask
from tracelens.replay.host_calls import _thread_time_order
from tracelens.replay.remedies import REMEDIES, Context
from tracelens.replay.wake_edges import _latest_point_before

TRACES = [
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/pytorch_pageable-copies_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


def _graphs(ctx: Context) -> list:
    graphs = [ctx.graph, ctx.graph.at_typical_lags()]
    for _cause, (_remedy, model) in REMEDIES.items():
        changed, _ = model(ctx)
        if changed is not None:
            graphs.append(changed)
    return graphs


@pytest.mark.parametrize("name", TRACES)
def test_small_batches_and_shared_plan_equal_the_numpy_path(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fixture_path(name)
    ctx = Context(tracelens.load(path))
    graphs = _graphs(ctx)
    one_pass = [engine.solve(g, ctx.plan) for g in graphs]
    fast = [engine.solve_by_batches(g, ctx.plan) for g in graphs]
    monkeypatch.setattr(engine, "SMALL_BATCH", 1)
    reference = [engine.solve_by_batches(g) for g in graphs]
    sizes = np.diff(np.append(ctx.plan.group_lo, ctx.graph.size))
    assert ((sizes > 1) & (sizes <= 32)).any(), "the trace exercises the point-by-point path"
    for a, b, c in zip(one_pass, fast, reference, strict=True):
        assert a.dtype == b.dtype == c.dtype
        np.testing.assert_array_equal(b, c)
        np.testing.assert_array_equal(a, c)


def test_text_mask_matches_per_row_strings() -> None:
    words = ["Pinned", "pageable", None, "PINNED", "Device", None]
    for values in (
        pa.array(words).dictionary_encode(),
        pa.array(words),
        pa.chunked_array([words[:3], words[3:]]),
    ):
        expected = np.array([str(w).lower() == "pinned" for w in words])
        np.testing.assert_array_equal(text_mask(values, lower_is("pinned")), expected)
        np.testing.assert_array_equal(text_mask(values, "None".__eq__), np.array([w is None for w in words]))


def test_member_matches_isin() -> None:
    rng = np.random.default_rng(7)
    values, reference = rng.integers(-5, 400, 2000), rng.integers(0, 300, 700)
    np.testing.assert_array_equal(_member(values, reference), np.isin(values, reference))
    np.testing.assert_array_equal(_member(values, reference[:0]), np.zeros(values.size, bool))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3)), min_size=1, max_size=8),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.integers(-2, 60), min_size=1, max_size=12),
)
def test_latest_point_before_per_thread_equals_one_sort(threads: list, queries: list) -> None:
    # calls per thread as graph.build stores them: starts ascending (ties allowed), ends strictly ascending
    cs_parts, ce_parts, heads = [], [], []
    for calls in threads:
        heads.append(sum(len(p) for p in cs_parts))
        starts = np.cumsum([gap for gap, _ in calls])
        ends = np.maximum.accumulate(starts + np.array([length for _, length in calls]))
        ends = ends + np.arange(ends.size)  # strictly ascending, each end at or after its start
        cs_parts.append(starts)
        ce_parts.append(ends)
    cs, ce = np.concatenate(cs_parts).astype(np.int64), np.concatenate(ce_parts).astype(np.int64)
    t = np.array(queries, np.int64)
    # reference: the latest of [starts..., ends...] before each time, ties to the last in a stable sort
    times = np.concatenate([cs, ce])
    order = np.argsort(times, kind="stable")
    at = np.searchsorted(times[order], t, side="left") - 1
    want_index = np.where(at >= 0, order[np.maximum(at, 0)], -1)
    got_time, got_index = _latest_point_before(cs, ce, np.array(heads, np.int64), t)
    assert got_index.tolist() == want_index.tolist()
    assert got_time[want_index >= 0].tolist() == times[want_index[want_index >= 0]].tolist()


def test_wake_coverage_per_thread_equals_the_join_of_every_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # wake_edges.wake_edges: idle gaps' coverage by their thread's own rows, thread by thread (few threads) vs one
    # join of every thread's rows by packed (thread, time) positions (many threads): the same graph
    woken = 0
    for name in TRACES + [
        "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
        "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    ]:
        path = FIXTURES / name
        if not path.exists():
            continue
        trace = tracelens.load(path)
        per_thread = graph_module.build(trace)
        monkeypatch.setattr(wake_edges, "WAKE_THREAD_LOOP", -1)
        joined = graph_module.build(trace)
        monkeypatch.undo()
        woken += int(per_thread.edge_is_wake.sum())
        for field in dataclasses.fields(per_thread):
            a, b = getattr(per_thread, field.name), getattr(joined, field.name)
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b, err_msg=f"{name}: {field.name}")
            else:
                assert a == b, f"{name}: {field.name}"
    assert woken > 0, "some trace has wake edges"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30), st.integers(0, 9)), min_size=1, max_size=40),
    st.booleans(),
)
def test_thread_time_order_equals_the_lexsort(rows: list, in_start_order: bool) -> None:
    # host_calls._thread_time_order: a stable sort by thread where rows come in start order and no two rows of a
    # thread start together, else the lexsort by (thread, start, longest first)
    if in_start_order:
        rows = sorted(rows, key=lambda r: r[1])
    thread, start, length = (np.array(c, np.int64) for c in zip(*rows, strict=True))
    end = start + length
    want = np.lexsort((-end, start, thread))
    assert _thread_time_order(thread, start, end).tolist() == want.tolist()


@pytest.mark.parametrize(
    "name",
    [
        "gpu/pytorch_pageable-copies_cuda.pt.trace.json.gz",  # synchronization and memcpy drop waits
        "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
        "kineto/old_format.json",
    ],
)
def test_remedies_that_drop_waits_replay_as_with_their_graphs_own_plan(name: str) -> None:
    """The remedies that drop waits replay with the unchanged graph's order where it serves
    (engine.plan_without_edges): the times equal the numpy batches' with the changed graph's own plan."""
    ctx = Context(tracelens.load(FIXTURES / name))
    dropped = 0
    for cause in ("synchronization", "memcpy"):
        changed, _ = REMEDIES[cause][1](ctx)
        if changed is None:
            continue
        dropped += 1
        expected = engine.solve_by_batches(changed, engine.plan_by_numpy(changed))
        outcome = ctx.outcome(changed)
        np.testing.assert_array_equal(outcome.times, expected)
        assert outcome.span_ns == int(expected.max() - expected.min())
    assert dropped


@pytest.mark.parametrize("seed", range(6))
def test_typical_lags_written_device_by_device_equal_the_gathered_codes(seed: int, monkeypatch) -> None:
    # up to FEW_DEVICES devices each op's typical lags are written one device's mask at a time; the codes' gather
    # (the path beyond) and a plain per-op lookup give the same arrays and medians
    from tracelens.replay import typical_lags as T

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    op_dev = rng.choice(np.array([0, 3, 7, 12], np.int64)[: int(rng.integers(2, 5))], n)
    op_order = rng.permutation(n)
    steady, queued = rng.random(n) < 0.6, rng.random(n) < 0.4
    launch_lags = rng.integers(0, 10_000, int(steady.sum()))
    stream_gaps = rng.integers(0, 3_000, int(queued.sum()))
    args = (op_dev, op_order, launch_lags, steady, stream_gaps, queued)
    masked = T.typical_lags_by_device(*args)
    monkeypatch.setattr(T, "FEW_DEVICES", 0)
    gathered = T.typical_lags_by_device(*args)
    assert masked[:2] == gathered[:2]
    np.testing.assert_array_equal(masked[2], gathered[2])
    np.testing.assert_array_equal(masked[3], gathered[3])
    o_dev = op_dev[op_order]
    np.testing.assert_array_equal(masked[2], [masked[0][int(d)] for d in o_dev])
    np.testing.assert_array_equal(masked[3], [masked[1][int(d)] for d in o_dev])
