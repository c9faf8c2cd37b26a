"""analyses/thread_codes.launched_threads (the compiled pass giving each launching thread once) against a row-by-row
reference (the distinct (pid, tid) pairs at the ops' rows in order of first appearance) on hypothesis-generated ops
(none, one, every op masked, runs of one thread, thread ids past 2^32, negative ids, unmasked rows out of range, int32
and int64 rows, pids and tids), its declines (too many threads, other arrays), and attribution.launching_threads with
the pass against without it (the threads of every op) on a Kineto fixture."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import FIXTURES
from tracelens.analyses import attribution, thread_codes
from tracelens.analyses.columns import device_busy, thread_key
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.thread_codes import launched_threads

pytestmark = pytest.mark.skipif(
    thread_codes._compiled is None or not hasattr(thread_codes._compiled, "launch_threads"),
    reason="the compiled pass is not built",
)


def reference(ops: np.ndarray, rows: np.ndarray, pid: np.ndarray, tid: np.ndarray) -> list[tuple[int, int]]:
    seen: dict[tuple[int, int], None] = {}
    for i in np.flatnonzero(ops):
        seen.setdefault((int(pid[rows[i]]), int(tid[rows[i]])), None)
    return list(seen)


@st.composite
def cases(draw: st.DrawFn):
    size = draw(st.integers(1, 30))
    n = draw(st.integers(0, 60))
    pids = draw(st.lists(st.sampled_from([1, 2, -1, 7]), min_size=size, max_size=size))
    tids = draw(st.lists(st.sampled_from([5, 6, -1, 2**40, 2**40 + 5]), min_size=size, max_size=size))
    pid = np.array(pids, draw(st.sampled_from([np.int32, np.int64])))
    tid = np.array(tids, np.int64)
    if draw(st.booleans()) and (np.abs(tid) < 2**31).all():
        tid = tid.astype(np.int32)
    ops = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    rows = np.array(draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n)), np.int64)
    if draw(st.booleans()):
        rows.sort()  # runs of one thread
    rows[~ops] = draw(st.sampled_from([0, -1, size + 3]))  # never read
    return ops, rows.astype(draw(st.sampled_from([np.int32, np.int64]))), pid, tid


@settings(max_examples=300, deadline=None, database=None)
@given(cases())
def test_launched_threads_equal_the_reference(case) -> None:
    ops, rows, pid, tid = case
    got = launched_threads(ops, rows, pid, tid)
    assert got is not None
    assert got[0].dtype == pid.dtype and got[1].dtype == tid.dtype
    assert list(zip(got[0].tolist(), got[1].tolist(), strict=True)) == reference(ops, rows, pid, tid)


def test_declines_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    pid = np.arange(10, dtype=np.int32)
    tid = np.arange(10, dtype=np.int64)
    ops, rows = np.ones(10, bool), np.arange(10, dtype=np.int32)
    monkeypatch.setattr(thread_codes, "MANY_THREADS", 4)
    assert launched_threads(ops, rows, pid, tid) is None  # 10 threads, room for 4
    monkeypatch.setattr(thread_codes, "MANY_THREADS", 10)
    got = launched_threads(ops, rows, pid, tid)
    assert got is not None and got[0].tolist() == list(range(10))
    assert launched_threads(ops, rows, pid.astype(np.uint32), tid) is None  # not a signed integer array
    with pytest.raises(IndexError):  # a masked op's row outside the columns
        launched_threads(ops, rows + 5, pid, tid)


def test_launching_threads_with_the_pass_equal_without(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz")
    pairs = launch_pairs(trace)
    for device in device_busy(trace):
        ops = (pairs["device"] == device) & pairs["matched"]
        got = attribution.launching_threads(trace, ops)
        with monkeypatch.context() as patch:
            patch.setattr(thread_codes, "_compiled", None)
            every = attribution.launching_threads(trace, ops)
        assert got[0].size <= every[0].size
        assert sorted(set(thread_key(*got).tolist())) == sorted(set(thread_key(*every).tolist()))
