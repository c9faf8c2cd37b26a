"""The what-if replay (tracelens/replay): hand-built traces whose replay, remedies and critical path are worked
out by hand below, a reference fixpoint solver, and the unchanged replay on every fixture and shared trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES, SHARED_TRACES, shared_params
from tracelens.analyses.whatif import whatif
from tracelens.replay import engine, remedies
from tracelens.replay.critical import critical_path
from tracelens.replay.graph import NONE, build
from tracelens.trace import Trace

MS = 1_000_000


def host(kind: str, name: str, start: int, end: int, tid: int = 1, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def kernel(start: int, end: int, corr: int, name: str = "my_kernel", **extra: Any) -> dict[str, Any]:
    return {
        "kind": "kernel",
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "device": 0,
        "stream": 7,
        "pid": 0,
        "correlation_id": corr,
        **extra,
    }


def copy(start: int, end: int, corr: int, nbytes: int, src: str) -> dict[str, Any]:
    return {
        "kind": "memcpy",
        "name": f"Memcpy HtoD ({src} -> Device)",
        "start_ns": start,
        "end_ns": end,
        "device": 0,
        "stream": 7,
        "pid": 0,
        "correlation_id": corr,
        "bytes": nbytes,
        "copy_kind": "HtoD",
        "src_kind": src.lower(),
        "dst_kind": "device",
    }


def launch(start: int, end: int, corr: int) -> dict[str, Any]:
    return host("runtime", "cudaLaunchKernel", start, end, correlation_id=corr)


def by_cause(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["cause"]: r for r in doc["remedies"]}


# Two launch-bound kernels, each followed by a device synchronize that waits for it (times in ns):
#   R1 launch [0, 5_000] -> K1 [8_000, 1_008_000];  R2 cudaDeviceSynchronize [10_000, 1_010_000]
#   R3 launch [1_020_000, 1_025_000] -> K2 [1_030_000, 2_030_000];  R4 sync [1_032_000, 2_032_000]
SYNC_ROWS = [
    launch(0, 5_000, 1),
    kernel(8_000, 1_008_000, 1),
    host("runtime", "cudaDeviceSynchronize", 10_000, 1_010_000),
    launch(1_020_000, 1_025_000, 2),
    kernel(1_030_000, 2_030_000, 2),
    host("runtime", "cudaDeviceSynchronize", 1_032_000, 2_032_000),
]


def test_unchanged_replay_puts_every_point_back() -> None:
    graph = build(Trace.from_rows(SYNC_ROWS))
    assert graph.size == 12  # 4 calls and 2 kernels, two points each
    assert np.array_equal(engine.solve(graph), graph.time)
    # Waits: R2 on K1, R4 on K2 (the last op launched before each on the device's one stream); both waited.
    assert graph.call_waited.tolist() == [False, True, False, True]


def test_model_replay_uses_the_median_lags() -> None:
    # Launch latency median of {8_000, 10_000} = 9_000; no queued op: stream gap default 1_000; wake-up median
    # of {2_000, 2_000}; a waited sync's own cost: no sync that did not wait -> default 2_000.
    graph = build(Trace.from_rows(SYNC_ROWS))
    t = engine.solve(graph.at_typical_lags())
    k1 = (t[graph.op_start[0]], t[graph.op_end[0]])
    assert k1 == (9_000, 1_009_000)
    assert t[graph.call_end[1]] == 1_011_000  # K1 end + wake-up
    assert t[graph.call_start[2]] == 1_021_000  # + the recorded host gap of 10_000
    assert (t[graph.op_start[1]], t[graph.op_end[1]]) == (1_030_000, 2_030_000)  # R3 + 9_000
    assert t[graph.call_end[3]] == 2_032_000


def test_synchronization_remedy_by_hand() -> None:
    # Syncs return after 2_000 (default own cost): R2 ends 12_000, R3 [22_000, 27_000], R4 [34_000, 36_000].
    # K2 starts at max(K1 end + 1_000 queued gap, R3 start + its own launch latency 10_000) = 1_009_000.
    doc = whatif(Trace.from_rows(SYNC_ROWS))
    assert doc["replay_error"]["recorded_span_ns"] == 2_032_000
    assert doc["replay_error"]["span_error"] == 0
    sync = by_cause(doc)["synchronization"]
    assert sync["predicted_span_ns"] == 2_009_000
    assert sync["gain_ns"] == 23_000
    assert sync["gain_share"] == pytest.approx(23_000 / 2_032_000)
    assert sync["predicted_step_ns"] is None  # no steps


def test_critical_path_by_hand() -> None:
    # Back from R4's end: wait on K2 <- K2's run <- launched by R3 <- host gap after R2 <- R2 waits on K1 <- K1's
    # run <- launched by R1 (anchored). host: 8_000 + 10_000 + 10_000 launch/gap; kernels 2 x 1 ms; sync waits:
    # the two wake-ups of 2_000.
    trace = Trace.from_rows(SYNC_ROWS)
    graph = build(trace)
    path = critical_path(graph, engine.solve(graph), trace)
    assert path is not None
    assert path["length_ns"] == 2_032_000
    assert path["ns"] == {
        "host": 28_000,
        "sync_waits": 4_000,
        "kernels": 2_000_000,
        "copies": 0,
        "communication": 0,
    }
    assert path["on_host"] is False
    assert path["host_side_share"] == pytest.approx(32_000 / 2_032_000)
    assert path["bound"] == "gpu"
    assert path["top_kernels"] == [{"name": "my_kernel", "ns": 2_000_000}]


@pytest.mark.parametrize(
    ("ns", "bound"),
    [
        # host + sync_waits vs kernels + copies + communication, against BOUND_SHARE = 2/3
        ((60, 10, 30, 0, 0), "host"),  # host side 70%
        ((50, 0, 20, 10, 20), "mixed"),  # 50 / 50
        ((20, 10, 40, 10, 20), "gpu"),  # GPU side 70%
        ((2, 0, 1, 0, 0), "host"),  # exactly 2/3 counts
        ((0, 0, 0, 0, 0), None),  # empty path
    ],
)
def test_critical_path_bound(ns: tuple[int, ...], bound: str | None) -> None:
    from tracelens.replay.critical import bound_of

    assert bound_of(np.array(ns, float)) == bound


INPUT_NAME = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def input_rows() -> list[dict[str, Any]]:
    # Two 60 ms steps; each waits 50 ms for its batch, launches a 1 ms kernel and synchronizes on it.
    rows = []
    for k in range(2):
        base = k * 60 * MS
        rows += [
            {**host("step", f"ProfilerStep#{k}", base, base + 60 * MS), "step": k},
            host("cpu_op", INPUT_NAME, base + 100, base + 50 * MS + 100),
            launch(base + 50 * MS + 200, base + 50 * MS + 5_200, k + 1),
            kernel(base + 50 * MS + 10_000, base + 51 * MS + 10_000, k + 1),
            host("runtime", "cudaStreamSynchronize", base + 50 * MS + 6_000, base + 51 * MS + 12_000),
        ]
    return rows


def test_input_remedy_by_hand() -> None:
    # Recorded mean step: the period between the ends of the two steps' work, 111_012_000 - 51_012_000.
    # Without the input waits each step's first call follows the step marker after 200 ns: step 0's work ends
    # at 1_012_000; step 1's marker follows after the recorded 8_988_000 of host time (no input in it), at
    # 10_000_000, its sync ends at 11_012_000: a period of 10_000_000; span gain 100 ms.
    doc = whatif(Trace.from_rows(input_rows()))
    error = doc["replay_error"]
    assert error["steps"] == 2
    assert error["recorded_step_ns"] == 60_000_000
    assert error["recorded_span_ns"] == 111_012_000
    remedy = by_cause(doc)["input_pipeline"]
    assert remedy["predicted_step_ns"] == 10_000_000
    assert remedy["gain_ns"] == 100 * MS
    assert remedy["predicted_span_ns"] == 11_012_000


def test_launch_overhead_remedy_by_hand() -> None:
    # One step, four 20 µs kernels each launched 15 µs after a 10 µs launch call, launches 100 µs apart; a sync.
    rows = [{**host("step", "ProfilerStep#0", 0, MS), "step": 0}]
    for i in range(4):
        start = 10_000 + i * 100_000
        rows += [launch(start, start + 10_000, i + 1), kernel(start + 15_000, start + 35_000, i + 1)]
    rows.append(host("runtime", "cudaDeviceSynchronize", 340_000, 347_000))
    # Graph: the four launches are one region, from the first launch call's start (10_000) to the last one's end
    # (320_000): its host code (the calls and the 90 µs between them, nothing recorded there) collapses to one
    # default 40 µs graph launch. The host time outside the region stays: 10_000 from the step marker to the first
    # launch, 20_000 from the last launch to the sync. So the calls all at 10_000 + 40_000 = 50_000, K0 at 50_000 +
    # 15_000 (its launch latency) = 65_000, then back to back with the default 0.4 µs graph gap: K3 ends at
    # 65_000 + 4 x 20_000 + 3 x 400 = 146_200; the sync (called at 50_000 + 20_000) returns 2_000 (its recorded
    # wake-up) after it. One step: its time runs from its marker (0) to 148_200. (Before, every host lag but the
    # sync's wait was dropped, the 30 µs outside the region too: 138_200.)
    doc = whatif(Trace.from_rows(rows))
    assert doc["replay_error"]["recorded_step_ns"] == 347_000
    remedy = by_cause(doc)["host_launch_overhead"]
    assert remedy["predicted_step_ns"] == 148_200
    assert remedy["predicted_span_ns"] == 148_200
    assert "40 µs (default" in remedy["assumptions"]


def test_launch_overhead_remedy_keeps_the_host_time_between_regions() -> None:
    """The a100 MPI saxpy's shape: one launch per iteration between blocking calls, and the host busy between
    iterations with work the trace records only as an annotation (an MPI range) or not at all. A graph replaces the
    code that issues a region's launches, not the program's waits and computing between regions: the CUDA-graph
    remedy removed every host lag there (the saxpy's span 1.71 s -> 0.68 s, MPI_Init and MPI waits included)."""
    rows = [
        {**host("step", "ProfilerStep#0", 0, 6 * MS), "step": 0},
        launch(10_000, 20_000, 1),
        kernel(25_000, 45_000, 1),
        host("runtime", "cudaDeviceSynchronize", 20_000, 47_000),
        host("annotation", "MPI_Wait", 47_000, 5_047_000),  # 5 ms recorded only as a range
        launch(5_047_000, 5_057_000, 2),
        kernel(5_062_000, 5_082_000, 2),
        host("runtime", "cudaDeviceSynchronize", 5_057_000, 5_084_000),
    ]
    # Two regions (a blocking call between), one launch each, spans [10_000, 20_000] and [5_047_000, 5_057_000]:
    # each launch call (10 µs) becomes a graph launch (40 µs default). Launch A at 10_000 (kept) + 40_000 = 50_000,
    # its kernel at 65_000-85_000, the sync returns at 87_000; the 5_000_000 of MPI wait stays: launch B at
    # 87_000 + 5_000_000 + 40_000 = 5_127_000, its kernel at 5_142_000-5_162_000, the sync returns at 5_164_000.
    doc = whatif(Trace.from_rows(rows))
    assert doc["replay_error"]["recorded_step_ns"] == 5_084_000
    remedy = by_cause(doc)["host_launch_overhead"]
    assert remedy["predicted_step_ns"] == 5_164_000  # graphs of one launch each cost more than they save
    assert remedy["gain_ns"] == 5_084_000 - 5_164_000


def test_launch_overhead_remedy_keeps_a_long_unrecorded_gap_inside_a_region() -> None:
    """tf/v100x8_tf2.4_bert_multiworker's shape: two launches of one region (no blocking call between) 20 ms apart
    with nothing recorded between them. The trace cannot tell that from a host wait, and the measured graph pairs
    show a graph removing such gaps up to 4 ms only: the remedy removed the 368 ms one there ("saves 97.7%")."""
    rows = [
        {**host("step", "ProfilerStep#0", 0, 30 * MS), "step": 0},
        launch(10_000, 20_000, 1),
        kernel(25_000, 45_000, 1),
        launch(20_020_000, 20_030_000, 2),  # 20 ms after the first call's end, nothing recorded between
        kernel(20_035_000, 20_055_000, 2),
        host("runtime", "cudaDeviceSynchronize", 20_060_000, 20_067_000),
    ]
    # One region [10_000, 20_030_000]. The first call starts at 10_000 (kept, outside the region) + 40_000 (default
    # graph launch) = 50_000, its own 10_000 removed; the 20_000_000 gap stays (over the 5 ms bound): the second
    # call at 20_050_000, its own time removed; the 30_000 from its end to the sync stays (outside the region):
    # the sync is called at 20_080_000. Its kernel K2 runs 15_000 after its call (its launch latency) at
    # 20_065_000-20_085_000, and the sync returns 2_000 (its recorded wake-up) after it: 20_087_000. (Removing the
    # gap, the remedy predicted 107_400: a 99% gain.)
    doc = whatif(Trace.from_rows(rows))
    assert doc["replay_error"]["recorded_step_ns"] == 20_067_000
    remedy = by_cause(doc)["host_launch_overhead"]
    assert remedy["predicted_step_ns"] == 20_087_000
    assert "Not modelled: 1 host gaps inside regions" in remedy["assumptions"]
    assert "(20.0 ms in all, the longest 20.0 ms)" in remedy["assumptions"]


def test_a_long_api_call_is_no_unrecorded_gap() -> None:
    """A CUDA API call inside a region is recorded (its RUNTIME row), not host time with nothing recorded: the
    bound on unrecorded gaps named the a100 MPI saxpy's long calls "15 host gaps ... with nothing recorded (374.3
    ms in all)". Its launches are 5 kernels, each its own region (a blocking copy or synchronize between any two:
    read with SQL), so a region holds no gap between launches at all, only the launch call itself."""
    import sqlite3

    path = SHARED_TRACES / "nsys" / "a100_saxpy_nsys2022.2.sqlite"
    if not path.is_file():
        pytest.skip("../shared/traces/nsys/a100_saxpy_nsys2022.2.sqlite not present")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = [
        (tid, name.split("_v")[0])
        for tid, name in con.execute(
            "SELECT r.globalTid, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE r.eventClass = 0 ORDER BY r.globalTid, r.start"
        )
    ]
    (long_calls,) = con.execute(
        'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 0 AND "end" - start > 5000000'
    ).fetchone()
    con.close()
    # between two kernel launches of one thread, a blocking call (a synchronous cudaMemcpy or a synchronize)
    pending: dict[int, bool] = {}
    for tid, name in names:
        if name == "cudaLaunchKernel":
            assert not pending.get(tid), "two launches of one region"
            pending[tid] = True
        elif name == "cudaMemcpy" or "Synchronize" in name:
            pending[tid] = False
    assert long_calls > 0  # calls longer than the 5 ms bound exist
    remedy = by_cause(whatif(tracelens.load(path)))["host_launch_overhead"]
    assert "Not modelled" not in remedy["assumptions"]


def _launch_work_bound_ns(path: Path) -> int:
    """Independent of tracelens: the most host time a CUDA graph capture could take off an Nsight export, read with
    SQL. Per host thread, the union of its CUDA API calls (every RUNTIME row) and of its launch regions (from the
    first launch-like call after a blocking call, a synchronize or a synchronous cudaMemcpy, to the last one before
    the next). Everything else on the host (MPI, start-up before the first call, the program's own work between
    regions) is out of reach of the remedy."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT r.globalTid, r.start, r.end, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "JOIN StringIds s ON s.id = r.nameId ORDER BY r.globalTid, r.start"
    ).fetchall()
    con.close()
    intervals: list[tuple[int, int, int]] = []
    region: list[int] | None = None
    thread = None
    for tid, start, end, name in rows:
        name = name.split("_v")[0]
        if tid != thread:
            if region:
                intervals.append((thread, region[0], region[1]))
            region, thread = None, tid
        intervals.append((tid, start, end))
        if "Synchronize" in name or name == "cudaMemcpy":  # a blocking call ends a region
            if region:
                intervals.append((tid, region[0], region[1]))
            region = None
        elif "Launch" in name or name.endswith("Async"):
            region = [start, end] if region is None else [region[0], max(region[1], end)]
    if region:
        intervals.append((thread, region[0], region[1]))
    total, current = 0, None
    for tid, start, end in sorted(intervals):
        if current is None or tid != current[0] or start > current[2]:
            total += 0 if current is None else current[2] - current[1]
            current = [tid, start, end]
        else:
            current[2] = max(current[2], end)
    return total + (0 if current is None else current[2] - current[1])


@pytest.mark.parametrize(
    "name",
    [
        "a100_saxpy_nsys2022.2.sqlite",
        "rtx3080_tiny_nsys2026.1.sqlite",
        "h100x2_fastvideo_window_nsys2026.2.sqlite",
    ],
)
def test_launch_overhead_gain_is_within_the_launch_work(name: str) -> None:
    """The CUDA-graph remedy's gain is at most the host time its model may remove (a graph launch costs time too).
    It removed every host lag: the a100 MPI saxpy "1.71 s -> 682 ms" (1.03 s gained, MPI_Init and MPI waits; the
    bound is 0.70 s), the RTX 3080 trace "saves 82.6%" (195 ms, its start-up before the first CUDA call; the bound
    is 41 ms) for a 2.6% cause."""
    path = SHARED_TRACES / "nsys" / name
    if not path.is_file():
        pytest.skip(f"../shared/traces/nsys/{name} not present")
    remedy = by_cause(whatif(tracelens.load(path))).get("host_launch_overhead")
    assert remedy is not None
    assert remedy["gain_ns"] <= _launch_work_bound_ns(path)


def test_memcpy_remedy_by_hand() -> None:
    rows = [
        host("runtime", "cudaMemcpyAsync", 0, 1_010_000, correlation_id=1),
        copy(5_000, 1_005_000, 1, 10_000_000, "Pageable"),  # 10 GB/s, the call waits for it
        launch(1_020_000, 1_025_000, 2),
        kernel(1_030_000, 1_530_000, 2),
        host("runtime", "cudaMemcpyAsync", 1_040_000, 1_045_000, correlation_id=3),
        copy(1_531_000, 1_571_000, 3, 2_000_000, "Pinned"),  # 50 GB/s
        host("runtime", "cudaStreamSynchronize", 1_050_000, 1_573_000),
    ]
    # Pinned at the measured 50 GB/s the 10 MB copy takes 200_000; its call returns after 2_000. Host: R1 at
    # 12_000, R2 at 32_000, R3 at 42_000. GPU: copy [5_000, 205_000], kernel [206_000, 706_000] (1 µs gap),
    # pinned copy [707_000, 747_000], the sync returns 2_000 later: 749_000.
    doc = whatif(Trace.from_rows(rows))
    remedy = by_cause(doc)["memcpy"]
    assert remedy["predicted_span_ns"] == 749_000
    assert remedy["gain_ns"] == 1_573_000 - 749_000
    assert "50.0 GB/s measured" in remedy["assumptions"]
    assert "synchronization" not in by_cause(doc) or by_cause(doc)["synchronization"]["gain_ns"] >= 0


def test_low_occupancy_remedy_by_hand() -> None:
    rows = [
        launch(0, 5_000, 1),
        kernel(
            10_000,
            1_330_000,
            1,
            name="my_scan_kernel",
            grid_x=2,
            grid_y=1,
            grid_z=1,
            block_x=512,
            block_y=1,
            block_z=1,
        ),
        host("runtime", "cudaDeviceSynchronize", 6_000, 1_332_000),
    ]
    trace = Trace.from_rows(rows, devices=[{"id": 0, "name": "test GPU", "sm_count": 132}])
    # 2 blocks on 132 SMs: 1_320_000 x 2 / 132 = 20_000; the sync returns 2_000 after the kernel.
    remedy = by_cause(whatif(trace))["low_occupancy"]
    assert remedy["predicted_span_ns"] == 32_000


def test_startup_remedy_by_hand() -> None:
    rows = [
        host("driver", "cuModuleLoadData", 0, MS),
        launch(MS + 10_000, MS + 15_000, 1),
        kernel(MS + 20_000, MS + 120_000, 1),
        host("runtime", "cudaDeviceSynchronize", MS + 16_000, MS + 122_000),
    ]
    # The module load takes no time: everything after it moves 1 ms earlier.
    remedy = by_cause(whatif(Trace.from_rows(rows)))["startup"]
    assert remedy["gain_ns"] == MS


def reference_solve(graph: Any) -> np.ndarray:
    """Earliest times by plain relaxation to a fixpoint (points in recorded order, one at a time)."""
    t = np.full(graph.size, NONE, np.int64)
    incoming: dict[int, list[tuple[int, int]]] = {}
    for s, d, lag in zip(
        graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_lag.tolist(), strict=True
    ):
        incoming.setdefault(d, []).append((s, lag))
    order = np.argsort(graph.time, kind="stable").tolist()
    for _ in range(graph.size):
        changed = False
        for i in order:
            best = int(graph.anchor[i])
            if not graph.chain_first[i]:
                best = max(best, int(t[i - 1]) + int(graph.lag[i]))
            for s, lag in incoming.get(i, ()):
                best = max(best, int(t[s]) + lag)
            if best != t[i]:
                t[i], changed = best, True
        if not changed:
            return t
    raise AssertionError("no fixpoint")


@pytest.mark.parametrize(
    "name", ["pytorch_sync-every-step_cuda", "pytorch_pageable-copies_cuda", "pytorch_slow-input_cuda"]
)
def test_solver_matches_a_reference_fixpoint_under_every_remedy(name: str) -> None:
    ctx = remedies.Context(tracelens.load(FIXTURES / "gpu" / f"{name}.pt.trace.json.gz"))
    graphs = [ctx.graph, ctx.graph.at_typical_lags()]
    graphs += [g for g in (model(ctx)[0] for _, model in remedies.REMEDIES.values()) if g is not None]
    for graph in graphs:
        assert np.array_equal(engine.solve(graph), reference_solve(graph))


KINETO_FIXTURES = sorted((FIXTURES / "gpu").glob("*.pt.trace.json.gz"))
SHARED = (
    shared_params("nsys", "*.sqlite")
    + shared_params("pytorch", "*.json.gz")
    + shared_params("tf", "*.xplane.pb")
)


def _span_from_json(path: Path) -> int:
    """Recorded span of the graph's points read from the Kineto JSON itself: first start to last end over the
    runtime/driver calls (on a thread), kernels, copies and memsets, and the ProfilerStep starts."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    cats = {
        "cuda_runtime",
        "cuda_driver",
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "Runtime",
        "Kernel",
        "Memcpy",
        "Memset",
    }
    starts, ends = [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        if e.get("cat") in cats:
            starts.append(e["ts"])
            ends.append(e["ts"] + e["dur"])
        elif str(e.get("name", "")).startswith("ProfilerStep#"):
            starts.append(e["ts"])
            ends.append(e["ts"])
    return round((max(ends) - min(starts)) * 1000)


@pytest.mark.parametrize("path", KINETO_FIXTURES, ids=[p.name for p in KINETO_FIXTURES])
def test_replay_error_on_fixtures(path: Path) -> None:
    result = whatif(tracelens.load(path))
    error = result["replay_error"]
    if error is None:  # e.g. the CPU-activity-only recording: nothing on a GPU to replay
        events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
        assert not any(
            e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
            for e in events
        )
        assert result["reason"]
        return
    assert abs(error["recorded_span_ns"] - _span_from_json(path)) <= 1_000  # µs timestamps in the JSON
    assert abs(error["span_error"]) < 0.001
    assert abs(error["model_span_error"]) < 0.02
    if error["steps"]:
        assert abs(error["step_error"]) < 0.001
        assert abs(error["model_step_error"]) < 0.02


@pytest.mark.parametrize("path", SHARED)
def test_replay_error_on_shared_traces(path: Path) -> None:
    error = whatif(tracelens.load(path))["replay_error"]
    assert abs(error["span_error"]) < 0.02
    assert abs(error["model_span_error"]) < 0.02
    if error["steps"]:
        assert abs(error["model_step_error"]) < 0.02
    assert (
        error["model_reason"] is None and error["model_error_by_lag"] is None
    )  # within the limit: no reason


def test_a_recorded_stream_sync_waits_for_its_stream_only() -> None:
    # K1 on stream 7 (ends 1_008_000), K2 on stream 9 (ends 3_000_000); the stream sync on stream 7 returns at
    # 1_010_000. With its cuda_sync row (same correlation id, stream 7) it waits for K1 alone: unchanged replay
    # exact. Read as a device-wide wait it would also wait for K2 and end at 3 ms at the earliest.
    rows = [
        launch(0, 5_000, 1),
        kernel(8_000, 1_008_000, 1),
        launch(6_000, 9_000, 2),
        {**kernel(12_000, 3_000_000, 2), "stream": 9},
        host("runtime", "cudaStreamSynchronize", 10_000, 1_010_000, correlation_id=3),
        {
            "kind": "gpu_sync",
            "name": "Stream Sync",
            "start_ns": 10_500,
            "end_ns": 1_009_000,
            "device": 0,
            "stream": 7,
            "correlation_id": 3,
            "sync_kind": "stream_sync",
        },
        launch(1_020_000, 1_025_000, 4),
        kernel(1_030_000, 1_100_000, 4),
    ]
    graph = build(Trace.from_rows(rows))
    waits = graph.edge_is_wait
    assert graph.edge_dst[waits].tolist() == [graph.call_end[2]]
    assert graph.edge_src[waits].tolist() == [graph.op_end[0]]
    assert np.array_equal(engine.solve(graph), graph.time)
    without = build(Trace.from_rows([r for r in rows if r["kind"] != "gpu_sync"]))
    assert sorted(without.edge_src[without.edge_is_wait].tolist()) == sorted(
        [without.op_end[0], without.op_end[1]]
    )
    assert engine.solve(without)[without.call_end[2]] >= 3_000_000  # the wait on K2 (clipped at 0 lag)


# ------------------------------------------------------------------ generated traces (hypothesis)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ACTION = st.tuples(
    st.sampled_from(["launch", "side", "sync", "copy", "input"]), st.integers(1, 50), st.integers(1, 50)
)


def simulated_rows(actions: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """A one-thread timeline on two streams (7, and 9 for "side" launches) simulated step by step in µs
    (consistent by construction): launches with a 3 µs latency, ops queued 1 µs apart on their stream,
    device synchronizes returning 2 µs after both streams drain, pageable copies 2 µs after their copy."""
    us = 1_000
    rows: list[dict[str, Any]] = [{**host("step", "ProfilerStep#0", 0, 1), "step": 0}]
    h, free, side, corr = 10 * us, 0, 0, 0
    for what, a, b in actions:
        if what == "input":
            rows.append(host("cpu_op", INPUT_NAME, h, h + a * us))
            h += a * us + us
            continue
        if what == "sync":
            end = max(h + 2 * us, free + 2 * us, side + 2 * us)
            rows.append(host("runtime", "cudaDeviceSynchronize", h, end))
            h = end + b * us
            continue
        corr += 1
        if what == "side":
            start = max(h + 3 * us, side + us)
            side = start + a * us
            rows += [launch(h, h + 2 * us, corr), {**kernel(start, side, corr), "stream": 9}]
            h += 2 * us + b * us
            continue
        start = max(h + 3 * us, free + us)
        free = start + a * us
        if what == "launch":
            rows += [launch(h, h + 2 * us, corr), kernel(start, free, corr)]
            h += 2 * us + b * us
        else:
            end = free + 2 * us
            rows += [
                host("runtime", "cudaMemcpyAsync", h, end, correlation_id=corr),
                copy(start, free, corr, a * 1_000_000, "Pageable"),
            ]
            h = end + b * us
    rows[0]["end_ns"] = max(h, free, side) + us
    return rows


@settings(max_examples=30, deadline=None)
@given(st.lists(ACTION, min_size=1, max_size=25))
def test_generated_traces_replay_exactly_and_remedies_match_the_reference(actions: list) -> None:
    ctx = remedies.Context(Trace.from_rows(simulated_rows(actions)))
    assert np.array_equal(engine.solve(ctx.graph), ctx.graph.time)
    for cause, (_, model) in remedies.REMEDIES.items():
        changed, _ = model(ctx)
        if changed is not None:
            t = engine.solve(changed)
            assert np.array_equal(t, reference_solve(changed))
            # only removes or shortens work (a graph launch adds its own cost: it may lengthen a short step)
            if cause != "host_launch_overhead":
                assert t.max() <= ctx.graph.time.max()


def test_too_large_traces_are_skipped_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracelens.analyses import whatif as section

    monkeypatch.setattr(section, "MAX_POINTS", 11)  # the sync trace has 12 points
    doc = section.whatif(Trace.from_rows(SYNC_ROWS))
    assert doc["replay_error"] is None and doc["remedies"] == [] and "12 graph points" in doc["reason"]
    monkeypatch.setattr(section, "MAX_POINTS", 12)
    # the cut limit applies where the numpy batches solve (no compiled solver): cuts are the ends of blocking calls,
    # the starts of calls a wake-up resumes, the ends of matched collective kernels
    assert section.whatif(Trace.from_rows(SYNC_ROWS))["reason"] is None  # with the solver built
    monkeypatch.setattr(engine, "_replay_solve", None)
    monkeypatch.setattr(section, "MAX_CUTS_WITHOUT_SOLVER", 1)  # it has 2 syncs
    assert "2 (limit 1)" in section.whatif(Trace.from_rows(SYNC_ROWS))["reason"]
    monkeypatch.setattr(section, "MAX_CUTS_WITHOUT_SOLVER", 2)
    assert section.whatif(Trace.from_rows(SYNC_ROWS))["reason"] is None
    # the two-device trace has 2 syncs and 2 participants
    monkeypatch.setattr(section, "MAX_POINTS", 20)
    monkeypatch.setattr(section, "MAX_CUTS_WITHOUT_SOLVER", 3)
    assert "4 (limit 3)" in section.whatif(Trace.from_rows(two_device_rows()))["reason"]
    # a host thread woken by another after an idle gap is a cut too (the main thread wakes a second one)
    woken = [*SYNC_ROWS, host("runtime", "cudaGetDevice", 1_100_000, 1_101_000, tid=2)]
    graph = build(Trace.from_rows(woken))
    assert int(graph.edge_is_wake.sum()) == 1
    assert engine.cut_count(graph) == 3


def test_remedy_lines_read_the_document() -> None:
    from tracelens.report.whatif_text import remedy_lines

    doc = {
        "whatif": {
            "replay_error": {"recorded_step_ns": 153e6, "recorded_span_ns": 2_000_000_000},
            "remedies": [
                {
                    "cause": "input_pipeline",
                    "remedy": "input ready",
                    "predicted_step_ns": 125e6,
                    "gain_ns": 280_000_000,
                    "predicted_span_ns": 1_720_000_000,
                },
                {
                    "cause": "startup",
                    "remedy": "no start-up",
                    "predicted_step_ns": 152.99e6,
                    "gain_ns": 100,
                    "predicted_span_ns": 1_999_999_900,
                },  # -0.007%: not listed
            ],
        }
    }
    # (125 - 153) / 153 = -18.3%
    assert remedy_lines(doc) == ["fixing input_pipeline (input ready): step 153 ms → 125 ms (−18.3%)"]
    no_steps = {
        "whatif": {
            "replay_error": {"recorded_step_ns": None, "recorded_span_ns": 2_000_000_000},
            "remedies": [{**doc["whatif"]["remedies"][0], "predicted_step_ns": None}],
        }
    }
    assert remedy_lines(no_steps) == ["fixing input_pipeline (input ready): span 2 s → 1.72 s (−14.0%)"]


def test_the_replays_step_says_how_it_differs_from_the_step_markers_mean() -> None:
    """The what-if section said "step 39.3 ms → 6.91 ms" under a report whose step time reads "mean 39.1 ms" (the
    demo trace; the same in a run of its copies): two figures called the step, unexplained. The replay's step is
    read where each step's work ends (docs/json.md, whatif.replay_error.recorded_step_ns); where it differs from
    the markers' mean, a line says which is which."""
    from tracelens.report.whatif_text import step_basis_line

    doc = {
        "summary": {"steps": {"mean_ns": 39_087_600}},
        "whatif": {"replay_error": {"recorded_step_ns": 39_312_600.0}},
    }
    assert step_basis_line(doc) == (
        "step: read where each step's work ends, 39.3 ms on average; the step markers' mean is 39.1 ms"
    )
    same = {"summary": {"steps": {"mean_ns": 39_312_600}}, "whatif": doc["whatif"]}
    assert step_basis_line(same) is None
    # A run: the ranks' mean step (each rank's markers), weighted by their step counts.
    run = {
        "summary": {"steps": None},
        "ranks": [
            {"mean_step_ns": 30_000_000, "step_count": 1},
            {"mean_step_ns": 42_000_000, "step_count": 3},
        ],
        "whatif": doc["whatif"],
    }
    assert step_basis_line(run) == (
        "step: read where each step's work ends, 39.3 ms on average; the step markers' mean is 39 ms"
    )
    assert step_basis_line({"summary": {"steps": None}, "whatif": doc["whatif"]}) is None
    # The demo trace end to end: its 5 ProfilerStep markers last 38.29, 38.69, ..., 39.89 ms (mean 39.09 ms).
    import tracelens
    from tests.conftest import FIXTURES
    from tracelens.report import render

    demo = tracelens.analyze(tracelens.load(FIXTURES / "demo.pt.trace.json.gz"))
    for fmt in ("markdown", "terminal"):
        assert "the step markers' mean is 39.1 ms" in render(demo, fmt)


def test_stream_wait_event_edge() -> None:
    # K1 on stream 7 [10_000, 1_010_000]; an event recorded after it, stream 9 told to wait for it, K2 launched
    # on stream 9 at 30_000 runs only after K1: [1_012_000, 1_112_000] (2 µs after K1's end).
    rows = [
        launch(0, 5_000, 1),
        kernel(10_000, 1_010_000, 1),
        host("runtime", "cudaEventRecord", 6_000, 8_000),
        host("runtime", "cudaStreamWaitEvent", 9_000, 11_000),
        launch(30_000, 35_000, 2),
        {**kernel(1_012_000, 1_112_000, 2), "stream": 9},
    ]
    graph = build(Trace.from_rows(rows))
    events = ~graph.edge_is_wait & ~graph.edge_is_wake & np.isin(graph.edge_src, graph.op_end)
    assert graph.edge_src[events].tolist() == [graph.op_end[0]]
    assert graph.edge_dst[events].tolist() == [graph.op_start[1]]
    assert graph.edge_lag[events].tolist() == [2_000]
    t = engine.solve(graph)
    assert np.array_equal(t, graph.time)
    # K1 twice as fast: K2 follows it (the launch at 30_000 + its capped latency is earlier)
    lag = graph.lag.copy()
    lag[graph.op_end[0]] = 500_000
    t = engine.solve(graph.with_changes(lag=lag))
    assert (t[graph.op_start[1]], t[graph.op_end[1]]) == (512_000, 612_000)


def test_gain_by_cause_for_the_diagnosis() -> None:
    from tracelens.analyses.whatif import gain_by_cause

    doc = whatif(Trace.from_rows(SYNC_ROWS))
    gains = gain_by_cause(doc)
    assert gains["synchronization"] == {
        "gain_ns": 23_000,
        "gain_share": 23_000 / 2_032_000,
        "step_gain_share": None,
    }
    assert gain_by_cause(None) == {}


# Two devices, one host thread each, one all-reduce (times in ns). Device 0: compute K0 [10_000, 1_010_000], then
# its NCCL kernel C0 queued at 1_011_000; device 1 (the straggler): K1 [10_000, 3_010_000], C1 [3_011_000, 3_511_000].
# C0 cannot end before C1 started (3_011_000) + its own transfer (3_511_000 - 3_011_000 = 500_000): 2 ms of C0 is
# waiting. Each thread's cudaDeviceSynchronize waits for its device's collective (+ 2_000 wake-up).
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def two_device_rows(k1_end: int = 3_010_000) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for dev, tid, k_end in ((0, 1, 1_010_000), (1, 2, k1_end)):
        c_start = k_end + 1_000
        c_end = max(c_start, 1_011_000, k1_end + 1_000) + 500_000
        rows += [
            host("runtime", "cudaLaunchKernel", 0, 5_000, tid=tid, correlation_id=10 * dev + 1),
            kernel(10_000, k_end, 10 * dev + 1, device=dev),
            host("runtime", "cudaLaunchKernel", 6_000, 11_000, tid=tid, correlation_id=10 * dev + 2),
            kernel(c_start, c_end, 10 * dev + 2, name=NCCL, device=dev),
            host("runtime", "cudaDeviceSynchronize", 12_000, c_end + 2_000, tid=tid),
        ]
    return rows


def test_collective_edges_by_hand() -> None:
    graph = build(Trace.from_rows(two_device_rows()))

    def op(device: int, start: int) -> int:
        return int(np.flatnonzero((graph.op_device == device) & (graph.time[graph.op_start] == start))[0])

    c0, c1, k1 = op(0, 1_011_000), op(1, 3_011_000), op(1, 10_000)
    assert np.flatnonzero(graph.op_collective >= 0).tolist() == sorted([c0, c1])
    assert graph.op_collective[c0] == graph.op_collective[c1] == 0
    coll = graph.edge_is_collective
    pairs = sorted(
        zip(
            graph.edge_src[coll].tolist(),
            graph.edge_dst[coll].tolist(),
            graph.edge_lag[coll].tolist(),
            strict=True,
        )
    )
    assert pairs == sorted(
        [(graph.op_start[c1], graph.op_end[c0], 500_000), (graph.op_start[c0], graph.op_end[c1], 500_000)]
    )
    # each participant's own chain lag is its transfer time, not its duration (C0's 2.5 ms is 2 ms of waiting)
    assert graph.lag[graph.op_end[c0]] == 500_000
    assert graph.lag[graph.op_end[c1]] == 500_000
    t = engine.solve(graph)
    assert np.array_equal(t, graph.time)
    # The straggler's compute at 1 ms instead of 3 ms: C1 runs [1_011_000, 1_511_000]; C0 ends with it.
    lag = graph.lag.copy()
    lag[graph.op_end[k1]] = 1_000_000
    t = engine.solve(graph.with_changes(lag=lag))
    assert (t[graph.op_start[c1]], t[graph.op_end[c1]]) == (1_011_000, 1_511_000)
    assert t[graph.op_end[c0]] == 1_511_000
    assert t[graph.call_end[2]] == t[graph.call_end[5]] == 1_513_000
    # the critical path ends at a sync, through a collective's end, set by C1's start: communication owns the
    # transfer and the 1_000 queued gap before C1 (a queued op's gap is its own category); K1's 3 ms are kernels
    path = critical_path(graph, engine.solve(graph), Trace.from_rows(two_device_rows()))
    assert path is not None
    assert path["ns"]["communication"] == 501_000
    assert path["ns"]["kernels"] == 3_000_000


def test_unmatched_collective_has_no_edges() -> None:
    # one device only (a single rank's trace): nothing to match, the collective keeps its recorded duration
    rows = [r for r in two_device_rows() if r.get("device", 0) == 0 and r.get("tid", 1) == 1]
    graph = build(Trace.from_rows(rows))
    assert graph.op_collective.tolist() == [-1, -1]
    assert not graph.edge_is_collective.any()
    c0 = int(np.flatnonzero(graph.time[graph.op_start] == 1_011_000)[0])
    assert graph.lag[graph.op_end[c0]] == 3_511_000 - 1_011_000


def overlap_rows() -> list[dict[str, Any]]:
    """Two devices, each: compute K [10_000, k_end], its all-reduce C queued on the same stream, the next compute
    Kb queued after C (1 ms), then a device synchronize. Device 1 is the straggler (K1 3 ms): both C end at
    3_511_000 (C1's start 3_011_000 + 500_000 transfer), both Kb run [3_512_000, 4_512_000], syncs end 4_514_000."""
    rows: list[dict[str, Any]] = []
    for dev, tid, k_end in ((0, 1, 1_010_000), (1, 2, 3_010_000)):
        corr = 10 * dev
        rows += [
            host("runtime", "cudaLaunchKernel", 0, 5_000, tid=tid, correlation_id=corr + 1),
            kernel(10_000, k_end, corr + 1, device=dev),
            host("runtime", "cudaLaunchKernel", 6_000, 11_000, tid=tid, correlation_id=corr + 2),
            kernel(k_end + 1_000, 3_511_000, corr + 2, name=NCCL, device=dev),
            host("runtime", "cudaLaunchKernel", 12_000, 17_000, tid=tid, correlation_id=corr + 3),
            kernel(3_512_000, 4_512_000, corr + 3, device=dev),
            host("runtime", "cudaDeviceSynchronize", 18_000, 4_514_000, tid=tid),
        ]
    return rows


def test_communication_remedy_by_hand() -> None:
    # The collectives become placeholders on their streams: K0b runs [1_012_000, 2_012_000] (C0's start + the
    # recorded 1_000 queued gap), K1b [3_012_000, 4_012_000]. The syncs wait for the collective's completion:
    # sync0 = max(K0b end + 2_000 wake-up, C1 start 3_011_000 + 500_000 transfer + 2_000) = 3_513_000;
    # sync1 = max(K1b end + 2_000 = 4_014_000, 3_513_000). Span 4_514_000 -> 4_014_000: the 0.5 ms transfer
    # now overlaps the straggler's next compute.
    trace = Trace.from_rows(overlap_rows())
    ctx = remedies.Context(trace)
    g = ctx.graph
    assert np.array_equal(engine.solve(g), g.time)
    changed, assumptions = remedies.communication(ctx)
    assert changed is not None and "2 collectives" in assumptions
    t = engine.solve(changed)
    kb = {int(g.op_device[o]): o for o in range(g.op_row.size) if g.time[g.op_start[o]] == 3_512_000}
    assert (t[g.op_start[kb[0]]], t[g.op_end[kb[0]]]) == (1_012_000, 2_012_000)
    assert (t[g.op_start[kb[1]]], t[g.op_end[kb[1]]]) == (3_012_000, 4_012_000)
    sync_end = sorted(int(t[g.call_end[c]]) for c in np.flatnonzero(g.call_waits))
    assert sync_end == [3_513_000, 4_014_000]
    doc = whatif(trace)
    comm = by_cause(doc)["communication"]
    assert comm["gain_ns"] == 500_000
    assert comm["predicted_span_ns"] == 4_014_000
    assert "communication" not in doc["not_modeled"]
    assert (
        set(doc["not_modeled_reasons"])
        == set(doc["not_modeled"])
        == {"multi_gpu_imbalance", "queued_gaps", "unexplained_idle"}
    )


def test_communication_remedy_drops_event_waits() -> None:
    # One device: K [10_000, 1_010_000] on stream 7; the all-reduce C on stream 9 [1_020_000, 1_520_000] waits for
    # K's event; K2 on stream 7 waits for C's event [1_521_000, 2_521_000]. Overlapped: K2 no longer waits for C;
    # it follows K on its stream (1_000 typical queued gap, no queued op measured: default) and its launch
    # (40_000 + the device's launch latency median).
    rows = [
        launch(0, 5_000, 1),
        kernel(10_000, 1_010_000, 1),
        host("runtime", "cudaEventRecord", 6_000, 7_000),
        host("runtime", "cudaStreamWaitEvent", 8_000, 9_000),
        launch(10_000, 15_000, 2),
        {**kernel(1_020_000, 1_520_000, 2, name=NCCL), "stream": 9},
        host("runtime", "cudaEventRecord", 16_000, 17_000),
        host("runtime", "cudaStreamWaitEvent", 18_000, 19_000),
        launch(40_000, 45_000, 3),
        kernel(1_521_000, 2_521_000, 3),
    ]
    trace = Trace.from_rows(rows)
    ctx = remedies.Context(trace)
    g = ctx.graph
    assert np.array_equal(engine.solve(g), g.time)
    events = ~g.edge_is_wait & ~g.edge_is_wake & ~g.edge_is_collective & np.isin(g.edge_src, g.op_end)
    assert events.sum() == 2
    changed, assumptions = remedies.communication(ctx)
    assert changed is not None and "1 waits" in assumptions
    t = engine.solve(changed)
    k2 = int(np.flatnonzero(g.time[g.op_start] == 1_521_000)[0])
    launch_lag = g.typical["launch"][0]
    assert t[g.op_start[k2]] == max(1_010_000 + 1_000, 40_000 + launch_lag)


H200 = {
    "id": 0,
    "name": "NVIDIA H200",
    "sm_count": 132,
    "compute_major": 9,
    "compute_minor": 0,
    "warp_size": 32,
    "max_threads_per_sm": 2048,
    "max_threads_per_block": 1024,
    "regs_per_sm": 65536,
    "regs_per_block": 65536,
    "shared_mem_per_sm": 233472,
    "shared_mem_per_block": 49152,
    "shared_mem_per_block_optin": 232448,
}


def occupancy_rows(grid: int, duration: int, op: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    rows = [
        launch(1_000, 5_000, 1),
        kernel(
            10_000,
            10_000 + duration,
            1,
            name="my_scan_kernel",
            grid_x=grid,
            grid_y=1,
            grid_z=1,
            block_x=512,
            block_y=1,
            block_z=1,
            registers_per_thread=32,
            static_shared_bytes=0,
        ),
        host("runtime", "cudaDeviceSynchronize", 6_000, 10_000 + duration + 2_000),
    ]
    return rows + ([op] if op else [])


@pytest.mark.parametrize(
    ("grid", "expected_kernel_ns"),
    [
        # 512 threads x 32 registers: 4 blocks per SM on the H200 (2048 threads / 512), 132 x 4 = 528 slots
        (64, 1_320_000 * 64 // 528),  # one wave holding 64 of 528 slots: 160_000
        (600, 1_320_000 * 600 // 1056),  # two waves (ceil(600 / 528)), 600 of 1056 slots: 750_000
        (1056, 1_320_000),  # two full waves: nothing to gain
    ],
)
def test_low_occupancy_wave_quantization_by_hand(grid: int, expected_kernel_ns: int) -> None:
    from tracelens.replay.occupancy_model import wave_fill

    assert wave_fill(np.array([float(grid)]), np.array([132.0]), np.array([4.0]))[0] == pytest.approx(
        expected_kernel_ns / 1_320_000
    )
    trace = Trace.from_rows(occupancy_rows(grid, 1_320_000), devices=[H200])
    remedy = by_cause(whatif(trace)).get("low_occupancy")
    if expected_kernel_ns == 1_320_000:
        assert remedy is None
        return
    assert remedy is not None
    # the sync returns 2_000 after the kernel, which starts at 10_000
    assert remedy["predicted_span_ns"] == 10_000 + expected_kernel_ns + 2_000 - 1_000


def test_low_occupancy_floor_by_hand() -> None:
    # aten::cumsum over 64 x 262_144 floats reads 67_108_864 bytes: at the H200's 4.8 TB/s, 13_982 ns (rounded
    # up). Its one kernel (100_000 ns, 64 blocks) would scale to 100_000 x 64 / 528 = 12_122: held at 13_982.
    op = host(
        "cpu_op",
        "aten::cumsum",
        500,
        5_500,
        input_dims="[[64,262144],[],[]]",
        input_types='["float","Scalar",""]',
        concrete_inputs='["","1",""]',
    )
    trace = Trace.from_rows(occupancy_rows(64, 100_000, op), devices=[H200])
    remedy = by_cause(whatif(trace))["low_occupancy"]
    assert (
        remedy["predicted_span_ns"] == 10_000 + 13_982 + 2_000 - 1_000
    )  # from the launch call (the op is no point)
    assert "1 launches held there" in remedy["assumptions"]
    # a floor above the recorded time is not a bound (the op did not read all of it): no floor, the fill alone
    trace = Trace.from_rows(occupancy_rows(64, 10_560, op), devices=[H200])
    remedy = by_cause(whatif(trace))["low_occupancy"]
    assert remedy["predicted_span_ns"] == 10_000 + 1_280 + 2_000 - 1_000


def test_communication_remedy_without_host_waits() -> None:
    # the two-device trace without its syncs: nothing waits for the collectives on the host; the next compute no
    # longer waits for them (K0b right after C0's start + 1_000), and the span ends with the later of the computes
    rows = [r for r in overlap_rows() if r["name"] != "cudaDeviceSynchronize"]
    trace = Trace.from_rows(rows)
    ctx = remedies.Context(trace)
    changed, _ = remedies.communication(ctx)
    assert changed is not None
    t = engine.solve(changed)
    g = ctx.graph
    assert sorted(
        int(t[g.op_end[o]]) for o in range(g.op_row.size) if g.time[g.op_start[o]] == 3_512_000
    ) == [2_012_000, 4_012_000]


@pytest.mark.parametrize("path", [*KINETO_FIXTURES, *SHARED], ids=lambda p: getattr(p, "name", str(p)))
def test_no_remedy_predicts_a_step_of_zero_or_less(path: Path) -> None:
    """A predicted step is a time: positive, or null (the shared 2-step MI250 trace predicted -6.6 ms for the launch
    remedy before the guard: its first step holds the start-up work the remedy removes)."""
    if path is None:
        pytest.skip("../shared/traces not present")
    for remedy in whatif(tracelens.load(path))["remedies"]:
        step = remedy["predicted_step_ns"]
        assert step is None or step > 0, remedy["cause"]
        if step is None:
            assert remedy["step_gain_share"] is None, remedy["cause"]
