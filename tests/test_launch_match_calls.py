"""call_join.match_calls (the packed call keys searched as they are, no unpacking of the sorted ids and rows) equals
the join it replaces: the calls sorted by (id, driver after runtime, row) by a stable argsort, the first per id,
each op's id searched among them; on generated ids with repeats, driver and runtime calls, ops without an id or
with ids no call has (above every call's too), no calls, ids too wide to pack (the argsort path), blocks of a few
calls."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import call_join


def _reference(
    op_corr: np.ndarray, ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray
) -> tuple[list[bool], list[int], bool]:
    order = np.argsort(ids.astype(np.int64) * 2 + is_driver, kind="stable")
    sorted_ids, sorted_rows = ids[order], rows[order].astype(np.int64)
    first = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]] if ids.size else np.zeros(0, bool)
    call_of = {}
    for i, r in zip(sorted_ids[first].tolist(), sorted_rows[first].tolist(), strict=True):
        call_of[i] = r
    matched = [c >= 0 and c in call_of for c in op_corr.tolist()]
    found = [call_of[c] for c in op_corr.tolist() if c >= 0 and c in call_of]
    return matched, found, bool(first.all())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=60),
    st.lists(st.integers(-1, 45), max_size=40),
    st.integers(1, 9),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from([0, 2**40, 2**60]),
)
def test_match_calls_equals_the_sorted_join(
    calls: list, ops: list, block: int, row_type: type, id_offset: int
) -> None:
    ids = np.array([i + id_offset for i, _ in calls], np.int64)
    is_driver = np.array([d for _, d in calls], bool)
    rows = np.cumsum(np.arange(1, ids.size + 1)).astype(row_type)  # ascending
    op_corr = np.array([c if c < 0 else c + id_offset for c in ops], np.int64)
    want_matched, want_rows, want_unique = _reference(op_corr, ids, rows, is_driver)
    original = call_join.PACK_BLOCK
    call_join.PACK_BLOCK = block
    try:
        matched, call_rows, unique = call_join.match_calls(op_corr, ids, rows.copy(), is_driver)
    finally:
        call_join.PACK_BLOCK = original
    assert matched.dtype == bool and matched.tolist() == want_matched
    assert call_rows.dtype == np.int64 and call_rows.tolist() == want_rows
    assert unique == want_unique


def test_match_calls_without_calls_or_ops() -> None:
    none = np.zeros(0, np.int64)
    matched, call_rows, unique = call_join.match_calls(np.array([-1, 3]), none, none, np.zeros(0, bool))
    assert matched.tolist() == [False, False] and call_rows.size == 0 and unique
    matched, call_rows, unique = call_join.match_calls(
        none, np.array([5, 5]), np.array([1, 2]), np.zeros(2, bool)
    )
    assert matched.size == 0 and call_rows.size == 0 and not unique
