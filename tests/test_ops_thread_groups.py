"""The compiled grouping that finds the threads and the tied rows itself (ops/thread_groups.py, _op_tree.c
``group_rows_found``) against an independent numpy reference (a stable argsort by thread key; the ties from the
grouped rows' starts) and against ``group_rows`` given the candidate threads: empty, one row, all rows tied, one
thread, 255 and 256 threads, starts out of order, 1/2/4/8-byte thread ids, 4/8-byte rows, with and without starts.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tracelens.analyses import ops as _ops  # noqa: F401  (the package imports tree)
from tracelens.analyses.columns import thread_key
from tracelens.analyses.ops import tree
from tracelens.analyses.ops.thread_groups import group_rows_found

compiled = tree._compiled
pytestmark = pytest.mark.skipif(
    compiled is None or not hasattr(compiled, "group_rows_found"), reason="no compiled op-tree pass"
)


def _reference(pid, tid, start, rows):
    key = thread_key(pid[rows].astype(np.int64), tid[rows].astype(np.int64))
    order = np.argsort(key, kind="stable")
    grouped, key = rows[order], key[order]
    keys, counts = np.unique(key, return_counts=True)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    starts = start[grouped]
    same = starts[1:] == starts[:-1]
    same[bounds[1:-1] - 1] = False  # a thread's last row and the next thread's first: no tie
    return grouped, bounds, starts, np.flatnonzero(same), keys


def _table(rnd, size, threads, id_type, ties):
    start = np.array(sorted(rnd.randint(0, size // ties + 1) for _ in range(size)), np.int64)
    pick = [threads[rnd.randrange(len(threads))] for _ in range(size)]
    pid = np.array([p for p, _ in pick], id_type)
    tid = np.array([t for _, t in pick], id_type)
    return pid, tid, start


CASES = [  # (rows, thread ids, how many rows share a start, on average)
    (0, [(1, 2)], 1),
    (1, [(1, 2)], 1),
    (1, [(-3, -1)], 1),
    (50, [(1, 2)], 10**9),  # every row tied: one start
    (300, [(1, 2)], 3),
    (2000, [(7, t) for t in (1, 2, -1, 123456, 2**31 - 1, -(2**31))], 4),
    (3000, [(p, t) for p in (1, -5) for t in range(40)], 2),
    (5000, [(1, t) for t in range(255)], 3),  # the most threads
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("id_type", [np.int32, np.int64])
@pytest.mark.parametrize("row_type", [np.int32, np.int64])
@pytest.mark.parametrize("with_starts", [True, False])
def test_found_groups_equal_reference(case, id_type, row_type, with_starts) -> None:
    size, threads, ties = CASES[case]
    rnd = random.Random(case)
    pid, tid, start = _table(rnd, size, threads, id_type, ties)
    rows = np.flatnonzero(np.array([rnd.random() < 0.8 or size < 3 for _ in range(size)], bool))
    rows = rows.astype(row_type)
    got = group_rows_found(compiled, pid, tid, start, rows, with_starts)
    assert got is not None
    grouped, bounds, starts, tied, keys = _reference(pid, tid, start, rows)
    np.testing.assert_array_equal(got[0], grouped)
    assert got[0].dtype == row_type
    np.testing.assert_array_equal(got[1], bounds)
    if with_starts:
        np.testing.assert_array_equal(got[2], starts)
    else:
        assert got[2] is None
    assert got[3] == tied.size
    np.testing.assert_array_equal(got[4], tied)
    if rows.size:  # the same grouping and count as group_rows given the threads
        out, start_out = np.empty_like(rows), np.empty(rows.size, np.int64)
        given_bounds, count = np.empty(keys.size + 1, np.int64), np.zeros(1, np.int64)
        assert compiled.group_rows(pid, tid, start, rows, keys, out, start_out, given_bounds, count) == 0
        np.testing.assert_array_equal(out, got[0])
        np.testing.assert_array_equal(given_bounds, got[1])
        assert int(count[0]) == got[3]


def test_thread_codes_of_one_and_two_bytes() -> None:
    rnd = random.Random(5)
    for code_type in (np.int8, np.int16):
        codes = np.array([rnd.randrange(0, 9) for _ in range(1000)], code_type)
        start = np.array(sorted(rnd.randint(0, 300) for _ in range(1000)), np.int64)
        rows = np.arange(1000, dtype=np.int64)
        got = group_rows_found(compiled, codes, codes, start, rows, True)
        assert got is not None
        expected = _reference(codes, codes, start, rows)
        for a, b in zip(got[:3], expected[:3], strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(got[4], expected[3])


def test_declines_too_many_threads_and_unordered_starts() -> None:
    rnd = random.Random(9)
    pid, tid, start = _table(rnd, 4000, [(1, t) for t in range(256)], np.int32, 2)
    rows = np.arange(4000, dtype=np.int64)
    assert np.unique(tid).size == 256
    assert group_rows_found(compiled, pid, tid, start, rows, True) is None  # 256 threads: the caller sorts
    start[[0, -1]] = start[[-1, 0]] + np.array([1, 0])
    fewer = tid % 5
    assert group_rows_found(compiled, pid, fewer, start, rows, False) is None  # starts out of order


def test_rows_outside_the_table_raise() -> None:
    pid = tid = np.zeros(3, np.int32)
    start = np.zeros(3, np.int64)
    with pytest.raises(IndexError):
        group_rows_found(compiled, pid, tid, start, np.array([0, 3], np.int64), True)
