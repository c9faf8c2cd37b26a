"""The ``kernels`` section (per-name totals like nsys cuda_gpu_kern_sum): hand-derived and against the files."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

import tracelens
from tests.conftest import shared_params
from tracelens.analyses.kernels import kernel_summary
from tracelens.trace import Trace


def test_hand_derived_statistics() -> None:
    # "gemm": durations 10, 30, 20, 40 ns -> count 4, total 100, avg 25, median (20+30)/2 = 25, min 10, max 40,
    #   sample stdev = sqrt(((-15)^2 + 5^2 + (-5)^2 + 15^2) / 3) = sqrt(500/3) = 12.9099...
    # "relu": one launch of 300 ns on another device -> stdev 0.
    # All kernels sum to 400 ns: Time% gemm 0.25, relu 0.75; relu first (larger total).
    # A memcpy (not a kernel) must not count.
    rows = [
        {"kind": "kernel", "name": "gemm", "start_ns": 0, "end_ns": 10, "device": 0, "stream": 1},
        {"kind": "kernel", "name": "gemm", "start_ns": 100, "end_ns": 130, "device": 0, "stream": 1},
        {"kind": "kernel", "name": "gemm", "start_ns": 200, "end_ns": 220, "device": 0, "stream": 2},
        {"kind": "kernel", "name": "gemm", "start_ns": 300, "end_ns": 340, "device": 0, "stream": 1},
        {"kind": "kernel", "name": "relu", "start_ns": 0, "end_ns": 300, "device": 1, "stream": 1},
        {"kind": "memcpy", "name": "Memcpy HtoD", "start_ns": 0, "end_ns": 999, "device": 0, "stream": 1},
    ]
    summary = kernel_summary(Trace.from_rows(rows))
    assert summary["count"] == 5 and summary["total_ns"] == 400 and summary["distinct_names"] == 2
    relu, gemm = summary["by_name"]
    assert relu == {
        "name": "relu",
        "count": 1,
        "total_ns": 300,
        "avg_ns": 300.0,
        "median_ns": 300.0,
        "min_ns": 300,
        "max_ns": 300,
        "stdev_ns": 0.0,
        "time_fraction": 0.75,
    }
    assert gemm["name"] == "gemm" and gemm["count"] == 4 and gemm["total_ns"] == 100
    assert gemm["avg_ns"] == 25.0 and gemm["median_ns"] == 25.0
    assert (gemm["min_ns"], gemm["max_ns"]) == (10, 40)
    assert gemm["stdev_ns"] == pytest.approx((500 / 3) ** 0.5)
    assert gemm["time_fraction"] == 0.25


def test_no_kernels() -> None:
    rows = [{"kind": "cpu_op", "name": "aten::add", "start_ns": 0, "end_ns": 5, "pid": 1, "tid": 1}]
    assert kernel_summary(Trace.from_rows(rows)) == {
        "count": 0,
        "total_ns": 0,
        "distinct_names": 0,
        "by_name": [],
    }


@pytest.mark.parametrize("path", shared_params("nsys", "*.sqlite"))
def test_nsys_kernel_totals_match_sql(path: Path) -> None:
    trace = tracelens.load(path)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT s.value, COUNT(*), SUM(k.end - k.start), MIN(k.end - k.start), MAX(k.end - k.start) "
            "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value"
        ).fetchall()
    finally:
        con.close()
    expected = {name: (count, total, lo, hi) for name, count, total, lo, hi in rows}
    got = {
        k["name"]: (k["count"], k["total_ns"], k["min_ns"], k["max_ns"])
        for k in kernel_summary(trace)["by_name"]
    }
    assert got == expected


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_kineto_kernel_counts_match_json(path: Path) -> None:
    trace = tracelens.load(path)
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    counts: dict[str, int] = defaultdict(int)
    totals_us: dict[str, float] = defaultdict(float)
    for ev in events:
        if ev.get("ph") == "X" and str(ev.get("cat", "")).lower() == "kernel":
            counts[ev["name"]] += 1
            totals_us[ev["name"]] += float(ev.get("dur", 0))
    got = {k["name"]: k for k in kernel_summary(trace)["by_name"]}
    only_tracelens = sorted(set(got) - set(counts))[:3]
    only_json = sorted(set(counts) - set(got))[:3]
    assert not only_tracelens and not only_json, (
        f"kernel names differ from the file: tracelens has {only_tracelens}, the JSON has {only_json}"
    )
    assert {n: k["count"] for n, k in got.items()} == dict(counts)
    for name, total_us in totals_us.items():
        # The reader rounds each µs timestamp to ns: allow 1 ns per launch per end.
        assert abs(got[name]["total_ns"] - total_us * 1000) <= 2 * counts[name] + 1, name
