"""The host block's per-kind figures: read from the (kind, name) slots' sums (every slot counted) equal a direct
groupby of the host rows, and equal the hashed path's (many names: per-kind bincounts beside a groupby).
Speed lives in benchmarks/."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import host
from tracelens.analyses.columns import thread_key
from tracelens.trace import GPU_ACTIVITY_KINDS, GPU_ANNOTATION, GPU_SYNC

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/jax_mlp_cuda.xplane.pb",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("name", TRACES)
def test_by_kind_equals_a_groupby_of_the_host_rows(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    frame = trace.frame(np.arange(trace.num_events), ["kind", "start_ns", "end_ns"])
    rows = frame[frame["kind"].notna() & ~frame["kind"].isin([*GPU_ACTIVITY_KINDS, GPU_SYNC, GPU_ANNOTATION])]
    grouped = (
        (rows["end_ns"] - rows["start_ns"])
        .astype("int64")
        .groupby(rows["kind"].astype(str))
        .agg(["size", "sum"])
    )
    expected = [
        {"kind": kind, "count": int(r["size"]), "total_ns": int(r["sum"])}
        for kind, r in grouped.sort_index().iterrows()
    ]
    dense = host.host_summary(trace)
    assert dense["by_kind"] == expected
    assert len(expected) >= 2, "the trace has host rows of several kinds"
    monkeypatch.setattr(host, "_count_every_slot", lambda slots, rows: False)
    assert host.host_summary(trace) == dense


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, 3), st.integers(-1, 40), st.sampled_from([0, 10**6, 2**31 - 2])),
        max_size=40,
    ),
    st.sampled_from([np.int32, np.int64]),
)
def test_chunk_threads_equal_the_distinct_thread_keys(
    rows: list[tuple[int, int, int]], tid_type: type
) -> None:
    """The distinct thread keys of a chunk's rows (one process: from the thread ids alone) equal the distinct thread
    keys of its rows with both ids known."""
    pid = np.array([p for p, _, _ in rows], np.int32)
    tid = np.array([t + big if t >= 0 else t for _, t, big in rows], np.int64).astype(tid_type)
    known = (pid >= 0) & (tid >= 0)
    expected = set(np.unique(thread_key(pid[known], tid[known])).tolist())
    got = host._chunk_threads(pid, tid)
    assert got.size == len(expected) and set(got.tolist()) == expected
