"""The diagnosis's work found ahead (diagnosis.prepare, run by analyze on a core the sections leave idle) and the
judge's and unexplained_idle's cheaper paths give what the reference computations give (speed lives in
benchmarks/):

- derived.starts_ascending (chunked) vs one comparison over every row;
- completeness.judge: launch calls after the GPU side's end by a binary search in rows in start order vs their
  starts compared; the GPU window from device_busy vs the GPU rows' own starts and ends;
- unexplained_idle._summed_overlap (each device's union read on its own) vs intervals.Coverage;
- diagnose after prepare (values memoized ahead) vs diagnose alone; the memoized values handed out as copies.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import FIXTURES
from tracelens import intervals
from tracelens.analyses import completeness, derived
from tracelens.analyses.columns import Table, event_columns
from tracelens.analyses.diagnosis import diagnose, prepare, unexplained_idle
from tracelens.analyses.diagnosis.cause import top_host_names
from tracelens.analyses.names import CPU, LAUNCH
from tracelens.trace import GPU_ACTIVITY_KINDS

JUDGED = sorted(p.name for p in (FIXTURES / "completeness").glob("*.json")) + [
    "../gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "../nsys/handmade_nsys2026.sqlite",
    "../nsys/handmade_nsys2022.sqlite",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=30), st.integers(1, 6))
def test_starts_ascending_equals_one_comparison(steps, chunk) -> None:
    start = np.cumsum(np.array(steps, np.int64))  # ties and steps back where a step is 0 or negative
    want = start.size < 2 or bool((start[1:] >= start[:-1]).all())
    trace = tracelens.load(FIXTURES / "kineto" / "bare_list.json")  # a key for the memo, not read
    old = derived._ORDER_CHUNK
    derived._ORDER_CHUNK = chunk  # several chunks: a step back across a chunk's edge is found
    try:
        assert derived.starts_ascending(trace, start) == want
    finally:
        derived._ORDER_CHUNK = old
        derived.forget(trace, ["starts_ascending"])


@pytest.mark.parametrize("name", JUDGED)
def test_judge_paths_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(FIXTURES / "completeness" / name)
    judged = completeness.judge(trace)
    # the launch calls after the last GPU op counted by their starts (rows out of start order)
    with monkeypatch.context() as patch:
        patch.setattr(completeness, "starts_ascending", lambda _trace, _start: False)
        assert completeness.judge(trace) == judged
    # the GPU window from the GPU rows (not every GPU op joined: launch_pairs' rows are not the GPU ops)
    with monkeypatch.context() as patch:
        patch.setattr(completeness, "launch_pairs", lambda _trace: Table({"matched": np.zeros(0, bool)}))
        assert completeness.judge(trace) == judged


@pytest.mark.parametrize("name", JUDGED)
def test_judge_window_and_late_launches_against_the_event_table(name: str) -> None:
    """The GPU window and the launch calls starting at or after its end, counted directly on the event table."""
    trace = tracelens.load(FIXTURES / "completeness" / name)
    cols = event_columns(trace)
    gpu = np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS))
    if gpu.size == 0:
        return
    lo, hi = int(cols.start[gpu].min()), int(cols.end[gpu].max())
    assert completeness._gpu_window(
        trace, cols, None if gpu.size == np.count_nonzero(cols.device[gpu] >= 0) else gpu
    ) == (lo, hi)
    api_mask = cols.of_kind("runtime", "driver")
    api = np.flatnonzero(api_mask)
    is_launch = np.array([completeness._is_launch_call(str(cols.names[c])) for c in cols.name[api]], bool)
    for time in (hi, lo, hi + 1, int(cols.start.min()) - 1):
        want = int(np.count_nonzero(cols.start[api[is_launch]] >= time))
        assert completeness._launches_from(trace, cols, api_mask, is_launch, time) == want


def _unions(draw_lists: list[list[tuple[int, int]]]) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for spans in draw_lists:
        starts = np.array([s for s, _ in spans], np.int64)
        ends = starts + np.array([n for _, n in spans], np.int64)
        out.append(intervals.merge(starts, ends))
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 10)), max_size=8), max_size=3),
    st.lists(st.tuples(st.integers(0, 70), st.integers(0, 15)), max_size=20),
)
def test_summed_overlap_equals_coverage(devices, rows) -> None:
    unions = _unions(devices)
    starts = np.sort(np.array([s for s, _ in rows], np.int64))
    ends = starts + np.array([n for _, n in rows], np.int64)
    every_start = np.concatenate([s for s, _ in unions]) if unions else np.zeros(0, np.int64)
    every_end = np.concatenate([e for _, e in unions]) if unions else np.zeros(0, np.int64)
    want = intervals.Coverage(every_start, every_end).overlap(starts, ends)
    got = unexplained_idle._summed_overlap(starts, ends, unexplained_idle._covered_tables(unions))
    assert got.tolist() == want.tolist()
    # an interval ending before it starts: negated, as Coverage gives it
    back = unexplained_idle._summed_overlap(ends, starts, unexplained_idle._covered_tables(unions))
    assert back.tolist() == intervals.Coverage(every_start, every_end).overlap(ends, starts).tolist()


@pytest.mark.parametrize(
    "path",
    [
        FIXTURES / "gpu" / "pytorch_sync-every-step_cuda.pt.trace.json.gz",
        FIXTURES / "nsys" / "handmade_nsys2026.sqlite",
        FIXTURES / "kineto" / "bare_list.json",
        FIXTURES / "pytorch_cpu_train.pt.trace.json.gz",
    ],
    ids=lambda p: p.name,
)
def test_diagnose_after_prepare_equals_diagnose_alone(path) -> None:
    alone = tracelens.analyze(tracelens.load(path), threads=1)
    trace = tracelens.load(path)
    done = tracelens.analyze(
        trace,
        sections=[k for k in alone if k not in ("schema_version", "source", "summary", "diagnosis")],
        threads=1,
    )
    done = {k: v for k, v in done.items() if k not in ("schema_version", "source", "summary")}
    prepare(trace)
    assert diagnose(trace, done) == alone["diagnosis"]


def test_memoized_values_are_handed_out_as_copies() -> None:
    trace = tracelens.load(FIXTURES / "nsys" / "handmade_nsys2026.sqlite")
    first = completeness.judged(trace)
    kept = copy.deepcopy(first)
    first["problems"].append({"kind": "changed"})
    assert completeness.judged(trace) == kept == completeness.judge(trace)
    for category in (CPU, LAUNCH):
        names = top_host_names(trace, category)
        kept_names = copy.deepcopy(names)
        for entry in names:
            entry["count"] = -1
        assert top_host_names(trace, category) == kept_names
