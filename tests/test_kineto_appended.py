"""kineto/appended.py: the blocks' arrays joined equal np.concatenate of them (values, dtype promotion, record
shapes, row numbers shifted), read once or more."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto.appended import Appended

_DTYPES = st.sampled_from([np.bool_, np.int8, np.int32, np.int64, np.float64])


def _block(dtype: type, size: int, seed: int, width: int) -> np.ndarray:
    values = np.random.default_rng(seed).integers(-3, 1000, (size, width) if width else size)
    return values.astype(dtype)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(_DTYPES, st.integers(0, 9)), min_size=1, max_size=7),
    st.sampled_from([0, 3]),
)
def test_appended_equals_concatenate(blocks: list[tuple[type, int]], width: int) -> None:
    arrays = [_block(dtype, size, i, width) for i, (dtype, size) in enumerate(blocks)]
    joined = Appended()
    for values in arrays:
        joined.add("x", values)
    want = np.concatenate(arrays)
    np.testing.assert_array_equal(joined.joined("x"), want)  # read twice: joined once
    got = joined.pop("x")
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(KeyError):
        joined.joined("x")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=6))
def test_appended_row_numbers_are_shifted_to_joined_rows(sizes: list[int]) -> None:
    """Each block's row numbers plus its first joined row, as the table joined them (rows + offset)."""
    blocks = [np.arange(size, dtype=np.int64)[::2] for size in sizes]
    offsets = np.cumsum([0, *sizes[:-1]])
    joined = Appended()
    for rows, offset in zip(blocks, offsets, strict=True):
        joined.add("rows", rows, int(offset))
    got = joined.joined("rows")
    np.testing.assert_array_equal(got, np.concatenate([r + o for r, o in zip(blocks, offsets, strict=True)]))


def test_one_row_and_empty_blocks() -> None:
    joined = Appended()
    joined.add("a", np.array([], dtype=np.int8))
    joined.add("a", np.array([7], dtype=np.int8))
    joined.add("a", np.array([], dtype=np.float64))  # an empty block still promotes, as np.concatenate does
    want = np.concatenate([np.array([], np.int8), np.array([7], np.int8), np.array([], np.float64)])
    got = joined.joined("a")
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
