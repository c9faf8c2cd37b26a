"""The model replay's error (``whatif.replay_error.model_*``): on the two shared traces where it was over 2%
(skipped when ../shared is absent), each checked against what a direct query of the file says the model got wrong
there, and the reason given where it stays over 2% (a pair recording), checked against the file the same way
(docs/analyses.md, "replay_error")."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES, shared_traces
from tracelens.analyses.whatif import whatif
from tracelens.replay.graph import build
from tracelens.report.whatif_text import replay_line


def _one(subdir: str, name: str):
    paths = shared_traces(subdir, name)
    if not paths:
        pytest.skip(f"../shared/traces/{subdir}/{name} not present")
    return paths[0]


def test_rtx3080_module_loading_launches_do_not_set_the_median_launch_latency() -> None:
    path = _one("nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    calls = db.execute(
        "SELECT r.start, r.end, s.value, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "JOIN StringIds s ON s.id = r.nameId ORDER BY r.start"
    ).fetchall()
    ops = {
        corr: start
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY")
        for start, corr in db.execute(f"SELECT start, correlationId FROM {table}")
    }
    first_op = min(ops.values())
    launches = [(s, e, corr) for s, e, name, corr in calls if name.startswith("cudaLaunchKernel")]
    # both kernel launches last >= 1 ms with the GPU idle (before its first op, or between ops): module loads
    assert len(launches) == 2 and all(e - s >= 1_000_000 for s, e, _ in launches)
    assert launches[0][1] <= first_op
    # the one steady launch is the copy's: its latency (call start -> copy start) is the model's median
    copy_start, copy_corr = next(
        (s, corr) for s, _, name, corr in calls if name.startswith("cudaMemcpyAsync")
    )
    trace = tracelens.load(path)
    assert build(trace).typical["launch"] == {0: ops[copy_corr] - copy_start}
    error = whatif(trace)["replay_error"]
    assert error["gpu_ops"] == 3 and abs(error["model_span_error"]) < 0.02


def test_mi250_marker_only_last_step_is_not_a_period() -> None:
    path = _one("pytorch", "mi250_rocm6.2_minitoy_train.json.gz")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    assert [s["name"] for s in steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    first, second = steps
    runtime = [e for e in events if e.get("cat") == "cuda_runtime"]
    # the second step holds no API call: only its marker (the profiler stopped as it began)
    assert not [e for e in runtime if second["ts"] <= e["ts"] < second["ts"] + second["dur"]]
    # the first step's work: its API calls and the GPU ops they launched (correlation id), to the last end
    mine = [e for e in runtime if first["ts"] <= e["ts"] < second["ts"]]
    corrs = {e["args"]["correlation"] for e in mine}
    gpu = [
        e for e in events if e.get("cat") in ("kernel", "gpu_memcpy") and e["args"]["correlation"] in corrs
    ]
    work_end = max(e["ts"] + e["dur"] for e in mine + gpu)
    expected_ns = (work_end - first["ts"]) * 1000
    error = whatif(tracelens.load(path))["replay_error"]
    assert error["steps"] == 1
    assert error["recorded_step_ns"] == pytest.approx(expected_ns, abs=1_000)  # µs timestamps in the JSON
    assert abs(error["model_step_error"]) < 0.02 and abs(error["model_span_error"]) < 0.02


def _queued_gap_estimate(path: Path) -> tuple[float, float]:
    """(median queued-op gap in µs, step share of the queued gaps' excess over it), read from the Kineto JSON
    directly: an op is queued when its launch call started before the previous op on its stream ended; its gap
    is its start - that end. The excess of the gaps of ops launched in steps 2..N-1 over the median, per step,
    is what the model replay loses where the GPU sets the pace."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    ops = sorted(
        (e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
        key=lambda e: (e["tid"], e["ts"]),
    )
    steps = sorted(
        e["ts"]
        for e in events
        if e.get("cat") == "user_annotation" and str(e["name"]).startswith("ProfilerStep#")
    )
    gaps, issued = [], []
    for before, op in zip(ops, ops[1:], strict=False):
        call = calls.get(op["args"].get("correlation"))
        end = before["ts"] + before["dur"]
        if before["tid"] == op["tid"] and call is not None and call["ts"] < end:
            gaps.append(max(op["ts"] - end, 0.0))
            issued.append(call["ts"])
    median = float(np.median(gaps))
    excess = sum(g - median for g, t in zip(gaps, issued, strict=True) if steps[1] <= t < steps[-1])
    return median, -excess / (steps[-1] - steps[1])


def test_sync_after_pair_says_the_queued_gaps_set_its_model_error() -> None:
    # the recorded after-trace of the sync pair (fixtures, always present): its model replay is 6.7% fast per step
    path = FIXTURES / "gpu" / "pairs" / "sync_after.pt.trace.json.gz"
    trace = tracelens.load(path)
    error = whatif(trace)["replay_error"]
    assert error["model_step_error"] < -0.02
    median_us, share = _queued_gap_estimate(path)
    assert build(trace).typical["stream"] == {0: pytest.approx(median_us * 1000, abs=1)}
    parts = error["model_error_by_lag"]
    assert parts["queued_gaps"]["step_error"] == pytest.approx(share, abs=0.005)  # -6.7% both
    assert (
        abs(parts["launch_latencies"]["step_error"]) < 0.005 and abs(parts["wake_ups"]["step_error"]) < 0.005
    )
    assert error["model_reason"].startswith(
        f"queued gaps at their median alone put the model replay's mean step "
        f"{100 * parts['queued_gaps']['step_error']:+.1f}% off (all lags: {100 * error['model_step_error']:+.1f}%)"
    )
    # the reports print it after the replay line
    assert replay_line({"whatif": {"replay_error": error}}).endswith(
        f"; the model alone is over 2% off: {error['model_reason']}"
    )


def test_model_reason_reads_the_error_that_is_beyond_the_limit() -> None:
    from tracelens.analyses.whatif import _model_reason

    parts = {
        "queued_gaps": {"span_error": 0.001, "step_error": 0.002},
        "launch_latencies": {"span_error": -0.004, "step_error": 0.0},
        "wake_ups": {"span_error": 0.03, "step_error": 0.011},
    }
    # the mean step is within 2% (+1.1%), the span is not (+3.0%): the reason is the span's
    error = {"model_span_error": 0.03, "model_step_error": 0.011}
    assert _model_reason(error, parts, 0).startswith(
        "wake ups at their median alone put the model replay's span +3.0% off (all lags: +3.0%)"
    )
    # the mean step beyond 2%: the reason is the step's, by the kind furthest off on the step
    error = {"model_span_error": 0.001, "model_step_error": -0.025}
    parts["queued_gaps"]["step_error"] = -0.02
    assert _model_reason(error, parts, 0).startswith(
        "queued gaps at their median alone put the model replay's mean step -2.0% off (all lags: -2.5%)"
    )
