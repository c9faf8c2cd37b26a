"""sync._run_thread_codes (the calls' thread codes from one key per run of calls on a thread) against
values.dense_codes of every call's thread key: runs, interleaved threads, unknown ids, empty and one call."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import sync
from tracelens.analyses.columns import thread_key
from tracelens.values import dense_codes


def _check(pid: np.ndarray, tid: np.ndarray) -> None:
    codes, keys = sync._run_thread_codes(pid, tid)
    expected_codes, expected_keys = dense_codes(thread_key(pid, tid))
    assert codes.dtype == expected_codes.dtype
    assert codes.tolist() == expected_codes.tolist() and keys.tolist() == expected_keys.tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 9), st.integers(1, 30)), max_size=12))
def test_run_thread_codes_equal_dense_codes(runs: list) -> None:
    pid = np.concatenate([np.zeros(0, np.int32), *(np.full(n, p, np.int32) for p, _, n in runs)])
    tid = np.concatenate([np.zeros(0, np.int64), *(np.full(n, t, np.int64) for _, t, n in runs)])
    _check(pid, tid)
    _check(pid[::-1].copy(), tid[::2].repeat(2)[: pid.size].copy() if pid.size else tid)


def test_run_thread_codes_of_one_call_and_alternating_threads() -> None:
    _check(np.array([3], np.int32), np.array([4], np.int64))
    _check(np.array([1, 1, 1, 1], np.int32), np.array([5, 6, 5, 6], np.int64))
