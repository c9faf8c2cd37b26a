"""host._host_threads (a host chunk's distinct threads from one row per run of (pid, tid, in_host)) against
_chunk_threads of the compressed host rows: interleaved threads, unknown ids, no host row, one row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import host


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 3), st.booleans()), max_size=40))
def test_host_threads_equal_the_compressed_rows(rows: list) -> None:
    pid = np.array([r[0] for r in rows], np.int32)
    tid = np.array([r[1] for r in rows], np.int64)
    in_host = np.array([r[2] for r in rows], bool)
    got = host._host_threads(pid, tid, in_host)
    expected = host._chunk_threads(np.compress(in_host, pid), np.compress(in_host, tid))
    assert sorted(got.tolist()) == sorted(expected.tolist())


def test_host_threads_of_long_runs() -> None:
    pid = np.repeat(np.array([7, 7, 8], np.int32), 50)
    tid = np.repeat(np.array([1, 2, 1], np.int64), 50)
    in_host = np.ones(150, bool)
    in_host[50:100] = False  # the second thread's rows are not host rows
    got = host._host_threads(pid, tid, in_host)
    assert sorted(got.tolist()) == sorted(host._chunk_threads(pid[in_host], tid[in_host]).tolist())
    assert got.size == 2
