"""Sync stalls: blocking calls per step, the .item()/.cpu() pattern, GPU-side waits (hand-derived)."""

from __future__ import annotations

from tracelens.analyses import sync
from tracelens.trace import Trace


def host(kind, name, start, end, tid=1, **extra):
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def copy(start, end, corr, nbytes, copy_kind="DtoH"):
    return {
        "kind": "memcpy",
        "name": f"Memcpy {copy_kind}",
        "start_ns": start,
        "end_ns": end,
        "device": 0,
        "stream": 7,
        "correlation_id": corr,
        "bytes": nbytes,
        "copy_kind": copy_kind,
    }


def _trace():
    # Step 0 [0,1000): aten::item (ext 10) -> cudaMemcpyAsync [100,110) of 4 bytes DtoH (corr 1), then
    #   cudaStreamSynchronize [115,300): an item pattern, waited 185.
    # Step 1 [1000,2000): aten::to (ext 11) -> cudaMemcpyAsync [1100,1110) of 1 MiB DtoH (corr 2), then
    #   cudaStreamSynchronize [1120,1400): too big to be an item pattern (still a blocking sync);
    #   aten::item (ext 12) -> cudaMemcpyAsync [1500,1510) 8 bytes (corr 3), then cudaLaunchKernel [1520,1530),
    #   then cudaDeviceSynchronize [1540,1600): the next call is a launch, not a wait -> not an item pattern;
    #   cudaMemcpy [1700,1800) of 4 bytes (corr 4): synchronous itself -> item pattern, waited 100.
    return Trace.from_rows(
        [
            host("step", "ProfilerStep#0", 0, 1000, step=0),
            host("step", "ProfilerStep#1", 1000, 2000, step=1),
            host("cpu_op", "aten::item", 90, 310, external_id=10),
            host("runtime", "cudaMemcpyAsync", 100, 110, correlation_id=1, external_id=10),
            copy(200, 210, 1, 4),
            host("runtime", "cudaStreamSynchronize", 115, 300, correlation_id=90),
            host("cpu_op", "aten::to", 1090, 1410, external_id=11),
            host("runtime", "cudaMemcpyAsync", 1100, 1110, correlation_id=2, external_id=11),
            copy(1150, 1390, 2, 1 << 20),
            host("runtime", "cudaStreamSynchronize", 1120, 1400, correlation_id=91),
            host("cpu_op", "aten::item", 1490, 1610, external_id=12),
            host("runtime", "cudaMemcpyAsync", 1500, 1510, correlation_id=3, external_id=12),
            copy(1515, 1518, 3, 8),
            host("runtime", "cudaLaunchKernel", 1520, 1530, correlation_id=5),
            host("runtime", "cudaDeviceSynchronize", 1540, 1600, correlation_id=92),
            host("runtime", "cudaMemcpy", 1700, 1800, correlation_id=4),
            copy(1750, 1760, 4, 4),
            {
                "kind": "gpu_sync",
                "name": "sync",
                "start_ns": 200,
                "end_ns": 210,
                "device": 0,
                "stream": 7,
                "sync_kind": "stream_sync",
            },
            {
                "kind": "gpu_sync",
                "name": "sync",
                "start_ns": 250,
                "end_ns": 254,
                "device": 0,
                "stream": 7,
                "sync_kind": "stream_wait_event",
            },
            {
                "kind": "gpu_sync",
                "name": "sync",
                "start_ns": 260,
                "end_ns": 262,
                "device": 0,
                "stream": 7,
                "sync_kind": "stream_wait_event",
            },
            host("runtime", "cudaStreamWaitEvent", 1900, 1905, correlation_id=93),
        ]
    )


def test_blocking_calls_and_per_step():
    stats = sync.section(_trace(), {})
    # Blocking: sync [115,300)=185, [1120,1400)=280, [1540,1600)=60, cudaMemcpy [1700,1800)=100.
    assert stats["blocking"]["count"] == 4 and stats["blocking"]["total_ns"] == 625
    by_name = {r["name"]: (r["count"], r["total_ns"]) for r in stats["blocking"]["by_name"]}
    assert by_name == {
        "cudaStreamSynchronize": (2, 465),
        "cudaDeviceSynchronize": (1, 60),
        "cudaMemcpy": (1, 100),
    }
    assert stats["per_step"] == [
        {"step": 0, "count": 1, "total_ns": 185},
        {"step": 1, "count": 3, "total_ns": 440},
    ]
    assert stats["per_step_mean"] == {"count": 2.0, "total_ns": 312.5}


def test_item_pattern():
    item = sync.section(_trace(), {})["item_pattern"]
    assert item["count"] == 2 and item["sync_calls"] == 2
    assert item["wait_ns"] == 185 + 100
    assert item["per_step"] == [1, 1]
    # The copy of corr 1 was launched inside aten::item (external id 10); the cudaMemcpy has no external id.
    assert item["top_ops"] == [{"name": "aten::item", "count": 1}]


def test_gpu_waits_and_stream_wait_calls():
    stats = sync.section(_trace(), {})
    waits = {w["sync_kind"]: (w["count"], w["total_ns"]) for w in stats["gpu_waits"]}
    assert waits == {"stream_sync": (1, 10), "stream_wait_event": (2, 6)}
    assert stats["stream_wait_event_calls"] == 1


def test_no_steps_no_syncs():
    trace = Trace.from_rows([host("cpu_op", "aten::add", 0, 5)])
    stats = sync.section(trace, {})
    assert stats["blocking"] == {"count": 0, "total_ns": 0, "by_name": []}
    assert stats["per_step"] == [] and stats["per_step_mean"] is None
    assert stats["item_pattern"]["count"] == 0
