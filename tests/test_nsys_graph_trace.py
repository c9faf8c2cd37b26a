"""``nsys --cuda-graph-trace=graph`` exports: each CUDA graph execution is one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row
(start, end, deviceId, contextId, streamId, correlationId, globalPid, graphId, graphExecId; CUpti_ActivityGraphTrace2)
and its kernels have no KERNEL rows. The reader reads each execution as one kernel row ``[CUDA graph N]`` with a
warning; before, such an export read as "no GPU activity" and was diagnosed as a profiler that lost the GPU side.
Exports are built from the committed handmade 2026 fixture; times are chosen here."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import pyarrow.compute as pc
import pytest

from tests.nsys_handmade_export import NO_EVENTS, edited_copy
from tracelens.cli import main
from tracelens.ingest import load

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"
T0 = 1_000_000_000
GLOBAL_PID = (1 << 48) + (4242 << 24)
GLOBAL_TID = GLOBAL_PID + 4242
GRAPH_LAUNCH = 100  # StringIds id of cudaGraphLaunch


def _graph_export(tmp_path: Path, period: int, graph_ns: int, n: int = 40) -> Path:
    """n cudaGraphLaunch calls [k*period, k*period + 5 µs], each executing graph 3 for graph_ns from 1 µs after
    its call ends; no kernel, copy, memset or NVTX rows."""
    path = tmp_path / "graph_level.sqlite"
    edited_copy(path, *NO_EVENTS)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO StringIds VALUES (?, 'cudaGraphLaunch_v10000')", (GRAPH_LAUNCH,))
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER, end INTEGER, deviceId INTEGER, "
        "contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, "
        "graphId INTEGER, graphExecId INTEGER)"
    )
    for k in range(n):
        start = T0 + k * period
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
            (start, start + 5_000, GLOBAL_TID, 500 + k, GRAPH_LAUNCH),
        )
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?, ?, 0, 1, NULL, 7, ?, ?, 3, 9)",
            (start + 6_000, start + 6_000 + graph_ns, 500 + k, GLOBAL_PID),
        )
    db.commit()
    db.close()
    return path


def _analyze(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["analyze", "--format", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("engine", ["pages", "sqlite3"])
def test_graph_executions_read_as_gpu_ops(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACELENS_NSYS_ENGINE", engine)
    path = _graph_export(tmp_path, period=100_000, graph_ns=90_000, n=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(path)
    events = trace.events
    kernels = events.filter(pc.equal(events.column("kind"), "kernel"))
    assert kernels.num_rows == 4
    assert set(kernels.column("name").to_pylist()) == {"[CUDA graph 3]"}
    assert kernels.column("graph_id").to_pylist() == [3] * 4
    assert kernels.column("correlation_id").to_pylist() == [500, 501, 502, 503]
    assert (
        sum(
            e - s
            for s, e in zip(
                kernels.column("start_ns").to_pylist(), kernels.column("end_ns").to_pylist(), strict=True
            )
        )
        == 360_000
    )
    assert any("4 CUDA graph executions recorded whole" in w for w in trace.metadata.warnings)
    assert not any("no GPU activity" in w for w in trace.metadata.warnings)


def test_busy_graph_replay_is_not_incomplete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 4 graphs of 90 µs every 100 µs: busy 360 µs over [6 µs, 396 µs] (span 390 µs) = 92.3%.
    doc = _analyze(_graph_export(tmp_path, period=100_000, graph_ns=90_000, n=4), capsys)
    text = json.dumps(doc)
    assert "incomplete_trace" not in json.dumps(doc.get("diagnosis", {}).get("primary", {}))
    assert "lost the GPU side" not in text


def test_sparse_graph_replay_is_not_launch_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 40 launches of 5 µs, one per ms, each running a 200 µs graph: the GPU idles 80% while the host does
    # nothing recorded; 40 short launch calls cannot explain it.
    doc = _analyze(_graph_export(tmp_path, period=1_000_000, graph_ns=200_000), capsys)
    primary = json.dumps(doc["diagnosis"]["primary"])
    assert "host_launch_overhead" not in primary
    assert "unexplained_idle" in primary


def test_node_level_graph_replay_rates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--cuda-graph-trace=node: 4 cudaGraphLaunch calls [k*100 µs, +5 µs], each running 5 kernels of 3 µs every
    4 µs from 6 µs after the call (correlation id and graphId shared). Issue span 305 µs; 20 ops issued: 65,574/s;
    busy 60 µs: 333,333 ops/s; ratio 20/305 / (20/60) = 60/305. Counting the 4 calls gave 12/305, 5x lower."""
    path = _graph_export(tmp_path, period=100_000, graph_ns=1, n=4)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
        "globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, graphNodeId, graphId) "
        "SELECT r.start + 6000 + 4000 * n.j, r.start + 9000 + 4000 * n.j, 0, 1, 7, r.correlationId, ?, 7, 8, "
        "108, 1, 1, 256, 1, 1, n.j + 1, 3 FROM CUPTI_ACTIVITY_KIND_RUNTIME r, "
        "(SELECT 0 AS j UNION SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4) n",
        (GLOBAL_PID,),
    )
    db.commit()
    db.close()
    rates = _analyze(path, capsys)["launch"]["rates"]
    assert rates["launch_calls"] == 4 and rates["issue_span_ns"] == 305_000
    assert rates["issue_to_execution"] == pytest.approx(60 / 305)
    out = tmp_path / "report.md"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(path), "-o", str(out)]) == 0
    assert "(GPU ops enqueued 65,574/s) vs execution rate 333,333/s (ratio 0.197)" in out.read_text()
