"""kept_runs.kept_thread_runs (the host rows, their categories and their runs of one thread in one compiled pass over
the event rows) and attribution._run_thread_codes (the thread codes from those runs) equal the whole-table numpy build
(test_host_rows_lean's reference): generated rows of several processes and threads (a tid past 32 bits sharing its
thread key with its low 32 bits, -1), rows without a category, one-time rows (startup, with or without a category of
their own), pid and tid of 4 or 8 bytes, int32 or int64 rows; threads changing at most rows (no runs reported: the
caller hashes them); columns the pass does not read (thread codes, a broadcast pid) declined; no rows at all."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_host_rows_lean import THREADS, _reference
from tracelens.analyses import attribution, kept_runs
from tracelens.analyses.coded import CodedInts
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY, STARTUP

pytestmark = pytest.mark.skipif(kept_runs._compiled is None, reason="compiled pass not built")

STARTUP_CODE = HOST_CATEGORY_PRIORITY.index(STARTUP)


def _check(
    pid: np.ndarray, tid: np.ndarray, base: np.ndarray, startup_rows: np.ndarray, row_type: type
) -> None:
    category = base.copy()
    category[startup_rows] = STARTUP_CODE
    keep, cat, codes, threads = _reference(pid, tid, category)
    base.flags.writeable = False  # as host_categories gives it
    got = kept_runs.kept_thread_runs(base, startup_rows, STARTUP_CODE, pid, tid, row_type)
    assert got is not None
    rows, categories, runs = got
    assert rows.dtype == row_type and rows.tolist() == keep.tolist()
    assert categories.dtype == np.int8 and categories.tolist() == cat.tolist()
    p, t = pid[keep], tid[keep]
    changes = np.flatnonzero((p[1:] != p[:-1]) | (t[1:] != t[:-1])) + 1
    want_runs = np.concatenate([[0], changes]) if keep.size else np.zeros(0, np.int64)
    if want_runs.size > keep.size // kept_runs.RUNS_PER_ROWS + 1:
        assert runs is None
        return
    assert runs is not None and runs.dtype == np.int64 and runs.tolist() == want_runs.tolist()
    cols = type("Cols", (), {"pid": pid, "tid": tid})()
    got_codes, first = attribution._run_thread_codes(cols, rows, runs)
    assert got_codes.dtype == codes.dtype and got_codes.tolist() == codes.tolist()
    pd.testing.assert_frame_equal(pd.DataFrame({"pid": pid[rows[first]], "tid": tid[rows[first]]}), threads)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, len(THREADS) - 1), st.integers(1, 12), st.integers(-1, 4)), max_size=30
    ),
    st.sets(st.integers(0, 200)),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from([np.int32, np.int64]),
    st.sampled_from([np.int32, np.int64]),
)
def test_equals_the_numpy_build(
    runs: list, one_time: set[int], pid_type: type, tid_type: type, row_type: type
) -> None:
    counts = np.array([n for _, n, _ in runs], np.int64)
    pid = np.repeat(np.array([THREADS[i][0] for i, _, _ in runs], pid_type), counts)
    tid_values = [THREADS[i][1] for i, _, _ in runs]
    if tid_type == np.int32:  # (the tid past 32 bits as its low half: a tid column of 4 bytes cannot hold it)
        tid_values = [t & 0x7FFFFFFF if t >= 0 else t for t in tid_values]
    tid = np.repeat(np.array(tid_values, tid_type), counts)
    rng = np.random.default_rng(len(runs) + sum(one_time))
    base = np.repeat(np.array([c for _, _, c in runs], np.int8), counts)
    base[rng.random(base.size) < 0.2] = -1  # rows without a category inside the runs
    startup_rows = np.array(sorted(r for r in one_time if r < base.size), np.int64)
    _check(pid, tid, base, startup_rows, row_type)


def test_edges() -> None:
    none = np.zeros(0, np.int64)
    _check(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int8), none, np.int32)  # no rows
    _check(np.ones(5, np.int32), np.ones(5, np.int64), np.full(5, -1, np.int8), none, np.int32)  # none kept
    _check(
        np.ones(5, np.int32), np.ones(5, np.int64), np.full(5, -1, np.int8), np.array([2]), np.int32
    )  # startup
    _check(np.ones(1, np.int32), np.full(1, 7, np.int64), np.zeros(1, np.int8), none, np.int64)  # one row
    alternating = np.arange(40, dtype=np.int64) % 2  # a thread change at every row: no runs reported
    _check(np.ones(40, np.int32), alternating, np.full(40, 3, np.int8), none, np.int32)


def test_declines_columns_it_does_not_read() -> None:
    base = np.zeros(4, np.int8)
    none = np.zeros(0, np.int64)
    tid = np.arange(4, dtype=np.int64)
    coded = CodedInts(np.zeros(4, np.int8), np.array([1], np.int32))
    assert kept_runs.kept_thread_runs(base, none, STARTUP_CODE, coded, tid, np.int32) is None
    broadcast = np.broadcast_to(np.int32(-1), (4,))
    assert kept_runs.kept_thread_runs(base, none, STARTUP_CODE, broadcast, tid, np.int32) is None
    assert kept_runs.kept_thread_runs(base, none, STARTUP_CODE, tid, tid.astype(np.int16), np.int32) is None
