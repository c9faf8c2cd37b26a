"""XLA Ops lines of GPU planes read as gpu_annotation rows: collectives recognised in an XSpace built in code
with the reader's own full schema (no TensorFlow), numbers derived by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import shared_params

import tracelens
from tracelens.analyses import analyze
from tracelens.analyses.communication import communication_report
from tracelens.analyses.devices import device_utilization
from tracelens.ingest.xplane.schema import xspace_class

LINE_TS = 10_000  # ns
KERNEL_DETAILS = "regs:32 static_shared:0 dynamic_shared:0 grid:80,1,1 block:256,1,1 occ_pct:50"


def _space(with_xla_ops: bool = True, newer_names: bool = False, flops: bool = False) -> bytes:
    """/host:CPU with one launch thread; /device:GPU:0 with a stream of two kernels and (optionally) the XLA Ops
    line the profiler derives from them.

    Stream #1 (ns after LINE_TS): fusion.2 kernel "loop_add_fusion" [1000, 3000); "fusion_all_reduce" [5000, 9000).
    XLA Ops: fusion.2 [1000, 3000) over the first kernel, all-reduce.1 [4500, 9500) over the second.
    ``newer_names``: metadata named "<program id>/<op>" with the op as display name (newer profilers).
    ``flops``: the op metadata of fusion.2 carries a ``flops`` stat of 4096 (all-reduce.1 none).
    """
    space = xspace_class(lite=False)()
    host = space.planes.add(id=0, name="/host:CPU")
    host.event_metadata[1].CopyFrom(type(host.event_metadata[1])(id=1, name="cudaLaunchKernel"))
    host.stat_metadata[1].name = "correlation_id"
    thread = host.lines.add(id=7, name="launcher", timestamp_ns=LINE_TS)
    for corr, offset_ns in ((1, 500), (2, 4000)):
        event = thread.events.add(metadata_id=1, offset_ps=offset_ns * 1000, duration_ps=200_000)
        event.stats.add(metadata_id=1, int64_value=corr)

    gpu = space.planes.add(id=1, name="/device:GPU:0")
    for sid, name in (
        (1, "core_count"),
        (2, "compute_cap_major"),
        (3, "compute_cap_minor"),
        (4, "correlation_id"),
        (5, "kernel_details"),
        (6, "memory_bandwidth"),
        (7, "clock_rate"),
    ):
        gpu.stat_metadata[sid].id = sid
        gpu.stat_metadata[sid].name = name
    for sid, value in ((1, 80), (2, 7), (3, 0)):
        gpu.stats.add(metadata_id=sid, int64_value=value)
    gpu.stats.add(metadata_id=6, uint64_value=898_048_000_000)
    gpu.stats.add(metadata_id=7, int64_value=1_530_000)
    names = {1: "loop_add_fusion", 2: "fusion_all_reduce", 3: "fusion.2", 4: "all-reduce.1"}
    for mid, name in names.items():
        meta = gpu.event_metadata[mid]
        meta.id = mid
        if newer_names and mid in (3, 4):
            meta.name, meta.display_name = f"12/{name}", name
        else:
            meta.name = name
    if flops:
        gpu.stat_metadata[8].id = 8
        gpu.stat_metadata[8].name = "flops"
        gpu.event_metadata[3].stats.add(metadata_id=8, uint64_value=4096)
    stream = gpu.lines.add(id=1, name="Stream #1(Compute)", timestamp_ns=LINE_TS)
    for mid, corr, start_ns, end_ns in ((1, 1, 1000, 3000), (2, 2, 5000, 9000)):
        event = stream.events.add(
            metadata_id=mid, offset_ps=start_ns * 1000, duration_ps=(end_ns - start_ns) * 1000
        )
        event.stats.add(metadata_id=4, int64_value=corr)
        event.stats.add(metadata_id=5, str_value=KERNEL_DETAILS)
    if with_xla_ops:
        ops = gpu.lines.add(id=-559038732, name="XLA Ops", timestamp_ns=LINE_TS)
        for mid, start_ns, end_ns in ((3, 1000, 3000), (4, 4500, 9500)):
            ops.events.add(metadata_id=mid, offset_ps=start_ns * 1000, duration_ps=(end_ns - start_ns) * 1000)
    return space.SerializeToString()


@pytest.fixture(params=[False, True], ids=["op-names", "program-id-prefixed"])
def xla_trace(request, tmp_path: Path) -> tracelens.Trace:
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(_space(newer_names=request.param))
    return tracelens.load(path)


def test_xla_ops_are_gpu_annotation_rows(xla_trace) -> None:
    df = xla_trace.df
    ops = df[df["kind"] == "gpu_annotation"].sort_values("start_ns")
    assert list(ops["name"]) == ["fusion.2", "all-reduce.1"]
    # time origin = the first launch at LINE_TS + 500
    assert [(r.start_ns, r.end_ns) for r in ops.itertuples()] == [(500, 2500), (4000, 9000)]
    assert list(ops["device"]) == [0, 0]
    assert ops["stream"].isna().all() and ops["pid"].isna().all() and ops["tid"].isna().all()
    assert ops["depth"].isna().all() and ops["correlation_id"].isna().all()
    kernels = df[df["kind"] == "kernel"].sort_values("start_ns")
    assert list(kernels["name"]) == ["loop_add_fusion", "fusion_all_reduce"]
    assert list(kernels["pid"]) == [0, 0] and list(kernels["stream"]) == [1, 1]


def test_collective_inside_xla_all_reduce(xla_trace) -> None:
    report = communication_report(xla_trace)
    (device,) = report["devices"]
    # Only "fusion_all_reduce" [4500, 8500) starts inside all-reduce.1; "loop_add_fusion" is inside fusion.2.
    # C = 4000 ns, no other kernel beside it: all exposed. Span [500, 8500) = 8000: computation 2000,
    # exposed 4000, idle [2500, 4500) = 2000.
    assert report["collective_count"] == 1
    assert (device["device"], device["collective_count"], device["collective_ns"], device["exposed_ns"]) == (
        0,
        1,
        4000,
        4000,
    )
    assert device["overlap_share"] == 0.0
    assert device["breakdown"] == {
        "span_ns": 8000,
        "computation_only_ns": 2000,
        "communication_overlapped_ns": 0,
        "communication_exposed_ns": 4000,
        "memcpy_exposed_ns": 0,
        "idle_ns": 2000,
    }
    assert device["by_type"] == [
        {
            "type": "all_reduce",
            "count": 1,
            "time_ns": 4000,
            "bytes": None,
            "algbw_bytes_per_s": None,
            "busbw_bytes_per_s": None,
            "exposed_ns": 4000,
            "measured_count": 0,
            "measured_ns": 0,
        }
    ]  # xplanes record no message sizes


def test_xla_ops_are_not_gpu_time(tmp_path: Path, xla_trace) -> None:
    # The all-reduce op reaches 500 ns past its kernel on either side: busy time, span and gaps ignore it.
    (gpu,) = device_utilization(xla_trace)
    assert (gpu.busy_ns, gpu.span_ns, gpu.kernel_count, gpu.kernel_ns) == (6000, 8000, 2, 6000)
    plain = tmp_path / "plain.xplane.pb"
    plain.write_bytes(_space(with_xla_ops=False))
    with_ops, without = analyze(xla_trace), analyze(tracelens.load(plain))
    for section in ("gaps", "kernels", "devices"):
        assert with_ops[section] == without[section], section
    gaps = with_ops["gaps"]["devices"][0]
    assert (gaps["span_ns"], gaps["idle_ns"]) == (8000, 2000)
    assert without["communication"]["collective_count"] == 0


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_real_xplanes_have_no_xla_op_rows_and_unchanged_gpu_time(path) -> None:
    # The shared files hold no XLA Ops line (the AMD JAX file's GPU plane has only "Stream #2"): the same
    # kernels and busy time as before (their JSON goldens hold every number), and no annotation rows.
    trace = tracelens.load(path)
    assert not (trace.df["kind"] == "gpu_annotation").any()
    assert communication_report(trace)["collective_count"] == 0


def test_xla_op_flops_stat_fills_the_flops_column(tmp_path: Path) -> None:
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(_space(flops=True))
    df = tracelens.load(path).df
    ops = df[df["kind"] == "gpu_annotation"].sort_values("start_ns")
    assert list(ops["name"]) == ["fusion.2", "all-reduce.1"]
    assert ops["flops"].iloc[0] == 4096.0 and pd.isna(ops["flops"].iloc[1])
    assert df.loc[df["kind"] != "gpu_annotation", "flops"].isna().all()
    # Without the stat the column stays null.
    path.write_bytes(_space())
    assert tracelens.load(path).df["flops"].isna().all()
