"""XSpaces with corrupt times and values, built by hand: what the reader keeps and what the analysis says (numbers by
hand)."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.cli import main

US = 1_000_000  # ps


def _calls(n: int) -> bytes:
    """A host plane with ``n`` launch calls (1 µs each, 2 µs before each kernel of :func:`_kernels`)."""
    calls = [pb.event(1, max(i * 10 * US - 2 * US, 0), US, [pb.stat(1, int64=i + 1)]) for i in range(n)]
    return pb.plane(
        0, "/host:CPU", [pb.line(1, "main", 0, calls)], {1: "cuLaunchKernel"}, {1: "correlation_id"}
    )


def _kernels(
    first: int, n: int, duration_ps: int = 5 * US, long: dict[int, int] | None = None
) -> list[bytes]:
    """Kernels ``first`` .. ``first + n - 1``: kernel i at i x 10 µs, 5 µs long (``long``: i -> another duration)."""
    long = long or {}
    return [
        pb.event(1, i * 10 * US, long.get(i, duration_ps), [pb.stat(1, int64=i + 1)])
        for i in range(first, first + n)
    ]


def test_line_timestamp_past_int64_range_is_left_off_not_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stream line at timestamp_ns 2^63-1 (a corrupt line) wrapped its events' times around int64: the replay
    # failed ("internal error: launch_calls: an index out of range", exit 3). Its 4 kernels are left off with a
    # warning; the 6 kernels of the other stream line are read as they are.
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [
            pb.line(7, "Stream #7", 0, _kernels(0, 6)),
            pb.line(8, "Stream #8", (1 << 63) - 1, _kernels(6, 4)),
        ],
        {1: "k"},
        {1: "correlation_id"},
    )
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_calls(10), gpu]))
    out = tmp_path / "doc.json"
    code = main(["analyze", str(path), "-f", "json", "-o", str(out)])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "internal error" not in err and "Traceback" not in err
    doc = json.loads(out.read_text())
    assert doc["summary"]["kernel_count"] == 6
    # kernels 0..5: [0, 5], [10, 15], ... [50, 55] µs; busy 30 µs of a 55 µs span
    assert doc["summary"]["gpu_utilization"] == pytest.approx(30 / 55)
    warning = next(w for w in doc["source"]["warnings"] if "beyond 2^62" in w)
    assert warning.startswith("4 XEvents") and "Stream #8" in warning


def test_end_past_int64_from_offset_plus_duration(tmp_path: Path) -> None:
    # offset_ps + duration_ps past 2^63 (each below it) wrapped the end around int64 to a negative time, before the
    # start. In ns both are far within 2^62: the end is exact, floor((2^62 + 2^62 + 1000) / 1000).
    big = 1 << 62
    kernels = [*_kernels(0, 2), pb.event(1, big, big + 1000, [pb.stat(1, int64=3)])]
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(7, "Stream #7", 0, kernels)], {1: "k"}, {1: "correlation_id"})
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_calls(3), gpu]))
    trace = tracelens.load(path)
    df = trace.df
    k = df[df["kind"] == "kernel"].sort_values("start_ns")
    origin = trace.metadata.time_origin_ns
    assert (k["end_ns"] >= k["start_ns"]).all()
    last = k.iloc[-1]
    assert int(last["start_ns"]) + origin == big // 1000
    assert int(last["end_ns"]) + origin == (2 * big + 1000) // 1000


def test_kernel_outlasting_later_kernels_of_its_stream_is_cut(tmp_path: Path) -> None:
    # Kernel 3 recorded as 3.4 s long (a lost end timestamp, pytorch/kineto#646 for the same CUPTI records) made the
    # GPU "busy 100%" and the diagnosis `none`. Cut at kernel 4's start (40 µs), as the Kineto reader cuts.
    kernels = _kernels(0, 10, long={3: 3_400_000 * US})
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(7, "Stream #7", 0, kernels)], {1: "k"}, {1: "correlation_id"})
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_calls(10), gpu]))
    trace = tracelens.load(path)
    doc = tracelens.analyze(trace)
    # busy: 9 kernels x 5 µs + kernel 3 [30, 40] µs = 55 µs of the [0, 95] µs span
    assert doc["summary"]["gpu_utilization"] == pytest.approx(55 / 95)
    assert doc["diagnosis"]["primary"]["cause"] != "none"
    assert any("1 GPU op ended after a later op of the same stream" in w for w in trace.metadata.warnings)


def test_legacy_trace_json_kernel_outlasting_later_kernels_is_cut(tmp_path: Path) -> None:
    # The TF 2.2-2.10 trace JSON carries the same CUPTI records: the same cut.
    def ev(pid: int, tid: int, name: str, ts: float, dur: float, corr: int) -> dict:
        return {
            "ph": "X",
            "pid": pid,
            "tid": tid,
            "name": name,
            "ts": ts,
            "dur": dur,
            "args": {"correlation_id": str(corr)},
        }

    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/device:GPU:0 (Tesla V100)"}},
        {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "Stream #7(Compute)"}},
    ]
    for i in range(10):  # kernels at i x 10 µs, 5 µs long; kernel 3 recorded as 3.4 s
        events.append(ev(1, 10, "cudaLaunchKernel", max(i * 10 - 2, 0), 1, i + 1))
        events.append(ev(2, 7, "k", i * 10, 3_400_000 if i == 3 else 5, i + 1))
    path = tmp_path / "host.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}).encode()))
    trace = tracelens.load(path)
    doc = tracelens.analyze(trace)
    assert doc["summary"]["gpu_utilization"] == pytest.approx(55 / 95)
    assert any("1 GPU op ended after a later op of the same stream" in w for w in trace.metadata.warnings)


def test_flops_stats_that_are_no_count_are_absent(tmp_path: Path) -> None:
    # XLA op rows' flops stat NaN, infinite, negative or past uint64 (a corrupt stat) were summed: the summary read
    # "FLOPs inf PFLOP" (with "overflow encountered" warnings on stderr). They are absent now; the counts 1..5 sum to 15.
    values = [float("nan"), float("inf"), -1e30, 1e300, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    ops = [pb.event(2, i * 10 * US, 5 * US, [pb.stat(5, double=v)]) for i, v in enumerate(values)]
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [pb.line(7, "Stream #7", 0, _kernels(0, 10)), pb.line(9, "XLA Ops", 0, ops)],
        {1: "k", 2: "fusion"},
        {1: "correlation_id", 5: "flops"},
    )
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_calls(10), gpu]))
    df = tracelens.load(path).df
    flops = df.loc[df["kind"] == "gpu_annotation", "flops"]
    assert flops.isna().sum() == 4 and flops.sum() == 15.0


def test_stream_number_past_int64_in_a_line_name(tmp_path: Path) -> None:
    # "Stream #99999999999999999999" (no CUDA/HIP stream id) stopped the read: "internal error: OverflowError:
    # Python int too large to convert to C long" (exit 3). The line is a stream line keyed by its line id.
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [pb.line(9, "Stream #99999999999999999999", 0, _kernels(0, 10))],
        {1: "k"},
        {1: "correlation_id"},
    )
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_calls(10), gpu]))
    df = tracelens.load(path).df
    kernels = df[df["kind"] == "kernel"]
    assert len(kernels) == 10 and set(kernels["stream"]) == {9}


def test_integer_stats_written_as_doubles_that_are_no_integer(tmp_path: Path) -> None:
    # correlation_id as a double NaN, infinity or 1e300 was cast to int64's minimum (numpy: "invalid value encountered
    # in cast" on stderr) and joined every such kernel to every such call; a whole double (3.0) is its integer.
    bad = [float("nan"), float("inf"), 1e300]
    host = [pb.event(1, i * 10 * US, US, [pb.stat(1, double=v)]) for i, v in enumerate(bad)]
    host.append(pb.event(1, 30 * US, US, [pb.stat(1, double=3.0)]))
    kernels = [pb.event(1, i * 10 * US + 2 * US, 5 * US, [pb.stat(1, double=v)]) for i, v in enumerate(bad)]
    kernels.append(pb.event(1, 32 * US, 5 * US, [pb.stat(1, int64=3)]))
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(
        pb.space(
            [
                pb.plane(
                    0,
                    "/host:CPU",
                    [pb.line(1, "main", 0, host)],
                    {1: "cuLaunchKernel"},
                    {1: "correlation_id"},
                ),
                pb.plane(
                    1, "/device:GPU:0", [pb.line(7, "Stream #7", 0, kernels)], {1: "k"}, {1: "correlation_id"}
                ),
            ]
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning
        df = tracelens.load(path).df
    ids = df.loc[df["kind"].isin(["kernel", "driver"]), "correlation_id"]
    assert ids.notna().sum() == 2 and set(ids.dropna()) == {3}
