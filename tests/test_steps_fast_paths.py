"""The steps section's fast path gives exactly what the path it replaces gave (speed lives in benchmarks/).

- steps.step_split: each priority level's union found in one masked pass over the host rows (in start order) vs
  host_split.priority_split (per-level merges, their unions merged again), which the section called before.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.attribution import HostRows
from tracelens.analyses.host_split import priority_split
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY
from tracelens.analyses.steps import _union_of_masked, step_split
from tracelens.intervals import merge

ROW = st.tuples(
    st.integers(0, 400),  # start
    st.integers(-5, 120),  # length (a few negative: the fallback)
    st.integers(0, len(HOST_CATEGORY_PRIORITY) - 1),  # category
    st.integers(0, 3),  # thread
    st.booleans(),  # synchronous copy
)
WINDOW = st.tuples(st.integers(-20, 450), st.integers(-10, 200))


def host_rows_of(rows: list, sort: bool) -> HostRows:
    if sort:
        rows = sorted(rows, key=lambda r: r[0])
    start = np.array([r[0] for r in rows], np.int64)
    end = start + np.array([r[1] for r in rows], np.int64)
    threads = sorted({r[3] for r in rows})
    return HostRows(
        cols=SimpleNamespace(start=start, end=end),  # type: ignore[arg-type]
        row=np.arange(len(rows), dtype=np.int32),
        category=np.array([r[2] for r in rows], np.int8),
        thread=np.array([threads.index(r[3]) for r in rows], np.int32),
        sync_copy=np.array([r[4] for r in rows], bool),
        threads=pd.DataFrame({"pid": np.ones(len(threads), np.int64), "tid": np.array(threads, np.int64)}),
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ROW, max_size=40),
    st.lists(WINDOW, min_size=1, max_size=6),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_step_split_equals_priority_split(
    rows: list, windows: list, sort: bool, wellformed: bool, data
) -> None:
    if wellformed:
        rows = [(s, abs(n), c, t, k) for s, n, c, t, k in rows]
    host = host_rows_of(rows, sort)
    n_threads = len(host.threads)
    if n_threads:
        chosen = data.draw(st.sets(st.integers(0, n_threads - 1), min_size=1))
        thread_set = np.array(sorted(chosen), np.int64)
    else:
        thread_set = np.zeros(0, np.int64)
    starts = np.array([w[0] for w in windows], np.int64)
    ends = starts + np.array([w[1] for w in windows], np.int64)
    expected = priority_split(starts, ends, host, thread_set)[0]
    got = step_split(starts, ends, host, thread_set)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 80), st.booleans()), min_size=1, max_size=60))
def test_union_of_masked_equals_merge_of_the_selected_rows(rows: list) -> None:
    rows.sort(key=lambda r: r[0])
    s = np.array([r[0] for r in rows], np.int64)
    e = s + np.array([r[1] for r in rows], np.int64)
    mask = np.array([r[2] for r in rows], bool)
    for m in (mask, np.ones(s.size, bool)):  # the masked pass, the all-rows pass; the gathered one below 1/8
        got = _union_of_masked(s, e, m, int(m.sum()))
        expected = merge(s[m], e[m])
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])
