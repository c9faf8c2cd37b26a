"""Kineto GPU ops whose device (``args.device``, else the event's ``pid``) is no GPU number: kept with a null
device (in the kernel tables, out of every per-GPU figure), as before, and now said in a warning. They were
silent: the summary counted 55 kernels, the kernel table 60, and nothing said why. Hand-built, both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracelens
from tests.kineto_events import both_engines, complete_event, write_trace
from tracelens.analyses import analyze

__all__ = ["both_engines"]


@pytest.mark.parametrize("device", [4294967295, -1, None])
def test_gpu_ops_of_no_device_number_are_said(tmp_path: Path, engine: str, device: int | None) -> None:
    # 4 kernels of 10 µs, every 20 µs, on device 0 stream 7; a fifth whose device is `device` (pid too; None:
    # neither args.device nor a numeric pid)
    events = [
        complete_event("kernel", f"k{i}", 0, 7, 1000.0 + 20 * i, 10.0, device=0, stream=7, correlation=i + 1)
        for i in range(4)
    ]
    odd = complete_event("kernel", "k4", device, 7, 1080.0, 10.0, stream=7, correlation=5)
    if device is None:
        odd["pid"] = "GPU ?"
    else:
        odd["args"]["device"] = device
    trace = tracelens.load(write_trace(tmp_path, [*events, odd]))
    doc = dict(analyze(trace))
    assert doc["kernels"]["count"] == 5
    assert doc["summary"]["kernel_count"] == 4  # the per-GPU count: the device-less op is on no GPU
    said = [w for w in trace.metadata.warnings if "name no device" in w]
    assert said and said[0].startswith("1 GPU op(s) name no device")


def test_gpu_ops_of_their_devices_are_not_warned_of(tmp_path: Path, engine: str) -> None:
    events = [
        complete_event(
            "kernel", f"k{i}", i % 2, 7, 1000.0 + 20 * i, 10.0, device=i % 2, stream=7, correlation=i + 1
        )
        for i in range(4)
    ]
    trace = tracelens.load(write_trace(tmp_path, events))
    assert not [w for w in trace.metadata.warnings if "name no device" in w]
