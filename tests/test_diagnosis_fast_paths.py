"""The diagnosis's fast paths give what the reference computations give (speed lives in benchmarks/).

- unexplained_idle._reaching_rows: on rows in start order, the union's ends placed among the rows' starts (one
  binary search per union interval) vs a binary search per host row (the path for rows out of start order);
- completeness.judge: GPU ops' ids and matches read from launch_pairs vs its own read and search.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import FIXTURES
from tracelens import intervals
from tracelens.analyses import completeness
from tracelens.analyses.columns import Table
from tracelens.analyses.diagnosis import unexplained_idle


def reference_reaching(start: np.ndarray, end: np.ndarray, host: np.ndarray, us: np.ndarray, ue: np.ndarray):
    next_start = np.append(us, np.iinfo(np.int64).max)
    return host[next_start[np.searchsorted(ue, start[host], side="right")] < end[host]]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12), st.booleans()), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 10)), max_size=8),
    st.integers(1, 7),
)
def test_reaching_rows_in_start_order_equal_a_search_per_row(rows, union, chunk) -> None:
    start = np.sort(np.array([r[0] for r in rows], np.int64))
    end = start + np.array([r[1] for r in rows], np.int64)
    host_mask = np.array([r[2] for r in rows], bool)
    host = np.flatnonzero(host_mask)
    us, ue = intervals.merge(
        np.array([u[0] for u in union], np.int64), np.array([u[0] + u[1] for u in union], np.int64)
    )
    cols = SimpleNamespace(start=start, end=end)
    want = reference_reaching(start, end, host, us, ue)
    old = unexplained_idle.HOST_CHUNK
    unexplained_idle.HOST_CHUNK = chunk  # several chunks: each counts the union intervals ended before it
    try:
        got = list(unexplained_idle._reaching_rows(cols, host_mask, us, ue))
        # rows out of start order take the per-row search: the same rows once sorted back
        order = np.arange(start.size)[::-1]
        shuffled = SimpleNamespace(start=start[order], end=end[order])
        back = list(unexplained_idle._reaching_rows(shuffled, host_mask[order], us, ue))
    finally:
        unexplained_idle.HOST_CHUNK = old
    none = [np.zeros(0, np.int64)]
    assert np.concatenate(got + none).tolist() == want.tolist()
    assert sorted(order[np.concatenate(back + none)].tolist()) == want.tolist()


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in (FIXTURES / "completeness").glob("*.json"))
    + ["../gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz", "../nsys/handmade_nsys2026.sqlite"],
)
def test_judge_from_launch_pairs_equals_its_own_join(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # completeness.judge: the GPU ops' ids and their match to an API call's id read from launch_pairs (its rows are
    # the GPU ops where every one has a device) vs read and searched again (the path for ops without a device)
    trace = tracelens.load(FIXTURES / "completeness" / name)
    joined = completeness.judge(trace)
    # the unmatched launch calls counted from the matched ops' calls (each call's id its own) vs searched by id
    with monkeypatch.context() as patch:
        patch.setattr(completeness, "call_ids_unique", lambda _trace: False)
        assert completeness.judge(trace) == joined
    monkeypatch.setattr(completeness, "launch_pairs", lambda _trace: Table({"matched": np.zeros(0, bool)}))
    assert completeness.judge(trace) == joined


def test_unmatched_launch_calls_from_the_matched_calls_on_a_handmade_trace() -> None:
    """The judge's count of launch calls whose id no GPU op carries, from launch_pairs where every call's id is
    its own, against a direct count on the event table (an export where some launches lost their GPU op)."""
    from tracelens.analyses.columns import api_calls, event_columns
    from tracelens.analyses.launch import call_ids_unique
    from tracelens.trace import GPU_ACTIVITY_KINDS

    trace = tracelens.load(FIXTURES / "completeness" / "launches_without_gpu.json")
    cols = event_columns(trace)
    api, ids = api_calls(trace)
    launch = [completeness._is_launch_call(str(cols.names[c])) for c in cols.name[api]]
    gpu_ids = set(cols.at("correlation_id", np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS))).tolist())
    want = sum(
        1
        for i, is_launch in zip(ids.tolist(), launch, strict=True)
        if is_launch and i >= 0 and i not in gpu_ids
    )
    assert call_ids_unique(trace) and want > 0
    problems = {p["kind"]: p for p in completeness.judge(trace)["problems"]}
    assert problems["launches_without_gpu_activity"]["evidence"]["unmatched_launch_calls"] == want


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-2, 25), st.booleans()), max_size=60),
    st.integers(1, 20),
    st.integers(1, 7),
    st.sampled_from([np.int32, np.int64]),
)
def test_process_count_equals_distinct_pids(rows, few, chunk, dtype) -> None:
    """unexplained_idle._process_count (candidates from sampled rows confirmed by a pass each, up to
    FEW_PROCESSES; hashing beyond, or where the sample missed one) against the distinct pids >= 0 of the masked
    rows."""
    pid = np.array([p for p, _ in rows], dtype)
    mask = np.array([m for _, m in rows], bool)
    want = len({int(p) for p in pid[mask] if p >= 0})
    saved = unexplained_idle.FEW_PROCESSES, unexplained_idle.HOST_CHUNK, unexplained_idle.PID_SAMPLE
    unexplained_idle.FEW_PROCESSES, unexplained_idle.HOST_CHUNK = few, chunk
    try:
        for sample in (1, 4, 1 << 16):  # candidates from one row, a few, every row
            unexplained_idle.PID_SAMPLE = sample
            assert unexplained_idle._process_count(pid, mask) == want
    finally:
        unexplained_idle.FEW_PROCESSES, unexplained_idle.HOST_CHUNK, unexplained_idle.PID_SAMPLE = saved


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-1, 12), max_size=40), st.integers(1, 7), st.sets(st.integers(0, 12), min_size=1))
def test_has_kind_equals_of_kind_any(kinds, chunk, wanted) -> None:
    """unexplained_idle._has_kind (chunks, stopping at the first found) against EventColumns.of_kind(...).any()."""
    from tracelens.analyses.columns import EventColumns
    from tracelens.trace import ALL_KINDS

    kind = np.array(kinds, np.int8)
    empty = np.zeros(kind.size, np.int64)
    cols = EventColumns(kind, empty, np.array([]), empty, empty, empty, empty, empty, empty)
    names = [ALL_KINDS[k] for k in sorted(wanted) if k < len(ALL_KINDS)] or [ALL_KINDS[0]]
    saved = unexplained_idle.HOST_CHUNK
    unexplained_idle.HOST_CHUNK = chunk
    try:
        assert unexplained_idle._has_kind(cols, *names) == bool(cols.of_kind(*names).any())
    finally:
        unexplained_idle.HOST_CHUNK = saved
