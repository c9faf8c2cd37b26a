"""launch._depth_by_sorted_keys: its merge of two presorted runs (one stream, ops in order: the stable sort)
against the same ops shuffled (the quicksort) and against the three-key lexsort reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import launch


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.integers(1, 40))
def test_depth_presorted_equals_shuffled_and_lexsort(seed: int, streams: int, size: int) -> None:
    rnd = np.random.default_rng(seed)
    codes = np.sort(rnd.integers(0, streams, size)).astype(np.intp)
    launch_end = np.zeros(size, np.int64)
    for s in range(streams):  # each stream's launches in order, ties included
        at = np.flatnonzero(codes == s)
        launch_end[at] = np.sort(rnd.integers(0, 20, at.size))
    gpu_end = launch_end + rnd.integers(0, 3, size) * rnd.integers(0, 10, size)
    present = int(codes.max()) + 1
    width = int(max(gpu_end.max(), launch_end.max())) + 1
    got = launch._depth_by_sorted_keys(codes, launch_end, gpu_end, present, width)
    order = rnd.permutation(size)
    shuffled = launch._depth_by_sorted_keys(codes[order], launch_end[order], gpu_end[order], present, width)
    maxima, _, _ = launch._depth_by_lexsort(codes, launch_end, gpu_end, present, 0)
    for a, b in zip(got, shuffled, strict=True):
        assert a.tolist() == b.tolist()
    assert got[0].tolist() == maxima.tolist()


def test_depth_of_one_op() -> None:
    one = np.zeros(1, np.intp)
    maxima, first, last = launch._depth_by_sorted_keys(one, np.array([2]), np.array([5]), 1, 6)
    assert (maxima.tolist(), first.tolist(), last.tolist()) == ([1], [2], [5])
