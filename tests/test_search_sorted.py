"""intervals.search_sorted (the compiled walk, blocked and counted searches of ascending needles) against plain
np.searchsorted, and the callers that use it against loop references on small inputs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses.columns import _matches

values = st.lists(st.integers(-5, 40), max_size=80)
Side = Literal["left", "right"]


@contextmanager
def small_blocks(compiled: bool = True) -> Iterator[None]:
    """Blocks of 4 needles and any haystack length, so that small inputs take every path; without ``compiled``,
    numpy's paths even where the compiled walk (_merge_search) is built."""
    saved = intervals._SEARCH_BLOCK, intervals._SEARCH_MIN_HAYSTACK, intervals._compiled
    intervals._SEARCH_BLOCK, intervals._SEARCH_MIN_HAYSTACK = 4, 1
    if not compiled:
        intervals._compiled = None
    try:
        yield
    finally:
        intervals._SEARCH_BLOCK, intervals._SEARCH_MIN_HAYSTACK, intervals._compiled = saved


@settings(max_examples=400, deadline=None)
@given(
    values,
    values,
    st.sampled_from(["random", "ascending", "two runs"]),
    st.sampled_from(["left", "right"]),
    st.booleans(),
    st.sampled_from([np.int64, np.int32]),
    st.sampled_from([np.int64, np.int32]),
)
def test_search_sorted_is_searchsorted(
    haystack: list[int],
    needles: list[int],
    order: str,
    side: Side,
    compiled: bool,
    hay_type: type,
    needle_type: type,
) -> None:
    # needles in random order, ascending, or two ascending runs (mostly ascending: search_near where built)
    h = np.sort(np.array(haystack, hay_type))
    half = len(needles) // 2
    arranged = {
        "random": needles,
        "ascending": sorted(needles),
        "two runs": sorted(needles[:half]) + sorted(needles[half:]),
    }[order]
    n = np.array(arranged, needle_type)
    with small_blocks(compiled):
        got = intervals.search_sorted(h, n, side=side)
    assert np.array_equal(got, np.searchsorted(h, n, side=side))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 5), max_size=8),
    st.integers(1, 60),
    st.sampled_from(["left", "right"]),
    st.booleans(),
)
def test_search_sorted_many_needles(haystack: list[int], repeat: int, side: Side, compiled: bool) -> None:
    """Many more needles than haystack values (the counted path), with repeats on both sides."""
    h = np.sort(np.array(haystack, np.int64))
    n = np.sort(np.tile(np.arange(-1, 7), repeat))
    with small_blocks(compiled):
        got = intervals.search_sorted(h, n, side=side)
    assert np.array_equal(got, np.searchsorted(h, n, side=side))


def test_search_sorted_large() -> None:
    """Default block size on arrays long enough to take the blocked and counted paths."""
    rng = np.random.default_rng(7)
    for hay, count in ((50_000, 40_000), (3_000, 100_000), (200, 70_000), (40_000, 400_000)):
        h = np.sort(rng.integers(0, 10_000, hay))
        n = np.sort(rng.integers(-10, 10_010, count))
        for side in ("left", "right"):
            assert np.array_equal(intervals.search_sorted(h, n, side=side), np.searchsorted(h, n, side=side))
            with small_blocks(compiled=False):
                assert np.array_equal(
                    intervals.search_sorted(h, n, side=side), np.searchsorted(h, n, side=side)
                )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([np.iinfo(np.int64).min, -3, 0, 5, np.iinfo(np.int64).max]), st.integers(1, 300)
        ),
        max_size=6,
    ),
    st.lists(st.integers(-6, 8), max_size=40),
    st.sampled_from(["left", "right"]),
)
def test_compiled_walk_gallops_over_long_runs(
    runs: list[tuple[int, int]], needles: list[int], side: Side
) -> None:
    """The compiled walk (where it is built) on haystacks of long runs of equal values, the int64 extremes among
    them: each answer found by galloping past hundreds of values, as np.searchsorted gives it."""
    if intervals._compiled is None:
        return
    h = np.sort(
        np.concatenate([np.full(count, value, np.int64) for value, count in runs] or [np.zeros(0, np.int64)])
    )
    n = np.sort(np.array(needles + [np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64))
    for walk in (intervals._compiled.search_ascending, intervals._compiled.search_near):
        out = np.empty(n.size, np.int64)
        walk(h, n, out, side == "right")
        assert np.array_equal(out, np.searchsorted(h, n, side=side))
        # int32 values in an int64 haystack and the other way round
        small = np.clip(n, -(2**31), 2**31 - 1).astype(np.int32)
        walk(h, small, out, side == "right")
        assert np.array_equal(out, np.searchsorted(h, small, side=side))
        hay32 = np.clip(h, -(2**31), 2**31 - 1).astype(np.int32)
        walk(hay32, n, out, side == "right")
        assert np.array_equal(out, np.searchsorted(hay32, n, side=side))


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 60), max_size=40), st.sets(st.integers(0, 60), max_size=40))
def test_matches_pairs_common_rows(rows: set[int], carried: set[int]) -> None:
    """Both ways of pairing (a mark per table row where the rows are dense, binary searches otherwise)."""
    from tracelens.analyses import columns

    r = np.array(sorted(rows), np.int64)
    c = np.array(sorted(carried), np.int32)
    expected = [(i, j) for i, a in enumerate(r.tolist()) for j, b in enumerate(c.tolist()) if a == b]
    saved = columns._MARK_RATIO
    try:
        for ratio in (1, 2**40):  # every pair of row sets marked; none
            columns._MARK_RATIO = ratio
            with small_blocks():
                mine, theirs = _matches(r, c)
            assert list(zip(mine.tolist(), theirs.tolist(), strict=True)) == expected
    finally:
        columns._MARK_RATIO = saved


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), max_size=12),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), max_size=12),
)
def test_intersect_is_pointwise(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    """The intersection of two merged unions, instant by instant."""
    ua = intervals.merge(np.array([s for s, _ in a], np.int64), np.array([s + d for s, d in a], np.int64))
    ub = intervals.merge(np.array([s for s, _ in b], np.int64), np.array([s + d for s, d in b], np.int64))
    with small_blocks():
        s, e = intervals.intersect(*ua, *ub)

    def covered(u: tuple[np.ndarray, np.ndarray]) -> set[int]:
        return {t for lo, hi in zip(u[0].tolist(), u[1].tolist(), strict=True) for t in range(lo, hi)}

    assert covered((s, e)) == covered(ua) & covered(ub)
    assert bool((s[1:] > e[:-1]).all()) and bool((e > s).all())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), max_size=12),
    st.lists(st.tuples(st.integers(0, 30), st.integers(-2, 8)), max_size=30),
    st.booleans(),
)
def test_overlap_with_union_is_pointwise(
    union: list[tuple[int, int]], spans: list[tuple[int, int]], ordered: bool
) -> None:
    """Each interval's overlap with a union, instant by instant (negated for an interval ending before its
    start), with the intervals in start order (as host rows are) or not."""
    us, ue = intervals.merge(
        np.array([s for s, _ in union], np.int64), np.array([s + d for s, d in union], np.int64)
    )
    if ordered:
        spans = sorted(spans)
    starts = np.array([s for s, _ in spans], np.int64)
    ends = np.array([s + d for s, d in spans], np.int64)
    inside = {t for lo, hi in zip(us.tolist(), ue.tolist(), strict=True) for t in range(lo, hi)}
    expected = [
        sum(t in inside for t in range(s, e)) if e >= s else -sum(t in inside for t in range(e, s))
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    with small_blocks():
        got = intervals.overlap_with_union(starts, ends, us, ue)
    assert got.tolist() == expected


def test_overlap_with_union_large() -> None:
    """Long random inputs against the cumulative covered length read at both ends of every interval."""
    rng = np.random.default_rng(11)
    us, ue = intervals.merge(
        rng.integers(0, 10**7, 20_000), rng.integers(0, 10**7, 20_000) // 50 + rng.integers(0, 10**7, 20_000)
    )
    starts = np.sort(rng.integers(-1000, 10**7 + 1000, 60_000))
    ends = starts + rng.integers(-100, 5_000, starts.size)
    cum = np.concatenate([[0], np.cumsum(ue - us)])

    def below(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(us, t, side="right")
        last = np.concatenate([[np.iinfo(np.int64).min], ue])[i]
        return cum[i] - (np.maximum(last, t) - t)

    expected = below(ends) - below(starts)
    assert np.array_equal(intervals.overlap_with_union(starts, ends, us, ue), expected)
    shuffled = rng.permutation(starts.size)
    assert np.array_equal(
        intervals.overlap_with_union(starts[shuffled], ends[shuffled], us, ue), expected[shuffled]
    )


@settings(max_examples=300, deadline=None)
@given(
    values,
    st.lists(st.integers(-8, 45), max_size=80),
    st.sampled_from(["random", "ascending", "mostly"]),
    st.sampled_from(["left", "right"]),
    st.sampled_from([np.int64, np.int32, np.int16]),
    st.sampled_from([np.int64, np.int32]),
)
def test_search_near_is_searchsorted(
    haystack: list[int], needles: list[int], order: str, side: Side, hay_type: type, needle_type: type
) -> None:
    """Needles in any order (random, ascending, ascending with a few steps back), each searched from the
    previous answer by the compiled walk where it is built (int32 and int64 as they are, others widened), numpy's
    otherwise."""
    h = np.sort(np.array(haystack, hay_type))
    n = np.array(needles, needle_type)
    if order != "random":
        n = np.sort(n)
        if order == "mostly" and n.size > 3:
            n[::4] = n[::-4]  # every fourth needle from the other end
    with small_blocks():
        got = intervals.search_near(h, n, side=side)
    assert got.dtype == np.int64 and np.array_equal(got, np.searchsorted(h, n, side=side))
