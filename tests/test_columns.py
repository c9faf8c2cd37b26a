"""Shared column helpers (tracelens/analyses/columns.py) checked against plain Python."""

from __future__ import annotations

import numpy as np

from tracelens.values import dense_codes, distinct


def test_distinct_in_chunks_is_first_appearance_order():
    rng = np.random.default_rng(3)
    values = rng.integers(-5, 40, size=1000)
    expected = list(dict.fromkeys(values.tolist()))  # first appearance, by plain Python
    for chunk in (1, 7, 64, 5000):
        assert distinct(values, chunk=chunk).tolist() == expected


def test_dense_codes_match_a_sorted_factorize_with_nan_last():
    values = np.array([3.0, np.nan, -1.0, 3.0, 7.0, np.nan, -1.0])
    codes, uniques = dense_codes(values)
    assert uniques[:3].tolist() == [-1.0, 3.0, 7.0] and np.isnan(uniques[3]) and uniques.size == 4
    assert codes.tolist() == [1, 3, 0, 1, 2, 3, 0]
