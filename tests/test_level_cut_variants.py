"""``_merge_search.cut_levels``' copies of its loop (int32 or int64 rows, thread codes of each width, some or every
thread chosen, rows dense in the event columns or spread over them: the times read ahead or not) against the numpy
definition: each chosen category's rows merged by ``intervals.merge`` and cut by ``window_split.cut``, or None where
a chosen row ends before it starts or a level's chosen rows are not in start order. Empty rows, one row, ties."""

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


def _reference(rows: SimpleNamespace, chosen: np.ndarray, ws: np.ndarray, we: np.ndarray) -> list | None:
    mine = np.isin(rows.thread, chosen) & (rows.category >= 0) & (rows.category < LEVELS)
    s, e = rows.cols.start[rows.row[mine]], rows.cols.end[rows.row[mine]]
    cat = rows.category[mine]
    if (e < s).any():
        return None
    out = []
    for level in range(LEVELS):
        ls, le = s[cat == level], e[cat == level]
        if (ls[1:] < ls[:-1]).any():
            return None
        out.append(window_split.cut(*intervals.merge(ls, le), ws, we))
    return out


def _check(rows: SimpleNamespace, chosen: np.ndarray, ws: np.ndarray, we: np.ndarray) -> None:
    want = _reference(rows, chosen, ws, we)
    got = level_cut.cut_thread_levels(ws, we, rows, chosen)  # type: ignore[arg-type]
    if want is None:
        assert got is None
        return
    assert got is not None
    for g, w in zip(got.pieces, want, strict=True):
        for a, b in zip(g, w, strict=True):
            assert a.dtype == np.int64 and np.array_equal(a, b)


def _rows(
    rng: np.random.Generator, size: int, dense: bool, row_type: type, thread_type: type, disorder: bool
) -> SimpleNamespace:
    events = size + 1 if dense else 3 * size + 1  # dense: no read-ahead; spread: the times read ahead
    start = np.sort(rng.integers(0, 400, events))
    end = start + rng.integers(0, 60, events)
    if disorder and events > 1:  # a swap or a row ending before it starts: the pass declines (where chosen)
        k = int(rng.integers(0, events - 1))
        if rng.random() < 0.5:
            start[k], start[k + 1] = start[k + 1], start[k] - 1
        else:
            end[k] = start[k] - 1
    return SimpleNamespace(
        cols=SimpleNamespace(start=start.astype(np.int64), end=end.astype(np.int64)),
        row=np.sort(rng.choice(events, size, replace=False)).astype(row_type),
        category=rng.integers(-1, LEVELS + 1, size).astype(np.int8),  # some outside the levels
        thread=rng.integers(0, 3, size).astype(thread_type),
        sync_copy=np.zeros(size, bool),
        threads=pd.DataFrame({"pid": np.zeros(3, np.int32), "tid": np.arange(3, dtype=np.int32)}),
    )


@settings(max_examples=250, deadline=None)
@given(
    size=st.integers(0, 120),
    dense=st.booleans(),
    row_type=st.sampled_from([np.int32, np.int64]),
    thread_type=st.sampled_from([np.int8, np.int16, np.int32, np.int64]),
    some_threads=st.booleans(),
    disorder=st.booleans(),
    windows=st.integers(0, 20),
    seed=st.integers(0, 2**32 - 1),
)
def test_cut_levels_variants_equal_numpy(
    size: int,
    dense: bool,
    row_type: type,
    thread_type: type,
    some_threads: bool,
    disorder: bool,
    windows: int,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    rows = _rows(rng, size, dense, row_type, thread_type, disorder)
    edges = np.sort(rng.integers(0, 500, 2 * windows)).astype(np.int64)  # touching, tied and empty windows
    chosen = np.array([0, 2]) if some_threads else np.arange(3)
    _check(rows, chosen, edges[0::2], edges[1::2])


def test_cut_levels_variants_edge_cases() -> None:
    ws, we = np.array([10, 20, 20], np.int64), np.array([20, 20, 40], np.int64)
    for row_type in (np.int32, np.int64):
        for thread_type in (np.int8, np.int64):
            for starts, ends in [([], []), ([12], [15]), ([12, 12, 12], [30, 12, 15]), ([0, 20], [20, 45])]:
                n = len(starts)
                rows = SimpleNamespace(
                    cols=SimpleNamespace(start=np.array(starts, np.int64), end=np.array(ends, np.int64)),
                    row=np.arange(n, dtype=row_type),
                    category=np.full(n, LEVELS - 1, np.int8),
                    thread=np.zeros(n, thread_type),
                    sync_copy=np.zeros(n, bool),
                    threads=pd.DataFrame({"pid": np.zeros(2, np.int32), "tid": np.arange(2, dtype=np.int32)}),
                )
                for chosen in (np.array([0]), np.arange(2)):
                    _check(rows, chosen, ws, we)
