"""attribution.host_rows built a block of rows at a time (_kept_rows, _thread_codes: each block's thread keys
numbered by hashing, then mapped to the sorted distinct keys) equals the whole-table build it replaced (kept here
as the reference), on generated host rows: several processes and threads (a tid past 32 bits sharing its thread
key with its low 32 bits, the first row's tid kept), rows without a category, pid and tid as plain arrays or held as one set of thread codes, one-time rows (given the startup
category in each block's copy, not in a copy of the whole table: with or without a category of their own), blocks
of a few rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import attribution
from tracelens.analyses.coded import CodedInts
from tracelens.analyses.columns import thread_key
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY, STARTUP
from tracelens.values import dense_codes

THREADS = [(1, 5), (1, 6), (2, 5), (3, 2**33 + 5), (3, 5), (7, -1)]


def _reference(pid: np.ndarray, tid: np.ndarray, category: np.ndarray) -> tuple:
    keep = np.flatnonzero(category >= 0)
    p, t = pid[keep], tid[keep]
    codes, uniques = dense_codes(thread_key(p, t))
    first = np.zeros(len(uniques), np.int64)
    first[codes[::-1]] = np.arange(codes.size)[::-1]
    return (
        keep.astype(np.int32),
        category[keep],
        np.asarray(codes, attribution._narrowest_code_type(len(uniques))),
        pd.DataFrame({"pid": p[first], "tid": t[first]}),
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, len(THREADS) - 1), st.integers(-1, 4)), max_size=80),
    st.integers(1, 9),
    st.sets(st.integers(0, 79)),
    st.booleans(),
)
def test_host_rows_by_blocks_equal_the_whole_table(
    rows: list[tuple[int, int]], block: int, one_time: set[int], coded: bool
) -> None:
    pid = np.array([THREADS[i][0] for i, _ in rows], np.int32)
    tid = np.array([THREADS[i][1] for i, _ in rows], np.int64)
    base = np.array([c for _, c in rows], np.int8)
    startup_rows = np.array(sorted(r for r in one_time if r < base.size), np.int64)
    category = base.copy()  # the reference: the whole table copied, the one-time rows set
    category[startup_rows] = HOST_CATEGORY_PRIORITY.index(STARTUP)
    base.flags.writeable = False  # as host_categories gives it
    cols = type("Cols", (), {"pid": pid, "tid": tid})()
    if coded:  # pid and tid held as one set of thread codes (an Nsight export's): _coded_thread_codes
        codes = np.array([i for i, _ in rows], np.int8)
        pid_table = np.array([p for p, _ in THREADS], np.int32)
        tid_table = np.array([t for _, t in THREADS], np.int64)
        cols = type("Cols", (), {"pid": CodedInts(codes, pid_table), "tid": CodedInts(codes, tid_table)})()
    expected = _reference(pid, tid, category)
    original = attribution.HOST_BLOCK
    attribution.HOST_BLOCK = block
    try:
        keep, cat = attribution._kept_rows(base, startup_rows, np.int32)
        codes, first = attribution._thread_codes(cols, keep)
    finally:
        attribution.HOST_BLOCK = original
    threads = pd.DataFrame({"pid": pid[keep[first]], "tid": tid[keep[first]]})
    for got, want in zip((keep, cat, codes), expected[:3], strict=True):
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
    pd.testing.assert_frame_equal(threads, expected[3])
