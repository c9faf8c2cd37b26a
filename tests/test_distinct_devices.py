"""communication_report's loop over devices: ``values.sorted_distinct`` (numpy's stable sort: a radix sort for int8
and int16) gives what ``np.unique`` gave for the GPU ops' device ids: values, order and type, with no op, one op,
ids -1, repeated and interleaved ids."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.values import sorted_distinct


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("size", [0, 1, 2, 7, 5000])
@pytest.mark.parametrize("seed", range(5))
def test_sorted_distinct_equals_unique(dtype: type, size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    devices = rng.integers(-1, 1 + seed * 3, size).astype(dtype)
    got, want = sorted_distinct(devices), np.unique(devices)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)
    assert [int(d) for d in got] == [int(d) for d in want]
