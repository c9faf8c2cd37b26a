"""memcpy: the per-device aggregate bandwidth (``_achieved``) against ``_bandwidth_stats``' and the calls'
launch modes against ``names.code_map`` (the references)."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses import memcpy


@pytest.mark.parametrize(
    ("nbytes", "duration"),
    [
        ([], []),  # empty
        ([1024.0], [10]),  # one copy
        ([1024.0], [0]),  # one copy, zero duration: nothing measured
        ([np.nan, 5.0], [3, 3]),  # unknown bytes left out
        ([7.0, 7.0, 7.0], [2, 2, 2]),  # ties
        ([3.0, np.nan, 9.5, 1e12, 0.0], [0, 4, 7, 1_000_000, 5]),
    ],
)
def test_achieved_equals_bandwidth_stats(nbytes: list[float], duration: list[int]) -> None:
    b, d = np.asarray(nbytes, np.float64), np.asarray(duration, np.int64)
    assert memcpy._achieved(b, d) == memcpy._bandwidth_stats(b, d)["achieved_bytes_per_s"]


def test_achieved_random() -> None:
    rng = np.random.default_rng(7)
    for size in (1, 2, 17, 1000):
        b = rng.integers(0, 1 << 30, size).astype(np.float64)
        b[rng.random(size) < 0.1] = np.nan
        d = rng.integers(0, 1000, size)
        assert memcpy._achieved(b, d) == memcpy._bandwidth_stats(b, d)["achieved_bytes_per_s"]


@pytest.mark.parametrize(
    "codes",
    [[], [0], [-1], [2, 2, 2], [0, 1, 2, 3, 4, -1, 1, 0], [4, -1, -1, 3]],  # empty, one row, null, ties, all
)
def test_launch_mode_of_names_equals_code_map(codes: list[int]) -> None:
    from tracelens.analyses.names import code_map

    dictionary = np.array(
        ["cudaMemcpyAsync", "cudaMemcpy", "cudaGraphLaunch", "cudaLaunchKernel", "cuMemcpyDtoHAsync_v2"],
        object,
    )
    at = np.asarray(codes, np.int32)
    modes, unknown = memcpy.LAUNCH_MODES, memcpy.LAUNCH_MODES.index(memcpy.UNKNOWN)
    want = code_map(at, dictionary, lambda n: modes.index(memcpy._api_class(n)), unknown).astype(np.int8)
    got = memcpy._launch_mode_of_names(at, dictionary)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
