"""Launches blocked on a full command buffer (Nsight CUPTI_ACTIVITY_KIND_OVERHEAD rows "Command Buffer Full", CUPTI's
CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL, each inside the API call it blocked) are waits on the GPU in the replay
graph: the call's end follows the start of the op whose start released the block (replay/queue_waits.py).

Before, the graph gave such a call its recorded duration as host work, so a host chain of blocked launches read as
the critical path: on h100x2_fastvideo_window (copies 97% of the span, 198 blocks of 912 ms) the critical path
was "on the host: 73.1%"."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SHARED_TRACES
from tests.nsys_handmade_export import US, nsys_export
from tracelens.analyses.whatif import whatif
from tracelens.ingest import load
from tracelens.replay.critical import critical_path
from tracelens.replay.engine import solve
from tracelens.replay.graph import GPU_START, build
from tracelens.replay.remedies import REMEDIES, Context, _drop_waits

H100X2 = SHARED_TRACES / "nsys" / "h100x2_fastvideo_window_nsys2026.2.sqlite"
MEMCPY_ASYNC, LAUNCH, EVENT_RECORD = 1, 2, 14  # StringIds of the handmade fixture

# Host calls (µs from T0): name, start, end, correlation id, the overhead row inside it (or None).
CALLS = [
    (MEMCPY_ASYNC, 0, 5, 11, None),  # C0, 1 ms HtoD pinned
    (MEMCPY_ASYNC, 6, 9, 12, None),  # C1, 1 ms HtoD pinned
    (LAUNCH, 10, 1015, 13, (12, 1013)),  # K2; blocked until C1 starts (1010)
    (LAUNCH, 1016, 2020, 14, (1018, 2018)),  # K3; blocked until K2 starts (2010)
    (EVENT_RECORD, 2030, 2035, 15, None),  # the last point: host
]
# GPU ops on device 0, stream 7, back to back: (kind, correlation id, start, end)
OPS = [
    ("copy", 11, 10, 1010),
    ("copy", 12, 1010, 2010),
    ("kernel", 13, 2010, 2015),
    ("kernel", 14, 2021, 2026),
]


def _export(tmp_path: Path, blocks: bool = True) -> Path:
    """One thread, one stream: two 1 ms pinned copies queued, then two launches blocked on a full command buffer
    (released by C1's start at 1010 µs and K2's start at 2010 µs), then a short call ending last (2035 µs).

    Critical path by hand (from the last point, A4's end at 2035): A4's own 5 µs and the 10 µs gap before it
    (host); A3's end 2020 set by its queue wait on K2's start 2010 (sync_waits 10); K2's start at C1's end (its
    stream predecessor, 0); C1 1000 and C0 1000 (copies), C1 starting at C0's end; C0's start 10 µs after A0's start
    (its launch latency: host). host 25 µs, sync_waits 10 µs, copies 2000 µs; 2035 µs in all. Without the blocks,
    A2 and A3 are host work: the whole 2035 µs on the host chain."""
    calls = [(name, start, end, corr, block if blocks else None) for name, start, end, corr, block in CALLS]
    return nsys_export(
        tmp_path / "command_buffer_full.sqlite", calls, [(k, c, 0, 7, s, e) for k, c, s, e in OPS]
    )


def _load(path: Path):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(path)


def _critical(trace):  # type: ignore[no-untyped-def]
    g = build(trace)
    return g, critical_path(g, solve(g), trace)


def test_blocked_launches_wait_for_the_op_start_that_released_them(tmp_path: Path) -> None:
    trace = _load(_export(tmp_path))
    g = build(trace)
    queue = g.queue_wait_edges()
    assert int(queue.sum()) == 2
    t0 = int(g.time.min())  # (the reader's times count from the session start: A0's start)
    # A2 <- C1's start (1010 µs), A3 <- K2's start (2010 µs); each end 5 resp. 10 µs after it
    waits = sorted(
        (int(g.time[s] - t0) // US, int(g.time[d] - t0) // US, int(lag) // US)
        for s, d, lag in zip(g.edge_src[queue], g.edge_dst[queue], g.edge_lag[queue], strict=True)
    )
    assert waits == [(1010, 1015, 5), (2010, 2020, 10)]
    assert (g.kind[g.edge_src[queue]] == GPU_START).all()
    assert g.call_queued.tolist() == [False, False, True, True, False]
    assert g.call_waited.tolist() == [False, False, True, True, False]
    assert not g.call_waits.any()  # no explicit host wait
    # their own cost: the time outside the block (A2: 1005 - 1001 µs, A3: 1004 - 1000 µs)
    assert (g.lag[g.call_end[[2, 3]]] // US).tolist() == [4, 4]
    # the unchanged replay puts every point back
    assert (solve(g) == g.time).all()


def test_critical_path_walks_into_the_copies_that_held_the_queue(tmp_path: Path) -> None:
    _, path = _critical(_load(_export(tmp_path)))
    assert path is not None
    assert path["length_ns"] == 2035 * US
    assert path["ns"] == {
        "host": 25 * US,
        "sync_waits": 10 * US,
        "kernels": 0,
        "copies": 2000 * US,
        "communication": 0,
    }
    assert path["bound"] == "gpu" and not path["on_host"]


def test_without_the_overhead_rows_the_calls_stay_host_work(tmp_path: Path) -> None:
    g, path = _critical(_load(_export(tmp_path, blocks=False)))
    assert not g.queue_wait_edges().any() and not g.call_queued.any()
    assert path is not None and path["ns"]["host"] == 2035 * US and path["bound"] == "host"


def test_a_faster_gpu_moves_the_blocked_host(tmp_path: Path) -> None:
    """The copies at half their time: C0 [10, 510], C1 [510, 1010]; A2 ends 5 µs after C1's start (515), A3 starts 1
    µs later (516) and its own 4 µs leave it at 520 before K2 (at 1010) releases it: 1020; A4 [1030, 1035]."""
    trace = _load(_export(tmp_path))
    g = build(trace)
    lag = g.lag.copy()
    copies = g.op_end[g.op_is_copy]
    lag[copies] //= 2
    t = solve(g.with_changes(lag=lag))
    assert ((t[g.call_end] - int(g.time.min())) // US).tolist() == [5, 9, 515, 1020, 1035]


def test_remedies_keep_the_queue_waits(tmp_path: Path) -> None:
    """Neither the synchronization nor the memcpy remedy counts a blocked launch as its blocking call, dropping
    waits never drops a queue wait, and the CUDA-graph remedy captures the blocked launches in one region (a graph
    holds no host wait, but a full queue is none) and keeps their waits."""
    ctx = Context(_load(_export(tmp_path)))
    g = ctx.graph
    sync_side, copy_side = ctx.blocking_calls
    assert not sync_side.any() and not copy_side.any()
    assert REMEDIES["synchronization"][1](ctx)[0] is None
    assert REMEDIES["memcpy"][1](ctx)[0] is None
    dropped = _drop_waits(ctx, np.ones(g.call_row.size, bool))
    assert int(dropped.queue_wait_edges().sum()) == 2
    graph, assumptions = REMEDIES["host_launch_overhead"][1](ctx)
    assert graph is not None and int(graph.queue_wait_edges().sum()) == 2
    assert "2 launches the trace shows blocked on a full command buffer" in assumptions
    assert "1 graphs" in assumptions  # one region: the blocked launches do not split it
    assert whatif(ctx.trace)["replay_error"]["blocking_calls"] == 2


@pytest.mark.skipif(not H100X2.exists(), reason="../shared/traces/nsys/h100x2_fastvideo_window not present")
def test_h100x2_window_critical_path_runs_through_the_copies() -> None:
    """The 2-GPU window: 198 launches blocked on a full command buffer (a direct SQL count, each matched to its call
    by correlation id); the critical path is GPU-side, mostly copies, and the unchanged replay still reproduces
    the recorded span."""
    db = sqlite3.connect(f"file:{H100X2}?mode=ro", uri=True)
    blocked = db.execute(
        "SELECT count(DISTINCT r.rowid) FROM CUPTI_ACTIVITY_KIND_OVERHEAD o JOIN StringIds s ON s.id = o.nameId "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = o.correlationId AND r.globalTid = o.globalTid "
        "WHERE s.value = 'Command Buffer Full' AND r.start <= o.start AND o.end <= r.end"
    ).fetchone()[0]
    db.close()
    trace = _load(H100X2)
    g, path = _critical(trace)
    assert blocked == 198 and int(g.call_queued.sum()) == blocked
    assert path is not None and path["bound"] == "gpu"
    assert path["ns"]["copies"] > path["length_ns"] / 2
    error = whatif(trace)["replay_error"]
    assert abs(error["span_error"]) < 1e-3


@pytest.mark.skipif(not H100X2.exists(), reason="../shared/traces/nsys/h100x2_fastvideo_window not present")
def test_h100x2_window_host_follows_faster_copies() -> None:
    """Each device's thread ends the window with 261 ms of launches blocked on a full command buffer behind its copies
    (after its last cudaStreamSynchronize). With every copy at half its time, the replayed host ends that stretch
    when the GPU does: half the copy time plus the kernel and memset time its device ran after the sync (a direct
    SQL sum), to within 2%; with the blocks as host work it kept the recorded 261 ms."""
    db = sqlite3.connect(f"file:{H100X2}?mode=ro", uri=True)
    expected = {}
    for dev in (0, 1):
        (sync_end,) = db.execute(
            "SELECT max(r.end) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE s.value LIKE 'cudaStreamSynchronize%' AND r.globalTid IN (SELECT r2.globalTid FROM "
            "CUPTI_ACTIVITY_KIND_RUNTIME r2 JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r2.correlationId "
            "AND k.globalPid = (r2.globalTid / 16777216) * 16777216 WHERE k.deviceId = ?)",
            (dev,),
        ).fetchone()
        copies, others = (
            sum(
                db.execute(
                    f"SELECT coalesce(sum(end - start), 0) FROM CUPTI_ACTIVITY_KIND_{table} "
                    "WHERE deviceId = ? AND start >= ?",
                    (dev, sync_end),
                ).fetchone()[0]
                for table in tables
            )
            for tables in (("MEMCPY",), ("KERNEL", "MEMSET"))
        )
        expected[dev] = copies / 2 + others
    db.close()
    g = build(_load(H100X2))
    lag = g.lag.copy()
    lag[g.op_end[g.op_is_copy]] //= 2
    t = solve(g.with_changes(lag=lag))
    for dev, want in expected.items():
        (thread,) = np.unique(g.call_thread[g.op_launch_call[(g.op_device == dev) & (g.op_launch_call >= 0)]])
        calls = np.flatnonzero(g.call_thread == thread)
        last_sync, last = calls[g.call_is_sync[calls]][-1], calls[-1]
        assert g.call_queued[last]
        recorded = int(g.time[g.call_end[last]] - g.time[g.call_end[last_sync]])
        replayed = int(t[g.call_end[last]] - t[g.call_end[last_sync]])
        assert recorded > 1.9 * want
        assert abs(replayed - want) < 0.02 * want, (dev, replayed, want)


@pytest.mark.parametrize("seed", range(20))
def test_holding_calls_searched_per_thread_equal_the_positions(seed: int) -> None:
    # the call holding each overhead row, searched among its own thread's calls (the graph's calls stored thread by
    # thread in start order), equals the reference's search of positions over every call: equal starts, markers,
    # rows on threads without calls, rows outside every call
    from tracelens.replay import queue_waits as Q

    rng = np.random.default_rng(seed)
    n_threads = int(rng.integers(1, 5))
    thread_keys = np.sort(rng.choice(np.arange(100, 200, dtype=np.int64), n_threads, replace=False))
    per = rng.integers(0, 30, n_threads)
    call_thread = np.repeat(np.arange(n_threads, dtype=np.int32), per)
    gaps = rng.integers(0, 4, call_thread.size)  # 0: two calls starting together (a marker and a call, say)
    cs = np.zeros(call_thread.size, np.int64)
    for t in range(n_threads):
        on = call_thread == t
        cs[on] = np.cumsum(gaps[on] * 10)
    ce = cs + rng.integers(0, 12, cs.size)
    is_marker = rng.random(cs.size) < 0.15
    n_rows = int(rng.integers(1, 25))
    row_keys = rng.choice(np.append(thread_keys, 999), n_rows)
    rs = rng.integers(-5, int(cs.max(initial=0)) + 20, n_rows)
    re_ = rs + rng.integers(0, 6, n_rows)
    args = (call_thread, thread_keys, cs, ce, is_marker, row_keys, rs, re_)
    fast = Q._holding_calls(*args)
    assert fast is not None
    inside, call = Q._holding_calls_by_positions(*args)
    np.testing.assert_array_equal(fast[0], inside)
    np.testing.assert_array_equal(fast[1][inside], call[inside])
