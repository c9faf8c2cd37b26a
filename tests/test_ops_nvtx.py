"""Op attribution from PyTorch's emit_nvtx() op ranges (NVTX annotations in Nsight exports;
tracelens/analyses/ops/): by hand, and on a copy of a shared Nsight export with ranges inserted by SQL,
checked against a SQL query over the export."""

from __future__ import annotations

import sqlite3

import tracelens
from tests.conftest import copy_shared_trace
from tracelens.analyses.ops import ops_report
from tracelens.trace import Trace


def _host(kind: str, name: str, start: int, end: int, tid: int = 1, **extra) -> dict:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def _launch(start: int, corr: int, tid: int = 1) -> dict:
    return _host("runtime", "cudaLaunchKernel", start, start + 5, tid=tid, correlation_id=corr)


def _kernel(name: str, start: int, end: int, corr: int) -> dict:
    return {
        "kind": "kernel",
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "device": 0,
        "stream": 7,
        "correlation_id": corr,
    }


def test_hand_built_emit_nvtx_ranges_are_ops():
    # Thread 1: aten::linear [0,100) (op_id style, with sizes) holds aten::addmm [10,90) whose launch at 20 runs a
    # 20 ns kernel; a second aten::linear [100,180) (another seq, so another text) launches a 30 ns kernel.
    # "## forward ##" and "a, b" are plain annotations, not ops. Thread 2: an old-style "aten::mm, seq = 12"
    # [200,260) launches a 15 ns kernel; a launch at 270, outside any op, runs a 5 ns kernel (unattributed).
    # By hand: linear 2 instances, gpu 20 + 30 = 50, cpu 100 + 80 = 180; mm 1, gpu 15, cpu 60.
    rows = [
        _host("annotation", "## forward ##", 0, 300),
        _host(
            "annotation",
            "aten::linear, seq = 3, op_id = 1, sizes = [[8, 64], [32, 64], [32]], input_op_ids = [(0, 0)]",
            0,
            100,
        ),
        _host("annotation", "aten::addmm, seq = 3, op_id = 2, sizes = [[32], [8, 64], [64, 32]]", 10, 90),
        _launch(20, 1),
        _kernel("gemm", 40, 60, 1),
        _host("annotation", "aten::linear, seq = 4, op_id = 7, sizes = [[8, 64], [32, 64], [32]]", 100, 180),
        _host("annotation", "a, b", 105, 110),
        _launch(120, 2),
        _kernel("gemm", 130, 160, 2),
        _host("annotation", "aten::mm, seq = 12", 200, 260, tid=2),
        _launch(210, 3, tid=2),
        _kernel("mm_kernel", 220, 235, 3),
        _launch(270, 4, tid=2),
        _kernel("stray", 280, 285, 4),
    ]
    report = ops_report(Trace.from_rows(rows))
    assert [(r["name"], r["count"], r["gpu_ns"], r["copy_ns"], r["cpu_ns"]) for r in report["by_name"]] == [
        ("aten::linear", 2, 50, 0, 180),
        ("aten::mm", 1, 15, 0, 60),
    ]
    assert (report["op_count"], report["names"], report["unattributed_count"]) == (3, 2, 1)
    assert (report["kernel_ns"], report["attributed_kernel_ns"]) == (70, 65)
    assert [(r["name"], r["kernels"], r["gpu_ns"]) for r in report["by_innermost"]] == [
        ("aten::linear", 1, 30),
        ("aten::addmm", 1, 20),
        ("aten::mm", 1, 15),
    ]
    # FLOPs from the ranges' sizes, counted at the innermost modelled op: the first linear's addmm
    # 2*8*64*32 (not the linear around it too), the second linear 2*8*32*64; aten::mm has no sizes.
    assert [r["flops"] for r in report["by_name"]] == [2 * 2 * 8 * 64 * 32, None]  # aten::mm: none counted
    assert report["compute"]["flops_by_class"]["matmul"] == 2 * 2 * 8 * 64 * 32
    assert report["compute"]["mfu"] is None  # the ranges record no dtypes


_PROBE = "aten::tracelens_probe"


def test_nsys_export_with_inserted_emit_nvtx_ranges(tmp_path):
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    db = sqlite3.connect(path)
    # The thread launching the most kernels, and three windows on it, each from the start of one launch call
    # to the end of a later one (eleventh from it), widened to cover the NVTX ranges the export already has
    # there, so that the inserted range encloses them (ranges nest, they do not overlap).
    (tid,) = (
        db.execute("""SELECT r.globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k
                         ON k.correlationId = r.correlationId AND k.globalPid / 16777216 = r.globalTid / 16777216
                         GROUP BY r.globalTid ORDER BY count(*) DESC LIMIT 1""").fetchone()
    )
    launches = [
        s
        for (s,) in db.execute(
            """SELECT r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                                           JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId
                                           AND k.globalPid / 16777216 = r.globalTid / 16777216
                                           WHERE r.globalTid = ? ORDER BY r.start""",
            (tid,),
        )
    ]
    windows = []
    for first in (0, len(launches) // 3, 2 * len(launches) // 3):
        lo, hi = launches[first], launches[first + 10] + 1
        for _ in range(10):  # widen until no existing range on the thread crosses a boundary
            lo2, hi2 = db.execute(
                """SELECT min(?, coalesce(min(start), ?)), max(?, coalesce(max(end), ?))
                                     FROM NVTX_EVENTS WHERE globalTid = ? AND end > ? AND start < ?
                                     AND (start < ? OR end > ?)""",
                (lo, lo, hi, hi, tid, lo, hi, lo, hi),
            ).fetchone()
            if (lo2, hi2) == (lo, hi):
                break
            lo, hi = lo2, hi2
        windows.append((lo - 1, hi + 1))
    assert windows[0][1] < windows[1][0] and windows[1][1] < windows[2][0]
    for i, (lo, hi) in enumerate(windows):
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
            (lo, hi, f"{_PROBE}, seq = {i}, op_id = {900000 + i}, sizes = [[8, 64], [64, 32]]", tid),
        )
    db.commit()
    # Expected: the kernels whose launch call (runtime API on the same process, joined on correlationId)
    # starts inside an inserted range on its thread.
    expected, kernels = db.execute(
        """
        SELECT sum(k.end - k.start), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
          ON k.correlationId = r.correlationId AND k.globalPid / 16777216 = r.globalTid / 16777216
        JOIN NVTX_EVENTS n ON n.globalTid = r.globalTid AND r.start >= n.start AND r.start < n.end
        WHERE n.text LIKE ?""",
        (_PROBE + ",%",),
    ).fetchone()
    db.close()
    assert kernels >= 30
    report = ops_report(tracelens.load(path))
    probe = [r for r in report["by_name"] if r["name"] == _PROBE]
    assert len(probe) == 1
    assert (probe[0]["count"], probe[0]["gpu_ns"]) == (3, expected)
    assert probe[0]["cpu_ns"] == sum(hi - lo for lo, hi in windows)
