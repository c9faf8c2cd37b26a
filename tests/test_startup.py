"""One-time work rules (tracelens/analyses/startup.py) on hand-built rows; times in ms where thresholds are 1 ms."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses.columns import event_columns
from tracelens.analyses.names import is_compile_name, is_one_time_api, is_warmup_name, words
from tracelens.analyses.startup import REASONS, one_time_work
from tracelens.trace import Trace

MS = 1_000_000


def _row(kind: str, name: str, start: float, end: float, tid: int = 1, **extra) -> dict:
    return {
        "kind": kind,
        "name": name,
        "start_ns": int(start * MS),
        "end_ns": int(end * MS),
        "pid": 1,
        "tid": tid,
        **extra,
    }


def _kernel(start: float, end: float, corr: int) -> dict:
    return {
        "kind": "kernel",
        "name": "k",
        "start_ns": int(start * MS),
        "end_ns": int(end * MS),
        "device": 0,
        "stream": 7,
        "pid": 1,
        "correlation_id": corr,
    }


def flagged(rows: list[dict]) -> dict[str, str]:
    """name@start_ms -> reason for every flagged row."""
    trace = Trace.from_rows(rows)
    work = one_time_work(trace)
    cols = event_columns(trace)
    out = {}
    for row in np.flatnonzero(work.mask):
        out[f"{cols.names[cols.name[row]]}@{cols.start[row] / MS:g}"] = REASONS[work.reason[row]]
    return out


def test_names_split_into_words():
    assert words("XlaCompile") == ["xla", "compile"]
    assert (
        "warmup" in words("Warm-Up/forward") and "warmup" in words("warm_up") and "warmup" in words("WarmUp")
    )
    assert is_compile_name("compile_fx_inner (dynamo_timed)") and is_compile_name("XlaCompile")
    assert is_compile_name("triton_autotune")
    assert not is_compile_name("Torch-Compiled Region")  # every call of a compiled function
    assert not is_compile_name("CompiledFunction")
    assert is_warmup_name("[param|alex_net|0|warmup|forward]") and not is_warmup_name("warmupless")
    assert (
        is_one_time_api("cuModuleLoadData") and is_one_time_api("cudnnCreate") and is_one_time_api("cuInit")
    )
    assert is_one_time_api("cublasLtCreate") and is_one_time_api("ncclCommInitRank")
    assert not is_one_time_api("cudaLaunchKernel") and not is_one_time_api("cudnnConvolutionForward")


def test_long_launch_on_an_idle_gpu_is_module_loading_but_not_on_a_busy_one():
    rows = [
        # A first kernel opens the GPU window (idle before it is outside the window, not a gap).
        _row("runtime", "cudaLaunchKernel", 0, 0.1, correlation_id=9),
        _kernel(0.5, 0.6, 9),
        # 4 ms launch while the GPU is idle: [1,5) lies in the gap [0.6,5.1) -> long_launch.
        _row("runtime", "cudaLaunchKernel", 1, 5, correlation_id=1),
        _kernel(5.1, 20, 1),
        # 5 ms launch while the GPU is busy [5.1,20): a full queue, not one-time.
        _row("runtime", "cudaLaunchKernel", 10, 15, correlation_id=2),
        _kernel(20, 21, 2),
        # 0.5 ms launch on an idle GPU: below 1 ms.
        _row("runtime", "cudaLaunchKernel", 22, 22.5, correlation_id=3),
        _kernel(22.6, 23, 3),
    ]
    assert flagged(rows) == {"cudaLaunchKernel@1": "long_launch"}


def test_first_call_against_later_calls_discounts_its_syncs():
    rows = [
        # First aten::mm: 12 ms, of which 10 ms blocked in cudaDeviceSynchronize: own time 2 ms < 10 x 0.5 ms.
        _row("cpu_op", "aten::mm", 0, 12),
        _row("runtime", "cudaDeviceSynchronize", 1, 11),
        # First aten::conv2d: 8 ms own time >= 1 ms and >= 10 x 0.5 ms -> first_call.
        _row("cpu_op", "aten::conv2d", 20, 28),
        # A name seen once has no baseline: never flagged.
        _row("cpu_op", "aten::lonely", 30, 40),
    ]
    for i in range(3):
        rows += [
            _row("cpu_op", "aten::mm", 50 + i, 50.5 + i),
            _row("cpu_op", "aten::conv2d", 60 + i, 60.5 + i),
        ]
    assert flagged(rows) == {"aten::conv2d@20": "first_call"}


def test_first_step_rows_seen_only_in_the_first_step():
    rows = []
    for i, (start, length) in enumerate(((0, 30), (30, 10), (40, 10), (50, 10), (60, 4))):
        rows.append(_row("step", f"ProfilerStep#{i}", start, start + length, step=i))
        rows.append(_row("cpu_op", "aten::mm", start + 1, start + 2))
    rows += [
        _row("cpu_op", "build_graph", 5, 25),  # only in step 0, which is 30 ms vs a 10 ms median
        _row("runtime", "cudaMalloc", 3, 3.1),  # also seen later: not first-step, but an allocation in it
        _row("runtime", "cudaMalloc", 70, 70.1),  # after the slow first step: steady state
        _row("runtime", "cudaStreamCreate", 4, 4.1),
    ]  # only in the first step: first_step is checked first
    assert flagged(rows) == {
        "build_graph@5": "first_step",
        "cudaMalloc@3": "allocation",
        "cudaStreamCreate@4": "first_step",
    }
    # The same rows with an ordinary first step (12 ms, < 1.5 x 10): nothing is one-time.
    rows[0] = _row("step", "ProfilerStep#0", 18, 30, step=0)
    rows = [r for r in rows if r["name"] not in ("build_graph", "cudaStreamCreate")]
    assert flagged(rows) == {}


def test_first_long_allocation_anywhere_and_warmup_ranges():
    rows = [
        _row("runtime", "cudaMalloc", 0, 2),  # first cudaMalloc on the thread, 2 ms: allocator growth
        _row("runtime", "cudaMalloc", 5, 7),  # a later one, inside the warm-up window (below): allocation
        _row("annotation", "warmup", 10, 20),  # a user range named warm-up
        _row(
            "cpu_op", "WarmUp/lr_schedule", 30, 31
        ),  # a TF op scope named WarmUp runs every step: not flagged
        _row("annotation", "compile_fx_inner (dynamo_timed)", 40, 45),
        _row("runtime", "cudaMalloc", 50, 50.5),  # after the last one-time row: steady state
    ]
    # Without steps the warm-up window ends with the last flagged row (45 ms): allocations before it count.
    assert flagged(rows) == {
        "cudaMalloc@0": "allocation",
        "cudaMalloc@5": "allocation",
        "warmup@10": "name",
        "compile_fx_inner (dynamo_timed)@40": "name",
    }


@pytest.mark.parametrize("name", ["cuModuleLoadData", "cudnnCreate", "ncclCommInitRank"])
def test_one_time_apis_by_name(name):
    assert flagged([_row("runtime", name, 0, 0.01)]) == {f"{name}@0": "name"}
