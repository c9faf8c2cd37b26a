"""ranges' one-op launch positions: the ascending-ids shortcut against a stable sort by correlation id."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses import ranges


def _reference(matched: np.ndarray, cid: np.ndarray) -> np.ndarray | None:
    at = np.flatnonzero(matched)
    order = np.argsort(cid[at], kind="stable")
    ids = cid[at][order]
    if np.unique(ids).size != ids.size:
        return None
    return at[order]


@pytest.mark.parametrize(
    ("matched", "cid"),
    [
        ([], []),  # empty
        ([True], [5]),  # one row
        ([False], [5]),  # one unmatched row
        ([True, True, True], [1, 2, 3]),  # ascending
        ([True, False, True, True], [1, 1, 2, 9]),  # ascending among the matched only
        ([True, True, True], [3, 1, 2]),  # out of order
        ([True, True], [4, 4]),  # tie: two ops on one call
        ([True, True, True], [1, 2, 2]),  # tie at the end of an otherwise ascending run
        ([True, True, True], [2, 1, 1]),  # tie out of order
    ],
)
def test_one_op_launches_equals_sort(matched: list[bool], cid: list[int]) -> None:
    for dtype in (np.int32, np.int64):
        pairs = {"matched": np.asarray(matched, bool), "correlation_id": np.asarray(cid, dtype)}
        got, want = ranges._one_op_launches(pairs), _reference(pairs["matched"], pairs["correlation_id"])
        if want is None:
            assert got is None
        else:
            assert got is not None
            np.testing.assert_array_equal(got, want)


def test_one_op_launches_random() -> None:
    rng = np.random.default_rng(3)
    for size in (2, 10, 500):
        for ascending in (True, False):
            cid = np.arange(size) * 3 if ascending else rng.permutation(size * 2)[:size]
            matched = rng.random(size) < 0.8
            got = ranges._one_op_launches({"matched": matched, "correlation_id": cid})
            want = _reference(matched, cid)
            assert got is not None and want is not None
            np.testing.assert_array_equal(got, want)
