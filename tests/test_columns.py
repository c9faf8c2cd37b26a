"""Shared column helpers (tracelens/analyses/columns.py) checked against plain Python."""

from __future__ import annotations

import numpy as np

from tracelens.analyses.columns import distinct


def test_distinct_in_chunks_is_first_appearance_order():
    rng = np.random.default_rng(3)
    values = rng.integers(-5, 40, size=1000)
    expected = list(dict.fromkeys(values.tolist()))  # first appearance, by plain Python
    for chunk in (1, 7, 64, 5000):
        assert distinct(values, chunk=chunk).tolist() == expected
