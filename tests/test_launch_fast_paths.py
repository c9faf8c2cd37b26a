"""launch's fast paths give what the earlier computations give (speed lives in benchmarks/).

- queue_depth: the events sorted as packed keys (no argsort), first and last times read at each stream's run,
  and the three-key fallback, against the argsort sweep with np.minimum.at / np.maximum.at it replaced.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import launch
from tracelens.analyses.columns import Table


def reference_queue_depth(pairs: Table) -> list[dict[str, Any]]:
    """The computation queue_depth replaced (argsort of the packed key, ufunc.at for the first/last times)."""
    m = pairs[pairs["matched"]]
    if m.empty:
        return []
    codes, uniques = pd.factorize(
        m["device"].astype(np.int64) * (1 << 32) + (m["stream"].astype(np.int64) & 0xFFFFFFFF)
    )
    launch_end = m["launch_end"]
    gpu_end = np.maximum(m["end"], launch_end)
    outstanding = np.bincount(codes, weights=gpu_end - launch_end, minlength=len(uniques))
    first = np.full(len(uniques), np.iinfo(np.int64).max)
    np.minimum.at(first, codes, launch_end)
    last = np.zeros(len(uniques), np.int64)
    np.maximum.at(last, codes, gpu_end)
    ops = np.bincount(codes, minlength=len(uniques))
    lo = int(launch_end.min())
    stream_code = np.concatenate([codes, codes]).astype(np.int64)
    times = np.concatenate([gpu_end, launch_end]) - lo
    is_launch = np.concatenate([np.zeros(codes.size, np.int64), np.ones(codes.size, np.int64)])
    order = np.lexsort((is_launch, times, stream_code))
    csum = np.cumsum(2 * is_launch[order] - 1)
    group_start = np.searchsorted(stream_code[order], np.arange(len(uniques)))
    base = np.concatenate([[0], csum[group_start[1:] - 1]])
    maxima = np.maximum.reduceat(csum, group_start) - base
    out = []
    for i, key in enumerate(uniques):
        span = int(last[i] - first[i])
        low = int(key) & 0xFFFFFFFF
        out.append(
            {
                "device": int(key) >> 32,
                "stream": low - (1 << 32) if low >= (1 << 31) else low,
                "max": int(maxima[i]),
                "mean": float(outstanding[i] / span) if span > 0 else 0.0,
                "ops": int(ops[i]),
            }
        )
    return sorted(out, key=lambda q: (q["device"], q["stream"]))


ops_strategy = st.lists(
    st.tuples(
        st.integers(0, 2),  # device
        st.integers(-2, 3),  # stream (negative: a stream id read as signed)
        st.integers(-5, 40),  # launch end
        st.integers(-3, 30),  # op end minus launch end (negative: an op ending before its launch call)
        st.booleans(),  # matched
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops_strategy, st.sampled_from([0, 10**6]))
def test_queue_depth_equals_the_argsort_sweep(ops: list[tuple[int, int, int, int, bool]], shift: int) -> None:
    launch_end = np.array([o[2] + shift for o in ops], np.int64)
    pairs = Table(
        {
            "device": np.array([o[0] for o in ops], np.int8),
            "stream": np.array([o[1] for o in ops], np.int32),
            "launch_end": launch_end,
            "end": launch_end + np.array([o[3] for o in ops], np.int64),
            "matched": np.array([o[4] for o in ops], bool),
        }
    )
    want = reference_queue_depth(pairs)
    assert launch.queue_depth(pairs) == want
    saved = launch.KEY_LIMIT
    launch.KEY_LIMIT = 0  # every span too wide to pack: the three-key sort
    try:
        assert launch.queue_depth(pairs) == want
    finally:
        launch.KEY_LIMIT = saved


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 4), st.integers(0, 30)), min_size=1, max_size=40))
def test_sync_calls_by_position_equal_a_stable_sort(calls: list[tuple[int, int, int]]) -> None:
    """sync._by_position: calls in start order grouped by thread vs the stable sort of their (thread, start)
    positions; out of start order, that sort itself."""
    from tracelens.analyses import sync
    from tracelens.analyses.columns import thread_key, thread_time_positions

    for in_order in (True, False):
        rows = sorted(calls, key=lambda c: c[2]) if in_order else calls
        key = thread_key(np.array([c[0] for c in rows], np.int32), np.array([c[1] for c in rows], np.int32))
        start = np.array([c[2] for c in rows], np.int64)
        (positions,) = thread_time_positions([(key, [start])])
        want = np.argsort(positions, kind="stable")
        assert sync._by_position(key, positions, start).tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, 8), st.booleans(), st.integers(0, 50)),  # id (-1: none), driver, start
        max_size=25,
    )
)
def test_call_rows_equal_a_sort_by_id_runtime_first_then_earliest(calls: list[tuple[int, bool, int]]) -> None:
    """launch._call_rows (a sort on the id alone where no call is a driver call; no selection where every id
    is once) against the rule: per id, the runtime call before driver calls, then the earliest (row order)."""
    from tracelens.analyses.columns import event_columns
    from tracelens.trace import ALL_KINDS, Trace

    rows = [
        {
            "kind": "driver" if driver else "runtime",
            "name": "cuLaunchKernel" if driver else "cudaLaunchKernel",
            "start_ns": start,
            "end_ns": start + 1,
            "pid": 1,
            "tid": 1,
            "correlation_id": None if corr < 0 else corr,
        }
        for corr, driver, start in sorted(calls, key=lambda c: c[2])
    ]
    trace = Trace.from_rows(rows or [{"kind": "runtime", "name": "x", "start_ns": 0, "end_ns": 1}])
    cols = event_columns(trace)
    table_rows = [
        (int(cols.at("correlation_id", np.array([r]))[0]), int(cols.kind[r]), r)
        for r in range(cols.kind.size)
    ]
    best: dict[int, tuple[int, int]] = {}
    for corr, kind, row in table_rows:
        if corr >= 0:
            rank = (kind == ALL_KINDS.index("driver"), row)
            best[corr] = min(best.get(corr, rank), rank)
    ids, call_rows, unique = launch._call_rows(trace)
    assert ids.tolist() == sorted(best)
    assert call_rows.tolist() == [best[c][1] for c in sorted(best)]
    with_id = [c for c, _, _ in table_rows if c >= 0]
    assert unique == (len(with_id) == len(set(with_id)))
