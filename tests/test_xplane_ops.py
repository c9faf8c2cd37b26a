"""xplane op attribution (issue 18): each GPU op goes to the op the profiler recorded on it (``tf_op``, TF <= 2.5's
``level 0``, else ``<hlo_module>/<hlo_op>``), and XLA ``flops`` stats feed ``ops.by_name[].flops`` and
``ops.compute``. Expected numbers are computed here straight from the protobuf (the reader's own full schema),
not through the reader's attribution: on the JAX-on-H100 fixture, the shared real xplanes (skipped when
../shared is absent) and XSpaces built in code."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import FIXTURES, SHARED_TRACES, shared_params

import tracelens
from tracelens import peaks
from tracelens.analyses.ops import by_innermost, launching_ops, ops_report
from tracelens.ingest.xplane.schema import xspace_class

JAX_FIXTURE = FIXTURES / "gpu" / "jax_mlp_cuda.xplane.pb"
ALL = 10**9  # ops_report limit: every name


# --- expectations straight from the proto --------------------------------------------------------------------


def _value(stat, names: dict[int, str]):
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(stat, kind)
    return names.get(value, "") if kind == "ref_value" else value


def _expected_op(stats: dict) -> str | None:
    """The documented rule (docs/formats/xplane.md, "ops"), written out independently."""
    tf_op = stats.get("tf_op")
    if tf_op and tf_op != "XlaModule:":
        return tf_op
    if stats.get("level 0"):
        return stats["level 0"]
    if stats.get("hlo_op"):
        return f"{stats['hlo_module']}/{stats['hlo_op']}" if stats.get("hlo_module") else stats["hlo_op"]
    return None


def _gpu_events(path: Path) -> list[dict]:
    """Every event of every ``Stream #`` line of the /device:GPU:N planes: op, kernel or copy, ns, correlation."""
    space = xspace_class(lite=False)()
    space.ParseFromString(path.read_bytes())
    out = []
    for plane in space.planes:
        if not re.match(r"^/device:GPU:\d+$", plane.name):
            continue
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            if not (line.name.startswith("Stream #") or line.display_name.startswith("Stream #")):
                continue
            for event in line.events:
                stats = {stat_names.get(s.metadata_id): _value(s, stat_names) for s in event.stats}
                name = plane.event_metadata[event.metadata_id].name
                copy = (
                    name.upper().startswith(("MEMCPY", "MEMSET"))
                    or "memcpy_details" in stats
                    or "memset_details" in stats
                )
                # the reader's rounding: floor of the exact picosecond start and end
                ns = (event.offset_ps + event.duration_ps) // 1000 - event.offset_ps // 1000
                out.append(
                    {
                        "plane": plane.name,
                        "op": _expected_op(stats),
                        "copy": copy,
                        "ns": ns,
                        "corr": stats.get("correlation_id"),
                        "flops": stats.get("flops"),
                    }
                )
    return out


def _by_op(events: list[dict]) -> tuple[dict, dict, dict]:
    gpu, copy, launches = defaultdict(int), defaultdict(int), defaultdict(set)
    for e in events:
        if e["op"] is None:
            continue
        (copy if e["copy"] else gpu)[e["op"]] += e["ns"]
        launches[e["op"]].add((e["plane"], e["corr"]))
    return gpu, copy, {k: len(v) for k, v in launches.items()}


def _check_attribution(path: Path) -> dict:
    events = _gpu_events(path)
    recorded = [e for e in events if e["op"] is not None]
    assert recorded, "the file records ops on its GPU events"
    report = ops_report(tracelens.load(path), limit=ALL)
    rows = {r["name"]: r for r in report["by_name"]}
    gpu, copy, launches = _by_op(events)
    for op in set(gpu) | set(copy):  # every recorded op is a row with exactly its GPU ops' time
        assert rows[op]["gpu_ns"] == gpu.get(op, 0), op
        assert rows[op]["copy_ns"] == copy.get(op, 0), op
    # every GPU kernel with an op stat is attributed: the attributed kernel time covers all of them
    recorded_kernel_ns = sum(e["ns"] for e in recorded if not e["copy"])
    assert sum(r["gpu_ns"] for r in report["by_name"]) == report["attributed_kernel_ns"]
    assert report["attributed_kernel_ns"] >= recorded_kernel_ns
    assert report["unattributed_count"] <= len(events) - len(recorded)
    return {
        "report": report,
        "rows": rows,
        "gpu": gpu,
        "launches": launches,
        "events": events,
        "recorded_kernel_ns": recorded_kernel_ns,
    }


# --- the JAX-on-H100 fixture ---------------------------------------------------------------------------------


def test_jax_fixture_kernels_go_to_their_hlo_op() -> None:
    found = _check_attribution(JAX_FIXTURE)
    report, events = found["report"], found["events"]
    assert all(e["op"] is not None for e in events)  # every kernel and memset carries hlo_op / hlo_module
    # all of them: JAX ran the step as one XLA command buffer (a CUDA graph), so one HLO op
    assert set(found["gpu"]) == {"jit_train_step/command_buffer_1"}
    kernel_ns = sum(e["ns"] for e in events if not e["copy"])
    assert report["attributed_kernel_ns"] == report["kernel_ns"] == kernel_ns == found["recorded_kernel_ns"]
    assert report["attributed_copy_ns"] == report["copy_ns"] == sum(e["ns"] for e in events if e["copy"])
    assert report["unattributed_count"] == 0
    row = found["rows"]["jit_train_step/command_buffer_1"]
    assert (
        row["count"] == found["launches"]["jit_train_step/command_buffer_1"] == 10
    )  # one graph launch a step
    assert row["cpu_ns"] == 0 and row["flops"] is None


def test_jax_fixture_has_no_flops_and_says_so() -> None:
    trace = tracelens.load(JAX_FIXTURE)
    assert not any(e["flops"] is not None for e in _gpu_events(JAX_FIXTURE))
    compute = ops_report(trace)["compute"]
    assert compute["flops"] is None and compute["mfu"] is None
    assert "no XLA flops" in compute["reason"]
    # the device plane's gpu_device_name names the part, so a peak would be found
    assert trace.device_info(0)["name"] == "NVIDIA H100 80GB HBM3"
    assert peaks.device_model(trace.device_info(0)["name"]) == "H100 SXM"


# --- shared real xplanes -------------------------------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_shared_xplanes_attribute_recorded_ops(path: Path) -> None:
    found = _check_attribution(path)
    for op, n in found["launches"].items():  # names no host op has: launches (distinct correlation ids)
        if found["rows"][op]["cpu_ns"] == 0:
            assert found["rows"][op]["count"] == n


# --- XSpaces built in code -----------------------------------------------------------------------------------

LINE_TS = 10_000  # ns
DETAILS = "regs:32 static_shared:0 dynamic_shared:0 grid:80,1,1 block:256,1,1 occ_pct:50"
STATS = (
    "correlation_id",
    "kernel_details",
    "tf_op",
    "level 0",
    "hlo_op",
    "hlo_module",
    "flops",
    "gpu_device_name",
    "memcpy_details",
)
SID = {name: i + 1 for i, name in enumerate(STATS)}
# (metadata id, name, start ns, end ns, correlation id, stats)
KERNELS = (
    (
        1,
        "nvjet_sm90_gemm",
        1000,
        3000,
        1,
        {"tf_op": "model/dense/MatMul:MatMul", "hlo_op": "dot.3", "hlo_module": "cluster_0"},
    ),
    (
        2,
        "loop_add_fusion",
        3500,
        4500,
        2,
        {"tf_op": "XlaModule:", "hlo_op": "fusion.2", "hlo_module": "jit_f"},
    ),
    (3, "eigen_kernel", 5000, 6000, 3, {"level 0": "model/relu:Relu"}),
    (4, "untagged_kernel", 7000, 7500, 4, {}),
    (5, "MemcpyD2D", 8000, 8800, 5, {"hlo_op": "copy.1"}),
)
# (metadata id, name, start, end, flops on the metadata, flops on the event): the XLA Ops line
XLA_OPS = ((11, "dot.3", 900, 3100, None, 2.0e6), (12, "fusion.2", 3500, 4600, 4096, None))


def _space(xla_ops: bool = True, kernel_flops: bool = False) -> bytes:
    """One launch thread (cudaLaunchKernel inside a host op ``outer_op``), GPU:0 named an H100, the kernels above
    on Stream #1, optionally the XLA Ops line above, optionally a ``flops`` stat on the kernels instead."""
    space = xspace_class(lite=False)()
    host = space.planes.add(id=0, name="/host:CPU")
    host.event_metadata[1].name, host.event_metadata[2].name = "cudaLaunchKernel", "outer_op"
    host.stat_metadata[1].name = "correlation_id"
    thread = host.lines.add(id=7, name="launcher", timestamp_ns=LINE_TS)
    thread.events.add(metadata_id=2, offset_ps=0, duration_ps=9_000_000)
    for _, _, start, _, corr, _ in KERNELS:
        event = thread.events.add(metadata_id=1, offset_ps=(start - 500) * 1000, duration_ps=100_000)
        event.stats.add(metadata_id=1, int64_value=corr)

    gpu = space.planes.add(id=1, name="/device:GPU:0")
    for name, sid in SID.items():
        gpu.stat_metadata[sid].id, gpu.stat_metadata[sid].name = sid, name
    gpu.stats.add(metadata_id=SID["gpu_device_name"], str_value="NVIDIA H100 80GB HBM3")
    stream = gpu.lines.add(id=1, name="Stream #1(Compute)", timestamp_ns=LINE_TS)
    for mid, name, start, end, corr, stats in KERNELS:
        gpu.event_metadata[mid].id, gpu.event_metadata[mid].name = mid, name
        event = stream.events.add(metadata_id=mid, offset_ps=start * 1000, duration_ps=(end - start) * 1000)
        event.stats.add(metadata_id=SID["correlation_id"], int64_value=corr)
        if name.startswith("Memcpy"):
            event.stats.add(metadata_id=SID["memcpy_details"], str_value="size:4096 dest:0 async:1")
        else:
            event.stats.add(metadata_id=SID["kernel_details"], str_value=DETAILS)
        for stat, value in stats.items():
            event.stats.add(metadata_id=SID[stat], str_value=value)
        if kernel_flops and not name.startswith("Memcpy"):
            event.stats.add(metadata_id=SID["flops"], double_value=1000.0 * mid)
    if xla_ops:
        line = gpu.lines.add(id=2, name="XLA Ops", timestamp_ns=LINE_TS)
        for mid, name, start, end, meta_flops, event_flops in XLA_OPS:
            gpu.event_metadata[mid].id, gpu.event_metadata[mid].name = mid, name
            if meta_flops is not None:
                gpu.event_metadata[mid].stats.add(metadata_id=SID["flops"], uint64_value=meta_flops)
            event = line.events.add(metadata_id=mid, offset_ps=start * 1000, duration_ps=(end - start) * 1000)
            if event_flops is not None:
                event.stats.add(metadata_id=SID["flops"], double_value=event_flops)
    return space.SerializeToString()


def _xla_flops(data: bytes) -> dict[str, float]:
    """The flops of each XLA op read from the proto: the event's stat, else its metadata's."""
    space = xspace_class(lite=False)()
    space.ParseFromString(data)
    out = {}
    for plane in space.planes:
        flops_id = next((k for k, v in plane.stat_metadata.items() if v.name == "flops"), None)
        for line in plane.lines:
            if line.name != "XLA Ops":
                continue
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                own = [_value(s, {}) for s in event.stats if s.metadata_id == flops_id]
                from_meta = [_value(s, {}) for s in meta.stats if s.metadata_id == flops_id]
                if own or from_meta:
                    out[meta.name] = float((own or from_meta)[-1])
    return out


@pytest.fixture
def built(tmp_path: Path):
    def make(**kwargs) -> tuple[Path, bytes]:
        data = _space(**kwargs)
        path = tmp_path / "host0.xplane.pb"
        path.write_bytes(data)
        return path, data

    return make


def test_recorded_ops_win_over_the_launching_host_op(built) -> None:
    path, _ = built(xla_ops=False)
    found = _check_attribution(path)
    rows, report = found["rows"], found["report"]
    assert rows["model/dense/MatMul:MatMul"]["gpu_ns"] == 2000  # tf_op beats hlo_op
    assert rows["jit_f/fusion.2"]["gpu_ns"] == 1000  # XlaModule: placeholder -> <module>/<hlo op>
    assert rows["model/relu:Relu"]["gpu_ns"] == 1000  # TF <= 2.5 level 0
    assert rows["copy.1"]["copy_ns"] == 800 and rows["copy.1"]["gpu_ns"] == 0  # hlo_op without a module
    # the kernel with no op stat: the host op around its launch call (correlation join), as in Kineto
    assert rows["outer_op"]["gpu_ns"] == 500 and rows["outer_op"]["count"] == 1
    assert rows["outer_op"]["cpu_ns"] == 9000
    assert report["attributed_kernel_ns"] == report["kernel_ns"] == 4500
    assert report["unattributed_count"] == 0
    assert all(rows[op]["count"] == 1 and rows[op]["cpu_ns"] == 0 for op in found["launches"])
    assert report["compute"]["flops"] is None


def test_xla_op_flops_feed_by_name_and_compute(built) -> None:
    path, data = built()
    expected = _xla_flops(data)
    assert expected == {"dot.3": 2.0e6, "fusion.2": 4096.0}
    report = ops_report(tracelens.load(path), limit=ALL)
    rows = {r["name"]: r for r in report["by_name"]}
    # each XLA op's FLOPs go to the op of the first GPU op it covers
    assert rows["model/dense/MatMul:MatMul"]["flops"] == expected["dot.3"]
    assert rows["jit_f/fusion.2"]["flops"] == expected["fusion.2"]
    assert rows["model/relu:Relu"]["flops"] is None  # no XLA op with flops covers it: not modelled ("–")
    compute = report["compute"]
    assert compute["flops"] == sum(expected.values())
    # Coverage: the kernels starting inside a counted XLA op on their device (dot.3 [900, 3100) holds the
    # 2000 ns gemm, fusion.2 [3500, 4600) the 1000 ns fusion) over the 4500 ns of kernels.
    assert compute["coverage"] == pytest.approx(3000 / 4500)
    assert compute["flops_by_class"] == {"matmul": 2.0e6, "conv": 0.0, "attention": 0.0, "other": 4096.0}
    assert compute["flops_by_dtype"] == {"unknown": sum(expected.values())}
    assert compute["span_ns"] == 8800 - 1000
    assert compute["achieved_flops_per_s"] == pytest.approx(sum(expected.values()) / 7800e-9)
    assert compute["device_model"] == "H100 SXM"  # from the plane's gpu_device_name
    # no dtype is recorded for XLA ops and none is assumed: no peak, no MFU, and the reason says why
    assert compute["mfu"] is None and "dtype" in compute["reason"]


def test_kernel_flops_when_no_xla_op_has_any(built) -> None:
    path, data = built(xla_ops=False, kernel_flops=True)
    flops = {e["op"]: e["flops"] for e in _gpu_events(path) if e["flops"] is not None}
    report = ops_report(tracelens.load(path), limit=ALL)
    assert report["compute"]["flops"] == sum(flops.values()) == 1000.0 * (1 + 2 + 3 + 4)
    rows = {r["name"]: r for r in report["by_name"]}
    assert rows["model/dense/MatMul:MatMul"]["flops"] == flops["model/dense/MatMul:MatMul"]
    assert rows["outer_op"]["flops"] == 4000.0  # the untagged kernel's op: the join's
    assert report["compute"]["flops_by_class"]["matmul"] == 1000.0  # nvjet GEMM under dot.3's TF op


def test_the_op_column_is_on_gpu_rows_only(built) -> None:
    path, _ = built()
    df = tracelens.load(path).df
    tagged = df[df["op"].notna()]
    assert set(tagged["kind"].astype(str)) == {"kernel", "memcpy"}
    assert sorted(tagged["op"].astype(str)) == sorted(_expected_op(s) for *_, s in KERNELS if _expected_op(s))


@pytest.mark.parametrize(
    "path",
    [JAX_FIXTURE, SHARED_TRACES / "tf" / "amd_gpu_jax_te_fused_attn.xplane.pb"],
    ids=["jax_fixture", "amd_jax"],
)
def test_innermost_and_launching_ops_use_the_recorded_op(path: Path) -> None:
    # The op recorded on a GPU op is also its innermost op and the op that launched it (diagnosis evidence).
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    events = _gpu_events(path)
    gpu, _, launches = _by_op(events)
    kernels = defaultdict(int)
    for e in events:
        if e["op"] is not None and not e["copy"]:
            kernels[e["op"]] += 1
    trace = tracelens.load(path)
    inner = {r["name"]: r for r in by_innermost(trace, limit=ALL)}
    for op, ns in gpu.items():
        assert inner[op]["gpu_ns"] == ns and inner[op]["kernels"] == kernels[op], op
    for row in launching_ops(trace, limit=ALL):
        op = row["name"]
        assert (row["kernels"], row["kernel_ns"], row["instances"]) == (kernels[op], gpu[op], launches[op]), (
            op
        )


def test_long_gaps_name_the_recorded_ops_around_them() -> None:
    # Every GPU event of the JAX fixture records jit_train_step/command_buffer_1: the ops before and after each
    # long gap are that op (the host join alone found none around a command-buffer launch).
    from tracelens.analyses.ops import gap_ops

    gaps = gap_ops(tracelens.load(JAX_FIXTURE))
    assert gaps and all(g["op_before"] == g["op_after"] == "jit_train_step/command_buffer_1" for g in gaps)
