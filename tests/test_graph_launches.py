"""analyses/graph_launches.graph_launches with its dictionary precheck (no name holding "GraphLaunch": no graph
launch, the API calls not read) against the calls' names tested one by one (the precheck off), and both against a
reference from the definition (``names.is_graph_launch`` of each API call's and each matched op's launch name), on
hypothesis-generated traces with and without graph launches (cudaGraphLaunch, cuGraphLaunch suffixed, names that
hold the word but are no graph launch)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import graph_launches as module
from tracelens.analyses.columns import event_columns
from tracelens.analyses.graph_launches import graph_launches
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.names import is_graph_launch
from tracelens.trace import ALL_KINDS, DRIVER, RUNTIME, Trace

NAMES = [
    "cudaLaunchKernel",
    "cudaGraphLaunch",
    "cuGraphLaunch_ptsz",
    "cuGraphLaunch (CudaGraph:12)",
    "myGraphLaunchHelper",
    "k0",
    "cudaMemcpyAsync",
]


@st.composite
def rows(draw: st.DrawFn) -> list[dict]:
    out: list[dict] = []
    for i in range(draw(st.integers(0, 25))):
        t = i * 100
        if draw(st.booleans()):
            out.append({"kind": "kernel", "name": "k0", "start_ns": t + 50, "end_ns": t + 60, "device": 0,
                        "stream": 7, "pid": 1, "correlation_id": i})  # fmt: skip
        if draw(st.booleans()):
            out.append({"kind": draw(st.sampled_from(["runtime", "driver", "cpu_op"])),
                        "name": draw(st.sampled_from(NAMES)), "start_ns": t, "end_ns": t + 40, "pid": 1, "tid": 7,
                        "correlation_id": i})  # fmt: skip
    out.sort(key=lambda r: r["start_ns"])
    return out


def reference(trace: Trace) -> tuple[int, np.ndarray]:
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    api = (cols.kind == ALL_KINDS.index(RUNTIME)) | (cols.kind == ALL_KINDS.index(DRIVER))
    graph = np.array([c >= 0 and is_graph_launch(str(cols.names[c])) for c in cols.name], bool)
    calls = int((api & graph).sum())
    names = pairs["launch_name"]
    launched = np.array([c >= 0 and is_graph_launch(str(cols.names[c])) for c in names], bool)
    return calls, pairs["matched"] & launched


@settings(max_examples=150, deadline=None, database=None)
@given(rows())
def test_graph_launches_equal_the_reference(events: list[dict]) -> None:
    trace = Trace.from_rows(events)
    want_calls, want_ops = reference(trace)
    for few in (module.FEW_NAMES, -1):  # with the precheck, and without (every call's name tested)
        saved = module.FEW_NAMES
        module.FEW_NAMES = few
        try:
            calls, ops = graph_launches(event_columns(trace), launch_pairs(trace))
        finally:
            module.FEW_NAMES = saved
        assert calls == want_calls
        assert ops.dtype == bool and np.array_equal(ops, want_ops)


def test_no_word_no_read(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = Trace.from_rows(
        [{"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 0, "end_ns": 5, "pid": 1, "tid": 7}]
    )
    cols, pairs = event_columns(trace), launch_pairs(trace)
    monkeypatch.setattr(type(cols), "of_kind", lambda *a: pytest.fail("the API calls read"))
    calls, ops = graph_launches(cols, pairs)
    assert calls == 0 and ops.size == len(pairs) == 0


@pytest.mark.parametrize("name", ["cuGraphLaunch (CudaGraph:12)", "cudaGraphLaunch", "cuGraphLaunch_v10000"])
def test_xla_graph_launch_name_is_a_graph_launch(name: str) -> None:
    """XLA's profiler names a graph launch "cuGraphLaunch (CudaGraph:12)" (fixtures/gpu/jax_mlp_cuda.xplane.pb):
    one call, its three kernels the graph's ops."""
    from tracelens.analyses.launch import launch_stats
    from tracelens.analyses.names import is_kernel_launch

    assert is_graph_launch(name) and is_kernel_launch(name)
    assert not is_graph_launch("cuGraphCreate (CudaGraph:12)")
    events = [
        {"kind": "driver", "name": name, "start_ns": 0, "end_ns": 40, "pid": 1, "tid": 7, "correlation_id": 5}
    ]
    events += [{"kind": "kernel", "name": f"k{i}", "start_ns": 100 + 20 * i, "end_ns": 110 + 20 * i, "device": 0,
                "stream": 7, "pid": 1, "correlation_id": 5} for i in range(3)]  # fmt: skip
    graphs = launch_stats(Trace.from_rows(events))["cuda_graphs"]
    assert graphs == {"in_use": True, "graph_launch_calls": 1, "graph_ops": 3}
