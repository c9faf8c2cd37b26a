"""Gaps per device: busy union across streams, idle gaps, their histogram and the utilization timeline."""

from __future__ import annotations

from tracelens.analyses import gaps
from tracelens.analyses.columns import device_busy
from tracelens.trace import Trace


def k(start: int, end: int, stream: int = 7, device: int = 0, kind: str = "kernel") -> dict:
    return {"kind": kind, "name": kind, "start_ns": start, "end_ns": end, "device": device, "stream": stream}


def test_union_across_streams_and_kinds():
    # stream 7 kernel [0,100), stream 8 memcpy [50,150), memset [155,200) -> busy 150 + 45 = 195, one 5 ns gap.
    trace = Trace.from_rows([k(0, 100), k(50, 150, stream=8, kind="memcpy"), k(155, 200, kind="memset")])
    (dev,) = gaps.section(trace, {})["devices"]
    assert (dev["span_ns"], dev["busy_ns"], dev["idle_ns"], dev["gap_count"]) == (200, 195, 5, 1)
    assert dev["largest"] == [{"start_ns": 150, "duration_ns": 5}]


def test_histogram_bucket_edges():
    # Gaps of 5, 9_999, 10_000, 99_999, 100_000, 999_999, 1_000_000, 10_000_000 ns: bucket by [lo, hi).
    lengths = [5, 9_999, 10_000, 99_999, 100_000, 999_999, 1_000_000, 10_000_000]
    rows, t = [], 0
    for length in lengths:
        rows.append(k(t, t + 1))
        t += 1 + length
    rows.append(k(t, t + 1))
    (dev,) = gaps.section(Trace.from_rows(rows), {})["devices"]
    hist = {b["bucket"]: (b["count"], b["total_ns"]) for b in dev["histogram"]}
    assert hist == {
        "<10us": (2, 5 + 9_999),
        "10-100us": (2, 10_000 + 99_999),
        "0.1-1ms": (2, 100_000 + 999_999),
        "1-10ms": (1, 1_000_000),
        ">=10ms": (1, 10_000_000),
    }
    assert dev["idle_ns"] == sum(lengths)
    assert dev["largest"][0]["duration_ns"] == 10_000_000
    assert [g["duration_ns"] for g in dev["largest"]] == sorted(lengths, reverse=True)


def test_timeline_fractions():
    # Busy [0,50) and [150,200): 4 buckets of 50 ns -> 1, 0, 0, 1. A 2-stream overlap never exceeds 1.
    trace = Trace.from_rows([k(0, 50), k(0, 50, stream=8), k(150, 200)])
    busy = device_busy(trace)[0]
    timeline = gaps.utilization_timeline(busy, buckets=4)
    assert timeline["edges_ns"] == [0, 50, 100, 150, 200]
    assert timeline["utilization"] == [1.0, 0.0, 0.0, 1.0]
    # 3 buckets over 200 ns: edges 0, 66, 133, 200 -> 50/66, 0/67, 50/67.
    timeline = gaps.utilization_timeline(busy, buckets=3)
    assert timeline["edges_ns"] == [0, 66, 133, 200]
    assert timeline["utilization"] == [50 / 66, 0.0, 50 / 67]


def test_default_timeline_has_50_buckets_or_fewer_for_tiny_spans():
    trace = Trace.from_rows([k(0, 1000), k(2000, 3000)])
    (dev,) = gaps.section(trace, {})["devices"]
    assert len(dev["timeline"]["utilization"]) == 50
    # bucket i covers [60i, 60i+60): buckets 0..15 busy (0..960) + 16 partly ([960,1020): 40/60).
    assert dev["timeline"]["utilization"][:17] == [1.0] * 16 + [40 / 60]
    tiny = Trace.from_rows([k(0, 1), k(2, 3)])
    (dev,) = gaps.section(tiny, {})["devices"]
    assert dev["timeline"]["utilization"] == [1.0, 0.0, 1.0]


def test_devices_are_separate():
    trace = Trace.from_rows([k(0, 10), k(20, 30), k(0, 30, device=1)])
    out = {d["device"]: d for d in gaps.section(trace, {})["devices"]}
    assert (out[0]["idle_ns"], out[1]["idle_ns"]) == (10, 0)
    assert out[1]["gap_count"] == 0


def test_no_gpu_activity():
    trace = Trace.from_rows([{"kind": "cpu_op", "name": "x", "start_ns": 0, "end_ns": 5, "pid": 1, "tid": 1}])
    assert gaps.section(trace, {})["devices"] == []
