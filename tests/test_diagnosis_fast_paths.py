"""The diagnosis's fast paths give what the reference computations give (speed lives in benchmarks/).

- unexplained_idle._reaching_rows: on rows in start order, the union's ends placed among the rows' starts (one
  binary search per union interval) vs a binary search per host row (the path for rows out of start order).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
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
        got = list(unexplained_idle._reaching_rows(cols, host_mask, host, us, ue))
        # rows out of start order take the per-row search: the same rows once sorted back
        order = np.arange(start.size)[::-1]
        shuffled = SimpleNamespace(start=start[order], end=end[order])
        back = list(
            unexplained_idle._reaching_rows(
                shuffled, host_mask[order], np.flatnonzero(host_mask[order]), us, ue
            )
        )
    finally:
        unexplained_idle.HOST_CHUNK = old
    none = [np.zeros(0, np.int64)]
    assert np.concatenate(got + none).tolist() == want.tolist()
    assert sorted(order[np.concatenate(back + none)].tolist()) == want.tolist()
