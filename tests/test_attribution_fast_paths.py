"""attribution.merge_unions (two unions interleaved by a search) equals intervals.merge of the two concatenated (a
sort), on valid unions and on intervals ending before they start (then the sort itself). Speed lives in
benchmarks/."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses.attribution import merge_unions

_INTERVALS = st.lists(st.tuples(st.integers(0, 60), st.integers(-3, 12)), max_size=25)


def _union(pairs: list, merged: bool) -> tuple[np.ndarray, np.ndarray]:
    starts = np.array([s for s, _ in pairs], np.int64)
    ends = np.array([s + d for s, d in pairs], np.int64)
    if not merged:  # sorted by start only (ends may come before starts)
        order = np.argsort(starts, kind="stable")
        return starts[order], ends[order]
    return intervals.merge(starts, np.maximum(ends, starts))


@settings(max_examples=300, deadline=None)
@given(_INTERVALS, _INTERVALS, st.booleans())
def test_merge_unions_equals_merging_the_concatenation(a: list, b: list, merged: bool) -> None:
    a_s, a_e = _union(a, merged)
    b_s, b_e = _union(b, merged)
    fast = merge_unions(a_s, a_e, b_s, b_e)
    reference = intervals.merge(np.concatenate([a_s, b_s]), np.concatenate([a_e, b_e]))
    for got, want in zip(fast, reference, strict=True):
        assert got.dtype == want.dtype == np.int64
        np.testing.assert_array_equal(got, want)
