"""Collective type, size and peers from the args Kineto records on NCCL kernels and their record_param_comms
ops (docs/analyses.md, "communication"): generic kernels (``ncclDevKernel_Generic``) typed by ``Collective
name``, nccl-tests' bus bandwidth from ``In msg nelems`` / ``Out msg nelems`` / ``dtype`` / ``Group size``,
process groups, and collectives on the compute stream. Expected figures are computed here from the args."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import tracelens
from tests.conftest import copy_shared_trace
from tracelens.analyses import analyze
from tracelens.analyses.communication import communication_report, recorded_collective_type
from tracelens.analyses.diagnosis.communication import (
    ON_COMPUTE_STREAM_FIX as COMMUNICATION_ON_COMPUTE_STREAM_FIX,
)

GENERIC = "ncclDevKernel_Generic"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("allreduce", "all_reduce"),
        ("allgather", "all_gather"),
        ("_allgather_base", "all_gather"),
        ("allgather_into_tensor_coalesced", "all_gather"),
        ("reduce_scatter", "reduce_scatter"),
        ("_reduce_scatter_base", "reduce_scatter"),
        ("reduce_scatter_tensor_coalesced", "reduce_scatter"),
        ("all_to_all", "all_to_all"),
        ("alltoall_base", "all_to_all"),
        ("broadcast", "broadcast"),
        ("reduce", "reduce"),
        ("send", "send_recv"),
        ("recv", "send_recv"),
        ("allreduce_coalesced", "all_reduce"),
        ("gather", "other"),
        ("scatter", "other"),
        ("wait", None),
        ("barrier", None),
    ],
)
def test_pytorch_collective_names(name, kind):
    assert recorded_collective_type(name) == kind


def _hand_trace(path: Path) -> Path:
    # us. A compute kernel "gemm" on stream 7; three generic NCCL kernels:
    #  - all-gather typed by its own args (stream 20), 100 elements in per rank, 400 out, BFloat16, 4 ranks;
    #  - one with no args of its own: its record_param_comms op (External id 50) says _reduce_scatter_base,
    #    800 in, 200 out, Float, 4 ranks;
    #  - all-reduce on the compute stream 7, 1000 Float, 4 ranks.
    def kernel(name, ts, dur, stream, corr, args=None):
        return {
            "ph": "X",
            "cat": "kernel",
            "name": name,
            "pid": 0,
            "tid": stream,
            "ts": ts,
            "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr, **(args or {})},
        }

    def launch(ts, corr, ext=None):
        return {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": ts,
            "dur": 1,
            "args": {"correlation": corr, **({"External id": ext} if ext else {})},
        }

    group = {"Group size": 4, "Process Group Name": "1", "Process Group Ranks": "[0, 1, 2, 3]"}
    events = [
        launch(0, 1),
        kernel("gemm", 10, 100, 7, 1),
        launch(1, 2),
        kernel(
            GENERIC,
            20,
            40,
            20,
            2,
            {
                "Collective name": "allgather",
                "In msg nelems": 100,
                "Out msg nelems": 400,
                "dtype": "BFloat16",
                **group,
            },
        ),
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "record_param_comms",
            "pid": 1,
            "tid": 1,
            "ts": 2,
            "dur": 3,
            "args": {
                "External id": 50,
                "Collective name": "_reduce_scatter_base",
                "In msg nelems": 800,
                "Out msg nelems": 200,
                "dtype": "Float",
                **group,
            },
        },
        launch(3, 3, ext=50),
        kernel(GENERIC, 120, 50, 20, 3, {"External id": 50}),
        launch(4, 4),
        kernel(
            GENERIC,
            200,
            80,
            7,
            4,
            {
                "Collective name": "allreduce",
                "In msg nelems": 1000,
                "Out msg nelems": 1000,
                "dtype": "Float",
                **group,
            },
        ),
    ]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_generic_kernels_typed_and_sized_from_their_args(tmp_path):
    trace = tracelens.load(_hand_trace(tmp_path / "nccl.json"))
    (device,) = communication_report(trace)["devices"]
    got = {t["type"]: t for t in device["by_type"]}
    # nccl-tests: S = the gathered output (all_gather), the reduced input (reduce_scatter), else the input;
    # busbw factor (n-1)/n, (n-1)/n, 2(n-1)/n with n = 4.
    want = {
        "all_gather": (400 * 2, 40_000, 3 / 4),
        "reduce_scatter": (800 * 4, 50_000, 3 / 4),
        "all_reduce": (1000 * 4, 80_000, 2 * 3 / 4),
    }
    assert set(got) == set(want)
    for kind, (size, ns, factor) in want.items():
        t = got[kind]
        assert (t["count"], t["bytes"], t["measured_ns"]) == (1, size, ns), kind
        assert t["algbw_bytes_per_s"] == pytest.approx(size / ns * 1e9)
        assert t["busbw_bytes_per_s"] == pytest.approx(size * factor / ns * 1e9)
    # Peers: one process group, the three collectives.
    assert device["process_groups"] == [
        {"name": "1", "ranks": "[0, 1, 2, 3]", "group_size": 4, "count": 3, "time_ns": 170_000}
    ]
    # The all-reduce shares stream 7 with the gemm: nothing can overlap it there.
    assert (device["on_compute_stream_count"], device["on_compute_stream_ns"]) == (1, 80_000)
    comm = {c["cause"]: c for c in analyze(trace)["diagnosis"]["causes"]}["communication"]
    assert comm["evidence"]["on_compute_stream_by_device"] == {"0": 80_000}
    assert comm["fix"].startswith(COMMUNICATION_ON_COMPUTE_STREAM_FIX)


@pytest.mark.shared
def test_shared_nccl_trace_typed_from_args_when_the_names_say_nothing(tmp_path):
    # The shared rank-0 trace with every NCCL kernel renamed ncclDevKernel_Generic (what newer NCCL launches):
    # the types come from the kernels' "Collective name" and the figures stay those of their args.
    path = copy_shared_trace(tmp_path, "pytorch", "a100_nccl_2rank_rank0_2024.json.gz")
    document = json.loads(gzip.decompress(path.read_bytes()))
    want: dict[str, list[float]] = {}
    groups: dict[tuple, list[int]] = {}
    for e in document["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and e["name"].startswith("nccl"):
            e["name"] = GENERIC
            args = e["args"]
            kind = {"allreduce": "all_reduce", "broadcast": "broadcast"}[args["Collective name"]]
            n = args["Group size"]
            size = args["In msg nelems"] * {"Float": 4, "Long": 8}[args["dtype"]]
            entry = want.setdefault(kind, [0, 0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += size
            entry[2] += e["dur"] * 1000
            entry[3] += size * (2 * (n - 1) / n if kind == "all_reduce" else 1.0)
            key = (args["Process Group Name"], args["Process Group Ranks"], n)
            groups.setdefault(key, [0, 0])[0] += 1
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    (device,) = [d for d in communication_report(tracelens.load(path))["devices"] if d["collective_count"]]
    got = {t["type"]: t for t in device["by_type"]}
    assert set(got) == set(want) == {"all_reduce", "broadcast"}
    for kind, (count, size, time, bus) in want.items():
        t = got[kind]
        assert (t["count"], t["measured_count"], t["bytes"]) == (count, count, size), kind
        assert t["measured_ns"] == pytest.approx(time, abs=count)
        assert t["busbw_bytes_per_s"] is not None
        assert t["busbw_bytes_per_s"] == pytest.approx(bus / time * 1e9, rel=1e-4)
    assert [(g["name"], g["ranks"], g["group_size"], g["count"]) for g in device["process_groups"]] == [
        (*key, c) for key, (c, _) in groups.items()
    ]
    # DDP runs NCCL on its own stream (40 here), not the compute stream (7).
    assert device["on_compute_stream_count"] == 0
