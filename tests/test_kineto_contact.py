"""Kineto traces of kinds that once gave a wrong or confusing answer (first-contact hunt krob27b), written by hand
from the PyTorch profiler's documented format; each expected figure is read off the events written here."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tracelens
from tests.kineto_events import both_engines  # noqa: F401 (the "engine" fixture)
from tests.kineto_events import complete_event as _x
from tests.kineto_events import write_trace as _write
from tracelens import run as runs
from tracelens.report import render


def _analyze(path: Path) -> tuple[dict, str]:
    """The JSON document, and the terminal and markdown texts."""
    doc = tracelens.analyze(tracelens.load(path))
    return json.loads(render(doc, "json")), render(doc, "terminal") + render(doc, "markdown")


def _cause(doc: dict, name: str) -> dict:
    (cause,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == name]
    return cause


def test_launch_overhead_names_no_other_process_op(tmp_path: Path, engine: str) -> None:
    """The launching thread (pid 10) makes only launch calls; a DataLoader worker process (pid 99) runs `aten::to`
    rows. The launch-overhead sentence said "its launching thread ran CUDA API calls (995 µs); most host time in
    “aten::to”", a name the launching thread never ran: the feeding threads' own (empty) list fell back to the
    trace-wide top. Now no name is given where the feeding threads ran no framework op."""
    events = []
    for i in range(200):
        events.append(_x("cuda_runtime", "cudaLaunchKernel", 10, 10, 100 + i * 20, 5, correlation=i + 1))
        events.append(_x("kernel", "gemm", 0, 7, 100 + i * 20 + 8, 10, correlation=i + 1, device=0, stream=7))
    events += [_x("cpu_op", "aten::to", 99, 99, 100 + i * 40, 30) for i in range(100)]
    events.append(
        {"ph": "M", "name": "process_name", "pid": 99, "tid": 0, "args": {"name": "pt_data_worker_0"}}
    )
    doc, text = _analyze(_write(tmp_path, events))
    cause = _cause(doc, "host_launch_overhead")
    # the feeding thread (10, 10) holds no cpu_op row: no framework name to name
    assert not [e for e in events if e.get("cat") == "cpu_op" and e["pid"] == 10]
    assert cause["evidence"]["top_cpu_ops"] == []
    assert "most host time in" not in text
    # its launch calls are the feeding thread's own: 200 cudaLaunchKernel of 5 µs
    (call,) = cause["evidence"]["top_launch_calls"]
    assert (call["name"], call["count"], call["total_ns"]) == ("cudaLaunchKernel", 200, 200 * 5000)


def test_graph_capture_does_not_remove_one_time_work(tmp_path: Path, engine: str) -> None:
    """The first `aten::conv2d` autotunes for 50 ms, then 299 steady calls each launch a 10 µs kernel every 30 µs.
    Capturing the launches in CUDA graphs (host_launch_overhead's replay) removes the steady launch gaps, not
    the autotuning (a graph is captured after it): it cannot save more than the span less that 50 ms. It said
    "host_launch_overhead 5.98 ms (10.1%) ... Replay: fixing it saves 94.7% of the span", the one-time work
    counted as launch work."""
    events = [_x("cpu_op", "aten::conv2d", 10, 10, 100, 50_000)]
    events.append(_x("cuda_runtime", "cudaLaunchKernel", 10, 10, 50_090, 5, correlation=1))
    events.append(_x("kernel", "conv", 0, 7, 50_098, 10, correlation=1, device=0, stream=7))
    for i in range(1, 300):
        t = 50_120 + i * 30
        events.append(_x("cpu_op", "aten::conv2d", 10, 10, t, 20))
        events.append(_x("cuda_runtime", "cudaLaunchKernel", 10, 10, t + 12, 5, correlation=i + 1))
        events.append(_x("kernel", "conv", 0, 7, t + 20, 10, correlation=i + 1, device=0, stream=7))
    events.append(_x("cuda_runtime", "cudaLaunchKernel", 10, 10, 50, 5, correlation=10_000))
    events.append(_x("kernel", "fill", 0, 7, 60, 5, correlation=10_000, device=0, stream=7))
    doc, _ = _analyze(_write(tmp_path, events))
    kernels = [e for e in events if e.get("cat") == "kernel"]
    span_ns = (max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)) * 1000
    assert doc["summary"]["device_mean_span_ns"] == span_ns
    assert doc["diagnosis"]["primary"]["cause"] == "startup"
    cause = _cause(doc, "host_launch_overhead")
    assert cause["predicted_gain_ns"] is not None
    # the steady part after the 50 ms autotuning is all a graph capture can shorten
    assert 0 < cause["predicted_gain_ns"] <= span_ns - 50_000_000


def _htod_copies(call: str, device: int, call_args: dict, copy_args: dict) -> list[dict]:
    """100 host-to-device copies of 40 µs on ``device`` (pid ``device``, stream 0), every 100 µs, each launched by
    a 60 µs ``call`` on thread 10 of process 10 (correlation ids 1-100)."""
    events = []
    for i in range(1, 101):
        t = i * 100
        events.append(_x("cuda_runtime", call, 10, 10, t, 60, correlation=i, **call_args))
        events.append(
            _x(
                "gpu_memcpy",
                "Memcpy HtoD (Host -> Device)",
                device,
                0,
                t + 10,
                40,
                correlation=i,
                device=device,
                stream=0,
                **copy_args,
            )
        )
    return events


def test_rocm_copies_without_bytes_are_not_zero_bytes(tmp_path: Path, engine: str) -> None:
    """ROCm 6.2's Kineto (the real MI250 trace) writes its copies as `gpu_memcpy` rows without `bytes` (the size
    is only a string arg of the `hipMemcpyWithStream` call). Those copies were "2 HtoD copies of 0 B" and the
    summary "copied 0 B": their size is unknown, and now says so (summary.memcpy_bytes null, "of unknown
    size")."""
    events = _htod_copies(
        "hipMemcpyWithStream", device=2, call_args={"size": "2560", "kind": "1"}, copy_args={}
    )
    doc, text = _analyze(_write(tmp_path, events))
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    assert not any("bytes" in e["args"] for e in copies)
    (kind,) = doc["memcpy"]["by_kind"]
    assert kind["count"] == kind["unknown_bytes_count"] == len(copies)
    assert doc["summary"]["memcpy_bytes"] is None
    assert "0 B" not in text
    assert "100 HtoD copies of unknown size" in text  # the diagnosis (terminal and markdown)
    assert "100 copies of unknown size, 4 ms summed" in text  # markdown's memcpy section: 100 copies of 40 µs


def test_amd_gpu_gets_no_nvidia_pcie_generation(tmp_path: Path, engine: str) -> None:
    """ROCm writes the gfx major as `computeMajor` (9 on an MI250, gfx90a; the real MI250 trace's device is
    "AMD Radeon Graphics"). The host link was taken from NVIDIA's compute capability table (9.x: Hopper, PCIe
    gen5): the MI250's copies were measured against "PCIe gen5 x16" and the replay moved its pinned copies at
    80% of it, while MI250 is a PCIe gen4 part (gfx9 spans gen3 to gen5 parts). An AMD GPU without a name-table
    entry has no expected host link now."""
    props = {
        "id": 0,
        "name": "AMD Radeon Graphics",
        "computeMajor": 9,
        "computeMinor": 0,
        "numSms": 104,
        "warpSize": 64,
        "totalGlobalMem": 68702699520,
    }
    events = _htod_copies("hipMemcpyAsync", device=0, call_args={}, copy_args={"bytes": 1 << 20})
    doc, _ = _analyze(_write(tmp_path, events, deviceProperties=[props]))
    assert doc["devices"][0]["name"] == "AMD Radeon Graphics"
    (device,) = doc["memcpy"]["per_device"]
    (kind,) = device["by_kind"]
    assert kind["expected_link"] is None and kind["achieved_fraction"] is None
    # the copies' own rate stands: 100 x 1 MiB in 100 x 40 µs
    assert kind["achieved_bytes_per_s"] == pytest.approx((1 << 20) / 40e-6)
    assert not any("PCIe gen5" in str(w.get("assumptions")) for w in doc["whatif"]["remedies"])


def test_numbers_in_strings_are_not_said_to_be_left_empty(tmp_path: Path, engine: str) -> None:
    """A trace writing every `ts` as a string ("ts": "100.5", as some converters do) is read whole: numbers in
    strings are parsed (docs/formats/kineto.md). Its warning said "unreadable values were left empty (first:
    field ts = "100" ...)", naming a value that was read. It now says that numbers in strings were read."""
    events = []
    for i in range(1, 51):
        events.append(_x("cuda_runtime", "cudaLaunchKernel", 10, 10, str(i * 100), 5, correlation=i))
        events.append(_x("kernel", "gemm", 0, 7, str(i * 100 + 10), 50, correlation=i, device=0, stream=7))
    trace = tracelens.load(_write(tmp_path, events))
    (warning,) = trace.metadata.warnings
    assert "numbers written as strings were read" in warning and 'field ts = "100"' in warning
    doc, _ = _analyze(_write(tmp_path, events))
    # 50 kernels of 50 µs from 110 µs to 5,060 µs: every timestamp was read
    assert doc["summary"]["kernel_count"] == 50
    assert doc["summary"]["device_mean_span_ns"] == (50 * 100 + 10 + 50 - 110) * 1000
    assert doc["summary"]["device_mean_busy_ns"] == 50 * 50_000


def test_a_copy_call_returning_before_its_copy_began_did_not_wait(tmp_path: Path, engine: str) -> None:
    """Small pageable host-to-device copies: each `cudaMemcpyAsync` returns once its data is staged (4 µs), and
    the DMA runs 1 µs later (CUDA's API sync behaviour for pageable copies). The replay made each call's end wait
    for its copy's end anyway, with the recorded lead (-11 µs) as the edge: the critical path then ran backwards
    through it and read "on the host: 104.7% of it" (sync_waits -54.8%). A call that returned before its copy
    began did not wait for it: the path's categories are each within [0, its length] now."""
    events = []
    for i in range(200):
        events.append(_x("cuda_runtime", "cudaMemcpyAsync", 1, 1, i * 20 - 5, 4, correlation=i + 1))
        events.append(
            _x(
                "gpu_memcpy",
                "Memcpy HtoD (Pageable -> Device)",
                0,
                7,
                i * 20,
                10,
                correlation=i + 1,
                device=0,
                stream=7,
                bytes=1000,
            )
        )
    # every call ends (i*20 - 1 µs) before its copy starts (i*20 µs)
    doc, text = _analyze(_write(tmp_path, events))
    path = doc["whatif"]["critical_path"]
    assert path["length_ns"] == (199 * 20 + 10 - (-5)) * 1000  # the first call's start to the last copy's end
    assert all(0 <= ns <= path["length_ns"] for ns in path["ns"].values()), path["ns"]
    assert sum(path["ns"].values()) == path["length_ns"]
    assert doc["whatif"]["replay_error"]["span_error"] == 0.0
    assert "%" in text and "104.7%" not in text


def _steps(n: int, kernel_us: float) -> list[dict]:
    """``n`` launches of one kernel each, 100 µs apart."""
    events = []
    for i in range(1, n + 1):
        events.append(_x("cuda_runtime", "cudaLaunchKernel", 10, 10, i * 100, 5, correlation=i))
        events.append(_x("kernel", "gemm", 0, 7, i * 100 + 10, kernel_us, correlation=i, device=0, stream=7))
    return events


def _capture(directory: Path, name: str, events: list[dict]) -> Path:
    """One capture as torch.profiler.tensorboard_trace_handler writes it: ``<worker>.<time>.pt.trace.json[.gz]``
    in the handler's directory (worker "<hostname>_<pid>" by default)."""
    path = directory / name
    text = json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    return path


def test_a_directory_of_one_gzipped_handler_capture_is_read(tmp_path: Path) -> None:
    """tensorboard_trace_handler(dir, use_gzip=True) writes `<worker>.<time>.pt.trace.json.gz`. A directory
    holding one was taken for a TensorFlow logdir (its `*.trace.json.gz` names TF's trace-viewer JSON) and
    refused: "trace.json holds no host or GPU events". It is read as the Kineto trace it is."""
    _capture(tmp_path, "myhost_1234.1700000000100.pt.trace.json.gz", _steps(20, 50))
    doc = tracelens.analyze(tracelens.load(tmp_path))
    assert doc["source"]["format"] == "kineto"
    assert doc["summary"]["kernel_count"] == 20 and doc["summary"]["device_mean_busy_ns"] == 20 * 50_000


def test_successive_captures_of_one_process_are_not_ranks(tmp_path: Path) -> None:
    """A schedule with repeat > 1 makes tensorboard_trace_handler write one file per cycle, all named for the
    same worker ("<hostname>_<pid>", which the handler's docs say is unique per worker). `analyze DIR` read two
    cycles of one process as two ranks ("GPUs 2", "ranks ... collide; numbered by position"). Each worker's
    newest capture is analyzed now, with a warning naming what was left out; two workers stay a run of two."""
    single = tmp_path / "one"
    single.mkdir()
    _capture(single, "myhost_1234.1700000000100.pt.trace.json", _steps(30, 40))
    newest = _capture(single, "myhost_1234.1700000005200.pt.trace.json", _steps(20, 50))
    done = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", "-f", "json", str(single)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "ranks" not in doc and doc["summary"]["device_count"] == 1
    # the newest capture's figures: 20 kernels of 50 µs
    assert doc["summary"]["kernel_count"] == 20 and doc["summary"]["device_mean_busy_ns"] == 20 * 50_000
    (note,) = [w for w in doc["source"]["warnings"] if "captures" in w]
    assert newest.name in note and "myhost_1234.1700000000100.pt.trace.json" in note
    # two workers (two processes, e.g. two ranks), two cycles each: a run of two ranks, each its newest cycle
    two = tmp_path / "two"
    two.mkdir()
    for worker, kernels in (("myhost_1234", 10), ("myhost_1235", 12)):
        _capture(two, f"{worker}.1700000000100.pt.trace.json", _steps(30, 40))
        _capture(two, f"{worker}.1700000005200.pt.trace.json", _steps(kernels, 50))
    run, failures = runs.analyze_run([two], workers=1, cache_dir=tmp_path / "cache")
    assert not failures
    # each rank's busy time is its newest capture's: 10 and 12 kernels of 50 µs
    assert sorted(r["busy_ns"] for r in run["ranks"]) == [10 * 50_000, 12 * 50_000]
    assert sorted(Path(r["path"]).name for r in run["ranks"]) == [
        "myhost_1234.1700000005200.pt.trace.json",
        "myhost_1235.1700000005200.pt.trace.json",
    ]
    assert sum("captures" in w for w in run["source"]["warnings"]) == 2
