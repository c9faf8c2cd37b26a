"""analyses.topk.largest_first against the full stable sort it replaces."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.topk import largest_first


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(-20, 20), max_size=60), st.integers(0, 15))
def test_largest_first_is_stable_sort_head(values: list[int], k: int) -> None:
    v = np.array(values, np.int64)
    # largest first, ties by position
    expected = [i for _, i in sorted((-x, i) for i, x in enumerate(values))][:k]
    assert largest_first(v, k).tolist() == expected
    assert largest_first(v, k).tolist() == np.argsort(-v, kind="stable")[:k].tolist()


def test_largest_first_extremes() -> None:
    # negating the minimum overflows: sorted whole, as before
    v = np.array([5, np.iinfo(np.int64).min, 5, 7, 5], np.int64)
    assert largest_first(v, 2).tolist() == np.argsort(-v, kind="stable")[:2].tolist()
    assert largest_first(np.array([3.0, np.nan, 9.0]), 2).tolist() == [2, 0]
    assert largest_first(np.arange(5), 0).tolist() == []
