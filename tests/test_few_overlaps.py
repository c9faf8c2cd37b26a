"""few_overlaps.overlap_of_few (the union intervals reaching into each interval summed piece by piece) equals
``intervals.overlap_with_union`` on hypothesis-generated intervals and unions: no interval, one, no union interval,
zero-length intervals and union intervals, intervals touching union intervals at an end (ties), intervals ending
before they start and many pieces (overlap_with_union answers those)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import few_overlaps


@st.composite
def cases(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    # a union of disjoint sorted intervals: alternating gaps and lengths (zero-length ones too)
    steps = draw(st.lists(st.integers(0, 6), max_size=40))
    bounds = np.cumsum(np.array([0, *steps], np.int64))
    union_starts, union_ends = bounds[:-1:2], bounds[1::2]
    n = min(union_starts.size, union_ends.size)
    union_starts, union_ends = union_starts[:n], union_ends[:n]
    spans = draw(st.lists(st.tuples(st.integers(-3, 130), st.integers(-2, 40)), max_size=12))
    starts = np.array([s for s, _ in spans], np.int64)
    ends = starts + np.array([d for _, d in spans], np.int64)
    return starts, ends, union_starts, union_ends


@settings(max_examples=400, deadline=None, database=None)
@given(cases(), st.sampled_from([1, 3, 1 << 14]))
def test_overlap_of_few_equals_overlap_with_union(case: tuple[np.ndarray, ...], few: int) -> None:
    starts, ends, union_starts, union_ends = case
    original = few_overlaps.FEW_PIECES
    few_overlaps.FEW_PIECES = few
    try:
        got = few_overlaps.overlap_of_few(starts, ends, union_starts, union_ends)
    finally:
        few_overlaps.FEW_PIECES = original
    want = intervals.overlap_with_union(starts, ends, union_starts, union_ends)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


@pytest.mark.parametrize(
    ("starts", "ends", "union_starts", "union_ends", "want"),
    [
        ([], [], [0], [5], []),  # no interval
        ([2], [4], [], [], [0]),  # no union interval
        ([5], [9], [0, 9], [5, 12], [0]),  # touching union intervals at both ends
        (
            [0],
            [20],
            [1, 5, 5, 8],
            [3, 5, 7, 20],
            [16],
        ),  # one interval over several, a zero-length one among them
        ([4], [4], [0], [10], [0]),  # a zero-length interval
    ],
)
def test_overlap_of_few_edges(
    starts: list, ends: list, union_starts: list, union_ends: list, want: list
) -> None:
    args = [np.array(a, np.int64) for a in (starts, ends, union_starts, union_ends)]
    assert few_overlaps.overlap_of_few(*args).tolist() == want == intervals.overlap_with_union(*args).tolist()
