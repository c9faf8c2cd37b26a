"""The profiler's own Python frames (jax.profiler.start_trace/stop_trace/trace, tf.profiler.experimental.start/stop)
are profiler overhead, not the program's host code.

JAX's Python tracer records the frame of the call that started it: in the shared JAX-on-ROCm XSpace
``$profiler.py:101 start_trace`` spans 9.7 s before the first GPU op. Read as a Python frame, it was the host's
"top" name, and host_launch_overhead's evidence said "most host time in “$profiler.py:101 start_trace”" about GPU
idle in which that frame never ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.analyses import analyze
from tracelens.ingest.tf_common import classify_host_name

SHARED_ROCM = (
    Path(__file__).resolve().parents[2] / "shared" / "traces" / "tf" / "amd_gpu_jax_te_fused_attn.xplane.pb"
)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("$profiler.py:101 start_trace", "overhead"),
        ("$profiler.py:213 stop_trace", "overhead"),
        ("$profiler.py:307 trace", "overhead"),
        ("$profiler_v2.py:131 start", "overhead"),
        ("$profiler_v2.py:158 stop", "overhead"),
        ("$train.py:20 start_trace", "python"),  # the user's own function of that name
        ("$profiler.py:12 step", "python"),
        ("$api.py:3105 block_until_ready", "python"),
    ],
)
def test_profiler_frames_are_overhead(name: str, kind: str) -> None:
    assert classify_host_name(name) == kind


def test_top_host_names_leave_out_the_profilers_start(tmp_path: Path) -> None:
    # start_trace [0, 9 ms) before any GPU work; then per step PjitFunction(f) [10 + i, 10.2 + i) ms around the launch
    us = 1_000_000
    host_events = [pb.event(1, 0, 9_000 * us)]
    kernels = []
    for i in range(5):
        t0 = (10_000 + 1_000 * i) * us
        host_events += [
            pb.event(2, t0, 200 * us),
            pb.event(3, t0 + 50 * us, 10 * us, [pb.stat(1, int64=i + 1)]),
        ]
        kernels.append(pb.event(1, t0 + 100 * us, 300 * us, [pb.stat(1, int64=i + 1)]))
    host = pb.plane(
        0,
        "/host:CPU",
        [pb.line(5, "python3", 0, host_events)],
        {1: "$profiler.py:101 start_trace", 2: "PjitFunction(f)", 3: "hipLaunchKernel"},
        {1: "correlation_id"},
    )
    gpu = pb.plane(
        1, "/device:GPU:0", [pb.line(2, "Stream #2", 0, kernels)], {1: "fusion"}, {1: "correlation_id"}
    )
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(pb.space([host, gpu]))
    trace = tracelens.load(path)
    kinds = {r["name"]: r["kind"] for r in trace.events.select(["name", "kind"]).to_pylist()}
    assert kinds["$profiler.py:101 start_trace"] == "overhead" and kinds["PjitFunction(f)"] == "cpu_op"
    doc = analyze(trace)
    (cause,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == "host_launch_overhead"]
    assert [n["name"] for n in cause["evidence"]["top_cpu_ops"]] == ["PjitFunction(f)"]
    assert "start_trace" not in cause["evidence"] and "start_trace" not in str(doc["diagnosis"]["primary"])


@pytest.mark.skipif(not SHARED_ROCM.exists(), reason="shared traces absent")
def test_shared_rocm_trace_names_its_own_host_code() -> None:
    doc = analyze(tracelens.load(SHARED_ROCM))
    (cause,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == "host_launch_overhead"]
    assert cause["evidence"]["top_cpu_ops"][0]["name"] == "PjitFunction(loss_fn)"
