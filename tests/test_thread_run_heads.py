"""thread_codes.thread_run_heads against a row-by-row reference: the first row of each run of rows on one (pid, tid)
(and one value of each extra array)."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses.thread_codes import thread_run_heads


def _reference(*arrays: np.ndarray) -> list[int]:
    rows = list(zip(*(a.tolist() for a in arrays), strict=True))
    return [i for i, row in enumerate(rows) if i == 0 or row != rows[i - 1]]


@pytest.mark.parametrize("size", [0, 1, 2, 7, 500])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_heads_equal_the_reference(size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # few values, repeated in runs: the shape of host rows in time order
    pid = np.repeat(rng.integers(-1, 2, size), rng.integers(1, 4, size))[:size]
    tid = np.repeat(rng.integers(-1, 3, size), rng.integers(1, 5, size))[:size]
    flag = rng.integers(0, 2, size).astype(bool)
    heads = thread_run_heads(pid, tid)
    assert heads.dtype == np.int64
    assert heads.tolist() == _reference(pid, tid)
    assert thread_run_heads(pid, tid, flag).tolist() == _reference(pid, tid, flag)


def test_a_change_in_either_id_starts_a_run() -> None:
    pid = np.array([1, 1, 2, 2, 2], np.int64)
    tid = np.array([5, 6, 6, 6, 5], np.int32)
    assert thread_run_heads(pid, tid).tolist() == [0, 1, 2, 4]
