"""The event columns' integer reads narrowed before their nulls are filled (``analyses.columns._filled``) equal the
store's own read (``EventStore.numpy``: filled at full width, then narrowed), whatever the nulls."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from tracelens.analyses.columns import _filled, _ints, int_type
from tracelens.trace import EventStore, SparseColumn, with_sentinel_nulls


def _store(array: pa.Array, *, sentinel: bool = False) -> EventStore:
    if sentinel:
        filled = with_sentinel_nulls(array)
        assert filled is not None
        return EventStore(len(array), {"tid": filled}, sentinel=frozenset({"tid"}))
    return EventStore(len(array), {"tid": array})


CASES = {
    "empty": pa.array([], pa.int64()),
    "one row": pa.array([7], pa.int64()),
    "one null": pa.array([None], pa.int64()),
    "all null": pa.array([None, None, None], pa.int64()),
    "no nulls": pa.array([3, 1, 2, 2**29], pa.int64()),
    "some nulls": pa.array([5, None, 0, None, 2**30 - 1, -1], pa.int64()),
    "wide values": pa.array([2**40, None, -(2**35), 12], pa.int64()),
    "int32 stored": pa.array([1, None, 3], pa.int32()),
    "sliced": pa.array([9, None, 4, None, 8, 1, None, 2, 3, 4], pa.int64()).slice(3, 6),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("sentinel", [False, True])
def test_filled_equals_the_store_read(name: str, sentinel: bool) -> None:
    array = CASES[name]
    if sentinel and (array.offset or not len(array)):
        pytest.skip("with_sentinel_nulls keeps no sliced array")
    store = _store(array, sentinel=sentinel)
    for dtype in (np.int32, np.int64, int_type(array)):
        got, want = _filled(store, "tid", dtype), store.numpy("tid", -1, dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        # independently: the values, -1 at the nulls
        expected = np.array([-1 if v is None else v for v in array.to_pylist()], np.int64).astype(dtype)
        np.testing.assert_array_equal(got, expected)


def test_filled_random_nulls() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(-1, 2**30, 10_000)
    for share in (0.0, 0.001, 0.3, 0.999):
        array = pa.array(values, mask=rng.random(values.size) < share)
        store = _store(array)
        got = _ints(store, "tid")
        want = store.numpy("tid", -1, int_type(array))
        assert got.dtype == want.dtype == np.int32
        np.testing.assert_array_equal(got, want)


def test_filled_leaves_other_columns_to_the_store() -> None:
    sparse = SparseColumn(np.array([1, 3], np.int32), pa.array([4, 6], pa.int64()))
    store = EventStore(5, {"tid": sparse})
    np.testing.assert_array_equal(_filled(store, "tid", np.int32), [-1, 4, -1, 6, -1])
    assert _ints(EventStore(2, {}), "tid").tolist() == [-1, -1]
