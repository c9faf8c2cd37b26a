"""``_merge_search.cut_levels`` skips the rows that meet no window (rows inside a device's busy intervals: most host
rows of a GPU-bound trace) before merging: the pieces must stay those of ``window_split.cut(*intervals.merge(s, e),
ws, we)`` over every row, and the pass must still decline exactly where it did (a row ending before it starts, a
level's rows out of start order), skipped rows included. Cases: rows bridging two pieces from outside the windows,
rows touching a window's edge, zero-length rows and windows, no windows, one row, ties."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import level_cut, window_split
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY

pytestmark = pytest.mark.skipif(not level_cut.available(), reason="the compiled pass is not built")

LEVELS = len(HOST_CATEGORY_PRIORITY)


def _host_rows(start: list[int], end: list[int], category: list[int] | None = None) -> SimpleNamespace:
    """Host rows on one thread, one event row each, in the given order."""
    n = len(start)
    return SimpleNamespace(
        cols=SimpleNamespace(start=np.array(start, np.int64), end=np.array(end, np.int64)),
        row=np.arange(n, dtype=np.int32),
        category=np.array(category if category is not None else [LEVELS - 1] * n, np.int8),
        thread=np.zeros(n, np.int8),
        sync_copy=np.zeros(n, bool),
        threads=pd.DataFrame({"pid": np.zeros(1, np.int32), "tid": np.zeros(1, np.int32)}),
    )


def _reference(rows: SimpleNamespace, ws: np.ndarray, we: np.ndarray) -> list:
    s, e = rows.cols.start[rows.row], rows.cols.end[rows.row]
    return [
        window_split.cut(*intervals.merge(s[rows.category == lv], e[rows.category == lv]), ws, we)
        for lv in range(LEVELS)
    ]


def _check(rows: SimpleNamespace, ws: list[int] | np.ndarray, we: list[int] | np.ndarray) -> None:
    ws, we = np.asarray(ws, np.int64), np.asarray(we, np.int64)
    got = level_cut.cut_thread_levels(ws, we, rows, np.arange(1))  # type: ignore[arg-type]
    assert got is not None
    for g, w in zip(got.pieces, _reference(rows, ws, we), strict=True):
        for a, b in zip(g, w, strict=True):
            assert a.dtype == np.int64 and np.array_equal(a, b)


def test_rows_outside_the_windows() -> None:
    ws, we = [10, 40], [20, 50]
    _check(_host_rows([], []), ws, we)  # no rows
    _check(_host_rows([12], [15]), ws, we)  # one row inside
    _check(_host_rows([25], [30]), ws, we)  # one row outside (in the busy interval between the windows)
    _check(_host_rows([0, 20, 50], [10, 40, 60]), ws, we)  # rows touching the windows' edges from outside
    _check(
        _host_rows([5, 19, 22, 45], [11, 22, 41, 46]), ws, we
    )  # a skipped row bridging two that meet windows
    _check(_host_rows([5, 5, 5, 30], [15, 15, 9, 60]), ws, we)  # ties, one skipped among them
    _check(_host_rows([15, 15, 30, 30], [15, 18, 30, 41]), ws, we)  # zero-length rows inside and outside
    _check(_host_rows([0, 10, 15], [100, 12, 30]), ws, we)  # a row spanning every window first
    _check(_host_rows([1, 2], [3, 4]), [], [])  # no windows: every row skipped
    _check(_host_rows([10, 12, 20], [15, 20, 20]), [10, 20, 20], [20, 20, 30])  # touching and empty windows
    # the levels apart: a skipped row of one level between rows of another
    _check(_host_rows([11, 25, 26, 41], [19, 30, 45, 49], [4, 3, 4, 3]), ws, we)


def test_declines_as_before_where_skipped_rows_do_not_fit() -> None:
    ws, we = np.array([10, 40], np.int64), np.array([20, 50], np.int64)
    # rows out of start order, both outside the windows
    rows = _host_rows([25, 22, 45], [26, 23, 46])
    assert level_cut.cut_thread_levels(ws, we, rows, np.arange(1)) is None  # type: ignore[arg-type]
    # out of order with no windows at all
    empty = np.zeros(0, np.int64)
    assert level_cut.cut_thread_levels(empty, empty, rows, np.arange(1)) is None  # type: ignore[arg-type]
    # a skipped row ending before it starts
    rows = _host_rows([12, 30, 45], [15, 25, 46])
    assert level_cut.cut_thread_levels(ws, we, rows, np.arange(1)) is None  # type: ignore[arg-type]
    # out of order across levels is fine (each level's rows in start order)
    _check(_host_rows([30, 12, 45], [31, 14, 48], [3, 4, 4]), ws, we)


@settings(max_examples=120, deadline=None)
@given(
    size=st.integers(0, 150),
    gaps=st.integers(0, 30),
    seed=st.integers(0, 2**32 - 1),
    busy=st.sampled_from([0.5, 0.9, 0.99]),
)
def test_mostly_busy_equals_merge_then_cut(size: int, gaps: int, seed: int, busy: float) -> None:
    """Short windows among long busy intervals: most rows meet no window, some bridge or touch them."""
    rng = np.random.default_rng(seed)
    span = 10_000
    centers = np.sort(rng.choice(span, gaps, replace=False))
    width = max(1, int(span * (1 - busy) / max(gaps, 1)))
    ws = centers.astype(np.int64)
    we = np.minimum(ws + rng.integers(0, width + 1, gaps), np.append(ws[1:], span))
    start = np.sort(rng.integers(0, span, size))
    # rows ending on window edges or inside busy time likely
    end = start + rng.choice([0, 1, width, 3 * width], size)
    edges = np.concatenate([ws, we])
    if edges.size and size:
        snap = rng.random(size) < 0.3
        end[snap] = np.maximum(start[snap], edges[rng.integers(0, edges.size, int(snap.sum()))])
    rows = _host_rows(start.tolist(), end.tolist(), rng.integers(0, LEVELS, size).tolist())
    _check(rows, ws, we)
