"""The legacy TF 2.2-2.10 ``<host>.trace.json.gz`` reader, on a hand-built file (numbers derived by hand)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import tracelens
from tracelens.analyses.devices import device_utilization
from tracelens.cli import main
from tracelens.errors import InputError
from tracelens.ingest import detect_format, tf_profile, tf_trace_json, xplane


def _meta(kind: str, pid: int, name: str, tid: int | None = None) -> dict:
    event = {"ph": "M", "name": kind, "pid": pid, "args": {"name": name}}
    if tid is not None:
        event["tid"] = tid
    return event


def _trace() -> dict:
    return {
        "displayTimeUnit": "ns",
        "metadata": {"highres-ticks": True},
        "traceEvents": [
            _meta("process_name", 1, "/host:CPU"),
            _meta("process_name", 2, "/device:GPU:0 (Tesla V100)"),
            _meta("thread_name", 1, "python3", 10),
            _meta("thread_name", 2, "Stream #7(Compute)", 7),
            _meta("thread_name", 2, "TensorFlow Ops", 99),
            # step 0: [1000 us, 1050 us]; this is the earliest event, so the table's origin
            {
                "ph": "X",
                "pid": 1,
                "tid": 10,
                "name": "train",
                "ts": 1000.0,
                "dur": 50.0,
                "args": {"step_num": "0"},
            },
            {"ph": "X", "pid": 1, "tid": 10, "name": "IteratorGetNext", "ts": 1001.5, "dur": 2.25},
            {
                "ph": "X",
                "pid": 1,
                "tid": 10,
                "name": "cudaLaunchKernel",
                "ts": 1005.0,
                "dur": 1.0,
                "args": {"correlation_id": "12"},
            },
            # kernel: round(1010000.6) = 1010001 .. round(1030000.6) = 1030001 -> [10001, 30001] after the origin
            {
                "ph": "X",
                "pid": 2,
                "tid": 7,
                "name": "volta_sgemm",
                "ts": 1010.0006,
                "dur": 20.0,
                "args": {
                    "correlation_id": "12",
                    "kernel_details": "regs:32 static_shared:0 dynamic_shared:0 grid:4,1,1 block:256,1,1 occ_pct:25",
                },
            },
            # memcpy [40000, 45000]
            {
                "ph": "X",
                "pid": 2,
                "tid": 7,
                "name": "MemcpyH2D",
                "ts": 1040.0,
                "dur": 5.0,
                "args": {"memcpy_details": "size:1024 dest:0 async:1"},
            },
            {
                "ph": "X",
                "pid": 2,
                "tid": 99,
                "name": "sgemm_op",
                "ts": 1010.0,
                "dur": 20.0,
            },  # derived: skipped
        ],
    }


@pytest.fixture
def trace_json(tmp_path: Path) -> Path:
    path = tmp_path / "host.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(_trace()).encode()))
    return path


def test_detected_and_read(trace_json: Path) -> None:
    assert detect_format(trace_json) == "tf-trace-json"
    trace = tracelens.load(trace_json)
    (gpu,) = device_utilization(trace)
    # kernel [10001, 30001] + memcpy [40000, 45000]: busy 20000 + 5000, span 45000 - 10001
    assert (gpu.busy_ns, gpu.span_ns, gpu.kernel_count, gpu.memcpy_count) == (25000, 34999, 1, 1)
    df = trace.df
    kernel = df[df["kind"] == "kernel"].iloc[0]
    assert (kernel["grid_x"], kernel["block_x"], kernel["registers_per_thread"]) == (4, 256, 32)
    assert kernel["reported_occupancy"] == pytest.approx(0.25)
    assert kernel["correlation_id"] == 12 and kernel["stream"] == 7
    copy = df[df["kind"] == "memcpy"].iloc[0]
    assert (copy["bytes"], copy["copy_kind"]) == (1024, "HtoD")
    launch = df[df["kind"] == "runtime"].iloc[0]
    assert (launch["correlation_id"], launch["start_ns"], launch["end_ns"]) == (12, 5000, 6000)
    iterator = df[df["name"] == "IteratorGetNext"].iloc[0]
    assert (iterator["start_ns"], iterator["end_ns"]) == (1500, 3750)
    steps = df[df["kind"] == "step"]
    assert steps[["step", "start_ns", "end_ns"]].values.tolist() == [[0, 0, 50000]]
    assert "sgemm_op" not in set(df["name"].astype(str))
    assert trace.metadata.time_origin_ns == 1_000_000 and trace.metadata.clock == "xplane"


def test_run_directory_with_only_trace_json(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "2021_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.trace.json.gz").write_bytes(gzip.compress(json.dumps(_trace()).encode()))
    trace = tracelens.load(tmp_path)
    assert trace.metadata.extra["run"] == "2021_01_01_00_00_00"
    assert [d.kernel_count for d in device_utilization(trace)] == [1]


def test_xplane_reader_leaves_trace_json_to_its_own_reader(tmp_path: Path) -> None:
    # tf_profile picks the reader; xplane.read reads XSpace files only (the two readers share tf_common and
    # do not import each other)
    run = tmp_path / "plugins" / "profile" / "2021_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.trace.json.gz").write_bytes(gzip.compress(json.dumps(_trace()).encode()))
    with pytest.raises(InputError, match="trace.json.gz"):
        xplane.read(tmp_path)
    via_profile = tf_profile.read(tmp_path)
    assert via_profile.events.equals(tf_trace_json.read(tmp_path).events)


def test_truncated_trace_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "host.trace.json.gz"
    data = json.dumps(_trace()).encode()
    path.write_bytes(gzip.compress(data[: len(data) // 2]))
    code = main(["convert", str(path), "-o", str(tmp_path / "o.parquet")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and str(path) in err[0]


@pytest.mark.parametrize("name", ["trace.json", "downloaded.json.gz"])
def test_renamed_trace_json_is_read_as_tensorflow(name: str, tmp_path: Path) -> None:
    # A TF trace-viewer JSON saved under another name was read as Kineto: "no GPU activity", with PyTorch's fix.
    data = json.dumps(_trace()).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert detect_format(path) == "tf-trace-json"
    (gpu,) = device_utilization(tracelens.load(path))
    assert (gpu.busy_ns, gpu.span_ns, gpu.kernel_count, gpu.memcpy_count) == (25000, 34999, 1, 1)


def _tf1_timeline() -> dict:
    """A TF 1.x RunMetadata timeline (tensorflow.python.client.timeline) of 10 steps 100 µs apart (step i from
    t = 1000 + 100 i µs): the host thread of device CPU:0 runs IteratorGetNext [t-30, t-5]; the copy MEMCPYHtoD
    [t-5, t-1] on the memcpy process; the host thread of device GPU:0 runs MatMul [t, t+10]; its kernel [t+5, t+65] on
    stream 7, repeated on stream:all."""

    def process(pid: int, name: str) -> dict:
        return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}

    def op(pid: int, name: str, ts: float, dur: float) -> dict:
        return {
            "ph": "X",
            "cat": "Op",
            "name": name,
            "pid": pid,
            "tid": 0,
            "ts": ts,
            "dur": dur,
            "args": {"op": name},
        }

    events = [
        process(0, "Allocators"),
        process(1, "/job:localhost/replica:0/task:0/device:GPU:0 Compute"),
        process(2, "/job:localhost/replica:0/task:0/device:GPU:0 Tensors"),
        process(3, "/device:GPU:0/stream:all Compute"),
        process(5, "/device:GPU:0/stream:7 Compute"),
        process(7, "/job:localhost/replica:0/task:0/device:CPU:0 Compute"),
        process(9, "/device:GPU:0/memcpy Compute"),
    ]
    for i in range(10):
        t = 1_000 + 100 * i
        events += [
            op(7, "IteratorGetNext", t - 30, 25),
            op(9, "MEMCPYHtoD", t - 5, 4),
            op(1, "MatMul", t, 10),
            op(3, "MatMul", t + 5, 60),
            op(5, "MatMul", t + 5, 60),
        ]
    return {"traceEvents": events}


def test_tf1_runmetadata_timeline(tmp_path: Path) -> None:
    # Before: "trace.json holds no host or GPU events" (exit 2) for a file holding both.
    path = tmp_path / "timeline.json"
    path.write_text(json.dumps(_tf1_timeline()))
    trace = tracelens.load(path)
    df = trace.df
    kernels = df[df["kind"] == "kernel"]
    assert len(kernels) == 10 and set(kernels["stream"]) == {7}  # stream:all not read again
    assert (
        len(df[df["kind"] == "memcpy"]) == 10
        and (df.loc[df["kind"] == "memcpy", "copy_kind"] == "HtoD").all()
    )
    assert trace.devices.column("name").to_pylist() == ["/device:GPU:0"]
    doc = tracelens.analyze(trace)
    # ops from 995 µs (the first copy) to 1965 µs (the last kernel's end): 970 µs; busy 10 x 60 + 10 x 4 µs
    assert doc["summary"]["gpu_utilization"] == pytest.approx(640 / 970)
    (device,) = doc["attribution"]["devices"]
    # each of the 9 gaps [t+65, t+95] holds IteratorGetNext [t+70, t+95]: 25 µs input each; each gap between a copy
    # and its kernel, [t-1, t+5], holds MatMul's host side [t, t+5]: 5 µs cpu (10 of them)
    assert device["by_cause"]["input"] == 9 * 25_000
    assert device["by_cause"]["cpu"] == 10 * 5_000
    assert doc["diagnosis"]["primary"]["cause"] == "input_pipeline"


def test_tf1_timeline_of_a_cpu_only_run_is_tensorflow(tmp_path: Path) -> None:
    # Its process names are TF's devices only ("/job:.../device:CPU:0 Compute"): it was read as an empty Kineto
    # trace ("0 host events", "record with torch.profiler").
    events = [_meta("process_name", 7, "/job:localhost/replica:0/task:0/device:CPU:0 Compute")]
    events += [
        {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 7, "tid": 0, "ts": 1000 + 100 * i, "dur": 50}
        for i in range(5)
    ]
    path = tmp_path / "timeline.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert detect_format(path) == "tf-trace-json"
    df = tracelens.load(path).df
    assert (df["kind"] == "cpu_op").sum() == 5 and df["end_ns"].max() == 450_000
