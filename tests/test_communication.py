"""Collectives and the per-device time breakdown (tracelens/analyses/communication.py), derived by hand and
against independent computations on real traces."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import tracelens
from tests.conftest import SHARED_TRACES, copy_shared_trace, shared_params
from tests.reference import union_length
from tracelens.analyses.communication import collective_type, communication_report
from tracelens.trace import Trace

SHARED = SHARED_TRACES


def _gpu(kind: str, name: str, start: int, end: int, device: int = 0, stream: int = 7) -> dict:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "device": device, "stream": stream}


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reduce_scatter"),
        ("ncclDevKernel_SendRecv(ncclDevComm*)", "send_recv"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "broadcast"),
        ("ncclDevKernel_Generic_1(ncclDevComm*)", "other"),
        ("rcclGenericKernel", "other"),
        ("all-reduce-start.3", "all_reduce"),
        ("all-gather.1", "all_gather"),
        ("%reduce-scatter", "reduce_scatter"),
        ("all-to-all.2", "all_to_all"),
        ("collective-permute-done", "collective_permute"),
        ("fusion.3", None),
        ("void at::native::reduce_kernel<512, 1>", None),
        ("__amd_rocclr_fillBufferAligned.kd", None),
    ],
)
def test_collective_names(name, kind):
    assert collective_type(name) == kind


def test_hand_built_breakdown():
    # GPU 0: compute [0,100) and [200,300); an all-reduce [50,150); a copy [150,170). Span 300.
    #   C = [50,150) = 100; K = [0,100) + [200,300) = 200; overlap [50,100) = 50; exposed [100,150) = 50.
    #   computation only = 200 - 50 = 150; copy not overlapped [150,170) = 20; idle [170,200) = 30.
    #   150 + 50 + 50 + 20 + 30 = 300.
    # GPU 1: XLA op all-gather-start.1 [0,40) on the device (an annotation, not GPU time) with a kernel
    #   "fusion_all_gather" [10,30) starting inside it: a collective by its op; C = 20, all exposed (no other
    #   kernel); a compute kernel [50,60) after it; span [10,60) = 50: computation 10, exposed 20, idle 20.
    rows = [
        _gpu("kernel", "gemm", 0, 100),
        _gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150),
        _gpu("memcpy", "Memcpy HtoD", 150, 170),
        _gpu("kernel", "gemm", 200, 300),
        _gpu("gpu_annotation", "all-gather-start.1", 0, 40, device=1),
        _gpu("kernel", "fusion_all_gather", 10, 30, device=1),
        _gpu("kernel", "fusion.2", 50, 60, device=1),
    ]
    report = communication_report(Trace.from_rows(rows))
    dev0, dev1 = report["devices"]
    assert (dev0["collective_count"], dev0["collective_ns"], dev0["exposed_ns"]) == (1, 100, 50)
    assert dev0["overlap_share"] == pytest.approx(0.5)
    assert dev0["breakdown"] == {
        "span_ns": 300,
        "computation_only_ns": 150,
        "communication_overlapped_ns": 50,
        "communication_exposed_ns": 50,
        "memcpy_exposed_ns": 20,
        "idle_ns": 30,
    }
    # The all-reduce [50,150) has gemm [0,100) beside it for 50 ns: 50 of its own 100 ns are exposed.
    assert dev0["by_type"] == [
        {
            "type": "all_reduce",
            "count": 1,
            "time_ns": 100,
            "bytes": None,
            "algbw_bytes_per_s": None,
            "busbw_bytes_per_s": None,
            "exposed_ns": 50,
            "measured_count": 0,
            "measured_ns": 0,
        }
    ]
    assert (dev1["collective_ns"], dev1["exposed_ns"], dev1["overlap_share"]) == (20, 20, 0.0)
    assert dev1["breakdown"] == {
        "span_ns": 50,
        "computation_only_ns": 10,
        "communication_overlapped_ns": 0,
        "communication_exposed_ns": 20,
        "memcpy_exposed_ns": 0,
        "idle_ns": 20,
    }
    assert dev1["by_type"][0]["type"] == "all_gather"
    assert report["collective_count"] == 2


def _coll(name: str, start: int, end: int, device: int = 0, **message) -> dict:
    return {**_gpu("kernel", name, start, end, device), **message}


def _message(in_elems: int | None, out_elems: int | None, dtype: str, group: int | None = None) -> dict:
    return {"msg_in_elems": in_elems, "msg_out_elems": out_elems, "msg_dtype": dtype, "group_size": group}


def test_bytes_and_bandwidth_by_type_by_hand():
    # nccl-tests (doc/PERFORMANCE.md): algbw = S / t, busbw = algbw x factor; S is the gathered output of an
    # all-gather and the reduced input of a reduce-scatter. GPU 0, times in ns (B/ns = 1e9 B/s):
    #   all-reduce [0,1000)  250 Float (4 B) n=4 -> S 1000 B; algbw 1 B/ns; factor 2*3/4 = 1.5 -> busbw 1.5 B/ns
    #   gemm [900,2100) beside it: 900 of the all-reduce's 1000 ns are exposed
    #   all-gather [2000,2500) in 100 / out 400 BFloat16 (2 B) n=4 -> S = 400*2 = 800; 1.6 B/ns; x 3/4 = 1.2;
    #     exposed [2100,2500) = 400
    #   reduce-scatter [3000,3400) in 400 / out 100 Half (2 B) n=4 -> S = 800; 2 B/ns; x 3/4 = 1.5
    #   broadcast [4000,4100) 50 Double (8 B), group size not recorded -> S 400; 4 B/ns; factor 1 needs no n
    #   all-reduce [5000,5500) without a message: counted (2 all-reduces, 1500 ns, 900 + 500 exposed), not measured
    #   all-to-all [6000,6200) 100 Float, no group size -> S 400; algbw 2 B/ns; busbw unknown ((n-1)/n needs n)
    #   reduce [6500,6600) with a dtype nobody knows -> no size
    # GPU 1: an all-reduce [0,400) whose kernel has no message; its record_param_comms op (External id 42)
    #   has 100 Float n=2 -> S 400; algbw 1 B/ns; factor 2*1/2 = 1 -> busbw 1 B/ns. The launch call with the
    #   same External id carries no message and changes nothing.
    rows = [
        _coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000, **_message(250, 250, "Float", 4)),
        _gpu("kernel", "gemm", 900, 2100),
        _coll("ncclDevKernel_AllGather_RING_LL", 2000, 2500, **_message(100, 400, "BFloat16", 4)),
        _coll("ncclDevKernel_ReduceScatter_Sum_f16_RING_LL", 3000, 3400, **_message(400, 100, "Half", 4)),
        _coll("ncclKernel_Broadcast_RING_LL_Sum_int8_t", 4000, 4100, **_message(50, 50, "Double")),
        _coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 5000, 5500),
        _coll("ncclDevKernel_AllToAll_RING_LL", 6000, 6200, **_message(100, 100, "Float")),
        _coll("ncclKernel_Reduce_RING_LL_Sum_float", 6500, 6600, **_message(100, None, "mystery", 4)),
        _coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 400, device=1, external_id=42),
        {
            "kind": "cpu_op",
            "name": "record_param_comms",
            "start_ns": 0,
            "end_ns": 10,
            "pid": 1,
            "tid": 1,
            "external_id": 42,
            **_message(100, 100, "Float", 2),
        },
        {
            "kind": "runtime",
            "name": "cudaLaunchKernel",
            "start_ns": 1,
            "end_ns": 5,
            "pid": 1,
            "tid": 1,
            "external_id": 42,
        },
    ]
    dev0, dev1 = communication_report(Trace.from_rows(rows))["devices"]
    got = {t["type"]: t for t in dev0["by_type"]}
    assert list(got) == ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce"]
    want = {  # type: (count, time, exposed, bytes, measured count, measured ns, algbw, busbw) in B/s
        "all_reduce": (2, 1500, 1400, 1000, 1, 1000, 1e9, 1.5e9),
        "all_gather": (1, 500, 400, 800, 1, 500, 1.6e9, 1.2e9),
        "reduce_scatter": (1, 400, 400, 800, 1, 400, 2e9, 1.5e9),
        "all_to_all": (1, 200, 200, 400, 1, 200, 2e9, None),
        "broadcast": (1, 100, 100, 400, 1, 100, 4e9, 4e9),
        "reduce": (1, 100, 100, None, 0, 0, None, None),
    }
    for kind, (count, time, exposed, nbytes, measured, measured_ns, algbw, busbw) in want.items():
        t = got[kind]
        assert (
            t["count"],
            t["time_ns"],
            t["exposed_ns"],
            t["bytes"],
            t["measured_count"],
            t["measured_ns"],
        ) == (count, time, exposed, nbytes, measured, measured_ns), kind
        assert t["algbw_bytes_per_s"] == (None if algbw is None else pytest.approx(algbw)), kind
        assert t["busbw_bytes_per_s"] == (None if busbw is None else pytest.approx(busbw)), kind
    (ar1,) = dev1["by_type"]
    assert (ar1["bytes"], ar1["algbw_bytes_per_s"], ar1["busbw_bytes_per_s"]) == (
        400,
        pytest.approx(1e9),
        pytest.approx(1e9),
    )


@pytest.mark.parametrize(
    ("kind", "n", "factor"),
    [
        ("all_reduce", 8, 2 * 7 / 8),
        ("all_gather", 8, 7 / 8),
        ("reduce_scatter", 2, 1 / 2),
        ("all_to_all", 4, 3 / 4),
        ("broadcast", 8, 1.0),
        ("reduce", None, 1.0),
        ("send_recv", 2, 1.0),
        ("collective_permute", None, 1.0),
        ("all_reduce", 1, 0.0),
        ("all_reduce", None, None),
        ("other", 8, None),
    ],
)
def test_bus_factor_is_nccl_tests_table(kind, n, factor):
    from tracelens.analyses.communication import bus_factor

    got = bus_factor(np.array([kind], object), np.array([np.nan if n is None else n]))[0]
    assert np.isnan(got) if factor is None else got == pytest.approx(factor)


@pytest.mark.shared
def test_nccl_trace_against_the_json():
    path = SHARED / "pytorch" / "a100_nccl_2rank_rank0_2024.json.gz"
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    # Times in ns from the file's µs (floats with ns digits); the reader's rounding may move each edge 1 ns.
    nccl = [
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
        for e in kernels
        if e["name"].startswith("ncclKernel_")
    ]
    other = [
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
        for e in kernels
        if not e["name"].startswith("ncclKernel_")
    ]
    collective = union_length(nccl)
    exposed = union_length(nccl + other) - union_length(other)
    (device,) = [d for d in communication_report(tracelens.load(path))["devices"] if d["collective_count"]]
    assert device["collective_count"] == len(nccl) == 21
    assert device["collective_ns"] == pytest.approx(collective, abs=2 * len(nccl))
    assert device["exposed_ns"] == pytest.approx(exposed, abs=2 * len(kernels))
    assert 0.54 <= 1 - device["overlap_share"] <= 0.90  # most NCCL time overlaps no compute kernel here
    assert {t["type"]: t["count"] for t in device["by_type"]} == {"all_reduce": 15, "broadcast": 6}


@pytest.mark.shared
def test_nccl_trace_bytes_and_bandwidth_against_the_json():
    # nccl-tests' figures computed here from the kernels' own args (Kineto records `Collective name`,
    # `In msg nelems`, `dtype`, `Group size` on each NCCL kernel): S = nelems x 4 (Float) or 8 (Long) for all-reduce and
    # broadcast, factor 2(n-1)/n and 1, time = the kernel's dur (us -> ns, rounded: 1 ns per kernel of slack).
    path = SHARED / "pytorch" / "a100_nccl_2rank_rank0_2024.json.gz"
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    kernels = [
        e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel" and e["name"].startswith("nccl")
    ]
    want: dict[str, list[float]] = {}
    for e in kernels:
        args = e["args"]
        kind = {"allreduce": "all_reduce", "broadcast": "broadcast"}[args["Collective name"]]
        n = args["Group size"]
        factor = 2 * (n - 1) / n if kind == "all_reduce" else 1.0
        size = args["In msg nelems"] * {"Float": 4, "Long": 8}[args["dtype"]]
        entry = want.setdefault(kind, [0, 0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += size
        entry[2] += e["dur"] * 1000
        entry[3] += size * factor
    trace = tracelens.load(path)
    (device,) = [d for d in communication_report(trace)["devices"] if d["collective_count"]]
    got = {t["type"]: t for t in device["by_type"]}
    assert set(got) == set(want) == {"all_reduce", "broadcast"}
    for kind, (count, size, time, bus) in want.items():
        t = got[kind]
        assert (t["measured_count"], t["bytes"]) == (count, size), kind
        assert t["measured_ns"] == pytest.approx(time, abs=count)
        assert t["algbw_bytes_per_s"] == pytest.approx(size / time * 1e9, rel=1e-4)
        assert t["busbw_bytes_per_s"] == pytest.approx(bus / time * 1e9, rel=1e-4)
    # The cause: A100 (PG509 is an SXM4 board) -> NVLink 3, 300 GB/s one direction; busbw over both types.
    from tracelens.analyses import analyze

    causes = {c["cause"]: c for c in analyze(trace)["diagnosis"]["causes"]}
    ev = causes["communication"]["evidence"]
    busbw = sum(w[3] for w in want.values()) / sum(w[2] for w in want.values()) * 1e9
    assert ev["busbw_bytes_per_s"] == pytest.approx(busbw, rel=1e-4)
    assert (ev["link"], ev["link_peak_bytes_per_s"]) == ("NVLink 3", 300e9)
    assert ev["link_fraction"] == pytest.approx(busbw / 300e9, rel=1e-4)
    assert ev["remedy"] == "overlap"  # about 2% of the link: not the link's limit


@pytest.mark.shared
@pytest.mark.parametrize(
    "path",
    shared_params("nsys", "*.sqlite")
    + shared_params("pytorch", "*.json.gz")
    + shared_params("tf", "*.xplane.pb"),
)
def test_breakdown_sums_to_the_span_on_real_traces(path):
    doc = tracelens.analyze(tracelens.load(path))
    gaps = {d["device"]: d for d in doc["gaps"]["devices"]}
    for device in doc["communication"]["devices"]:
        parts = device["breakdown"]
        assert sum(v for k, v in parts.items() if k != "span_ns") == parts["span_ns"]
        assert min(parts.values()) >= 0
        # The same span and idle time as the gaps section: collectives are busy time there too.
        assert (parts["span_ns"], parts["idle_ns"]) == (
            gaps[device["device"]]["span_ns"],
            gaps[device["device"]]["idle_ns"],
        )


def test_nsys_export_with_renamed_collective_kernels(tmp_path):
    # A copy of the 2026.2 window export whose most frequent kernel (demangled name, what the reader shows) is
    # renamed to an NCCL all-reduce:
    # the collective time is that name's kernel union per device, computed here in SQL and plain Python.
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    with sqlite3.connect(path) as con:
        ((name_id,),) = con.execute(
            "SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName "
            "ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchall()
        con.execute(
            "UPDATE StringIds SET value = 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL' WHERE id = ?", (name_id,)
        )
        rows = con.execute(
            "SELECT deviceId, start, end, demangledName = ? FROM CUPTI_ACTIVITY_KIND_KERNEL", (name_id,)
        ).fetchall()
    report = {d["device"]: d for d in communication_report(tracelens.load(path))["devices"]}
    for device in {r[0] for r in rows}:
        coll = [(s, e) for d, s, e, c in rows if d == device and c]
        other = [(s, e) for d, s, e, c in rows if d == device and not c]
        assert report[device]["collective_count"] == len(coll)
        assert report[device]["collective_ns"] == union_length(coll)
        assert report[device]["exposed_ns"] == union_length(coll + other) - union_length(other)


def test_communication_cause_in_the_diagnosis():
    # The hand-built case: exposed 50 ns on GPU 0 and 20 ns on GPU 1; span = union of the device spans [0,300) =
    # 300. GPU-time weighted device-mean: GPU 0 spans 300, GPU 1 [10,60) = 50, so n_eff = 350 / 300 and the loss
    # is 70 / n_eff = 60 (the plain mean read 35) -> share 60/300. GPU 1 is busy 30 ns against GPU 0's 270 (span
    # 300 - idle 30); it spans 50 of 300 ns (over 5%): compared, imbalance (270 - 30) / 2 = 120 ranks first.
    from tracelens.analyses import analyze
    from tracelens.analyses.diagnosis.communication import FIX as COMMUNICATION_FIX

    # The collectives on their own stream (20), beside the computation's (7).
    rows = [
        _gpu("kernel", "gemm", 0, 100),
        _gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150, stream=20),
        _gpu("memcpy", "Memcpy HtoD", 150, 170),
        _gpu("kernel", "gemm", 200, 300),
        _gpu("gpu_annotation", "all-gather-start.1", 0, 40, device=1),
        _gpu("kernel", "fusion_all_gather", 10, 30, device=1, stream=20),
        _gpu("kernel", "fusion.2", 50, 60, device=1),
    ]
    diagnosis = analyze(Trace.from_rows(rows))["diagnosis"]
    causes = {c["cause"]: c for c in diagnosis["causes"]}
    comm = causes["communication"]
    assert (comm["lost_ns"], comm["share"]) == (60, pytest.approx(60 / 300))
    assert comm["evidence"]["exposed_by_device"] == {"0": 50, "1": 20}
    assert comm["evidence"]["overlap_share"] == pytest.approx(1 - 70 / 120)
    assert [t["type"] for t in comm["evidence"]["by_type"]] == ["all_reduce", "all_gather"]
    assert comm["fix"] == COMMUNICATION_FIX["default"]
    assert (diagnosis["primary"]["cause"], diagnosis["primary"]["lost_ns"]) == ("multi_gpu_imbalance", 120)
    # Per device, not averaged: GPU 1 waits the most; its own losses are the 20 ns all-gather with nothing
    # beside it and the 20 ns gap [30,50) with nothing on the host: a tie, communication listed first.
    ev = diagnosis["primary"]["evidence"]
    assert (ev["busiest_device"], ev["least_busy_device"]) == (0, 1)
    assert ev["least_busy_own_cause"] == {"cause": "communication", "lost_ns": 20}


def test_breakdown_bars_in_the_terminal_fit_its_width():
    from tracelens.analyses import analyze
    from tracelens.report import terminal

    rows = [
        _gpu("kernel", "gemm", 0, 100),
        _gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150),
        _gpu("memcpy", "Memcpy HtoD", 150, 170),
        _gpu("kernel", "gemm", 200, 300),
    ]
    text = terminal.render(analyze(Trace.from_rows(rows)))
    assert max(len(line) for line in text.split("\n")) <= terminal.WIDTH
    # 40 cells over the 300 ns span: 150 computation only, 50 overlapped, 50 exposed, 20 copies, 30 idle
    assert "GPU 0 " + "█" * 20 + "▓" * 7 + "▒" * 7 + "░" * 2 + "·" * 4 + " span 300 ns" in text
    assert "exposed 50 ns" in text


def _comm_cause(rows: list[dict], devices: list[dict] | None = None) -> dict:
    from tracelens.analyses import analyze

    causes = analyze(Trace.from_rows(rows, devices=devices))["diagnosis"]["causes"]
    return {c["cause"]: c for c in causes}["communication"]


A100_SXM = [{"id": 0, "name": "NVIDIA A100-SXM4-40GB"}]


def test_communication_evidence_bus_bandwidth_against_the_link():
    # A100 SXM: NVLink 3, 600 GB/s bidirectional -> 300 GB/s one direction (gpu_specs), what busbw compares to.
    # all-reduce [0,1000): 60000 Float = 240000 B, n = 2 (factor 2*1/2 = 1) -> busbw 240 B/ns = 240 GB/s, 0.8
    # all-gather [2000,3000): 30000 BFloat16 gathered = 60000 B, n = 2 (factor 1/2) -> 30 GB/s, 0.1;
    #   gemm [2000,2800) beside it: 200 ns exposed, against the all-reduce's 1000
    # Over both: (240000 x 1 + 60000 x 0.5) B / 2000 ns = 135 GB/s -> 0.45 of the link: below 0.7, remedy overlap
    rows = [
        _coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000, **_message(60000, 60000, "Float", 2)),
        _coll("ncclDevKernel_AllGather_RING_LL", 2000, 3000, **_message(15000, 30000, "BFloat16", 2)),
        _gpu("kernel", "gemm", 2000, 2800),
    ]
    ev = _comm_cause(rows, A100_SXM)["evidence"]
    assert (ev["link"], ev["link_peak_bytes_per_s"]) == ("NVLink 3", 300e9)
    assert ev["link_unknown_reason"] is None
    assert ev["busbw_bytes_per_s"] == pytest.approx(135e9)
    assert ev["link_fraction"] == pytest.approx(0.45)
    by_type = {t["type"]: t for t in ev["by_type"]}
    assert (by_type["all_reduce"]["bytes"], by_type["all_gather"]["bytes"]) == (240000, 60000)
    assert by_type["all_reduce"]["busbw_bytes_per_s"] == pytest.approx(240e9)
    assert by_type["all_reduce"]["link_fraction"] == pytest.approx(0.8)
    assert by_type["all_gather"]["link_fraction"] == pytest.approx(0.1)
    assert (by_type["all_reduce"]["exposed_ns"], by_type["all_gather"]["exposed_ns"]) == (1000, 200)
    assert ev["responsible"] == ["all_reduce", "all_gather"]
    assert ev["remedy"] == "overlap"


def test_collectives_near_the_link_peak_get_the_link_bound_fix():
    # The all-reduce alone: 240 GB/s of 300 = 0.8 >= 0.7: the link is the limit, overlap or fewer bytes.
    from tracelens.analyses.diagnosis.communication import FIX as COMMUNICATION_FIX
    from tracelens.analyses.diagnosis.communication import LINK_BOUND_FIX as COMMUNICATION_LINK_BOUND_FIX

    rows = [_coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000, **_message(60000, 60000, "Float", 2))]
    cause = _comm_cause(rows, A100_SXM)
    assert cause["evidence"]["link_fraction"] == pytest.approx(0.8)
    assert cause["evidence"]["remedy"] == "link_bound"
    assert cause["fix"] == COMMUNICATION_LINK_BOUND_FIX + " " + COMMUNICATION_FIX["default"]
    # The finding: 240e9 B/s = 223.5 GiB/s, 300e9 = 279.4 GiB/s (the reports' binary units).
    from tracelens.report.findings import sentence

    assert "; bus bandwidth 223.5 GiB/s (80.0% of NVLink 3's 279.4 GiB/s)" in sentence(cause)


@pytest.mark.parametrize(
    ("devices", "reason"),
    [
        (None, "the trace does not name the GPU model"),
        ([{"id": 0, "name": "AMD Instinct MI250X"}], "no link figure for GPU model 'AMD Instinct MI250X'"),
    ],
)
def test_unknown_link_is_null_with_a_reason(devices, reason):
    rows = [_coll("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 1000, **_message(60000, 60000, "Float", 2))]
    ev = _comm_cause(rows, devices)["evidence"]
    assert (ev["link"], ev["link_peak_bytes_per_s"], ev["link_fraction"]) == (None, None, None)
    assert ev["link_unknown_reason"] == reason
    assert ev["busbw_bytes_per_s"] == pytest.approx(240e9)  # measured all the same
    assert ev["remedy"] == "overlap"


@pytest.mark.parametrize(
    ("name", "link", "peak"),
    [
        ("NVIDIA H100 80GB HBM3", "NVLink 4", 450e9),
        ("Tesla V100-SXM2-16GB", "NVLink 2", 150e9),
        ("AMD Instinct MI300X", "Infinity Fabric (xGMI), 7 links", 448e9),
        ("NVIDIA A100-PCIe-40GB", "PCIe gen4 x16", 31.508e9),
    ],
)
def test_collective_link_table(name, link, peak):
    from tracelens.gpu_specs import collective_link

    got = collective_link(name, None)
    assert (got.link, got.peak_bytes_per_s, got.unknown_reason) == (link, peak, None)


# XLA collectives in a real xplane: the shared files hold none, so a copy of the AMD JAX file gets, after its
# last GPU event, a stream of five collective kernels, a compute stream and the XLA Ops line over them.
# Offsets in ns after T (the first whole ns after the file's last GPU event):
XLA_COLLECTIVES = [  # (op name, op interval, kernel name, kernel interval)
    ("all-reduce.1", (900, 2100), "fusion_ar", (1000, 2000)),
    ("all-gather-start.2", (2900, 3600), "fusion_ag", (3000, 3500)),
    ("reduce-scatter.3", (3900, 4900), "fusion_rs", (4000, 4800)),
    ("all-to-all.4", (4950, 5300), "fusion_a2a", (5000, 5200)),
    ("collective-permute-done.5", (5900, 6400), "fusion_cp", (6000, 6300)),
]
XLA_COMPUTE = ("fusion.9", (1400, 2600), "loop_fusion_9", (1500, 2500))  # beside the all-reduce's kernel


def _xplane_with_collectives(tmp_path: Path) -> tuple[Path, list[tuple[int, int]]]:
    """The edited copy, and the original GPU:0 kernels as absolute ns intervals (read from the protobuf)."""
    from tracelens.ingest.xplane.schema import xspace_class

    path = copy_shared_trace(tmp_path, "tf", "amd_gpu_jax_te_fused_attn.xplane.pb")
    space = xspace_class(lite=False).FromString(path.read_bytes())
    (gpu,) = [p for p in space.planes if p.name == "/device:GPU:0"]
    original = [
        (line.timestamp_ns * 1000 + e.offset_ps, line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps)
        for line in gpu.lines
        for e in line.events
    ]  # ps
    t = -(-max(end for _, end in original) // 1000)  # ns, rounded up
    next_id = max(gpu.event_metadata) + 1
    ids = {}
    for name in [n for op, _, k, _ in [*XLA_COLLECTIVES, XLA_COMPUTE] for n in (op, k)]:
        gpu.event_metadata[next_id].id = next_id
        gpu.event_metadata[next_id].name = name
        ids[name], next_id = next_id, next_id + 1
    lines = {
        "coll": gpu.lines.add(id=70, name="Stream #70(Collectives)", timestamp_ns=t),
        "compute": gpu.lines.add(id=71, name="Stream #71(Compute)", timestamp_ns=t),
        "ops": gpu.lines.add(id=72, name="XLA Ops", timestamp_ns=t),
    }
    for op, (os_, oe), kernel, (ks, ke) in XLA_COLLECTIVES + [XLA_COMPUTE]:
        stream = lines["compute"] if (op, kernel) == XLA_COMPUTE[::2] else lines["coll"]
        stream.events.add(metadata_id=ids[kernel], offset_ps=ks * 1000, duration_ps=(ke - ks) * 1000)
        lines["ops"].events.add(metadata_id=ids[op], offset_ps=os_ * 1000, duration_ps=(oe - os_) * 1000)
    path.write_bytes(space.SerializeToString())
    return path, [(s // 1000, -(-e // 1000)) for s, e in original]


def test_xla_collectives_added_to_a_real_xplane(tmp_path):
    # Each kernel starting inside a collective op is a collective: C = 1000 + 500 + 800 + 200 + 300 = 2800 ns.
    # Only the all-reduce's kernel [1000,2000) has computation beside it (loop_fusion_9 [1500,2500)): 500 ns
    # overlapped, exposed 2800 - 500 = 2300. The file's own 150 kernels end before T: none is a collective, and
    # computation only = their union (from the protobuf) + 1000 - 500.
    path, original = _xplane_with_collectives(tmp_path)
    (device,) = [d for d in communication_report(tracelens.load(path))["devices"] if d["device"] == 0]
    assert (device["collective_count"], device["collective_ns"], device["exposed_ns"]) == (5, 2800, 2300)
    assert device["overlap_share"] == pytest.approx(500 / 2800)
    assert {t["type"]: (t["count"], t["time_ns"], t["exposed_ns"]) for t in device["by_type"]} == {
        "all_reduce": (1, 1000, 500),
        "all_gather": (1, 500, 500),
        "reduce_scatter": (1, 800, 800),
        "all_to_all": (1, 200, 200),
        "collective_permute": (1, 300, 300),
    }
    assert all(t["bytes"] is None for t in device["by_type"])  # xplanes record no message sizes
    parts = device["breakdown"]
    # Kernel edges in the file are whole ns up to sub-ns offsets: 1 ns per kernel of slack.
    assert parts["computation_only_ns"] == pytest.approx(
        union_length(original) + 1000 - 500, abs=len(original)
    )
    assert (parts["communication_overlapped_ns"], parts["communication_exposed_ns"]) == (500, 2300)
    assert sum(v for k, v in parts.items() if k != "span_ns") == parts["span_ns"]


def test_the_xla_op_holding_a_kernel_is_the_latest_one_still_running():
    # Ops on GPU 0: all-reduce-start.1 [0,1000) (an async collective's window), fusion.2 [100,300) started inside
    # it, fusion.3 [600,900) also. Kernels: k_a [50,150) holds only the all-reduce -> collective; k_b [150,250)
    # starts in fusion.2, the latest op still running -> computation; k_c [400,450): fusion.2 has ended, the
    # all-reduce reaches furthest -> collective; k_d [700,800) in fusion.3 -> computation; k_e [1200,1300) in no
    # op -> computation. C = [50,150) + [400,450) = 150; K = [150,250) + [700,800) + [1200,1300): no overlap.
    rows = [
        _gpu("gpu_annotation", "all-reduce-start.1", 0, 1000),
        _gpu("gpu_annotation", "fusion.2", 100, 300),
        _gpu("gpu_annotation", "fusion.3", 600, 900),
        _gpu("kernel", "k_a", 50, 150),
        _gpu("kernel", "k_b", 150, 250),
        _gpu("kernel", "k_c", 400, 450),
        _gpu("kernel", "k_d", 700, 800),
        _gpu("kernel", "k_e", 1200, 1300),
    ]
    (device,) = communication_report(Trace.from_rows(rows))["devices"]
    assert (device["collective_count"], device["collective_ns"], device["exposed_ns"]) == (2, 150, 150)
    assert device["breakdown"]["computation_only_ns"] == 300


GENERIC_NCCL = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"


def _launched(kind: str, name: str, start: int, end: int, corr: int, tid: int = 1) -> dict:
    return {
        "kind": kind,
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "pid": 1,
        "tid": tid,
        "correlation_id": corr,
    }


def test_nccl_nvtx_range_types_the_kernel_it_launched_by_hand():
    # NCCL's NVTX range ncclAllGather [0,100) on thread 1 (domain NCCL) holds the cudaLaunchKernel [10,20) of the
    # generic kernel [50,1050): the kernel is an all-gather, and takes the range's message: 250 ncclFloat32 (4 B)
    # per rank, n = 4 -> S = 250 x 4 x 4 = 4000 B (nccl-tests counts the gathered array); algbw 4000 B / 1000 ns
    # = 4e9 B/s, busbw x 3/4 = 3e9. Not typed: a generic kernel launched [200,210) after thread 2's
    # ncclAllReduce range [0,100) ended, and one launched inside a range of that name in another domain.
    nccl = {"domain": "NCCL"}
    rows = [
        {
            **_launched("annotation", "ncclAllGather", 0, 100, None),
            **nccl,
            **_message(250, None, "ncclFloat32", 4),
        },
        _launched("runtime", "cudaLaunchKernel", 10, 20, 5),
        {**_gpu("kernel", GENERIC_NCCL, 50, 1050), "correlation_id": 5},
        {**_launched("annotation", "ncclAllReduce", 0, 100, None, tid=2), **nccl},
        _launched("runtime", "cudaLaunchKernel", 200, 210, 6, tid=2),
        {**_gpu("kernel", GENERIC_NCCL, 2000, 2100), "correlation_id": 6},
        {**_launched("annotation", "ncclAllReduce", 300, 400, None, tid=3), "domain": "mine"},
        _launched("runtime", "cudaLaunchKernel", 310, 320, 7, tid=3),
        {**_gpu("kernel", GENERIC_NCCL, 3000, 3100), "correlation_id": 7},
    ]
    (device,) = communication_report(Trace.from_rows(rows))["devices"]
    by_type = {t["type"]: t for t in device["by_type"]}
    assert {k: t["count"] for k, t in by_type.items()} == {"all_gather": 1, "other": 2}
    gather = by_type["all_gather"]
    assert (gather["time_ns"], gather["bytes"], gather["measured_count"]) == (1000, 4000, 1)
    assert gather["algbw_bytes_per_s"] == pytest.approx(4e9)
    assert gather["busbw_bytes_per_s"] == pytest.approx(3e9)
    assert by_type["other"]["bytes"] is None


def test_nsys_export_with_nccl_nvtx_ranges(tmp_path):
    # A copy of the 2026.2 window export (it holds NCCL's payload schemas but no NCCL event): the first four
    # kernels of GPU 0 with a RUNTIME row become generic NCCL kernels; NCCL-domain NVTX ranges ncclAllReduce
    # around the launch calls of the first three (their thread, the call's span +-1 ns). Those three are
    # all-reduces, the fourth stays `other`; times from SQL. The reader does not decode payloads (yet): bytes
    # stay null.
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    with sqlite3.connect(path) as con:
        picked = con.execute(
            "SELECT k.rowid, k.start, k.end, r.start, r.end, r.globalTid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "AND (r.globalTid >> 24) = (k.globalPid >> 24) WHERE k.deviceId = 0 ORDER BY k.start LIMIT 4"
        ).fetchall()
        ((new_id,),) = con.execute("SELECT MAX(id) + 1 FROM StringIds").fetchall()
        con.execute("INSERT INTO StringIds(id, value) VALUES (?, ?)", (new_id, GENERIC_NCCL))
        con.executemany(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = ?, shortName = ? WHERE rowid = ?",
            [(new_id, new_id, p[0]) for p in picked],
        )
        con.execute(
            "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) "
            "VALUES (?, NULL, 75, 'NCCL', ?, 1)",
            (picked[0][3] - 10, picked[0][5]),
        )
        con.executemany(
            "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId) "
            "VALUES (?, ?, 59, 'ncclAllReduce', ?, 1)",
            [(rs - 1, re + 1, tid) for _, _, _, rs, re, tid in picked[:3]],
        )
    (device,) = [d for d in communication_report(tracelens.load(path))["devices"] if d["device"] == 0]
    by_type = {t["type"]: t for t in device["by_type"]}
    assert {k: t["count"] for k, t in by_type.items()} == {"all_reduce": 3, "other": 1}
    assert by_type["all_reduce"]["time_ns"] == sum(e - s for _, s, e, *_ in picked[:3])
    assert by_type["other"]["time_ns"] == picked[3][2] - picked[3][1]
    assert device["collective_ns"] == union_length([(s, e) for _, s, e, *_ in picked])
    assert by_type["all_reduce"]["bytes"] is None


def _payload_blob(schema_id: int, payload: bytes) -> bytes:
    # Nsight's binaryData: uint32 domain, uint32 -, uint32 schema id, uint32 -, uint64 payload size, uint64 total.
    import struct

    return struct.pack("<IIIIQQ", 1, 0, schema_id, 0, len(payload), 32 + len(payload)) + payload


def test_nsys_export_with_nccl_payloads(tmp_path):
    # The 2026.2 window export holds NCCL's payload schemas (domain 1) but no NCCL event. Inserted by SQL: the
    # NCCL domain, a ncclCommInitRank range whose payload (schema 16777218: communicator @0, No. of ranks @8)
    # says communicator 0xC0FFEE has 2 ranks, and ncclAllGather ranges (schema 16777220: communicator @0,
    # Message size [bytes] @8) around the launch calls of GPU 0's first three kernels with a RUNTIME row,
    # renamed to a generic NCCL kernel, with 1 MiB, 2 MiB and 3 MiB per rank. nccl-tests' S of an all-gather is
    # the gathered array: n x the per-rank size = 2, 4, 6 MiB; busbw factor (n-1)/n = 1/2; times from SQL.
    import struct

    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    mib = 1 << 20
    with sqlite3.connect(path) as con:
        entries = con.execute(
            "SELECT schemaId, idx, name, offset FROM NVTX_PAYLOAD_SCHEMA_ENTRIES WHERE domainId = 1 "
            "AND schemaId IN (16777218, 16777220) GROUP BY schemaId, idx"
        ).fetchall()
        assert {(s, n, o) for s, _, n, o in entries} >= {
            (16777218, "No. of ranks", 8),
            (16777220, "Message size [bytes]", 8),
        }
        picked = con.execute(
            "SELECT k.rowid, k.start, k.end, r.start, r.end, r.globalTid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "AND (r.globalTid >> 24) = (k.globalPid >> 24) WHERE k.deviceId = 0 ORDER BY k.start LIMIT 3"
        ).fetchall()
        ((new_id,),) = con.execute("SELECT MAX(id) + 1 FROM StringIds").fetchall()
        con.execute("INSERT INTO StringIds(id, value) VALUES (?, ?)", (new_id, GENERIC_NCCL))
        con.executemany(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = ?, shortName = ? WHERE rowid = ?",
            [(new_id, new_id, p[0]) for p in picked],
        )
        first, tid = picked[0][3], picked[0][5]
        insert = "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId, binaryData) VALUES (?, ?, ?, ?, ?, 1, ?)"
        con.execute(insert, (first - 100, None, 75, "NCCL", tid, None))
        con.execute(
            insert,
            (
                first - 90,
                first - 50,
                59,
                "ncclCommInitRank",
                tid,
                _payload_blob(16777218, struct.pack("<QiiI", 0xC0FFEE, 2, 0, 0)),
            ),
        )
        con.executemany(
            insert,
            [
                (
                    rs - 1,
                    re + 1,
                    59,
                    "ncclAllGather",
                    t,
                    _payload_blob(16777220, struct.pack("<QQ", 0xC0FFEE, (i + 1) * mib)),
                )
                for i, (_, _, _, rs, re, t) in enumerate(picked)
            ],
        )
    trace = tracelens.load(path)
    (device,) = [d for d in communication_report(trace)["devices"] if d["device"] == 0]
    (gather,) = [t for t in device["by_type"] if t["type"] == "all_gather"]
    time = sum(e - s for _, s, e, *_ in picked)
    assert (gather["count"], gather["measured_count"], gather["measured_ns"]) == (3, 3, time)
    assert gather["bytes"] == 2 * (1 + 2 + 3) * mib
    assert gather["algbw_bytes_per_s"] == pytest.approx(12 * mib / time * 1e9)
    assert gather["busbw_bytes_per_s"] == pytest.approx(12 * mib / time * 1e9 / 2)
    # The ranges themselves: per-rank send bytes, msg_dtype "bytes", the communicator's 2 ranks.
    frame = trace.frame(
        trace.events.column("name").to_pandas().eq("ncclAllGather").to_numpy(),
        ["msg_in_elems", "msg_out_elems", "msg_dtype", "group_size"],
    )
    assert sorted(frame["msg_in_elems"]) == [mib, 2 * mib, 3 * mib]
    assert frame["msg_out_elems"].isna().all() and set(frame["msg_dtype"]) == {"bytes"}
    assert set(frame["group_size"]) == {2}
