"""The compiled launch lookups (ingest/_start_merge.c's exact_int64, pid_lookup, id_keys and split_keys, behind
placing.integer_ids, placing.launch_pid and placing.launches_by_id) against the numpy paths they replace: empty, one row, repeated ids (the first in table order),
needles that are NaN, fractions, beyond int64, absent, ascending, descending and shuffled."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.ingest.kineto import placing

pytestmark = pytest.mark.skipif(placing._compiled is None, reason="the lookups are not compiled here")


def _numpy(monkeypatch: pytest.MonkeyPatch, call, *args):  # type: ignore[no-untyped-def]
    with monkeypatch.context() as patched:
        patched.setattr(placing, "_compiled", None)
        return call(*args)


EDGES = [
    [],
    [7.0],
    [-0.0],
    [3.0, 1.0, 2.0],
    [2.0**53 + 2, 2.0**53, 2.0**62, -(2.0**63)],
    [1.0, 1.5],
    [1.0, np.nan],
    [2.0**63],
    [np.inf, 1.0],
    [-np.inf],
    [-(2.0**63) - 2048.0],
    [1e300, 4.0],
]


@pytest.mark.parametrize("ids", EDGES)
def test_integer_ids_as_numpy(ids: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.array(ids, np.float64)
    got = placing.integer_ids(values)
    want = _numpy(monkeypatch, placing.integer_ids, values)
    assert (got is None) == (want is None)
    if want is not None:
        assert got is not None and got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def test_integer_ids_fail_in_a_later_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.arange(10_000, dtype=np.float64)
    assert placing.integer_ids(values) is not None
    values[9_000] = 0.5
    assert placing.integer_ids(values) is None
    assert _numpy(monkeypatch, placing.integer_ids, values) is None


NEEDLES = [np.nan, -1.0, 0.5, 2.0**63, -(2.0**63), 1e300, -np.inf, np.inf, -0.0]


@pytest.mark.parametrize(
    "ids", [[], [7.0], [-0.0], [3.0, 1.0, 2.0], [5.0, 5.0, 1.0, 5.0], [2.0**62, -(2.0**63), 0.0]]
)
def test_launch_pid_as_numpy(ids: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    records = {
        "launch_correlation": np.array(ids, np.float64),
        "launch_pid": np.arange(len(ids), dtype=np.float64) + 10,
    }
    index = placing.sorted_launches(records)  # (repeated ids: the first in table order)
    assert index[2] is not None
    for needles in (
        np.array(ids + NEEDLES, np.float64),
        np.array(sorted(ids), np.float64),
        np.array(sorted(ids, reverse=True), np.float64),
        np.zeros(0),
    ):
        got = placing.launch_pid(index, needles)
        want = _numpy(monkeypatch, placing.launch_pid, index, needles)
        np.testing.assert_array_equal(got, want)


def test_launch_pid_many_as_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    correlation = rng.choice(200_000, 40_000).astype(np.float64)  # some repeated
    records = {"launch_correlation": correlation, "launch_pid": rng.integers(1, 9, correlation.size) * 1.0}
    index = placing.sorted_launches(records)
    ascending = np.sort(rng.integers(-10, 200_010, 30_000)).astype(np.float64)
    ascending[::11] += 0.5
    ascending[::13] = np.nan
    for needles in (ascending, ascending[::-1].copy(), rng.permutation(ascending), ascending[::5].copy()):
        got = placing.launch_pid(index, needles)
        want = _numpy(monkeypatch, placing.launch_pid, index, needles)
        np.testing.assert_array_equal(got, want)
    by_id = placing.launches_by_id(*records.values())
    assert by_id is None  # (repeated ids)
    distinct = np.unique(correlation)
    by_id = placing.launches_by_id(rng.permutation(distinct), np.arange(distinct.size) * 1.0)
    assert by_id is not None
    np.testing.assert_array_equal(
        placing.launch_pid(by_id, ascending), _numpy(monkeypatch, placing.launch_pid, by_id, ascending)
    )


@pytest.mark.parametrize(
    "ids",
    [
        [7.0],
        [-0.0, 5.0],
        [3.0, 1.0, 2.0],
        [-5.0, 0.0, 9.0, 4.0, -7.0],
        [1.0, 1.0, 2.0],  # a repeated id: no index
        [0.0, -0.0],  # one id twice
        [2.0**59, -(2.0**59), 3.0],  # ids too large for the keys: the int64 path
        [2.0**58 - 1, -(2.0**58), 3.0],  # just within
        [1.5, 2.0],  # a fraction: the float path
        [np.nan, 2.0],
    ],
)
def test_launches_by_id_keyed_as_numpy(ids: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    correlation = np.array(ids, np.float64)
    pid = np.arange(correlation.size, dtype=np.float64) * 3 + 10
    got = placing.launches_by_id(correlation, pid)
    want = _numpy(monkeypatch, placing.launches_by_id, correlation, pid)
    assert (got is None) == (want is None)
    if want is not None:
        assert got is not None and (got[2] is None) == (want[2] is None)
        for got_array, want_array in zip(got, want, strict=True):
            np.testing.assert_array_equal(got_array, want_array)
            assert got_array is None or got_array.dtype == want_array.dtype


def test_launches_by_id_keyed_many_as_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    runs = [np.arange(s, s + 400) for s in rng.choice(10**6, 300, replace=False) * 500]
    correlation = np.concatenate(runs).astype(np.float64)  # ascending runs, out of order between them
    pid = rng.integers(1, 9, correlation.size).astype(np.float64)
    got = placing.launches_by_id(correlation, pid)
    want = _numpy(monkeypatch, placing.launches_by_id, correlation, pid)
    assert got is not None and want is not None
    for got_array, want_array in zip(got, want, strict=True):
        np.testing.assert_array_equal(got_array, want_array)
    correlation[-1] = correlation[0]  # a shared id at the end
    assert placing.launches_by_id(correlation, pid) is None
    assert _numpy(monkeypatch, placing.launches_by_id, correlation, pid) is None
