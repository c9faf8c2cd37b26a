"""The hosts of a run number their correlation ids each from its own start (CUPTI's and ROCm's ids are per
process): the same id on two hosts is two launches. Joined by id alone, host b's kernels were matched to host a's
calls ("400 GPU ops matched to 200 calls"), and with the hosts' clocks apart, the launch time of both hosts' gaps
was lost ("launch 0 ns"). Each host's ids are now shifted past the previous hosts' (docs/formats/xplane.md)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.analyses import analyze

US = 1_000_000  # ps
N = 50
START = 1_700_000_000_000_000_000  # unix ns


def _host(start_ns: int, busy_us: int) -> bytes:
    # kernel i at [100 i + 50, 100 i + 50 + busy) us with correlation id i + 1; its launch call at
    # [100 i + 10, 100 i + 15): in the GPU's idle gap before the kernel (busy <= 60), 35 us before it
    env = pb.plane(9, "Task Environment", [], {}, {1: "profile_start_time"}, [pb.stat(1, uint64=start_ns)])
    kernels = [pb.event(1, (i * 100 + 50) * US, busy_us * US, [pb.stat(1, int64=i + 1)]) for i in range(N)]
    calls = [pb.event(2, (i * 100 + 10) * US, 5 * US, [pb.stat(1, int64=i + 1)]) for i in range(N)]
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 0, kernels)], {1: "k"}, {1: "correlation_id"})
    host = pb.plane(
        0, "/host:CPU", [pb.line(11, "python3", 0, calls)], {2: "cudaLaunchKernel"}, {1: "correlation_id"}
    )
    return pb.space([env, host, gpu])


@pytest.mark.parametrize("apart_ns", [0, 3600 * 10**9], ids=["same-clock", "hour-apart"])
def test_each_hosts_kernels_join_their_own_hosts_calls(tmp_path: Path, apart_ns: int) -> None:
    (tmp_path / "a.xplane.pb").write_bytes(_host(START, busy_us=40))
    (tmp_path / "b.xplane.pb").write_bytes(_host(START + apart_ns, busy_us=20))
    trace = tracelens.load(tmp_path)
    rows = trace.events.select(["kind", "pid", "correlation_id"]).to_pylist()
    for kind in ("kernel", "runtime"):
        ids = [(r["pid"], r["correlation_id"]) for r in rows if r["kind"] == kind]
        assert len({c for _, c in ids}) == 2 * N, kind  # unique across the hosts
    by_id = {r["correlation_id"]: r["pid"] for r in rows if r["kind"] == "runtime"}
    assert all(by_id[r["correlation_id"]] == r["pid"] for r in rows if r["kind"] == "kernel")

    doc = analyze(trace)
    assert doc["launch"]["matched_ops"] == 2 * N
    assert doc["launch"]["latency"]["count"] == 2 * N
    latency = doc["launch"]["latency"]
    assert latency["max_ns"] == latency["p50_ns"] == 35_000  # from each call's end to its kernel
    for device in doc["attribution"]["devices"]:
        # N - 1 gaps, each with the next kernel's 5 us call in it
        assert device["by_cause"]["launch"] == (N - 1) * 5_000, device


def test_one_host_keeps_its_ids(tmp_path: Path) -> None:
    (tmp_path / "a.xplane.pb").write_bytes(_host(START, busy_us=40))
    rows = tracelens.load(tmp_path).events.select(["kind", "correlation_id"]).to_pylist()
    assert sorted(r["correlation_id"] for r in rows if r["kind"] == "kernel") == list(range(1, N + 1))


def test_legacy_trace_json_hosts_too(tmp_path: Path) -> None:
    def host(busy_us: float) -> bytes:
        events = [
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/host:CPU"}},
            {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/device:GPU:0"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "python3"}},
            {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "Stream #7(Compute)"}},
        ]
        for i in range(N):
            call_ts = float(i * 100 - 20 if i else 0)
            args = {"correlation_id": str(i + 1)}
            events.append(
                {
                    "ph": "X",
                    "pid": 1,
                    "tid": 11,
                    "name": "cudaLaunchKernel",
                    "ts": call_ts,
                    "dur": 5.0,
                    "args": args,
                }
            )
            events.append(
                {
                    "ph": "X",
                    "pid": 2,
                    "tid": 7,
                    "name": "k",
                    "ts": float(i * 100),
                    "dur": busy_us,
                    "args": args,
                }
            )
        return gzip.compress(json.dumps({"traceEvents": events}).encode())

    (tmp_path / "a.trace.json.gz").write_bytes(host(80.0))
    (tmp_path / "b.trace.json.gz").write_bytes(host(40.0))
    rows = tracelens.load(tmp_path).events.select(["kind", "pid", "correlation_id"]).to_pylist()
    by_id = {r["correlation_id"]: r["pid"] for r in rows if r["kind"] == "runtime"}
    assert len(by_id) == 2 * N
    assert all(by_id[r["correlation_id"]] == r["pid"] for r in rows if r["kind"] == "kernel")
