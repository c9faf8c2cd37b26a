"""ranges: the one-op launch positions (ascending-ids shortcut) against a stable sort by correlation id, and the
running count of device changes (skipped where none) against a loop."""

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


def _running_changes(dev: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """csum_change as defined: 0, 0, then the running count of launches whose device differs from the previous."""
    out = np.zeros(dev.size + 1, dtype)
    for k in range(1, dev.size):  # a plain loop: the reference
        out[k + 1] = out[k] + (dev[k] != dev[k - 1])
    return out


@pytest.mark.parametrize(
    "name",
    [
        "gpu/transformer_bf16_cuda.pt.trace.json.gz",
        "gpu/cuda_graph_cuda.pt.trace.json.gz",
        "gpu/pairs/launch_before.pt.trace.json.gz",
        "kineto/overlapping_streams.json",
    ],
)
def test_csum_change_is_the_running_count_of_device_changes(name: str) -> None:
    import tracelens
    from tests.conftest import fixture_path

    launches = ranges._Launches(tracelens.load(fixture_path(name)), None)
    assert not launches.empty
    want = _running_changes(launches.dev_min, launches.csum_change.dtype)
    np.testing.assert_array_equal(launches.csum_change, want)


@pytest.mark.parametrize("dev", [[0], [0, 0, 0], [0, 1], [1, 1, 0, 0, 1], [2, 0, 2, 2]])
def test_csum_change_skip_matches_cumsum(dev: list[int]) -> None:
    """__init__'s step (the cumsum only where some device changes) against the loop, one device or several."""
    d = np.asarray(dev, np.int32)
    got = np.zeros(d.size + 1, np.int32)
    changes = d[1:] != d[:-1]
    if changes.any():
        np.cumsum(changes, dtype=np.int32, out=got[2:])
    np.testing.assert_array_equal(got, _running_changes(d, np.dtype(np.int32)))
