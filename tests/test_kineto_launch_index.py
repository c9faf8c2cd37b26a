"""The launch index of integer correlation ids (placing.launches_by_id's int64 path) against the float path: the
same order, the same pids, and the same lookups (launch_pid), including ids beyond 2**53 and needles that are
fractions, NaN or absent."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.ingest.kineto import placing


def _float_index(correlation: np.ndarray, pid: np.ndarray) -> placing.LaunchIndex | None:
    """The index as the float path builds it (argsort of the float ids), computed here independently."""
    by_id = np.argsort(correlation, kind="stable")
    ids = correlation[by_id]
    if ids.size > 1 and bool(np.any(ids[1:] == ids[:-1])):
        return None
    return ids, pid[by_id], None


@pytest.mark.parametrize(
    "ids",
    [
        [],
        [7.0],
        [3.0, 1.0, 2.0],
        [-5.0, 0.0, 9.0, 4.0],
        [2.0**53 + 2, 2.0**53, 2.0**60, -(2.0**62)],
        [1.0, 1.0, 2.0],  # a repeated id: no index
        [0.0, -0.0],  # one id twice
    ],
)
def test_integer_ids_give_the_float_paths_index(ids: list[float]) -> None:
    correlation = np.array(ids, dtype=np.float64)
    pid = np.arange(correlation.size, dtype=np.float64) + 10
    got = placing.launches_by_id(correlation, pid)
    want = _float_index(correlation, pid)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got[0].dtype == np.int64 and got[2] is got[0]
    np.testing.assert_array_equal(got[0].astype(np.float64), want[0])
    np.testing.assert_array_equal(got[1], want[1])
    needles = np.concatenate([correlation, correlation + 0.5, [np.nan, -1.0, 2.0**63, 1e300]])
    np.testing.assert_array_equal(placing.launch_pid(got, needles), placing.launch_pid(want, needles))


def test_many_integer_ids_shuffled() -> None:
    rng = np.random.default_rng(3)
    correlation = rng.permutation(rng.choice(10**7, 50_000, replace=False)).astype(np.float64)
    pid = rng.integers(1, 9, correlation.size).astype(np.float64)
    got = placing.launches_by_id(correlation, pid)
    want = _float_index(correlation, pid)
    assert got is not None and want is not None
    np.testing.assert_array_equal(got[1], want[1])
    needles = np.sort(rng.integers(-5, 10**7 + 5, 30_000)).astype(np.float64)
    needles[::9] += 0.25
    np.testing.assert_array_equal(placing.launch_pid(got, needles), placing.launch_pid(want, needles))


def test_fractional_ids_keep_the_float_path() -> None:
    correlation = np.array([2.5, 1.0, 3.0])
    got = placing.launches_by_id(correlation, np.array([1.0, 2.0, 3.0]))
    assert got is not None and got[0].dtype == np.float64 and got[2] is None
    np.testing.assert_array_equal(got[0], [1.0, 2.5, 3.0])
    np.testing.assert_array_equal(got[1], [2.0, 1.0, 3.0])


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("case", ["all found", "one absent", "one NaN", "one row", "no row"])
def test_launch_pid_where_every_id_is_found_and_where_not(integer: bool, case: str) -> None:
    """launch_pid's gather (every needle an id of some launch, none NaN) and its placing path against a direct
    search."""
    rng = np.random.default_rng(11)
    ids = np.sort(rng.choice(50_000, 5_000, replace=False)).astype(np.float64)
    if not integer:
        ids += 0.5
    pids = rng.integers(1, 9, ids.size).astype(np.float64)
    pids[::13] = -0.0
    needles = np.sort(rng.choice(ids, 3_000))
    if case == "one absent":
        needles[100] = ids[5] + 0.25
    elif case == "one NaN":
        needles[-1] = np.nan
    elif case == "one row":
        needles = needles[:1]
    elif case == "no row":
        needles = needles[:0]
    index = (
        placing.launches_by_id(ids, pids)
        if integer
        else placing.sorted_launches({"launch_correlation": ids, "launch_pid": pids})
    )
    assert index is not None
    got = placing.launch_pid(index, needles)
    pos = np.clip(np.searchsorted(ids, needles), 0, ids.size - 1)
    want = np.where(ids[pos] == needles, pids[pos], np.nan)
    assert got.dtype == np.float64 and got.shape == needles.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
