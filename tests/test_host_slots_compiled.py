"""The host block by the compiled pass (``_merge_search.host_slots``) equals the numpy chunks' (each row slotted,
counted and summed per chunk, threads from run heads), on fixtures and on random tables: every kind (GPU ones
left out), null names, pids and tids, negative durations, runs of threads, and the pass's heads too few for the
runs (the threads then found in numpy)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import host
from tracelens.trace import ALL_KINDS, Trace

pytestmark = pytest.mark.skipif(
    not hasattr(host._compiled, "host_slots"), reason="the compiled pass is not built"
)

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/jax_mlp_cuda.xplane.pb",
    "nsys/handmade_nsys2026.sqlite",
]


def _both(trace: Trace, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    compiled = host.host_summary(trace)
    with monkeypatch.context() as patched:
        patched.setattr(host, "_compiled", None)
        reference = host.host_summary(trace)
    return compiled, reference


@pytest.mark.parametrize("name", TRACES)
def test_fixtures_equal_the_numpy_chunks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_path(name)
    compiled, reference = _both(tracelens.load(path), monkeypatch)
    assert compiled == reference


_ROW = st.tuples(
    st.sampled_from(ALL_KINDS),
    st.one_of(
        st.none(), st.sampled_from(["a", "b", "aten::mm, op_id = 5", "ProfilerStep#1", "ProfilerStep#2"])
    ),
    st.integers(0, 10**6),
    st.integers(-5, 10**5),
    st.one_of(st.none(), st.integers(0, 2)),
    st.one_of(st.none(), st.integers(0, 3), st.just(2**33)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_ROW, max_size=60), st.booleans())
def test_random_tables_equal_the_numpy_chunks(rows: list[tuple[Any, ...]], few_heads: bool) -> None:
    trace = Trace.from_rows(
        [
            {
                "kind": kind,
                "name": name,
                "start_ns": start,
                "end_ns": start + duration,
                "pid": pid,
                "tid": tid,
                "device": 0 if kind in ("kernel", "memcpy", "memset") else None,
            }
            for kind, name, start, duration, pid, tid in rows
        ]
    )
    with pytest.MonkeyPatch.context() as patched:
        if few_heads:  # no room for the runs' first rows: the threads found in numpy
            patched.setattr(host, "MIN_HEADS", 0)
            patched.setattr(host, "THREAD_RUNS_SHARE", 0.0)
        compiled, reference = _both(trace, patched)
    assert compiled == reference
