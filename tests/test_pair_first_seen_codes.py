"""attribution.pair_first_seen_codes (runs found by comparing pid and tid, a key built per run) gives
first_seen_codes(thread_key(pid, tid)), and so pd.factorize's codes of the keys: runs of threads, threads changing at
every row, pairs that share a key (tids past 32 bits), empty and one row."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.attribution import pair_first_seen_codes
from tracelens.analyses.columns import thread_key


def check(pid: np.ndarray, tid: np.ndarray) -> None:
    code, seen, at = pair_first_seen_codes(pid, tid)
    key = thread_key(pid, tid)
    expected_code, expected_seen = pd.factorize(key)
    np.testing.assert_array_equal(code, expected_code)
    np.testing.assert_array_equal(np.asarray(seen), np.asarray(expected_seen))
    first = [int(np.flatnonzero(key == value)[0]) for value in np.asarray(expected_seen)]
    np.testing.assert_array_equal(at, first)


# tids 5 and 2**32 + 5 share a key with the same pid: runs of pairs split the runs of keys
_TIDS = (-1, 0, 5, 7, 2**32 + 5, 2**40)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 2), st.sampled_from(_TIDS), st.integers(1, 30)), max_size=40))
def test_runs_of_threads(runs: list) -> None:
    counts = np.array([n for *_, n in runs], np.int64)
    pid = np.repeat(np.array([p for p, _, _ in runs], np.int32), counts)
    tid = np.repeat(np.array([t for _, t, _ in runs], np.int64), counts)
    check(pid, tid)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 3), st.sampled_from(_TIDS)), max_size=60))
def test_threads_changing_at_most_rows(pairs: list) -> None:
    check(np.array([p for p, _ in pairs], np.int32), np.array([t for _, t in pairs], np.int64))


def test_edges() -> None:
    check(np.zeros(0, np.int32), np.zeros(0, np.int64))
    check(np.array([3], np.int32), np.array([9], np.int64))
    check(np.array([3, 3], np.int32), np.array([5, 2**32 + 5], np.int64))  # one key, two pairs
    check(np.full(100, 1, np.int64), np.repeat(np.array([4, 2, 4], np.int64), [40, 30, 30]))
