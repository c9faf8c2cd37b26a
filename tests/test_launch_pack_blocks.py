"""call_join.sorted_calls packing and unpacking the calls a block at a time equals the sort it stands for: the calls
by (id, driver after runtime, row), the first per id, found here by a stable argsort (the path the packed one
replaces where ids are too wide), on generated ids with repeats, driver and runtime calls, blocks of a few calls."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import call_join


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=80),
    st.integers(1, 9),
    st.sampled_from([np.int32, np.int64]),
)
def test_sorted_calls_by_blocks_equal_the_stable_sort(calls: list, block: int, id_type: type) -> None:
    ids = np.array([i for i, _ in calls], id_type)
    is_driver = np.array([d for _, d in calls], bool)
    rows = np.cumsum(np.arange(1, ids.size + 1, dtype=np.int64))  # ascending
    order = np.argsort(ids.astype(np.int64) * 2 + is_driver, kind="stable")
    want_ids, want_rows = ids[order], rows[order]
    first = np.r_[True, want_ids[1:] != want_ids[:-1]] if ids.size else np.zeros(0, bool)
    original = call_join.PACK_BLOCK
    call_join.PACK_BLOCK = block
    try:
        got_ids, got_rows, unique = call_join.sorted_calls(ids, rows.copy(), is_driver)
    finally:
        call_join.PACK_BLOCK = original
    assert got_ids.dtype == ids.dtype and got_ids.tolist() == want_ids[first].tolist()
    assert got_rows.tolist() == want_rows[first].tolist()
    assert unique == bool(first.all())
