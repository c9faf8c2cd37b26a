"""enrich._Rows._positions_in (where the kernel rows sit in a sparse column's ascending rows, by one search walk)
against the table-long mask it replaced: equal positions where every row is carried, None where one is not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import enrich


class _FakeTrace:
    def __init__(self, n: int) -> None:
        self.num_events = n


def mask_reference(rows: np.ndarray, carried: np.ndarray, n: int) -> np.ndarray | None:
    member = np.zeros(n, bool)
    member[rows] = True
    at = np.flatnonzero(member[carried])
    return at if at.size == rows.size else None


def positions(rows: np.ndarray, carried: np.ndarray, n: int) -> Any:
    return enrich._Rows(_FakeTrace(n), rows)._positions_in(carried)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3000), st.data())
def test_equals_the_mask(n: int, data: st.DataObject) -> None:
    carried_set = data.draw(st.sets(st.integers(0, n - 1), max_size=n))
    carried = np.array(sorted(carried_set), dtype=data.draw(st.sampled_from([np.int32, np.int64])))
    from_carried = data.draw(st.booleans())
    pool = sorted(carried_set) if from_carried and carried_set else list(range(n))
    rows = np.array(sorted(data.draw(st.sets(st.sampled_from(pool), max_size=len(pool)))), np.int64)
    rows = rows.astype(data.draw(st.sampled_from([np.int32, np.int64])))
    got, want = positions(rows, carried, n), mask_reference(rows, carried, n)
    if want is None:
        assert got is None
    else:
        assert got is not None
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("size", [0, 1, 40_000])
def test_large_and_empty(size: int) -> None:
    n = 200_000
    rng = np.random.default_rng(size)
    carried = np.sort(rng.choice(n, 100_000, replace=False)).astype(np.int32)
    rows = np.sort(rng.choice(carried, size, replace=False)).astype(np.int64)
    np.testing.assert_array_equal(positions(rows, carried, n), mask_reference(rows, carried, n))
    if size:
        missing = np.setdiff1d(np.arange(n), carried)[:1]
        with_missing = np.union1d(rows, missing).astype(np.int64)
        assert positions(with_missing, carried, n) is None
        assert positions(rows, carried[:0], n) is None
