"""The numpy grouping of analyses/startup.py (first instance of each name per thread or process, and the median
of the later instances) against the pandas computation it replaced: sort_values(kind="stable"), duplicated and
groupby(...).median(), on generated rows with many ties."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.grouping import group_firsts, group_medians

rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # outer key (thread or pid)
        st.integers(0, 4),  # name code
        st.integers(0, 6),  # start: few values, so ties are common
        st.integers(0, 2**40),  # duration
    ),
    min_size=1,
    max_size=60,
)


def pandas_groups(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """(each (outer, name) group's first row by start, in group order; each group's median of its later rows)."""
    ordered = frame.sort_values(["outer", "name", "start"], kind="stable")
    first = ~ordered.duplicated(["outer", "name"], keep="first")
    return ordered[first], ordered[~first].groupby(["outer", "name"])["duration"].median()


def pandas_reference(frame: pd.DataFrame) -> tuple[list[int], dict[tuple[int, int], float]]:
    """(rows that are the first of their (outer, name) group, in group order; each group's later median)."""
    firsts, medians = pandas_groups(frame)
    return firsts["row"].tolist(), {k: float(v) for k, v in medians.items()}


@settings(max_examples=150, deadline=None)
@given(rows_strategy, st.booleans())
def test_firsts_and_later_medians_equal_pandas(
    rows: list[tuple[int, int, int, int]], in_start_order: bool
) -> None:
    if in_start_order:  # host rows come in start order: the path that sorts by group alone
        rows = sorted(rows, key=lambda r: r[2])
    outer, name, start, duration = (np.array(c, np.int64) for c in zip(*rows, strict=True))
    frame = pd.DataFrame(
        {"row": np.arange(len(rows)), "outer": outer, "name": name, "start": start, "duration": duration}
    )
    expected_firsts, expected_medians = pandas_reference(frame)

    order, first, group = group_firsts(outer, name, start)
    # every group's rows together, in start order (ties in row order); groups in any order
    assert sorted(order.tolist()) == list(range(len(rows)))
    assert np.array_equal(np.flatnonzero(first), np.flatnonzero(np.diff(group, prepend=-1)))
    keys = list(zip(outer[order].tolist(), name[order].tolist(), strict=True))
    assert len({keys[i] for i in np.flatnonzero(first)}) == int(first.sum())
    for g in range(int(group[-1]) + 1):
        members = order[group == g]
        assert len({keys[i] for i in np.flatnonzero(group == g)}) == 1
        assert members.tolist() == sorted(members.tolist(), key=lambda r: (start[r], r))
    assert sorted(order[first].tolist()) == sorted(expected_firsts)
    medians, counts = group_medians(group[~first], duration[order][~first], int(group[-1]) + 1)
    got = {
        (int(outer[order[i]]), int(name[order[i]])): float(medians[group[i]])
        for i in np.flatnonzero(first)
        if counts[group[i]] > 0
    }
    assert got == expected_medians  # the same floats: (a + b) / 2 of the middle two, as pandas computes it
    assert all(np.isnan(medians[group[i]]) for i in np.flatnonzero(first) if counts[group[i]] == 0)


def test_group_medians_packed_and_lexsorted_agree_with_pandas() -> None:
    rng = np.random.default_rng(3)
    group = rng.integers(0, 5, 400)
    for values in (
        rng.integers(0, 1000, 400),  # packed with the group number into one int64
        np.where(rng.random(400) < 0.1, 2**61, rng.integers(0, 1000, 400)),  # too wide to pack: lexsort
    ):
        medians, counts = group_medians(group, values, 6)
        reference = pd.Series(values).groupby(group).median()
        assert medians[:5].tolist() == reference.tolist() and np.isnan(medians[5])
        assert counts.tolist() == np.bincount(group, minlength=6).tolist()


def test_even_count_median_is_the_mean_of_the_middle_two() -> None:
    # group 0: 7, 1, 4, 10 -> sorted 1 4 7 10 -> (4 + 7) / 2; group 1: 3 -> 3; group 2: none
    medians, counts = group_medians(np.array([0, 0, 0, 0, 1]), np.array([7, 1, 4, 10, 3]), 3)
    assert medians[:2].tolist() == [5.5, 3.0] and np.isnan(medians[2])
    assert counts.tolist() == [4, 1, 0]


long_rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # outer key (process)
        st.integers(0, 4),  # name code
        st.integers(0, 6),  # start: few values, so ties are common
        # durations about the thresholds: FIRST_API_MIN_NS (100 us) and 10x a median
        st.sampled_from([0, 1, 9_000, 10_000, 11_000, 99_999, 100_000, 100_001, 110_000, 111_111, 2_000_000]),
    ),
    min_size=1,
    max_size=60,
)


def _pandas_first_rows(
    rows: list[tuple[int, int, int, int]], in_start_order: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, pd.DataFrame, pd.Series]:
    """The first-row rules' reference: the (outer, name, start, duration) columns of ``rows`` (sorted by start
    first where asked) and :func:`pandas_groups` of them."""
    if in_start_order:
        rows = sorted(rows, key=lambda r: r[2])
    outer, name, start, duration = (np.array(c, np.int64) for c in zip(*rows, strict=True))
    frame = pd.DataFrame(
        {"row": np.arange(len(rows)), "outer": outer, "name": name, "start": start, "duration": duration}
    )
    return (outer, name, start, duration, *pandas_groups(frame))


@settings(max_examples=300, deadline=None)
@given(long_rows_strategy, st.booleans())
def test_long_first_calls_equal_pandas(rows: list[tuple[int, int, int, int]], in_start_order: bool) -> None:
    # The first_api rule's test (startup._long_first_calls, which takes the later median only of groups whose first
    # row lasts >= FIRST_API_MIN_NS where the rows are in start order) against pandas over every group.
    from tracelens.analyses.startup import FIRST_API_MIN_NS, FIRST_CALL_FACTOR, _long_first_calls

    outer, name, start, duration, firsts, medians = _pandas_first_rows(rows, in_start_order)
    expected = []
    for _, r in firsts.iterrows():
        key = (r["outer"], r["name"])
        if key in medians.index:
            m = float(medians[key])
            if r["duration"] >= FIRST_CALL_FACTOR * m and r["duration"] - m >= FIRST_API_MIN_NS:
                expected.append((int(r["row"]), m))
    positions, got_medians = _long_first_calls(outer, name, start, duration)
    assert list(zip(positions.tolist(), got_medians.tolist(), strict=True)) == sorted(expected)


@settings(max_examples=300, deadline=None)
@given(long_rows_strategy, st.booleans(), st.sampled_from([0, 10_000, 100_000, 1_000_000]))
def test_first_rows_equal_pandas(
    rows: list[tuple[int, int, int, int]], in_start_order: bool, min_first: int
) -> None:
    # startup_first.long_first_rows (each group's first row lasting >= min_first with later rows, and their median; the
    # first_call and first_api rules' common step) against pandas over every group.
    from tracelens.analyses.startup_first import long_first_rows

    outer, name, start, duration, firsts, medians = _pandas_first_rows(rows, in_start_order)
    expected = sorted(
        (int(r["row"]), float(medians[(r["outer"], r["name"])]))
        for _, r in firsts.iterrows()
        if r["duration"] >= min_first and (r["outer"], r["name"]) in medians.index
    )
    positions, got = long_first_rows(outer, name, start, duration, min_first)
    assert list(zip(positions.tolist(), got.tolist(), strict=True)) == expected


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4), st.integers(0, 300_000)), max_size=60),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_long_first_rows_keep_test_before_medians_equals_after(
    rows: list[tuple[int, int, int]], in_start_order: bool, seed: int
) -> None:
    # startup_first.long_first_rows with ``keep`` (a test of the first rows made before their medians are taken:
    # the first_api rule's idle GPU) equals its answer without it, filtered by the same test after
    from tracelens.analyses.startup_first import long_first_rows

    outer = np.array([r[0] for r in rows], np.int64)
    name = np.array([r[1] for r in rows], np.int64)
    duration = np.array([r[2] for r in rows], np.int64)
    start = (
        np.arange(outer.size, dtype=np.int64)
        if in_start_order
        else np.random.default_rng(seed).permutation(outer.size)
    )
    picked = np.random.default_rng(seed).random(outer.size) < 0.5  # the test: a fixed choice per row

    def keep(at: np.ndarray) -> np.ndarray:
        out: np.ndarray = picked[at]
        return out

    positions, medians = long_first_rows(outer, name, start, duration, 100_000)
    got, got_medians = long_first_rows(outer, name, start, duration, 100_000, keep)
    assert got.tolist() == positions[picked[positions]].tolist()
    assert got_medians.tolist() == medians[picked[positions]].tolist()
