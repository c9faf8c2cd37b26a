"""The diagnosis's fast paths give what the reference computations give (speed lives in benchmarks/).

- unexplained_idle._reaching_rows: on rows in start order, the union's ends placed among the rows' starts (one
  binary search per union interval) vs a binary search per host row (the path for rows out of start order);
- completeness.judge: GPU ops' ids and matches read from launch_pairs vs its own read and search.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import FIXTURES
from tracelens import intervals
from tracelens.analyses import completeness
from tracelens.analyses.columns import Table
from tracelens.analyses.diagnosis import unexplained_idle


def reference_reaching(start: np.ndarray, end: np.ndarray, host: np.ndarray, us: np.ndarray, ue: np.ndarray):
    next_start = np.append(us, np.iinfo(np.int64).max)
    return host[next_start[np.searchsorted(ue, start[host], side="right")] < end[host]]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12), st.booleans()), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 10)), max_size=8),
    st.integers(1, 7),
)
def test_reaching_rows_in_start_order_equal_a_search_per_row(rows, union, chunk) -> None:
    start = np.sort(np.array([r[0] for r in rows], np.int64))
    end = start + np.array([r[1] for r in rows], np.int64)
    host_mask = np.array([r[2] for r in rows], bool)
    host = np.flatnonzero(host_mask)
    us, ue = intervals.merge(
        np.array([u[0] for u in union], np.int64), np.array([u[0] + u[1] for u in union], np.int64)
    )
    cols = SimpleNamespace(start=start, end=end)
    want = reference_reaching(start, end, host, us, ue)
    old = unexplained_idle.HOST_CHUNK
    unexplained_idle.HOST_CHUNK = chunk  # several chunks: each counts the union intervals ended before it
    try:
        got = list(unexplained_idle._reaching_rows(cols, host_mask, us, ue))
        # rows out of start order take the per-row search: the same rows once sorted back
        order = np.arange(start.size)[::-1]
        shuffled = SimpleNamespace(start=start[order], end=end[order])
        back = list(unexplained_idle._reaching_rows(shuffled, host_mask[order], us, ue))
    finally:
        unexplained_idle.HOST_CHUNK = old
    none = [np.zeros(0, np.int64)]
    assert np.concatenate(got + none).tolist() == want.tolist()
    assert sorted(order[np.concatenate(back + none)].tolist()) == want.tolist()


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in (FIXTURES / "completeness").glob("*.json"))
    + ["../gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz", "../nsys/handmade_nsys2026.sqlite"],
)
def test_judge_from_launch_pairs_equals_its_own_join(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # completeness.judge: the GPU ops' ids and their match to an API call's id read from launch_pairs (its rows are
    # the GPU ops where every one has a device) vs read and searched again (the path for ops without a device)
    trace = tracelens.load(FIXTURES / "completeness" / name)
    joined = completeness.judge(trace)
    monkeypatch.setattr(completeness, "launch_pairs", lambda _trace: Table({"matched": np.zeros(0, bool)}))
    assert completeness.judge(trace) == joined
