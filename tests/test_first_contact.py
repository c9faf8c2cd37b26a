"""Valid traces of kinds tracelens had not seen, written by hand from the producers' documented formats: each once
gave a wrong answer; the expected figures are read off the events written here."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tests.kineto_events import both_engines  # noqa: F401 (the "engine" fixture)
from tests.kineto_events import complete_event as _x
from tests.kineto_events import write_trace as _write
from tracelens import run as runs
from tracelens.report import render

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _analyze(path: Path) -> dict:
    doc = tracelens.analyze(tracelens.load(path))
    for fmt in ("terminal", "markdown"):
        assert render(doc, fmt)
    return json.loads(render(doc, "json"))


@pytest.mark.parametrize(
    ("category", "call"),
    [
        ("xpu_runtime", "urEnqueueKernelLaunch"),
        ("xpu_driver", "zeCommandListAppendLaunchKernel"),
        ("privateuse1_runtime", "aclrtLaunchKernel"),
        ("privateuse1_driver", "rtKernelLaunch"),
        ("mtia_runtime", "mtiaLaunchKernel"),
    ],
)
def test_launches_of_other_devices_are_launches(
    tmp_path: Path, engine: str, category: str, call: str
) -> None:
    """Kineto records the host API of Intel XPU, PrivateUse1 backends and MTIA under their own categories
    (libkineto ActivityType: xpu_runtime, xpu_driver, privateuse1_runtime, privateuse1_driver, mtia_runtime), their
    kernels as "kernel". Those calls are the launches: every kernel matches its call by correlation id and the
    trace is complete (was: no launch matched, diagnosis.completeness "gpu_activity_without_launches" with the fix
    "record the host side", which the trace had)."""
    events = []
    for i in range(1, 6):
        events.append(_x(category, call, 100, 100, i * 100, 3, correlation=i))
        events.append(_x("kernel", "gemm", 0, 7, i * 100 + 10, 80, correlation=i, device=0, stream=7))
    doc = _analyze(_write(tmp_path, events))
    assert doc["launch"]["gpu_ops"] == 5 and doc["launch"]["matched_ops"] == 5
    assert doc["launch"]["latency"]["max_ns"] == 7000  # kernel start (i*100+10 µs) - call end (i*100+3 µs)
    assert doc["diagnosis"]["completeness"]["problems"] == []


def test_a_reader_warning_is_one_line_on_stderr(tmp_path: Path) -> None:
    """An Nsight export whose StringIds table lost rows (a cut-down export) is read with a warning. The program
    prints it as one line like its other messages (was Python's display: tracelens's source file and line, then
    the line of code ``return NsysReader(path).read()``)."""
    path = tmp_path / "lost_strings.sqlite"
    shutil.copy(FIXTURES / "nsys" / "handmade_nsys2026.sqlite", path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        for column in ("demangledName", "shortName"):
            db.execute(f"DELETE FROM StringIds WHERE id IN (SELECT {column} FROM CUPTI_ACTIVITY_KIND_KERNEL)")
        db.commit()
    env = {**os.environ, "PYTHONPATH": str(FIXTURES.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", "-f", "json", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"tracelens: warning: {path}: ") and "StringIds lacks" in lines[0]


def test_a_tpu_xplane_is_not_told_to_record_its_gpu(tmp_path: Path) -> None:
    """A JAX profile of a TPU: the host plane and a ``/device:TPU:0`` plane (XLA Ops, XLA Modules, Steps lines, as
    the TPU profiler writes them), which tracelens does not read. The analysis is the host side's, and it says so:
    a warning names the plane, and the completeness fix says the device activity is there (was: "Record the GPU
    side: a GPU jaxlib with CUPTI found ...", as if the recording had failed)."""
    ps = 1000
    host = pb.plane(
        0,
        "/host:CPU",
        [pb.line(1, "python", 0, [pb.event(1, i * ps**2, 200 * ps) for i in range(4)])],
        {1: "PjitFunction(train_step)"},
        {},
    )
    ops = [pb.event(1, (i * 1000 + 100) * ps, 800 * ps) for i in range(4)]
    tpu = pb.plane(
        1,
        "/device:TPU:0",
        [pb.line(2, "XLA Ops", 0, ops), pb.line(3, "XLA Modules", 0, ops)],
        {1: "fusion.1"},
        {},
    )
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(pb.space([host, tpu], ["host0"]))
    doc = _analyze(path)
    assert doc["source"]["framework"] == "jax" and doc["summary"]["device_count"] == 0
    assert any("/device:TPU:0" in w for w in doc["source"]["warnings"])
    (problem,) = doc["diagnosis"]["completeness"]["problems"]
    assert problem["kind"] == "no_gpu_activity" and problem["blocking"]
    assert "/device:TPU:0" in problem["fix"] and "CUPTI" not in problem["fix"]


def test_a_rank_whose_gpu_side_is_missing_is_named(tmp_path: Path) -> None:
    """A run of two Kineto ranks where rank 1's profiler lost the GPU side (launch calls, no kernel). The run's
    figures and diagnosis come from rank 0 (the only rank with a GPU), and the run says that rank 1 cannot answer
    (was: nothing; only an Nsight export's own reader warning ever said so)."""
    run = tmp_path / "run"
    run.mkdir()
    for rank, with_gpu in ((0, True), (1, False)):
        events = []
        for i in range(1, 4):
            events.append(_x("cuda_runtime", "cudaLaunchKernel", 100, 100, i * 100, 3, correlation=i))
            if with_gpu:
                events.append(_x("kernel", "gemm", 0, 7, i * 100 + 10, 80, correlation=i, device=0, stream=7))
        top = {"distributedInfo": {"rank": rank, "world_size": 2}}
        (run / f"rank{rank}.pt.trace.json").write_text(json.dumps({"traceEvents": events, **top}))
    doc, failures = runs.analyze_run([run], workers=1, cache_dir=tmp_path / "cache")
    assert not failures
    assert [r["gpus"] for r in doc["ranks"]] == [1, 0]
    named = [w for w in doc["source"]["warnings"] if w.startswith("rank 1: ")]
    assert len(named) == 1 and "launches_without_gpu_activity" in named[0]
    assert not any(w.startswith("rank 0: ") for w in doc["source"]["warnings"])
