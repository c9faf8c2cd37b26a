"""The what-if section's replays as tasks on two threads (analyses/whatif.py: the critical path, each remedy and
the model replay run by schedule.run_beside: on a second thread, or on analyze's other worker once idle) give the block that one task at a time gives, in the same order
(the remedies' order ties are broken by REMEDIES' order, whichever thread finished first), and the graph size
limit above which the tasks run one at a time holds. The Context's values computed on first use (step_of, the
recorded outcome) are what the eager computation gave."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens import intervals
from tracelens.analyses import whatif as whatif_module
from tracelens.analyses.schedule import threads_limit
from tracelens.replay.remedies import Context

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/pytorch_pageable-copies_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


def _block(trace: tracelens.Trace, threads: int) -> str:
    with threads_limit(threads):
        return json.dumps(whatif_module.whatif(trace), sort_keys=False)


@pytest.mark.parametrize("name", TRACES)
def test_two_threads_give_the_block_of_one(name: str) -> None:
    trace = tracelens.load(str(FIXTURES / name))
    one = _block(trace, 1)
    assert (
        json.loads(one)["reason"] is None and json.loads(one)["remedies"]
    )  # a replay with remedies to order
    assert _block(trace, 2) == one


def test_large_graphs_run_their_tasks_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(str(FIXTURES / TRACES[1]))
    seen: list[str] = []
    one_at_a_time, beside = whatif_module.run_sections, whatif_module.run_beside

    def recording_one(order: list[str], compute: object, *, threads: int) -> dict[str, object]:
        seen.append(f"threads={threads}")
        return one_at_a_time(order, compute, threads=threads)  # type: ignore[arg-type]

    def recording_beside(order: list[str], compute: object) -> dict[str, object]:
        seen.append("beside")
        return beside(order, compute)  # type: ignore[arg-type]

    monkeypatch.setattr(whatif_module, "run_sections", recording_one)
    monkeypatch.setattr(whatif_module, "run_beside", recording_beside)
    with threads_limit(2):
        small = whatif_module.whatif(trace)
        monkeypatch.setattr(whatif_module, "TWO_THREADS_MAX_POINTS", 0)
        large = whatif_module.whatif(trace)
    assert seen == ["beside", "threads=1"]
    assert json.dumps(small) == json.dumps(large)


@pytest.mark.parametrize("name", TRACES)
def test_lazy_context_values_match_an_eager_computation(name: str) -> None:
    trace = tracelens.load(str(FIXTURES / name))
    ctx = Context(trace)
    g = ctx.graph
    # reference: every point searched by its own recorded time, then GPU points given their launch call's step
    expected = np.full(g.size, -1, np.int64)
    if len(ctx.windows):
        starts = ctx.windows.start
        limit = np.append(starts[1:], ctx.windows.end[-1])
        expected = intervals.running_at(starts, limit + 1, g.time)
        launched = g.op_launch_call >= 0
        at_call = expected[g.call_start[g.op_launch_call[launched]]]
        expected[g.op_start[launched]] = at_call
        expected[g.op_end[launched]] = at_call
    np.testing.assert_array_equal(ctx.step_of, expected)
    recorded = ctx.recorded
    assert recorded.span_ns == int(g.time.max() - g.time.min())
    again = ctx.outcome(times=g.time)
    assert (recorded.step_ns, recorded.step_count) == (again.step_ns, again.step_count)
