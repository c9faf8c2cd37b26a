"""The ops the diagnosis names in its evidence (tracelens/analyses/ops/evidence.py: launching_ops, optimizer_step,
sync_ops, gap_ops; docs/json.md diagnosis.evidence.*): hand-built traces, and a real Kineto trace against its
JSON read directly."""

from __future__ import annotations

import gzip
import json

import pytest

import tracelens
from tests.conftest import shared_traces
from tracelens.analyses.ops import gap_ops, launching_ops, optimizer_step, sync_ops
from tracelens.trace import Trace


def _host(kind: str, name: str, start: int, end: int, tid: int = 1, **extra) -> dict:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def _launched(name: str, at: int, corr: int, start: int, end: int) -> list[dict]:
    """A launch call at ``at`` and its kernel [start, end) on device 0."""
    return [
        _host("runtime", "cudaLaunchKernel", at, at + 5, correlation_id=corr),
        {
            "kind": "kernel",
            "name": name,
            "start_ns": start,
            "end_ns": end,
            "device": 0,
            "stream": 7,
            "correlation_id": corr,
        },
    ]


def _trace(foreach: bool = False) -> Trace:
    # Thread 1: aten::conv2d [0,100) launches 3 kernels; two aten::relu [100,120), [120,140) one each; the
    # optimizer step annotation [200,400) holds aten::add_ [210,300) launching 4 kernels (and, when foreach,
    # an aten::_foreach_add_ op); aten::item [400,500) runs a blocking cudaStreamSynchronize [450,490).
    rows = [
        _host("cpu_op", "aten::conv2d", 0, 100),
        _host("cpu_op", "aten::relu", 100, 120),
        _host("cpu_op", "aten::relu", 120, 140),
        _host("annotation", "Optimizer.step#Adam.step", 200, 400),
        _host("cpu_op", "aten::add_", 210, 300),
        _host("cpu_op", "aten::item", 400, 500),
        _host("runtime", "cudaStreamSynchronize", 450, 490),
    ]
    rows += _launched("conv_a", 10, 1, 1000, 1100) + _launched("conv_b", 20, 2, 1100, 1200)
    rows += _launched("conv_c", 30, 3, 1200, 1300) + _launched("relu", 105, 4, 1300, 1310)
    rows += _launched("relu", 125, 5, 1310, 1320)
    # The optimizer's kernels run after an idle gap [1320, 5000): relu before it, add_ after it.
    for i in range(4):
        rows += _launched("add", 220 + 10 * i, 10 + i, 5000 + 10 * i, 5010 + 10 * i)
    if foreach:
        rows.append(_host("cpu_op", "aten::_foreach_add_", 350, 360))
    return Trace.from_rows(rows)


def test_launching_ops_by_kernel_count():
    assert launching_ops(_trace()) == [
        {"name": "aten::add_", "instances": 1, "kernels": 4, "kernels_per_instance": 4.0, "kernel_ns": 40},
        {"name": "aten::conv2d", "instances": 1, "kernels": 3, "kernels_per_instance": 3.0, "kernel_ns": 300},
        {"name": "aten::relu", "instances": 2, "kernels": 2, "kernels_per_instance": 1.0, "kernel_ns": 20},
    ]


def test_optimizer_step_kernels_and_foreach():
    assert optimizer_step(_trace()) == {
        "steps": 1,
        "kernels": 4,
        "kernel_share": 4 / 9,
        "foreach_or_fused": False,
    }
    assert optimizer_step(_trace(foreach=True))["foreach_or_fused"] is True
    assert optimizer_step(Trace.from_rows([_host("cpu_op", "aten::mm", 0, 10)])) is None


def test_sync_ops_name_the_op_around_the_blocking_call():
    assert sync_ops(_trace()) == [{"name": "aten::item", "calls": 1, "wait_ns": 40}]


def test_gap_ops_name_the_ops_around_the_longest_gap():
    gaps = gap_ops(_trace())
    assert gaps[0] == {
        "device": 0,
        "start_ns": 1320 - 0,
        "duration_ns": 5000 - 1320,
        "op_before": "aten::relu",
        "op_after": "aten::add_",
    }
    assert all(g["duration_ns"] <= gaps[0]["duration_ns"] for g in gaps)


@pytest.mark.shared
def test_unfused_optimizer_of_the_2021_trace():
    paths = shared_traces("pytorch", "v100_resnet50_2021_oldformat.json.gz")
    if not paths:
        pytest.skip("../shared/traces/pytorch not present")
    events = [
        e for e in json.loads(gzip.decompress(paths[0].read_bytes()))["traceEvents"] if e.get("ph") == "X"
    ]
    steps = [
        (e["pid"], e["tid"], e["ts"], e["ts"] + e["dur"])
        for e in events
        if e["name"].startswith("Optimizer.step#")
    ]
    launches = {}
    for e in events:
        if e.get("cat") == "Runtime" and (e.get("args") or {}).get("correlation") is not None:
            launches.setdefault(e["args"]["correlation"], (e["pid"], e["tid"], e["ts"]))
    kernels = [
        launches.get((e.get("args") or {}).get("correlation")) for e in events if e.get("cat") == "Kernel"
    ]
    launched = [k for k in kernels if k is not None]
    inside = sum(any(p == k[0] and t == k[1] and s <= k[2] < x for p, t, s, x in steps) for k in launched)
    step = optimizer_step(tracelens.load(paths[0]))
    assert step == {
        "steps": len(steps),
        "kernels": inside,
        "kernel_share": pytest.approx(inside / len(launched)),
        "foreach_or_fused": False,
    }
    assert inside > 1000  # SGD without foreach: hundreds of kernels per step
