"""Kernel and copy time by outermost framework op (tracelens/analyses/ops/): by hand, and on real traces
against the Kineto JSON read directly."""

from __future__ import annotations

import gzip
import json

import pytest

import tracelens
from tests.conftest import shared_params
from tracelens.analyses.ops import ops_report
from tracelens.trace import Trace


def _host(kind: str, name: str, start: int, end: int, tid: int = 1, **extra) -> dict:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def _gpu(kind: str, name: str, start: int, end: int, corr: int) -> dict:
    return {
        "kind": kind,
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "device": 0,
        "stream": 7,
        "correlation_id": corr,
    }


def test_hand_built_nested_ops(monkeypatch):
    # Thread 1 (step and annotation are not ops): aten::linear [0,100) holds aten::addmm [10,90) whose launch
    # [20,30) runs a 20 ns kernel; aten::copy_ [100,150) launches a 40 ns copy; a launch at [160,170) outside
    # any op runs a 10 ns kernel (unattributed). Thread 2 (autograd): the backward op [200,300) launches a
    # 50 ns kernel. Outermost ops: linear, copy_, AddmmBackward0 -> gpu 20, copy 40, gpu 50.
    rows = [
        _host("step", "ProfilerStep#0", 0, 400, step=0),
        _host("annotation", "## forward ##", 0, 200),
        _host("cpu_op", "aten::linear", 0, 100),
        _host("cpu_op", "aten::addmm", 10, 90),
        _host("runtime", "cudaLaunchKernel", 20, 30, correlation_id=1),
        _gpu("kernel", "gemm", 40, 60, 1),
        _host("cpu_op", "aten::copy_", 100, 150),
        _host("runtime", "cudaMemcpyAsync", 110, 120, correlation_id=2),
        _gpu("memcpy", "Memcpy HtoD", 130, 170, 2),
        _host("runtime", "cudaLaunchKernel", 160, 170, correlation_id=4),
        _gpu("kernel", "stray", 180, 190, 4),
        _host("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 200, 300, tid=2),
        _host("runtime", "cudaLaunchKernel", 210, 220, tid=2, correlation_id=3),
        _gpu("kernel", "gemm_bw", 230, 280, 3),
    ]
    report = ops_report(Trace.from_rows(rows))
    assert [(r["name"], r["count"], r["gpu_ns"], r["copy_ns"], r["cpu_ns"]) for r in report["by_name"]] == [
        ("autograd::engine::evaluate_function: AddmmBackward0", 1, 50, 0, 100),
        ("aten::linear", 1, 20, 0, 100),
        ("aten::copy_", 1, 0, 40, 50),
    ]
    assert (report["op_count"], report["names"], report["unattributed_count"]) == (3, 3, 1)
    assert (report["kernel_ns"], report["attributed_kernel_ns"]) == (80, 70)
    assert (report["copy_ns"], report["attributed_copy_ns"]) == (40, 40)
    assert all(r["flops"] is None for r in report["by_name"])
    # A span too long for the packed (thread, time) key: the ranks path gives the same attribution.
    from tracelens.analyses import columns

    monkeypatch.setattr(columns, "PACKED_KEY_LIMIT", 1)
    assert ops_report(Trace.from_rows(rows)) == report


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_kineto_kernels_launched_inside_ops_are_attributed(path):
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]
    ops: dict[tuple, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") in ("cpu_op", "Operator") and not str(e["name"]).startswith("ProfilerStep#"):
            ops.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    launches = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "Runtime", "cuda_driver"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None and corr not in launches:
                launches[corr] = (e["pid"], e["tid"], e["ts"])
    kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel")]
    inside = 0.0
    for k in kernels:
        launch = launches.get((k.get("args") or {}).get("correlation"))
        if launch and any(s <= launch[2] < t for s, t in ops.get(launch[:2], [])):
            inside += k["dur"]
    report = ops_report(tracelens.load(path))
    # Every kernel whose launch lies inside an op is attributed, and the attributed time adds up (µs -> ns).
    assert report["attributed_kernel_ns"] == pytest.approx(inside * 1000, rel=1e-6, abs=len(kernels))
    assert sum(r["gpu_ns"] for r in report["by_name"]) <= report["attributed_kernel_ns"]
    if report["names"] <= len(report["by_name"]):  # all names listed: the table sums to the attributed time
        assert sum(r["gpu_ns"] for r in report["by_name"]) == report["attributed_kernel_ns"]


def test_gpu_ops_without_launch_calls_are_unattributed():
    # Kernels without correlation ids (no launch call to join): nothing to attribute, no error.
    rows = [
        _host("cpu_op", "aten::mm", 0, 300),
        {"kind": "kernel", "name": "k", "start_ns": 0, "end_ns": 100, "device": 0, "stream": 1},
    ]
    report = ops_report(Trace.from_rows(rows))
    assert (report["unattributed_count"], report["attributed_kernel_ns"], report["kernel_ns"]) == (1, 0, 100)
    assert report["by_name"] == [
        {"name": "aten::mm", "count": 1, "gpu_ns": 0, "copy_ns": 0, "cpu_ns": 300, "flops": None}
    ]


def test_by_module_hand_built():
    # Thread 1: nn.Module Net_0 [0,1000) holds Linear_0 [100,300) and Linear_1 [400,600); a kernel launched in
    # each Linear (20 and 30 ns) and one in Net_0 outside both (10 ns, its self time); one outside every module.
    def module(name, start, end):
        return _host("python", f"nn.Module: {name}", start, end)

    rows = [
        module("Net_0", 0, 1000),
        module("Linear_0", 100, 300),
        module("Linear_1", 400, 600),
        _host("cpu_op", "aten::mm", 110, 290, input_dims="[[8,64],[64,32]]"),
        _host("runtime", "cudaLaunchKernel", 120, 130, correlation_id=1),
        _gpu("kernel", "a", 2000, 2020, 1),
        _host("runtime", "cudaLaunchKernel", 410, 420, correlation_id=2),
        _gpu("kernel", "b", 2100, 2130, 2),
        _host("runtime", "cudaLaunchKernel", 700, 710, correlation_id=3),
        _gpu("kernel", "c", 2200, 2210, 3),
        _host("runtime", "cudaLaunchKernel", 1100, 1110, correlation_id=4),
        _gpu("kernel", "d", 2300, 2340, 4),
    ]
    report = ops_report(Trace.from_rows(rows))
    assert report["by_module"] == [
        {"path": "Net_0/Linear_1", "kernels": 1, "gpu_ns": 30, "copy_ns": 0, "flops": 0.0},
        {"path": "Net_0/Linear_0", "kernels": 1, "gpu_ns": 20, "copy_ns": 0, "flops": 2.0 * 8 * 64 * 32},
        {"path": "Net_0", "kernels": 1, "gpu_ns": 10, "copy_ns": 0, "flops": 0.0},
    ]
    assert ops_report(Trace.from_rows(rows[3:]))["by_module"] is None  # no module rows


def _kernel_ns_by_innermost_around_launch(events: list[dict], around: list[dict]) -> dict[str, float]:
    """Kineto JSON, read directly: each kernel's time (ns) to the name of the innermost (latest-starting, then
    shortest) of the ``around`` events running on its launch call's thread at the call's start."""
    launches = {}
    for e in events:
        if (
            e.get("cat") in ("cuda_runtime", "cuda_driver")
            and (e.get("args") or {}).get("correlation") is not None
        ):
            launches.setdefault(e["args"]["correlation"], (e["pid"], e["tid"], e["ts"]))
    want: dict[str, float] = {}
    for k in (e for e in events if e.get("cat") == "kernel"):
        launch = launches.get((k.get("args") or {}).get("correlation"))
        holding = [
            a
            for a in around
            if launch and (a["pid"], a["tid"]) == launch[:2] and a["ts"] <= launch[2] < a["ts"] + a["dur"]
        ]
        if holding:
            name = max(holding, key=lambda a: (a["ts"], -a["dur"]))["name"]
            want[name] = want.get(name, 0.0) + k["dur"] * 1000
    return want


@pytest.mark.shared
def test_by_module_on_the_bert_trace():
    from tests.conftest import shared_traces

    paths = shared_traces("pytorch", "h100_bert_small_inference_torch2.6.json.gz")
    if not paths:
        pytest.skip("../shared/traces/pytorch not present")
    events = [
        e for e in json.loads(gzip.decompress(paths[0].read_bytes()))["traceEvents"] if e.get("ph") == "X"
    ]
    modules = [e for e in events if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: ")]
    # Each kernel to the innermost (latest-starting) module running at its launch, written out directly.
    want = {
        name[len("nn.Module: ") :]: ns
        for name, ns in _kernel_ns_by_innermost_around_launch(events, modules).items()
    }
    from tracelens.analyses.ops import by_module

    got = {r["path"].rsplit("/", 1)[-1]: r["gpu_ns"] for r in by_module(tracelens.load(paths[0]), limit=1000)}
    assert got.keys() == want.keys()
    assert all(got[m] == pytest.approx(want[m], abs=2) for m in want)


def test_innermost_op_hand_built():
    # linear [0,100) > addmm [10,90) > a helper [15,40) launching at 20; a launch at 50 is in addmm only; one at
    # 95 in linear only; the autograd thread's backward node holds mm holding the launch at 220.
    rows = [
        _host("cpu_op", "aten::linear", 0, 100),
        _host("cpu_op", "aten::addmm", 10, 90),
        _host("cpu_op", "aten::empty", 15, 40),
        _host("runtime", "cudaLaunchKernel", 20, 25, correlation_id=1),
        _gpu("kernel", "k1", 300, 310, 1),
        _host("runtime", "cudaLaunchKernel", 50, 55, correlation_id=2),
        _gpu("kernel", "k2", 310, 330, 2),
        _host("runtime", "cudaLaunchKernel", 95, 99, correlation_id=3),
        _gpu("kernel", "k3", 330, 360, 3),
        _host("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 200, 300, tid=2),
        _host("cpu_op", "aten::mm", 210, 290, tid=2),
        _host("runtime", "cudaLaunchKernel", 220, 225, tid=2, correlation_id=4),
        _gpu("kernel", "k4", 400, 440, 4),
    ]
    assert ops_report(Trace.from_rows(rows))["by_innermost"] == [
        {"name": "aten::mm", "kernels": 1, "gpu_ns": 40, "copy_ns": 0},
        {"name": "aten::linear", "kernels": 1, "gpu_ns": 30, "copy_ns": 0},
        {"name": "aten::addmm", "kernels": 1, "gpu_ns": 20, "copy_ns": 0},
        {"name": "aten::empty", "kernels": 1, "gpu_ns": 10, "copy_ns": 0},
    ]


@pytest.mark.shared
def test_innermost_op_on_the_bert_trace():
    from tests.conftest import shared_traces
    from tracelens.analyses.ops import by_innermost

    paths = shared_traces("pytorch", "h100_bert_small_inference_torch2.6.json.gz")
    if not paths:
        pytest.skip("../shared/traces/pytorch not present")
    events = [
        e for e in json.loads(gzip.decompress(paths[0].read_bytes()))["traceEvents"] if e.get("ph") == "X"
    ]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    # The innermost op: of the ops around the launch on its thread, the latest-starting (shortest on ties).
    want = _kernel_ns_by_innermost_around_launch(events, ops)
    got = {r["name"]: r["gpu_ns"] for r in by_innermost(tracelens.load(paths[0]), limit=1000) if r["kernels"]}
    assert got.keys() == want.keys() and "aten::addmm" in got
    assert all(got[n] == pytest.approx(want[n], abs=len(events)) for n in want)
