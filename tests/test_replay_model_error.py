"""The model replay's error (``whatif.replay_error.model_*``) on the two shared traces where it was over 2%,
each checked against what a direct query of the file says the model got wrong there (docs/analyses.md,
"replay_error"). Skipped when ../shared is absent."""

from __future__ import annotations

import gzip
import json
import sqlite3

import pytest

import tracelens
from tests.conftest import shared_traces
from tracelens.analyses.whatif import whatif
from tracelens.replay.graph import build


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
