"""level_cut.intersect (the compiled walk) gives window_split.intersect's pieces, and intervals.intersect's times:
pieces against sorted disjoint intervals (holes of a union, echoes), touching, empty and single ones, the
unbounded holes of window_split.holes; it declines (None) lists whose starts or ends do not ascend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import level_cut, window_split

pytestmark = pytest.mark.skipif(not level_cut.available(), reason="compiled pass not built")


def _gaps(rng: np.random.Generator, count: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.sort(rng.integers(0, span, 2 * count))
    return edges[0::2], edges[1::2]


def _pieces(rng: np.random.Generator, count: int, span: int, ws: np.ndarray, we: np.ndarray) -> tuple:
    s = rng.integers(0, span, count)
    return window_split.cut(*intervals.merge(s, s + rng.integers(0, span // 8 + 1, count)), ws, we)


def _check(a: tuple, b_starts: np.ndarray, b_ends: np.ndarray) -> None:
    got = level_cut.intersect(a, b_starts, b_ends)
    assert got is not None
    want = window_split.intersect(a, b_starts, b_ends)
    assert all(x.dtype == np.int64 and np.array_equal(x, y) for x, y in zip(got, want, strict=True))
    times = intervals.intersect(a[0], a[1], b_starts, b_ends)
    assert all(np.array_equal(x, y) for x, y in zip(got[:2], times, strict=True))


@settings(max_examples=150, deadline=None)
@given(
    a=st.integers(0, 60),
    b=st.integers(0, 60),
    gaps=st.integers(0, 30),
    span=st.sampled_from([40, 1000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_equals_window_split(a: int, b: int, gaps: int, span: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ws, we = _gaps(rng, gaps, span + span // 4)
    pa, pb = _pieces(rng, a, span, ws, we), _pieces(rng, b, span, ws, we)
    _check(pa, *intervals.merge(pb[0], pb[1]))  # against a union's intervals
    _check(pa, *window_split.holes(pb))  # against a union's holes (unbounded ends, empty where touching)
    _check(pa, *intervals.merge(*_gaps(rng, b, span)))


def test_edge_cases() -> None:
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
            _check(a, b_starts, b_ends)


def test_declines_lists_out_of_order() -> None:
    a = (np.array([5, 1]), np.array([9, 3]), np.array([0, 0]))
    assert level_cut.intersect(a, np.array([0]), np.array([10])) is None
    one = (np.array([5]), np.array([9]), np.array([0]))
    assert level_cut.intersect(one, np.array([4, 0]), np.array([6, 10])) is None
    assert level_cut.intersect(one, np.array([0, 4]), np.array([10, 6])) is None
