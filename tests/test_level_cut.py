"""The compiled cut of the host rows' category unions into a device's gaps (``level_cut.cut_thread_levels``,
``_merge_search.cut_levels``) against the numpy path it replaces in ``host_split.split_gaps`` (the rows gathered,
each category merged by ``intervals.merge`` and cut by ``window_split.cut``), and ``split_gaps`` with it against
``split_gaps`` without it: empty gaps, one gap, touching and tied rows and gaps, gaps with no host row, rows out
of start order or ending before they start (the pass declines), a subset of the threads."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import host_split, level_cut, window_split
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY

pytestmark = pytest.mark.skipif(not level_cut.available(), reason="the compiled pass is not built")

LEVELS = len(HOST_CATEGORY_PRIORITY)


def _rows(
    rng: np.random.Generator, size: int, threads: int, span: int, ordered: bool = True
) -> SimpleNamespace:
    """Random host rows over event rows: starts ascending with the event row where ``ordered`` (ties likely)."""
    events = 2 * size + 1
    start = rng.integers(0, span, events)
    if ordered:
        start.sort()
    return SimpleNamespace(
        cols=SimpleNamespace(start=start, end=start + rng.integers(0, span // 8 + 1, events)),
        row=np.sort(rng.choice(events, size, replace=False)).astype(np.int32),
        category=rng.integers(0, LEVELS, size).astype(np.int8),
        thread=rng.integers(0, threads, size).astype(np.int8),
        sync_copy=rng.random(size) < 0.3,
        threads=pd.DataFrame({"pid": np.zeros(threads, np.int32), "tid": np.arange(threads, dtype=np.int32)}),
    )


def _gaps(rng: np.random.Generator, count: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint gaps: touching, empty and tied ones likely."""
    edges = np.sort(rng.integers(0, span, 2 * count))
    return edges[0::2].astype(np.int64), edges[1::2].astype(np.int64)


def _reference_cut(rows: SimpleNamespace, thread_set: np.ndarray, ws: np.ndarray, we: np.ndarray) -> list:
    chosen = np.zeros(len(rows.threads), bool)
    chosen[thread_set] = True
    mine = chosen[rows.thread]
    at = rows.row[mine]
    s, e, cat = rows.cols.start[at], rows.cols.end[at], rows.category[mine]
    return [window_split.cut(*intervals.merge(s[cat == lv], e[cat == lv]), ws, we) for lv in range(LEVELS)]


def _thread_set(rng: np.random.Generator, threads: int) -> np.ndarray:
    return np.sort(rng.choice(threads, int(rng.integers(1, threads + 1)), replace=False))


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(0, 200),
    gaps=st.integers(0, 40),
    threads=st.integers(1, 4),
    span=st.sampled_from([50, 1000, 10**6]),
    seed=st.integers(0, 2**32 - 1),
)
def test_cut_equals_merge_then_cut(size: int, gaps: int, threads: int, span: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = _rows(rng, size, threads, span)
    ws, we = _gaps(rng, gaps, span + span // 4)
    thread_set = _thread_set(rng, threads)
    got = level_cut.cut_thread_levels(ws, we, rows, thread_set)  # type: ignore[arg-type]
    assert got is not None
    for g, w in zip(got.pieces, _reference_cut(rows, thread_set, ws, we), strict=True):
        for a, b in zip(g, w, strict=True):
            assert a.dtype == np.int64 and np.array_equal(a, b)
    chosen = np.isin(rows.thread, thread_set) & (rows.category == HOST_CATEGORY_PRIORITY.index("sync"))
    assert np.array_equal(got.sync_starts, rows.cols.start[rows.row[chosen]])
    assert np.array_equal(got.sync_ends, rows.cols.end[rows.row[chosen]])
    assert np.array_equal(got.sync_copies, rows.sync_copy[chosen])


def _split(
    rows: SimpleNamespace, thread_set: np.ndarray, ws: np.ndarray, we: np.ndarray, native: bool
) -> list:
    busy = intervals.gaps(ws, we) if ws.size else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    which = np.argsort(-(we - ws), kind="stable")[:3]
    with pytest.MonkeyPatch.context() as patch:
        if not native:
            patch.setattr(level_cut, "_compiled", None)
        got = host_split.split_gaps(ws, we, rows, thread_set, busy, which)  # type: ignore[arg-type]
    return [got.totals, got.chosen, got.sync_copy_ns, got.starts_in_sync, *got.unexplained]


def _assert_same(a: list, b: list) -> None:
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(0, 200),
    gaps=st.integers(0, 40),
    threads=st.integers(1, 4),
    span=st.sampled_from([50, 1000, 10**6]),
    ordered=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_gaps_same_with_and_without_the_pass(
    size: int, gaps: int, threads: int, span: int, ordered: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    rows = _rows(rng, size, threads, span, ordered)
    ws, we = _gaps(rng, gaps, span + span // 4)
    thread_set = _thread_set(rng, threads)
    _assert_same(_split(rows, thread_set, ws, we, True), _split(rows, thread_set, ws, we, False))


def test_edge_cases() -> None:
    rng = np.random.default_rng(7)
    rows = _rows(rng, 50, 2, 1000)
    everyone = np.arange(2)
    empty = np.zeros(0, np.int64)
    cases = [
        (empty, empty),  # no gaps
        (np.array([100]), np.array([600])),  # one gap
        (np.array([2000]), np.array([3000])),  # gaps with no host row in them
        (np.array([10, 20, 20, 40]), np.array([20, 20, 40, 900])),  # touching and empty gaps
    ]
    for ws, we in cases:
        got = level_cut.cut_thread_levels(ws, we, rows, everyone)  # type: ignore[arg-type]
        assert got is not None
        for g, w in zip(got.pieces, _reference_cut(rows, everyone, ws, we), strict=True):
            assert all(np.array_equal(a, b) for a, b in zip(g, w, strict=True))
        _assert_same(_split(rows, everyone, ws, we, True), _split(rows, everyone, ws, we, False))
    # no host rows at all
    none = _rows(rng, 0, 1, 1000)
    got = level_cut.cut_thread_levels(np.array([0]), np.array([10]), none, np.arange(1))  # type: ignore[arg-type]
    assert got is not None and all(p[0].size == 0 for p in got.pieces) and got.sync_starts.size == 0


def test_declines_rows_it_cannot_merge_as_they_come() -> None:
    rng = np.random.default_rng(3)
    ws, we = np.array([0, 500]), np.array([400, 900])
    rows = _rows(rng, 40, 1, 1000)
    rows.cols.end[rows.row[5]] = rows.cols.start[rows.row[5]] - 1  # a row ending before it starts
    assert level_cut.cut_thread_levels(ws, we, rows, np.arange(1)) is None  # type: ignore[arg-type]
    _assert_same(_split(rows, np.arange(1), ws, we, True), _split(rows, np.arange(1), ws, we, False))
    rows = _rows(rng, 40, 1, 1000)
    rows.category[:] = 3
    rows.cols.start[rows.row[[3, 4]]] = rows.cols.start[rows.row[[4, 3]]]  # two rows out of start order
    rows.cols.end[:] = rows.cols.start + 5
    if rows.cols.start[rows.row[3]] != rows.cols.start[rows.row[4]]:
        assert level_cut.cut_thread_levels(ws, we, rows, np.arange(1)) is None  # type: ignore[arg-type]
    _assert_same(_split(rows, np.arange(1), ws, we, True), _split(rows, np.arange(1), ws, we, False))


def _pieces(rng: np.random.Generator, count: int, span: int, ws: np.ndarray, we: np.ndarray) -> tuple:
    s = rng.integers(0, span, count)
    return window_split.cut(*intervals.merge(s, s + rng.integers(0, span // 8 + 1, count)), ws, we)


@settings(max_examples=150, deadline=None)
@given(
    a=st.integers(0, 60),
    b=st.integers(0, 60),
    gaps=st.integers(0, 30),
    span=st.sampled_from([40, 1000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_union_complement_and_intersect_equal_window_split(
    a: int, b: int, gaps: int, span: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    ws, we = _gaps(rng, gaps, span + span // 4)
    pa, pb = _pieces(rng, a, span, ws, we), _pieces(rng, b, span, ws, we)
    got, want = level_cut.union(pa, pb), window_split.union(pa, pb)
    assert all(x.dtype == np.int64 and np.array_equal(x, y) for x, y in zip(got, want, strict=True))
    for p in (pa, got):
        holes = level_cut.complement(p, ws, we)
        assert all(
            np.array_equal(x, y) for x, y in zip(holes, window_split.complement(p, ws, we), strict=True)
        )
    _check_intersect(pa, *intervals.merge(pb[0], pb[1]))  # against a union's intervals
    _check_intersect(pa, *window_split.holes(pb))  # a union's holes (unbounded ends, empty where touching)
    _check_intersect(pa, *intervals.merge(*_gaps(rng, b, span)))


def test_union_and_complement_edge_cases() -> None:
    empty = window_split.empty()
    one = (np.array([5]), np.array([9]), np.array([0]))
    touching = (np.array([9]), np.array([10]), np.array([0]))  # touches `one` in the same window: joined
    next_window = (
        np.array([10]),
        np.array([12]),
        np.array([1]),
    )  # touches across two touching windows: kept apart
    ws, we = np.array([0, 10]), np.array([10, 20])
    for a, b in [
        (empty, one),
        (one, empty),
        (one, one),
        (one, touching),
        (touching, one),
        (one, next_window),
    ]:
        got, want = level_cut.union(a, b), window_split.union(a, b)
        assert all(np.array_equal(x, y) for x, y in zip(got, want, strict=True))
    for p in (empty, one, window_split.union(one, next_window)):
        got = level_cut.complement(p, ws, we)
        assert all(np.array_equal(x, y) for x, y in zip(got, window_split.complement(p, ws, we), strict=True))
    zero = np.zeros(0, np.int64)
    assert all(x.size == 0 for x in level_cut.complement(empty, zero, zero))


# level_cut.intersect (the compiled walk) gives window_split.intersect's pieces, and intervals.intersect's times:
# pieces against sorted disjoint intervals (holes of a union, echoes), touching, empty and single ones, the unbounded
# holes of window_split.holes; it declines (None) lists whose starts or ends do not ascend.


def _check_intersect(a: tuple, b_starts: np.ndarray, b_ends: np.ndarray) -> None:
    got = level_cut.intersect(a, b_starts, b_ends)
    assert got is not None
    want = window_split.intersect(a, b_starts, b_ends)
    assert all(x.dtype == np.int64 and np.array_equal(x, y) for x, y in zip(got, want, strict=True))
    times = intervals.intersect(a[0], a[1], b_starts, b_ends)
    assert all(np.array_equal(x, y) for x, y in zip(got[:2], times, strict=True))


def test_intersect_edge_cases() -> None:
    empty = window_split.empty()
    one = (np.array([5]), np.array([9]), np.array([0]))
    touching = (np.array([2, 5, 9]), np.array([5, 9, 12]), np.array([0, 0, 1]))
    for a in (empty, one, touching):
        for b_starts, b_ends in [
            (np.zeros(0, np.int64), np.zeros(0, np.int64)),
            (np.array([5]), np.array([9])),  # the same as a piece
            (np.array([0, 6, 9]), np.array([6, 9, 20])),  # touching intervals
            (np.array([9]), np.array([9])),  # an empty one
            (np.array([100]), np.array([200])),  # past every piece
            window_split.holes(one),
        ]:
            _check_intersect(a, b_starts, b_ends)


def test_intersect_declines_lists_out_of_order() -> None:
    a = (np.array([5, 1]), np.array([9, 3]), np.array([0, 0]))
    assert level_cut.intersect(a, np.array([0]), np.array([10])) is None
    one = (np.array([5]), np.array([9]), np.array([0]))
    assert level_cut.intersect(one, np.array([4, 0]), np.array([6, 10])) is None
    assert level_cut.intersect(one, np.array([0, 4]), np.array([10, 6])) is None
