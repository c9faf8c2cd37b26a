"""Interval subtraction and intersection (tracelens/intervals.py) against a set-of-instants reference."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens import intervals


def _instants(starts, ends) -> set[int]:
    out: set[int] = set()
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        out.update(range(s, e))
    return out


def _union(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    s = rng.integers(0, 60, n)
    s, e = intervals.merge(s, s + rng.integers(1, 15, n))
    return s, e


def test_hand_cases():
    gaps = (np.array([0, 100]), np.array([50, 200]))
    # A cut covering [10,20) and [40,120): [0,10) + [20,40) of the first gap, [120,200) of the second.
    s, e = intervals.subtract(*gaps, np.array([10, 40]), np.array([20, 120]))
    assert (s.tolist(), e.tolist()) == ([0, 20, 120], [10, 40, 200])
    s, e = intervals.intersect(*gaps, np.array([10, 40]), np.array([20, 120]))
    assert (s.tolist(), e.tolist()) == ([10, 40, 100], [20, 50, 120])
    # An empty cut leaves everything; a cut of everything leaves nothing.
    assert intervals.subtract(*gaps, np.empty(0, np.int64), np.empty(0, np.int64))[0].tolist() == [0, 100]
    assert intervals.subtract(*gaps, np.array([-5]), np.array([500]))[0].size == 0


@pytest.mark.parametrize("seed", range(5))
def test_random_unions_against_instant_sets(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        a = _union(rng, int(rng.integers(0, 8)))
        c = _union(rng, int(rng.integers(0, 8)))
        s, e = intervals.subtract(*a, *c)
        assert _instants(s, e) == _instants(*a) - _instants(*c)
        assert np.all(s[1:] > e[:-1]) and np.all(e > s)  # sorted, disjoint, non-empty
        s, e = intervals.intersect(*a, *c)
        assert _instants(s, e) == _instants(*a) & _instants(*c)


def test_covered_before_and_its_inverse():
    # Union [10,20) [30,35): 0 covered before 10, 5 before 15, 10 before 25, 13 before 33, 15 from 35 on.
    us, ue = np.array([10, 30]), np.array([20, 35])
    assert intervals.covered_before(np.array([0, 15, 25, 33, 40]), us, ue).tolist() == [0, 5, 10, 13, 15]
    # The first instant by which 0, 5, 10, 13 and 15 have passed; 16 is more than the union holds.
    assert intervals.time_covered(np.array([0, 5, 10, 13, 15, 16]), us, ue).tolist() == [
        10,
        15,
        20,
        33,
        35,
        np.iinfo(np.int64).max,
    ]


@pytest.mark.parametrize("seed", range(3))
def test_summed_overlap_against_instant_counts(seed):
    # Several unions given at once (they overlap each other): per interval, the instants it shares with each
    # union, counted once per union; and the same as overlap_with_union summed over the unions.
    rng = np.random.default_rng(seed)
    for _ in range(200):
        unions = [_union(rng, int(rng.integers(0, 6))) for _ in range(int(rng.integers(1, 4)))]
        n = int(rng.integers(0, 12))
        starts = rng.integers(-5, 80, n)
        ends = starts + rng.integers(0, 30, n)
        got = intervals.summed_overlap(
            starts, ends, np.concatenate([u[0] for u in unions]), np.concatenate([u[1] for u in unions])
        )
        expected = [
            sum(len(set(range(s, e)) & _instants(*u)) for u in unions)
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        assert got.tolist() == expected
        summed = sum(intervals.overlap_with_union(starts, ends, *u) for u in unions)
        assert got.tolist() == np.broadcast_to(summed, (n,)).tolist()


def test_summed_overlap_hand_case():
    # [0,10) and [5,15) overlap on [5,10): the interval [3,12) shares 7 with the first, 7 with the second.
    got = intervals.summed_overlap(
        np.array([3, 20, 12]), np.array([12, 25, 3]), np.array([0, 5]), np.array([10, 15])
    )
    assert got.tolist() == [
        14,
        0,
        -14,
    ]  # an interval ending before it starts: the overlap negated, as overlap_with_union
    assert intervals.overlap_with_union(
        np.array([12]), np.array([3]), np.array([0]), np.array([15])
    ).tolist() == [-9]
