"""call_join.launch_rows by the compiled passes (``_kernel_stats.pack_call_keys`` and ``join_sorted_keys``) equals
its numpy path (match_calls and a scatter of the matched rows), and both equal an independent join (a dict of each
id's first call by (driver after runtime, row)): on generated calls with repeated ids (ties between runtime and
driver calls, and between calls of one kind), ops without an id, with ids no call has (below and above every call's),
ops in any order (the galloping search from the previous op's place), no calls, no ops, one call, one op."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import call_join

pytestmark = pytest.mark.skipif(
    call_join._compiled is None or not hasattr(call_join._compiled, "join_sorted_keys"),
    reason="the compiled join is not built",
)


def _independent(
    op_corr: np.ndarray, ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray
) -> tuple[list[bool], list[int], bool]:
    best: dict[int, tuple[bool, int]] = {}
    for i, r, d in zip(ids.tolist(), rows.tolist(), is_driver.tolist(), strict=True):
        if i not in best or (d, r) < best[i]:
            best[i] = (d, r)
    matched = [c >= 0 and c in best for c in op_corr.tolist()]
    launch = [best[c][1] if c >= 0 and c in best else -1 for c in op_corr.tolist()]
    return matched, launch, len(best) == ids.size


def _numpy_path(
    op_corr: np.ndarray, ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray, row_type: type
) -> tuple[np.ndarray, np.ndarray, bool]:
    compiled = call_join._compiled
    call_join._compiled = None  # type: ignore[assignment]
    try:
        return call_join.launch_rows(op_corr, ids, rows.copy(), is_driver, row_type)
    finally:
        call_join._compiled = compiled


def _check(
    op_corr: np.ndarray,
    ids: np.ndarray,
    rows: np.ndarray,
    is_driver: np.ndarray,
    row_type: type,
    packs: bool = True,
) -> None:
    fast = call_join._compiled_launch_rows(op_corr, ids, rows, is_driver, row_type)
    assert (fast is not None) == (packs and ids.size > 0)
    got = call_join.launch_rows(op_corr, ids, rows, is_driver, row_type)
    ref = _numpy_path(op_corr, ids, rows, is_driver, row_type)
    want_matched, want_rows, want_unique = _independent(op_corr, ids, rows, is_driver)
    for matched, launch, unique in (got, ref):
        assert matched.dtype == bool and matched.tolist() == want_matched
        assert launch.dtype == np.dtype(row_type) and launch.tolist() == want_rows
        assert unique == want_unique


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=80),
    st.lists(st.integers(-2, 45), max_size=60),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from([0, 2**20, 2**40]),
    st.booleans(),
)
def test_compiled_launch_rows_equal_the_numpy_path(
    calls: list, ops: list, id_type: type, row_type: type, id_offset: int, ascending_ops: bool
) -> None:
    if id_type is np.int32 and id_offset > 2**30:
        id_offset = 2**20
    ids = np.array([i + id_offset for i, _ in calls], id_type)
    is_driver = np.array([d for _, d in calls], bool)
    rows = np.cumsum(np.arange(1, ids.size + 1)).astype(row_type)  # ascending
    op = sorted(ops) if ascending_ops else ops
    op_corr = np.array([c if c < 0 else c + id_offset for c in op], id_type)
    _check(op_corr, ids, rows, is_driver, row_type)


def test_compiled_launch_rows_edges() -> None:
    none32 = np.zeros(0, np.int32)
    no_driver = np.zeros(0, bool)
    _check(np.array([-1, 3], np.int32), none32, none32, no_driver, np.int32)  # no calls
    _check(
        none32, np.array([5, 5], np.int32), np.array([1, 2], np.int32), np.zeros(2, bool), np.int32
    )  # no ops
    _check(
        np.array([7], np.int64), np.array([7], np.int64), np.array([0], np.int64), np.zeros(1, bool), np.int64
    )
    # ties: a driver call before the runtime call of its id (the runtime one wins), two runtime calls (the first)
    ids = np.array([4, 4, 9, 9, 2], np.int32)
    is_driver = np.array([True, False, False, False, True])
    rows = np.array([3, 5, 6, 8, 10], np.int32)
    _check(np.array([9, 4, 2, 1, 10, -1, 4], np.int32), ids, rows, is_driver, np.int32)
    # ids too wide to pack with the rows: the numpy path (argsort) answers
    wide = np.array([2**61, 3], np.int64)
    assert (
        call_join._compiled_launch_rows(wide, wide, np.array([1, 2**20]), np.zeros(2, bool), np.int64) is None
    )
    _check(wide, wide, np.array([1, 2**20], np.int64), np.zeros(2, bool), np.int64, packs=False)


def test_compiled_launch_rows_many_calls_mostly_ascending() -> None:
    rng = np.random.default_rng(7)
    ids = np.arange(50_000, dtype=np.int64) * 3
    swap = rng.integers(0, ids.size - 1, 40)
    ids[swap], ids[swap + 1] = ids[swap + 1].copy(), ids[swap].copy()
    rows = np.arange(ids.size, dtype=np.int32) * 2 + 1
    is_driver = np.zeros(ids.size, bool)
    op_corr = np.sort(rng.integers(-1, ids.size * 3 + 5, 20_000)).astype(np.int32)
    fast = call_join._compiled_launch_rows(op_corr, ids, rows, is_driver, np.int32)
    ref = _numpy_path(op_corr, ids, rows, is_driver, np.int32)
    assert fast is not None
    assert np.array_equal(fast[0], ref[0]) and np.array_equal(fast[1], ref[1]) and fast[2] == ref[2]
