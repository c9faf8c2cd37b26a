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


def _disjoint_windows(draws: list) -> tuple[np.ndarray, np.ndarray]:
    """Sorted windows that do not overlap (they may touch or be empty) from (gap, length) draws."""
    starts, ends, at = [], [], -20
    for gap, length in draws:
        at += gap
        starts.append(at)
        ends.append(at + length)
        at += length
    return np.array(starts, np.int64), np.array(ends, np.int64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ROW, max_size=40),
    st.lists(st.tuples(st.integers(0, 120), st.integers(0, 150)), max_size=6),
    st.booleans(),
    st.booleans(),
    st.data(),
)
def test_compiled_step_coverage_equals_the_numpy_split(
    rows: list, gaps: list, sort: bool, wellformed: bool, data
) -> None:
    """On sorted disjoint windows (the compiled pass's case; rows out of order or ending before they start: it
    declines), the split equals priority_split's and the numpy path's (the compiled module hidden)."""
    import tracelens.analyses.steps as steps

    if wellformed:
        rows = [(s, abs(n), c, t, k) for s, n, c, t, k in rows]
    host = host_rows_of(rows, sort)
    n_threads = len(host.threads)
    if n_threads:
        chosen = data.draw(st.sets(st.integers(0, n_threads - 1), min_size=1))
        thread_set = np.array(sorted(chosen), np.int64)
    else:
        thread_set = np.zeros(0, np.int64)
    starts, ends = _disjoint_windows(gaps)
    expected = priority_split(starts, ends, host, thread_set)[0]
    got = step_split(starts, ends, host, thread_set)
    compiled = steps._compiled
    steps._compiled = None  # type: ignore[assignment]
    try:
        numpy_path = step_split(starts, ends, host, thread_set)
    finally:
        steps._compiled = compiled  # type: ignore[assignment]
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, numpy_path)


def test_compiled_step_coverage_declines_rows_out_of_order() -> None:
    """Rows out of start order or ending before they start: the pass gives None (the numpy path then)."""
    import tracelens.analyses.steps as steps

    if steps._compiled is None:
        return
    starts, ends = np.array([0, 50], np.int64), np.array([40, 90], np.int64)
    every = np.arange(1, dtype=np.int64)
    unordered = host_rows_of([(30, 5, 1, 0, False), (10, 5, 3, 0, False)], sort=False)
    assert steps._compiled_coverage(starts, ends, unordered, every) is None
    backwards = host_rows_of([(10, -5, 1, 0, False)], sort=False)
    assert steps._compiled_coverage(starts, ends, backwards, every) is None
    ordered = host_rows_of([(10, 5, 3, 0, False), (30, 25, 1, 0, False)], sort=False)
    covered = steps._compiled_coverage(starts, ends, ordered, every)
    assert covered is not None
    # level 1 (sync): [30, 55) -> 10 in the first window, 5 in the second; through level 3 the row [10, 15) too
    np.testing.assert_array_equal(covered[1], [10, 5])
    np.testing.assert_array_equal(covered[3], [15, 5])
