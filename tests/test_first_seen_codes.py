"""attribution.first_seen_codes (keys hashed once per run of equal keys) gives pd.factorize's codes and distinct
keys, and each key's first position, whether the keys come in long runs (host rows in time order) or change at
every row (every key hashed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.attribution import first_seen_codes


def check(key: np.ndarray) -> None:
    code, seen, at = first_seen_codes(key)
    expected_code, expected_seen = pd.factorize(key)
    np.testing.assert_array_equal(code, expected_code)
    np.testing.assert_array_equal(np.asarray(seen), np.asarray(expected_seen))
    first = [int(np.flatnonzero(key == value)[0]) for value in np.asarray(expected_seen)]
    np.testing.assert_array_equal(at, first)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 30)), max_size=40))
def test_runs_of_keys(runs: list) -> None:
    key = np.repeat(
        np.array([v << 32 for v, _ in runs], np.int64), np.array([n for _, n in runs], np.int64)
    ).astype(np.int64)
    check(key)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), max_size=60))
def test_keys_changing_at_most_rows(values: list) -> None:
    check(np.array(values, np.int64))


def test_edges() -> None:
    check(np.zeros(0, np.int64))
    check(np.array([7], np.int64))
    check(np.array([5, 5, 5, 5], np.int64))
    check(np.array([1, 2, 1, 2, 1], np.int64))
    check(np.array([-1, -1, 4, 4, -1, 9, 9, 9, 4], np.int64))
