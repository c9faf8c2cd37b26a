"""Collectives and the per-device time breakdown (tracelens/analyses/communication.py), derived by hand and
against independent computations on real traces."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

import tracelens
from tests.conftest import copy_shared_trace, shared_params
from tests.reference import union_length
from tracelens.analyses.communication import collective_type, communication_report
from tracelens.trace import Trace

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "traces"


def _gpu(kind: str, name: str, start: int, end: int, device: int = 0) -> dict:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "device": device, "stream": 7}


@pytest.mark.parametrize(("name", "kind"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reduce_scatter"),
    ("ncclDevKernel_SendRecv(ncclDevComm*)", "send_recv"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "broadcast"),
    ("ncclDevKernel_Generic_1(ncclDevComm*)", "other"),
    ("rcclGenericKernel", "other"),
    ("all-reduce-start.3", "all_reduce"), ("all-gather.1", "all_gather"), ("%reduce-scatter", "reduce_scatter"),
    ("all-to-all.2", "all_to_all"), ("collective-permute-done", "collective_permute"),
    ("fusion.3", None), ("void at::native::reduce_kernel<512, 1>", None), ("__amd_rocclr_fillBufferAligned.kd", None),
])
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
    rows = [_gpu("kernel", "gemm", 0, 100), _gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150),
            _gpu("memcpy", "Memcpy HtoD", 150, 170), _gpu("kernel", "gemm", 200, 300),
            _gpu("gpu_annotation", "all-gather-start.1", 0, 40, device=1),
            _gpu("kernel", "fusion_all_gather", 10, 30, device=1), _gpu("kernel", "fusion.2", 50, 60, device=1)]
    report = communication_report(Trace.from_rows(rows))
    dev0, dev1 = report["devices"]
    assert (dev0["collective_count"], dev0["collective_ns"], dev0["exposed_ns"]) == (1, 100, 50)
    assert dev0["overlap_share"] == pytest.approx(0.5)
    assert dev0["breakdown"] == {"span_ns": 300, "computation_only_ns": 150, "communication_overlapped_ns": 50,
                                 "communication_exposed_ns": 50, "memcpy_exposed_ns": 20, "idle_ns": 30}
    assert dev0["by_type"] == [{"type": "all_reduce", "count": 1, "time_ns": 100, "bytes": None,
                                "algbw_bytes_per_s": None, "busbw_bytes_per_s": None}]
    assert (dev1["collective_ns"], dev1["exposed_ns"], dev1["overlap_share"]) == (20, 20, 0.0)
    assert dev1["breakdown"] == {"span_ns": 50, "computation_only_ns": 10, "communication_overlapped_ns": 0,
                                 "communication_exposed_ns": 20, "memcpy_exposed_ns": 0, "idle_ns": 20}
    assert dev1["by_type"][0]["type"] == "all_gather"
    assert report["collective_count"] == 2


@pytest.mark.shared
def test_nccl_trace_against_the_json():
    path = SHARED / "pytorch" / "a100_nccl_2rank_rank0_2024.json.gz"
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    # Times in ns from the file's µs (floats with ns digits); the reader's rounding may move each edge 1 ns.
    nccl = [(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in kernels
            if e["name"].startswith("ncclKernel_")]
    other = [(round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in kernels
             if not e["name"].startswith("ncclKernel_")]
    collective = union_length(nccl)
    exposed = union_length(nccl + other) - union_length(other)
    (device,) = [d for d in communication_report(tracelens.load(path))["devices"] if d["collective_count"]]
    assert device["collective_count"] == len(nccl) == 21
    assert device["collective_ns"] == pytest.approx(collective, abs=2 * len(nccl))
    assert device["exposed_ns"] == pytest.approx(exposed, abs=2 * len(kernels))
    assert 0.54 <= 1 - device["overlap_share"] <= 0.90  # most NCCL time overlaps no compute kernel here
    assert {t["type"]: t["count"] for t in device["by_type"]} == {"all_reduce": 15, "broadcast": 6}


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("nsys", "*.sqlite") + shared_params("pytorch", "*.json.gz")
                         + shared_params("tf", "*.xplane.pb"))
def test_breakdown_sums_to_the_span_on_real_traces(path):
    doc = tracelens.analyze(tracelens.load(path))
    gaps = {d["device"]: d for d in doc["gaps"]["devices"]}
    for device in doc["communication"]["devices"]:
        parts = device["breakdown"]
        assert sum(v for k, v in parts.items() if k != "span_ns") == parts["span_ns"]
        assert min(parts.values()) >= 0
        # The same span and idle time as the gaps section: collectives are busy time there too.
        assert (parts["span_ns"], parts["idle_ns"]) == (gaps[device["device"]]["span_ns"],
                                                        gaps[device["device"]]["idle_ns"])


def test_nsys_export_with_renamed_collective_kernels(tmp_path):
    # A copy of the 2026.2 window export whose most frequent kernel (demangled name, what the reader shows) is
    # renamed to an NCCL all-reduce:
    # the collective time is that name's kernel union per device, computed here in SQL and plain Python.
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    with sqlite3.connect(path) as con:
        (name_id,), = con.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName "
                                  "ORDER BY COUNT(*) DESC LIMIT 1").fetchall()
        con.execute("UPDATE StringIds SET value = 'ncclDevKernel_AllReduce_Sum_bf16_RING_LL' WHERE id = ?",
                    (name_id,))
        rows = con.execute("SELECT deviceId, start, end, demangledName = ? FROM CUPTI_ACTIVITY_KIND_KERNEL",
                           (name_id,)).fetchall()
    report = {d["device"]: d for d in communication_report(tracelens.load(path))["devices"]}
    for device in {r[0] for r in rows}:
        coll = [(s, e) for d, s, e, c in rows if d == device and c]
        other = [(s, e) for d, s, e, c in rows if d == device and not c]
        assert report[device]["collective_count"] == len(coll)
        assert report[device]["collective_ns"] == union_length(coll)
        assert report[device]["exposed_ns"] == union_length(coll + other) - union_length(other)


def test_communication_cause_in_the_diagnosis():
    # The hand-built case: exposed 50 ns on GPU 0 and 20 ns on GPU 1 -> device-mean 35; span = union of the
    # device spans [0,300) = 300 -> share 35/300. GPU 1 is busy 30 ns against GPU 0's 270 (span 300 - idle 30):
    # imbalance (270 - 30) / 2 = 120 ranks first.
    from tracelens.analyses import analyze
    from tracelens.analyses.diagnosis import COMMUNICATION_FIX

    rows = [_gpu("kernel", "gemm", 0, 100), _gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150),
            _gpu("memcpy", "Memcpy HtoD", 150, 170), _gpu("kernel", "gemm", 200, 300),
            _gpu("gpu_annotation", "all-gather-start.1", 0, 40, device=1),
            _gpu("kernel", "fusion_all_gather", 10, 30, device=1), _gpu("kernel", "fusion.2", 50, 60, device=1)]
    diagnosis = analyze(Trace.from_rows(rows))["diagnosis"]
    causes = {c["cause"]: c for c in diagnosis["causes"]}
    comm = causes["communication"]
    assert (comm["lost_ns"], comm["share"]) == (35, pytest.approx(35 / 300))
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

    rows = [_gpu("kernel", "gemm", 0, 100), _gpu("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150),
            _gpu("memcpy", "Memcpy HtoD", 150, 170), _gpu("kernel", "gemm", 200, 300)]
    text = terminal.render(analyze(Trace.from_rows(rows)))
    assert max(len(line) for line in text.split("\n")) <= terminal.WIDTH
    # 40 cells over the 300 ns span: 150 computation only, 50 overlapped, 50 exposed, 20 copies, 30 idle
    assert "GPU 0 " + "█" * 20 + "▓" * 7 + "▒" * 7 + "░" * 2 + "·" * 4 + " span 300 ns" in text
    assert "exposed 50 ns" in text
