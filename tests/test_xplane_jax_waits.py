"""JAX's host waits for device values (block_until_ready, device_get, Array._value) as the XLA Python tracer records
them: Python frames, no CUDA/HIP synchronize. A hand-built XSpace, numbers derived by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.analyses.names import is_framework_wait

US = 1_000_000  # ps
STEPS = 3


def _jax_steps(path: Path) -> Path:
    """Three steps of 100 µs on one thread. Step i (times from 100 i µs): ``PjitFunction(train_step)`` [0, 20] with its
    ``cuLaunchKernel`` [10, 11]; the kernel [15, 75]; ``jax.block_until_ready`` [20, 80] (and Array.block_until_ready
    inside it, [21, 79]); then the program's own Python [80, 100] (``log_metrics``)."""
    names = {
        1: "PjitFunction(train_step)",
        2: "cuLaunchKernel",
        3: "$api.py:3105 block_until_ready",
        4: "$array.py:601 block_until_ready",
        5: "$train.py:42 log_metrics",
    }
    host_events, kernels = [], []
    for i in range(STEPS):
        t = i * 100 * US
        host_events += [
            pb.event(1, t, 20 * US),
            pb.event(2, t + 10 * US, US, [pb.stat(1, int64=i + 1)]),
            pb.event(3, t + 20 * US, 60 * US),
            pb.event(4, t + 21 * US, 58 * US),
            pb.event(5, t + 80 * US, 20 * US),
        ]
        kernels.append(pb.event(1, t + 15 * US, 60 * US, [pb.stat(1, int64=i + 1)]))
    host = pb.plane(0, "/host:CPU", [pb.line(1, "python3", 0, host_events)], names, {1: "correlation_id"})
    gpu = pb.plane(
        1, "/device:GPU:0", [pb.line(7, "Stream #7", 0, kernels)], {1: "fusion"}, {1: "correlation_id"}
    )
    path.write_bytes(pb.space([host, gpu]))
    return path


def test_block_until_ready_is_a_blocking_wait(tmp_path: Path) -> None:
    # Before: "Sync: 0 blocking calls" and the idle after each wait read as the host's own cpu time (the remedy
    # "jit the whole step" where the wait was the cause).
    doc = tracelens.analyze(tracelens.load(_jax_steps(tmp_path / "host.xplane.pb")))
    blocking = doc["sync"]["blocking"]
    # three outer waits of 60 µs (the Array.block_until_ready inside each is the same wait, counted once)
    assert blocking["count"] == STEPS and blocking["total_ns"] == STEPS * 60_000
    assert blocking["by_name"][0]["name"] == "$api.py:3105 block_until_ready"
    # Gaps [75, 115] and [175, 215] µs. In each: the wait [75, 80] (sync), then its echo: the GPU ran 55 µs inside the
    # wait ([20, 75]), so the next 35 µs of host work, log_metrics [80, 100] and the dispatch [100, 115], count as
    # sync too. All 80 µs of idle are sync; before, 78 µs were cpu and 2 µs launch.
    (device,) = doc["attribution"]["devices"]
    assert device["idle_ns"] == 80_000
    assert device["by_cause"]["sync"] == 80_000
    assert device["by_cause"]["cpu"] == 0 and device["by_cause"]["launch"] == 0
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    assert causes["synchronization"]["lost_ns"] == 80_000
    assert "block_until_ready" in causes["synchronization"]["fix"]


def test_the_replay_waits_in_block_until_ready_and_the_sync_remedy_drops_it(tmp_path: Path) -> None:
    """The replay read the time in block_until_ready as host work (no call, no wait edge): the synchronization remedy
    "found nothing to change" though the diagnosis named it. Each outermost wait frame is now an explicit
    synchronize of the replay, waiting for the GPU work launched before it."""
    from tracelens.analyses.whatif import whatif

    doc = whatif(tracelens.load(_jax_steps(tmp_path / "host.xplane.pb")))
    error = doc["replay_error"]
    assert error["blocking_calls"] == STEPS  # the three outer waits (not the Array.block_until_ready inside)
    # Recorded: from the first call (the launch at 10 µs) to the last wait's end (280 µs).
    assert error["recorded_span_ns"] == error["replayed_span_ns"] == 270_000
    remedy = {r["cause"]: r for r in doc["remedies"]}["synchronization"]
    # Without the waits the host runs ahead (each step's host time: the launch 1 µs, 9 µs to the wait, the wait's
    # own cost, 30 µs of log_metrics and dispatch): the GPU sets the pace. K0 at 15 µs (launched at 10, 5 µs
    # latency), then the three 60 µs kernels back to back, each 1 µs after the previous (the replay's gap between
    # queued ops, its 1 µs default: typical_lags.DEFAULT_STREAM_GAP_NS): the last ends at 15 + 180 + 2 = 197 µs.
    assert remedy["predicted_span_ns"] == 197_000 - 10_000
    assert remedy["gain_ns"] == 270_000 - 187_000


@pytest.mark.parametrize(
    ("name", "wait"),
    [
        ("$api.py:3105 block_until_ready", True),
        ("$array.py:601 block_until_ready", True),
        ("$api.py:2890 device_get", True),
        ("$array.py:640 _value", True),
        ("$device_array.py:266 _value", True),  # JAX before 0.4
        ("$my_model.py:12 _value", False),  # another program's _value: not JAX's fetch
        ("$train.py:42 log_metrics", False),
        ("block_until_ready", False),  # not a Python tracer frame
        ("api.py(3105): block_until_ready", False),  # Kineto's spelling: a PyTorch trace has no JAX frames
    ],
)
def test_framework_wait_names(name: str, wait: bool) -> None:
    assert is_framework_wait(name) is wait
