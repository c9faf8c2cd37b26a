"""The unexplained idle's overlaps summed device by device give what the paths they replace give (speed lives in
benchmarks/):

- unexplained_idle._summed_overlap device by device (each device's running length of its sorted, disjoint
  unexplained intervals read at a row's two ends) vs intervals.Coverage over every device's intervals, on generated
  devices: none, empty, touching and zero-length intervals, rows before, across and after them, rows ending before
  they start; and the Coverage it keeps for unsorted or overlapping intervals and for many devices.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses.diagnosis import unexplained_idle


def _device(cuts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint intervals from sorted cut points taken in pairs (equal cuts: zero-length or touching)."""
    edges = np.sort(np.array(cuts, np.int64))
    edges = edges[: edges.size // 2 * 2]
    return edges[0::2], edges[1::2]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.integers(-5, 200), max_size=40), max_size=6),
    st.lists(st.tuples(st.integers(-20, 220), st.integers(-30, 60)), max_size=50),
)
def test_summed_overlap_equals_the_coverage(devices: list[list[int]], rows: list[tuple[int, int]]) -> None:
    unexplained = [_device(cuts) for cuts in devices]
    every_start = np.concatenate([s for s, _ in unexplained]) if unexplained else np.zeros(0, np.int64)
    every_end = np.concatenate([e for _, e in unexplained]) if unexplained else np.zeros(0, np.int64)
    rows = sorted(rows)
    starts = np.array([s for s, _ in rows], np.int64)
    ends = np.array([s + d for s, d in rows], np.int64)
    expected = intervals.Coverage(every_start, every_end).overlap(starts, ends)
    got = unexplained_idle._summed_overlap(unexplained, every_start, every_end)(starts, ends)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int64


def test_summed_overlap_keeps_the_coverage_where_it_must() -> None:
    overlapping = [(np.array([0, 5], np.int64), np.array([10, 12], np.int64))]
    many = [
        (np.array([i], np.int64), np.array([i + 1], np.int64))
        for i in range(unexplained_idle.FEW_DEVICES + 1)
    ]
    for unexplained in (overlapping, many):
        every_start = np.concatenate([s for s, _ in unexplained])
        every_end = np.concatenate([e for _, e in unexplained])
        overlap = unexplained_idle._summed_overlap(unexplained, every_start, every_end)
        assert getattr(overlap, "__self__", None).__class__ is intervals.Coverage
        starts, ends = np.array([-1, 3, 8], np.int64), np.array([20, 4, 11], np.int64)
        np.testing.assert_array_equal(
            overlap(starts, ends), intervals.Coverage(every_start, every_end).overlap(starts, ends)
        )
