"""API-callback lines of the ROCm tracer ("Host Threads/<tid>") are the thread of the TraceMe line they nest in.

XLA's ROCm tracer writes each HIP API call on a host line of its own, ``Host Threads/<OS tid>``, while the same
thread's TraceMe events (the Python frames, ``PjitFunction(...)``, the thunks that make the calls) lie on a line
keyed by another thread id (``python3``): one thread, two lines (the shared ``amd_gpu_jax_te_fused_attn`` XSpace:
every ``hipLaunchKernel`` on ``Host Threads/7`` inside a thunk event of ``python3``). Gap attribution looks at the
launching thread, which was then the callback line alone, so whatever the thread ran between its launches was
"nothing": a JAX-on-ROCm step that idles the GPU in Python was ``unexplained_idle`` ("enable the Python tracer"),
though the trace records that Python.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.analyses import analyze

US = 1_000_000  # ps
STEP_US = 1000
MAIN_ID = 1029134407802915441
STEPS = 5


def _space(callback_line: str = "Host Threads/7", nested: bool = True) -> bytes:
    # per step, at t0 = i * 1000 us on the main thread: PjitFunction(f) [0, 200) with the thunk fusion_1 [10, 110)
    # in it; then the Python frame $train.py:20 log_metrics [200, 900). On the callback line: hipLaunchKernel
    # [20, 30) (inside the thunk, or at [950, 960) outside every main-thread event when not nested), corr i + 1.
    # On the GPU: the kernel [40, 190). GPU idle per gap: [190, 1040) of the next step.
    main, calls, kernels = [], [], []
    for i in range(STEPS):
        t0 = i * STEP_US * US
        main += [
            pb.event(1, t0, 200 * US),
            pb.event(2, t0 + 10 * US, 100 * US),
            pb.event(3, t0 + 200 * US, 700 * US),
        ]
        at = 20 if nested else 950
        calls.append(pb.event(4, t0 + at * US, 10 * US, [pb.stat(1, int64=i + 1)]))
        kernels.append(pb.event(1, t0 + 40 * US, 150 * US, [pb.stat(1, int64=i + 1)]))
    host = pb.plane(
        0,
        "/host:CPU",
        [pb.line(7, callback_line, 0, calls), pb.line(MAIN_ID, "python3", 0, main)],
        {1: "PjitFunction(f)", 2: "fusion_1", 3: "$train.py:20 log_metrics", 4: "hipLaunchKernel"},
        {1: "correlation_id"},
    )
    gpu = pb.plane(
        1, "/device:GPU:0", [pb.line(2, "Stream #2", 0, kernels)], {1: "fusion_1"}, {1: "correlation_id"}
    )
    return pb.space([gpu, host])


def _calls(trace: tracelens.Trace) -> list[dict]:
    # as Arrow rows: the thread ids are int64 past float precision
    return [
        r for r in trace.events.select(["name", "tid", "depth"]).to_pylist() if r["name"] == "hipLaunchKernel"
    ]


def test_callback_line_is_read_as_the_thread_it_nests_in(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(_space())
    trace = tracelens.load(path)
    calls = _calls(trace)
    assert len(calls) == STEPS and {c["tid"] for c in calls} == {MAIN_ID}
    # nested inside the thunk fusion_1 (depth 1 under PjitFunction): depth 2
    assert {c["depth"] for c in calls} == {2}
    assert trace.metadata.extra["merged_host_lines"] == [{"line": "Host Threads/7", "into": "python3"}]

    doc = analyze(trace)
    (device,) = doc["attribution"]["devices"]
    by_cause = device["by_cause"]
    # 4 gaps of [190, 1040): 850 us each. The main thread covers [190, 200) with PjitFunction, [200, 900) with the
    # Python frame, [1000, 1040) with the next PjitFunction (its launch [1020, 1030) inside): 750 us of host work
    # per gap, launch 10 us of it; [900, 1000) is recorded by no thread.
    assert device["idle_ns"] == 4 * 850_000
    assert by_cause["launch"] == 4 * 10_000
    assert by_cause["cpu"] == 4 * 740_000
    assert by_cause["nothing"] == 4 * 100_000
    assert doc["diagnosis"]["primary"]["cause"] == "host_launch_overhead"


def test_a_callback_line_outside_every_event_stays_its_own(tmp_path: Path) -> None:
    # calls that lie outside every event of the other lines prove no shared thread: the line is kept
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(_space(nested=False))
    trace = tracelens.load(path)
    assert {c["tid"] for c in _calls(trace)} == {7}
    assert "merged_host_lines" not in trace.metadata.extra


SHARED_ROCM = (
    Path(__file__).resolve().parents[2] / "shared" / "traces" / "tf" / "amd_gpu_jax_te_fused_attn.xplane.pb"
)


@pytest.mark.skipif(not SHARED_ROCM.exists(), reason="shared traces absent")
def test_the_shared_rocm_jax_trace_reads_one_thread() -> None:
    # its 150 HIP calls on "Host Threads/7" (line id 7), each inside a thunk event of the "python3" line
    trace = tracelens.load(SHARED_ROCM)
    assert trace.metadata.extra["merged_host_lines"] == [{"line": "Host Threads/7", "into": "python3"}]
    rows = trace.events.select(["kind", "tid"]).to_pylist()
    api = {r["tid"] for r in rows if r["kind"] == "runtime"}
    framework = {r["tid"] for r in rows if r["kind"] in ("cpu_op", "python")}
    assert len(api) == 1 and api == framework and 7 not in api
