"""Steps and the step-time breakdown (hand-built cases, and the CPU slow-input template trace)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from reference import union_length

import tracelens
from tracelens.analyses import analyze, steps
from tracelens.trace import Trace

TEMPLATES = Path(__file__).resolve().parent.parent / "fixtures" / "templates"


def host(kind, name, start, end, tid=1, **extra):
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def test_breakdown_hand_derived():
    # Step 3 [0,1000) on thread 1: data [0,300), launch [300,320) -> kernel [330,700), cpu_op [320,800) holding
    # cudaStreamSynchronize [700,760); thread 2 runs an unrelated cpu op [0,1000) (not a step/launch thread).
    # input 300; launch 20; sync 60; cpu [320,700)+[760,800) = 420; other [800,1000) = 200. GPU busy 370.
    # startup 0: no one-time names, every row far under the 1 ms first-call threshold, a single step.
    rows = [
        host("step", "ProfilerStep#3", 0, 1000, step=3),
        host("annotation", "tracelens/data", 0, 300),
        host("runtime", "cudaLaunchKernel", 300, 320, correlation_id=1),
        {
            "kind": "kernel",
            "name": "k",
            "start_ns": 330,
            "end_ns": 700,
            "device": 0,
            "stream": 7,
            "correlation_id": 1,
        },
        host("cpu_op", "aten::mm", 320, 800),
        host("runtime", "cudaStreamSynchronize", 700, 760),
        host("cpu_op", "aten::background", 0, 1000, tid=2),
    ]
    out = steps.section(Trace.from_rows(rows), {})
    (step,) = out["steps"]
    assert step["step"] == 3 and step["duration_ns"] == 1000
    assert step["host"] == {"startup": 0, "sync": 60, "input": 300, "launch": 20, "cpu": 420, "other": 200}
    assert step["gpu_busy"] == [{"device": 0, "busy_ns": 370}]
    summary = out["summary"]
    assert summary["host_share"]["input"] == pytest.approx(0.3)
    assert summary["gpu_busy"] == [{"device": 0, "busy_ns": 370, "utilization": pytest.approx(0.37)}]


def test_same_step_number_is_merged_and_unnumbered_follow():
    # ProfilerStep#0 [0,100) and tracelens/step#0 [10,120) -> step 0 [0,120); step 1 [120,200);
    # an unnumbered TF-style marker [200,260) becomes step 2.
    rows = [
        host("step", "ProfilerStep#0", 0, 100, step=0),
        host("step", "tracelens/step#0", 10, 120, step=0),
        host("step", "ProfilerStep#1", 120, 200, step=1),
        host("step", "train_step", 200, 260),
    ]
    out = steps.section(Trace.from_rows(rows), {})
    assert [(s["step"], s["start_ns"], s["end_ns"]) for s in out["steps"]] == [
        (0, 0, 120),
        (1, 120, 200),
        (2, 200, 260),
    ]
    s = out["summary"]
    assert (s["total_ns"], s["min_ns"], s["max_ns"], s["median_ns"]) == (260, 60, 120, 80.0)
    assert s["mean_ns"] == pytest.approx(260 / 3)
    # No host work at all: every step is `other` (step markers are not work; none is named warm-up: startup 0).
    assert s["host_ns"] == {"startup": 0, "sync": 0, "input": 0, "launch": 0, "cpu": 0, "other": 260}


def test_no_steps():
    assert steps.section(Trace.from_rows([host("cpu_op", "a", 0, 1)]), {}) == {
        "count": 0,
        "steps": [],
        "summary": None,
    }


@pytest.mark.parametrize("name", ["pytorch_slow-input_cpu.pt.trace.json.gz"])
def test_cpu_slow_input_template_is_input_bound(name):
    path = TEMPLATES / name
    if not path.exists():
        pytest.skip("template fixture not recorded")
    # Independent walk of the Kineto JSON: step windows from ProfilerStep#N / tracelens/step#N, input time =
    # union of tracelens/data and DataLoader __next__ ranges inside each window (µs -> ns).
    events = json.loads(gzip.open(path).read())["traceEvents"]
    windows: dict[int, list[float]] = {}
    inputs = []
    for e in events:
        if e.get("ph") != "X":
            continue
        n = e["name"]
        lo, hi = e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000
        for prefix in ("ProfilerStep#", "tracelens/step#"):
            if n.startswith(prefix):
                w = windows.setdefault(int(n[len(prefix) :]), [lo, hi])
                w[0], w[1] = min(w[0], lo), max(w[1], hi)
        if n == "tracelens/data" or n.startswith("enumerate(DataLoader)"):
            inputs.append((lo, hi))
    expected = {
        k: union_length([(max(s, w[0]), min(e, w[1])) for s, e in inputs if s < w[1] and e > w[0]])
        for k, w in windows.items()
    }
    doc = analyze(tracelens.load(path))
    got = {s["step"]: s["host"]["input"] for s in doc["steps"]["steps"]}
    assert set(got) == set(expected)
    for k in expected:
        assert got[k] == pytest.approx(expected[k], abs=3)  # reader rounds µs floats to ns
    share = doc["steps"]["summary"]["host_share"]["input"]
    assert share >= 0.20  # XProf's "highly input bound" threshold
    # Recorded without a GPU: the primary is incomplete_trace; the host-side view ranks input first.
    assert doc["diagnosis"]["primary"]["cause"] == "incomplete_trace"
    assert doc["diagnosis"]["causes"][0]["cause"] == "input_pipeline"
    assert doc["diagnosis"]["has_gpu_activity"] is False
    healthy = TEMPLATES / "pytorch_healthy_cpu.pt.trace.json.gz"
    if healthy.exists():
        healthy_doc = analyze(tracelens.load(healthy))
        assert share > 5 * healthy_doc["steps"]["summary"]["host_share"]["input"]
