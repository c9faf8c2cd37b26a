"""The Kineto reader's per-block steps (tracelens/ingest/kineto/prepare.py) and the table's placing of rows
against the plain formulas they replace: ids as int64 data and validity, the exactness test, and the rows of
a sorted table found without an inverse permutation."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import prepare, table
from tracelens.ingest.kineto.stored import unrepresentable

_ID = st.one_of(
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**63, -(2.0**63), 2.0**62, 2.0**53, 0.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**64), 2**64).map(float),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ID, max_size=20))
def test_int_parts_and_exactness_match_the_formulas(ids: list[float]) -> None:
    values = np.array(ids, dtype=np.float64)
    data, valid = prepare.int_parts(values, "pid")
    missing = unrepresentable(values, np.dtype(np.int64))
    with np.errstate(invalid="ignore"):
        expected = values.astype(np.int64)
    expected[missing] = 0
    np.testing.assert_array_equal(valid, ~missing)
    np.testing.assert_array_equal(data, expected)
    with np.errstate(invalid="ignore"):
        exact = bool(np.all(np.isnan(values) | ((np.abs(values) < 2.0**63) & (np.trunc(values) == values))))
    assert prepare.stored_exactly(values) is exact
    assert prepare.stored_exactly(values, data) is exact


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=60), st.data())
def test_rows_in_table_order(starts: list[int], data: st.DataObject) -> None:
    m = len(starts)
    order = np.argsort(np.array(starts), kind="stable")
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, m - 1)))), dtype=np.int64)
    kept, at = table._in_table_order(rows, order, m)
    position = np.empty(m, dtype=np.int64)
    position[order] = np.arange(m)
    expected_at = position[rows]
    expected_kept = np.argsort(expected_at)
    np.testing.assert_array_equal(kept, expected_kept)
    np.testing.assert_array_equal(at, expected_at[expected_kept])
