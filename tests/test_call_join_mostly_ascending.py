"""call_join.sorted_calls and match_calls on calls whose ids mostly ascend with their rows (the keys then sorted by
the stable sort) equal the join they stand for: the calls by (id, driver after runtime, row), the first per id,
found by a stable argsort; ids ascending, with a few out of place, repeated, all equal; blocks of a few keys."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import call_join


def _reference(ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(ids.astype(np.int64) * 2 + is_driver, kind="stable")
    want_ids, want_rows = ids[order], rows[order]
    first = np.r_[True, want_ids[1:] != want_ids[:-1]] if ids.size else np.zeros(0, bool)
    return want_ids[first], want_rows[first]


@settings(max_examples=150, deadline=None)
@given(
    size=st.integers(0, 600),
    swaps=st.integers(0, 12),
    repeat=st.booleans(),
    block=st.sampled_from([3, 64, 1 << 20]),
    seed=st.integers(0, 2**32 - 1),
)
def test_mostly_ascending_ids(size: int, swaps: int, repeat: bool, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = np.arange(size, dtype=np.int64) // (2 if repeat else 1)
    for _ in range(swaps if size > 1 else 0):  # a few calls out of place (threads interleaving)
        i, j = rng.integers(0, size, 2)
        ids[[i, j]] = ids[[j, i]]
    is_driver = rng.random(size) < 0.2
    rows = np.cumsum(rng.integers(1, 5, size)).astype(np.int64)
    want_ids, want_rows = _reference(ids, rows, is_driver)
    original = call_join.PACK_BLOCK
    call_join.PACK_BLOCK = block
    try:
        got_ids, got_rows, unique = call_join.sorted_calls(ids, rows.copy(), is_driver)
        op_corr = rng.integers(-1, size + 2, 50)
        matched, call_rows, _ = call_join.match_calls(op_corr, ids, rows.copy(), is_driver)
    finally:
        call_join.PACK_BLOCK = original
    assert got_ids.tolist() == want_ids.tolist() and got_rows.tolist() == want_rows.tolist()
    assert unique == (want_ids.size == ids.size)
    at = np.searchsorted(want_ids, op_corr)
    found = np.zeros(op_corr.size, bool)
    if want_ids.size:
        found = (at < want_ids.size) & (want_ids[np.minimum(at, want_ids.size - 1)] == op_corr)
    assert matched.tolist() == (found & (op_corr >= 0)).tolist()
    assert call_rows.tolist() == want_rows[at[matched]].tolist()


def test_all_equal_and_tiny() -> None:
    for ids in (np.zeros(5, np.int64), np.array([7], np.int64), np.array([2, 1], np.int64)):
        rows = np.arange(ids.size, dtype=np.int64)
        is_driver = np.zeros(ids.size, bool)
        got_ids, got_rows, _ = call_join.sorted_calls(ids, rows.copy(), is_driver)
        want_ids, want_rows = _reference(ids, rows, is_driver)
        assert got_ids.tolist() == want_ids.tolist() and got_rows.tolist() == want_rows.tolist()
