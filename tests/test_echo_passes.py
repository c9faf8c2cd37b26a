"""The sync echo measured without being built (``level_cut.clipped_totals``, ``level_cut.echo_spans``:
``_merge_search.clipped_totals`` / ``measure_before``) against the numpy definitions: ``window_split.totals`` of the
pieces built with ``window_split.intersect`` (less a list's times: in its holes; inside or outside the spans), and
``intervals.overlap_with_union`` / ``covered_before`` / ``time_covered`` on the eligible time built by
``intervals.intersect`` with the holes of the levels before; empty lists, one piece, ties, touching pieces; and
``split_gaps`` with the passes against without them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_union_cover import _pieces, _windows, split_gaps_both_ways  # the same made-up windows, pieces, rows

from tracelens import intervals
from tracelens.analyses import level_cut, window_split

pytestmark = pytest.mark.skipif(
    not level_cut.echo_passes_available(), reason="the compiled pass is not built"
)


def _int64(*arrays: object) -> tuple:
    return tuple(np.asarray(x, np.int64) for x in arrays)


def _outside(clip: tuple) -> tuple:
    """The holes of sorted disjoint intervals, over all time."""
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    return np.concatenate([[low], clip[1]]), np.concatenate([clip[0], [high]])


def _check_cover(a: tuple, b: tuple, clip: tuple, which: np.ndarray) -> None:
    less = window_split.intersect(b, *window_split.holes(a))
    for inside in (True, False):
        kept = window_split.intersect(less, *(clip if inside else _outside(clip)))
        found = level_cut.clipped_totals(b, a, clip, inside, which)
        assert found is not None and np.array_equal(found, window_split.totals(kept, which))


def _reference_spans(
    hw: window_split.Pieces, before: window_split.Pieces, s: np.ndarray, e: np.ndarray, busy: tuple
) -> tuple:
    """Per row: (spent, keep) as host_split._sync_echo computes them before merging."""
    holes = window_split.holes(before)
    eligible = intervals.intersect(hw[0], hw[1], holes[0], holes[1])
    if eligible[0].size == 0:
        return e, np.zeros(e.size, bool)
    waited = intervals.overlap_with_union(s, e, *busy)
    spent = intervals.time_covered(intervals.covered_before(e, *eligible) + waited, *eligible)
    return spent, (waited > 0) & (spent > e)


def _check_spans(hw: tuple, before: tuple, s: np.ndarray, e: np.ndarray, busy: tuple) -> None:
    found = level_cut.echo_spans(hw, before, s, e, busy)
    assert found is not None
    spent, keep = _reference_spans(hw, before, s, e, busy)
    assert np.array_equal(found[1], keep)
    assert np.array_equal(found[0][keep], spent[keep])  # (an end without an echo is not read)


@settings(max_examples=200, deadline=None)
@given(
    windows=st.integers(0, 30),
    counts=st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 8)),
    span=st.sampled_from([20, 1000, 10**6]),
    seed=st.integers(0, 2**32 - 1),
)
def test_echo_cover_and_spans_equal_numpy(
    windows: int, counts: tuple[int, int, int, int], span: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    ws, we = _windows(rng, windows, span)
    a, b, c = (_pieces(rng, n, span, ws, we) for n in counts[:3])
    clip = intervals.merge(*_int64(*_windows(rng, counts[3], span)))
    which = rng.integers(0, max(windows, 1), int(rng.integers(0, 12))) if windows else np.zeros(0)
    _check_cover(a, window_split.union(b, c), clip, which.astype(np.int64))
    _check_cover(window_split.empty(), b, clip, which.astype(np.int64))
    s = rng.integers(0, span, counts[3] * 3).astype(np.int64)  # rows in any order, ties likely
    e = s + rng.integers(0, span // 3 + 1, s.size)
    busy = intervals.gaps(ws, we) if ws.size else _int64([], [])
    _check_spans(window_split.union(b, c), a, s, e, busy)
    _check_spans(window_split.union(b, c), window_split.empty(), s, e, busy)


def test_echo_cover_and_spans_edge_cases() -> None:
    none = window_split.empty()
    one = _int64([12], [15], [2])
    touching = _int64([0, 5, 30], [5, 10, 40], [0, 0, 3])
    tied = _int64([0, 12, 30], [3, 18, 31], [0, 2, 3])
    which = np.array([3, 0, 3, 1], np.int64)  # unordered, repeated
    clips = [_int64([], []), _int64([13], [14]), _int64([0, 5, 14], [5, 12, 35]), _int64([-5], [100])]
    lists = [none, one, touching, tied]
    for a in lists:
        for b in lists:
            for clip in clips:
                _check_cover(a, b, clip, which)
                _check_cover(a, b, clip, np.zeros(0, np.int64))
    busy = _int64([0, 11, 20], [2, 16, 32])
    for hw in lists:
        for before in lists:
            for s, e in [
                ([], []),
                ([12], [12]),
                ([11], [16]),
                ([0, 11, 0], [40, 16, 3]),
                ([30, 1], [31, 20]),
            ]:
                rows = _int64(s, e)
                _check_spans(hw, before, rows[0], rows[1], busy)
                _check_spans(hw, before, rows[0], rows[1], _int64([], []))
    # lists out of order: declined
    assert level_cut.clipped_totals(one, one, _int64([5, 1], [6, 2]), True, which) is None
    assert level_cut.clipped_totals(one, _int64([5, 1], [6, 2], [0, 0]), _int64([], []), True, which) is None


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(0, 200),
    gaps=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
    copy_share=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_split_gaps_same_with_and_without_echo_passes(
    size: int, gaps: int, seed: int, copy_share: float
) -> None:
    """The echo measured against the echo built (the passes hidden), sync rows and echoes likely."""
    split_gaps_both_ways(size, gaps, seed, copy_share, "echo_passes_available")
