"""Diagnosis on hand-built traces, one per cause (fixtures/causes/, derivations in make_causes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracelens.analyses import SECTIONS, analyze
from tracelens.analyses.diagnosis import FIXES, diagnose
from tracelens.trace import Trace, TraceMetadata

CAUSES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "causes"


def load_case(name: str, framework: str | None = None) -> Trace:
    data = json.loads((CAUSES_DIR / f"{name}.json").read_text())
    meta = TraceMetadata(source_format="handmade", framework=framework or data["framework"])
    return Trace.from_rows(data["rows"], data["devices"], meta)


# (cause, lost_ns, span_ns), each derived by hand in fixtures/causes/make_causes.py.
EXPECTED = [
    ("input_pipeline", 600, 1380),
    ("host_launch_overhead", 360, 410),
    ("synchronization", 300, 480),
    ("multi_gpu_imbalance", 400, 1000),
]


@pytest.mark.parametrize(("cause", "lost", "span"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_primary_cause_and_lost_time(cause, lost, span):
    doc = analyze(load_case(cause))
    primary = doc["diagnosis"]["primary"]
    assert primary["cause"] == cause
    assert primary["lost_ns"] == lost
    assert primary["share"] == pytest.approx(lost / span)
    assert doc["diagnosis"]["span_ns"] == span
    assert doc["diagnosis"]["causes"][0] == primary
    assert primary["fix"] == FIXES[cause]["pytorch"]


def test_secondary_causes_are_ranked_with_their_own_lost_time():
    # input_pipeline case: the 10 ns launch inside the gap is host_launch_overhead, ranked second.
    causes = analyze(load_case("input_pipeline"))["diagnosis"]["causes"]
    assert [(c["cause"], c["lost_ns"]) for c in causes] == [("input_pipeline", 600), ("host_launch_overhead", 10)]
    # synchronization case: launch [400,410) is the only other host activity in the gap.
    causes = analyze(load_case("synchronization"))["diagnosis"]["causes"]
    assert [(c["cause"], c["lost_ns"]) for c in causes] == [("synchronization", 300), ("host_launch_overhead", 10)]


def test_none_below_threshold():
    diag = analyze(load_case("none"))["diagnosis"]
    assert diag["primary"]["cause"] == "none"
    assert diag["primary"]["lost_ns"] == 0
    # cpu_op [990,1040) covers 40 ns of the 50 ns gap: 40 / 1900 = 2.1% of the span, below 10%.
    assert [(c["cause"], c["lost_ns"]) for c in diag["causes"]] == [("host_launch_overhead", 40)]
    assert diag["primary"]["evidence"]["largest_share"] == pytest.approx(40 / 1900)
    assert diag["unexplained_idle_ns"] == 10


@pytest.mark.skipif("memcpy" not in SECTIONS, reason="memcpy section not registered")
def test_memcpy_exposed_copy_time():
    # exposed copy = 600 ns of HtoD copy that overlaps no kernel; no idle time; span 780.
    doc = analyze(load_case("memcpy"))
    primary = doc["diagnosis"]["primary"]
    assert (primary["cause"], primary["lost_ns"]) == ("memcpy", 600)
    assert primary["share"] == pytest.approx(600 / 780)


@pytest.mark.skipif("occupancy" not in SECTIONS, reason="occupancy section not registered")
def test_low_occupancy_lost_time():
    # 3200 ns kernel at estimated achieved occupancy 1/320 -> 3200 x 319/320 = 3190 ns lost.
    doc = analyze(load_case("low_occupancy"))
    primary = doc["diagnosis"]["primary"]
    assert (primary["cause"], primary["lost_ns"]) == ("low_occupancy", 3190)
    assert primary["share"] == pytest.approx(3190 / 3200)


def test_memcpy_without_memcpy_section_counts_only_sync_copy_idle():
    # Without the memcpy section the copy is fully busy time: no idle, so no memcpy cause at all.
    trace = load_case("memcpy")
    done = analyze(trace, sections=["devices", "host", "gaps", "steps", "attribution", "launch", "sync"])
    diag = diagnose(trace, done)
    assert diag["primary"]["cause"] == "none"
    assert diag["causes"] == []


def test_sync_copy_idle_goes_to_memcpy_not_synchronization():
    # A blocking cudaMemcpy [100,400) covers the gap [100,420) between two kernels: 300 ns of sync-copy idle.
    # Span 20..500 = 480. synchronization = sync (300) - sync copy (300) = 0; memcpy = 300 (+ exposed copy of the
    # small DtoH copy [380,390) = 10 ns when the memcpy section is registered).
    rows = [
        {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 0, "end_ns": 10, "pid": 1, "tid": 1, "correlation_id": 1},
        {"kind": "kernel", "name": "a", "start_ns": 20, "end_ns": 100, "device": 0, "stream": 7, "correlation_id": 1},
        {"kind": "runtime", "name": "cudaMemcpy", "start_ns": 100, "end_ns": 400, "pid": 1, "tid": 1, "correlation_id": 2},
        {"kind": "memcpy", "name": "Memcpy DtoH", "start_ns": 380, "end_ns": 390, "device": 0, "stream": 7,
         "correlation_id": 2, "bytes": 4, "copy_kind": "DtoH"},
        {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 405, "end_ns": 415, "pid": 1, "tid": 1, "correlation_id": 3},
        {"kind": "kernel", "name": "b", "start_ns": 420, "end_ns": 500, "device": 0, "stream": 7, "correlation_id": 3},
    ]
    doc = analyze(Trace.from_rows(rows))
    by = {c["cause"]: c["lost_ns"] for c in doc["diagnosis"]["causes"]}
    # gaps: [100,380) and [390,420): sync copy covers [100,380) = 280 and [390,400) = 10 -> 290.
    assert doc["attribution"]["sync_copy_ns"] == 290
    assert "synchronization" not in by
    exposed = 10 if "memcpy" in SECTIONS else 0
    assert by["memcpy"] == 290 + exposed


def test_fix_follows_framework():
    diag = analyze(load_case("input_pipeline", framework="tensorflow"))["diagnosis"]
    assert "prefetch" in diag["primary"]["fix"] and "AUTOTUNE" in diag["primary"]["fix"]
    diag = analyze(load_case("input_pipeline", framework="unknown"))["diagnosis"]
    assert diag["primary"]["fix"] == FIXES["input_pipeline"]["default"]


def test_across_rank_imbalance_is_taken_from_done():
    trace = load_case("none")
    done = analyze(trace)
    done["imbalance"] = {"lost_ns": 950}  # half of the 1900 ns span
    diag = diagnose(trace, done)
    assert (diag["primary"]["cause"], diag["primary"]["lost_ns"]) == ("multi_gpu_imbalance", 950)
    assert diag["primary"]["share"] == pytest.approx(0.5)


def test_two_devices_average_idle_causes():
    # The input case duplicated on GPU 1 with GPU 1 idle 200 ns longer: input idle 600 on GPU 0, 800 on GPU 1.
    data = json.loads((CAUSES_DIR / "input_pipeline.json").read_text())
    rows = list(data["rows"])
    rows += [
        {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 600, "end_ns": 610, "pid": 1, "tid": 1, "correlation_id": 11},
        {"kind": "kernel", "name": "k", "start_ns": 620, "end_ns": 800, "device": 1, "stream": 3, "correlation_id": 11},
        {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 1600, "end_ns": 1610, "pid": 1, "tid": 1, "correlation_id": 12},
        {"kind": "kernel", "name": "k", "start_ns": 1620, "end_ns": 2000, "device": 1, "stream": 3, "correlation_id": 12},
    ]
    doc = analyze(Trace.from_rows(rows))
    # GPU 1 gap [800,1620) = 820: input [1000,1600) = 600 (the second data range).
    # [800,1000) is covered by no host row: nothing 200; launch [1600,1610) 10; nothing [1610,1620) 10.
    by_dev = {d["device"]: d["by_cause"] for d in doc["attribution"]["devices"]}
    assert by_dev[1] == {"sync": 0, "input": 600, "launch": 10, "cpu": 0, "nothing": 210}
    primary = doc["diagnosis"]["primary"]
    assert (primary["cause"], primary["lost_ns"]) == ("input_pipeline", 600)  # (600 + 600) / 2
    # busy: GPU 0 760, GPU 1 180 + 380 = 560 -> imbalance (0 + 200) / 2 = 100
    causes = {c["cause"]: c["lost_ns"] for c in doc["diagnosis"]["causes"]}
    assert causes["multi_gpu_imbalance"] == 100


def test_no_gpu_input_bound_steps():
    # Host only: step [0,1000) with tracelens/data [0,700) and a cpu op [700,950); host span 1000.
    rows = [
        {"kind": "step", "name": "tracelens/step#0", "start_ns": 0, "end_ns": 1000, "pid": 1, "tid": 1, "step": 0},
        {"kind": "annotation", "name": "tracelens/data", "start_ns": 0, "end_ns": 700, "pid": 1, "tid": 1},
        {"kind": "cpu_op", "name": "aten::mm", "start_ns": 700, "end_ns": 950, "pid": 1, "tid": 1},
    ]
    diag = analyze(Trace.from_rows(rows))["diagnosis"]
    assert diag["has_gpu_activity"] is False
    assert (diag["primary"]["cause"], diag["primary"]["lost_ns"]) == ("input_pipeline", 700)
    assert diag["primary"]["share"] == pytest.approx(0.7)
