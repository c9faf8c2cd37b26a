"""The ranges section's binary-search shortcuts against plain np.searchsorted."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.grouping import thread_order
from tracelens.analyses.ranges import _sorted_searchsorted

values = st.lists(st.integers(-5, 40), max_size=30)


@settings(max_examples=300, deadline=None)
@given(values, values, st.booleans(), st.sampled_from([np.int64, np.int32]))
def test_sorted_searchsorted_is_searchsorted(
    haystack: list[int], needles: list[int], sort_needles: bool, dtype: type
) -> None:
    # int64 arrays go through intervals.search_sorted's compiled walk where it is built; int32 ones through the
    # count of haystack values among the needles
    h = np.sort(np.array(haystack, dtype))
    n = np.array(sorted(needles) if sort_needles else needles, dtype)
    got = _sorted_searchsorted(h, n)
    assert np.array_equal(got, np.searchsorted(h, n, side="left"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=60))
def test_thread_order_is_stable_sort(keys: list[int]) -> None:
    k = np.array(keys, np.int64)
    assert np.array_equal(thread_order(k), np.argsort(k, kind="stable"))
