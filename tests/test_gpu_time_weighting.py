"""GPU-time weighting (docs/analyses.md): every GPU counts by its span, not as one whole GPU.

Each case is a hand-built trace whose figures are derived by hand in the comments (GPU ops only, no host rows:
every idle instant is ``nothing``, so ``unexplained_idle`` carries each GPU's whole idle time). A per-GPU figure
is Σ over the GPUs / n_eff, n_eff = Σ span_ns / the union of the GPUs' windows; utilization = Σ busy / Σ span.
"""

from __future__ import annotations

import pytest

from tracelens.analyses import analyze
from tracelens.analyses.columns import busy_gpu_equivalents, device_busy
from tracelens.document import device_gpu_equivalents, gpu_equivalents, summarize, windows_union
from tracelens.trace import Trace, TraceMetadata

US = 1_000
MS = 1_000_000


def _kernel(device: int, start: int, end: int) -> dict:
    return {"kind": "kernel", "name": "k", "start_ns": start, "end_ns": end, "device": device, "stream": 7}


def _trace(rows: list[dict]) -> Trace:
    return Trace.from_rows(rows, None, TraceMetadata(source_format="handmade", framework="pytorch"))


def _lost(doc: dict) -> dict[str, int]:
    return {c["cause"]: c["lost_ns"] for c in doc["diagnosis"]["causes"]}


# GPU 0 over [0, 100 ms): 3 ms kernels at 0, 10, ..., 80 ms and one at [97, 100) ms: busy 30 ms of 100 (30%).
GPU0_30 = [_kernel(0, i * 10 * MS, i * 10 * MS + 3 * MS) for i in range(9)] + [_kernel(0, 97 * MS, 100 * MS)]
# One 2 us copy on GPU 1 inside GPU 0's window: a context's first memset, a stray .to("cuda:1").
STRAY = {
    "kind": "memcpy",
    "name": "Memcpy HtoD (Pageable -> Device)",
    "start_ns": 50 * MS,
    "end_ns": 50 * MS + 2 * US,
    "device": 1,
    "stream": 9,
    "bytes": 64,
}


def test_one_stray_copy_on_a_second_gpu_does_not_move_the_headline():
    doc = analyze(_trace([*GPU0_30, STRAY]))
    summary, diag = doc["summary"], doc["diagnosis"]
    # Σ busy / Σ span = (30 ms + 2 us) / (100 ms + 2 us) ≈ 0.30 (the plain device-mean read (0.30 + 1.0) / 2 = 0.65).
    assert summary["gpu_utilization"] == pytest.approx(30_002_000 / 100_002_000)
    assert summary["gpu_utilization"] == pytest.approx(0.30, abs=1e-4)
    assert diag["busy_share"] == pytest.approx(summary["gpu_utilization"])
    by_kind = summary["utilization_by_kind"]
    assert by_kind["kernels"] == pytest.approx(30 * MS / 100_002_000)
    assert by_kind["copies_only"] == pytest.approx(2 * US / 100_002_000)  # was 0.5: GPU 1 all copy
    assert sum(by_kind.values()) == pytest.approx(summary["gpu_utilization"])
    # n_eff = 100.002 ms / 100 ms (the union is GPU 0's window): GPU 0's 70 ms of idle stays ~70 ms (was 35 ms).
    n_eff = 100_002_000 / 100_000_000
    assert diag["span_ns"] == 100 * MS
    lost = _lost(doc)
    assert lost["unexplained_idle"] == round(70 * MS / n_eff)
    assert lost["unexplained_idle"] == pytest.approx(70 * MS, rel=1e-4)
    assert lost["memcpy"] == round(2 * US / n_eff)  # the stray copy's own exposed time, no more
    # GPU 1 spans 0.002% of the window: it makes no imbalance (was (30 ms - 2 us) / 2 ~ 15 ms).
    assert "multi_gpu_imbalance" not in lost
    assert diag["primary"]["cause"] != "multi_gpu_imbalance"
    # The summary's per-GPU figures use the same n_eff: the span is the window, busy / span the utilization.
    assert summary["device_mean_span_ns"] == pytest.approx(100 * MS)
    assert summary["device_mean_busy_ns"] == pytest.approx(30_002_000 / n_eff)
    assert summary["device_mean_idle_by_cause"]["nothing"] == pytest.approx(lost["unexplained_idle"], abs=1)
    assert doc["attribution"]["mean_by_cause"]["nothing"] == pytest.approx(70 * MS / n_eff)


def test_gpus_over_one_window_give_the_plain_device_mean():
    # Both GPUs over [0, 1000): GPU 0 busy [0,300) + [700,1000) = 600, GPU 1 [0,100) + [900,1000) = 200.
    rows = [_kernel(0, 0, 300), _kernel(0, 700, 1000), _kernel(1, 0, 100), _kernel(1, 900, 1000)]
    trace = _trace(rows)
    assert busy_gpu_equivalents(device_busy(trace)) == 2.0  # exactly n
    doc = analyze(trace)
    summary, diag = doc["summary"], doc["diagnosis"]
    # The plain means, to the last bit: (0.6 + 0.2) / 2; idle (400 + 800) / 2; imbalance (0 + 400) / 2.
    assert summary["gpu_utilization"] == (600 / 1000 + 200 / 1000) / 2
    assert diag["busy_share"] == summary["gpu_utilization"]
    assert summary["utilization_by_kind"]["kernels"] == (600 / 1000 + 200 / 1000) / 2
    assert _lost(doc) == {"unexplained_idle": 600, "multi_gpu_imbalance": 200}
    assert diag["unexplained_idle_ns"] == 600
    assert (summary["device_mean_busy_ns"], summary["device_mean_span_ns"]) == (400.0, 1000.0)
    assert summary["device_mean_idle_by_cause"]["nothing"] == 600.0
    assert doc["attribution"]["mean_by_cause"]["nothing"] == 600.0


def test_gpus_with_different_spans_weigh_by_their_spans():
    # GPU 0 over [0, 1000): busy 600, idle 400. GPU 1 over [200, 700): [200,300) + [600,700) busy 200, idle 300.
    # Union 1000, Σ span 1500: n_eff = 1.5. Utilization 800 / 1500 (the plain mean read (0.6 + 0.4) / 2 = 0.5).
    rows = [_kernel(0, 0, 300), _kernel(0, 700, 1000), _kernel(1, 200, 300), _kernel(1, 600, 700)]
    trace = _trace(rows)
    assert busy_gpu_equivalents(device_busy(trace)) == 1.5
    doc = analyze(trace)
    summary, diag = doc["summary"], doc["diagnosis"]
    assert summary["gpu_utilization"] == pytest.approx(800 / 1500)
    assert diag["busy_share"] == pytest.approx(800 / 1500)
    lost = _lost(doc)
    # Idle (400 + 300) / 1.5 = 466.67 -> 467 (was 350): (1 - utilization) x span, the GPUs' idle share.
    assert lost["unexplained_idle"] == 467
    assert diag["unexplained_idle_ns"] == 467
    assert lost["unexplained_idle"] == pytest.approx(
        (1 - summary["gpu_utilization"]) * diag["span_ns"], abs=1
    )
    # Both GPUs span well over 5% of the window: compared as before, (0 + 400) / 2.
    assert lost["multi_gpu_imbalance"] == 200
    assert summary["device_mean_busy_ns"] == pytest.approx(800 / 1.5)
    assert summary["device_mean_span_ns"] == pytest.approx(1000)
    assert summary["device_mean_idle_by_cause"]["nothing"] == pytest.approx(700 / 1.5)
    assert all(c["lost_ns"] <= diag["span_ns"] for c in diag["causes"])


def test_a_gpu_idle_over_the_whole_window_counts_fully():
    # GPU 1 has one op at each end of the window: span 1000 like GPU 0, busy 20, idle 980. Its idle is real.
    rows = [_kernel(0, 0, 300), _kernel(0, 700, 1000), _kernel(1, 0, 10), _kernel(1, 990, 1000)]
    doc = analyze(_trace(rows))
    summary = doc["summary"]
    assert summary["gpu_utilization"] == (600 / 1000 + 20 / 1000) / 2  # 0.31
    lost = _lost(doc)
    assert lost["unexplained_idle"] == (400 + 980) // 2  # 690
    assert lost["multi_gpu_imbalance"] == (0 + 580) // 2  # 290: GPU 1 waits for GPU 0


def test_one_gpu_is_unchanged():
    trace = _trace([_kernel(0, 0, 300), _kernel(0, 700, 1000)])
    assert busy_gpu_equivalents(device_busy(trace)) == 1.0
    doc = analyze(trace)
    assert doc["summary"]["gpu_utilization"] == 0.6
    assert doc["diagnosis"]["busy_share"] == 0.6
    assert _lost(doc) == {"unexplained_idle": 400}
    assert doc["summary"]["device_mean_span_ns"] == 1000.0


def test_gpu_equivalents_helpers():
    assert windows_union([(0, 10), (5, 20), (30, 40), (31, 35)]) == 30
    assert windows_union([]) == 0
    assert gpu_equivalents([1000], 1000) == 1.0
    assert gpu_equivalents([1000, 1000, 1000], 1000) == 3.0
    assert gpu_equivalents([1000, 500], 1000) == 1.5
    assert gpu_equivalents([0, 0], 0) == 2.0  # zero-length ops only: the plain count
    # A run document: each rank's own clock, n_eff added up over the ranks.
    devices = [
        {"device": 0, "rank": 0, "span_ns": 100, "first_start_ns": 0, "last_end_ns": 100},
        {"device": 1, "rank": 0, "span_ns": 50, "first_start_ns": 50, "last_end_ns": 100},
        {"device": 0, "rank": 1, "span_ns": 100, "first_start_ns": 10**9, "last_end_ns": 10**9 + 100},
    ]
    assert device_gpu_equivalents(devices) == 1.5 + 1.0
    # Saved without the windows (an older version): the device count.
    assert device_gpu_equivalents([{"device": 0, "span_ns": 5}, {"device": 1, "span_ns": 9}]) == 2.0


def test_summary_of_a_stray_copy_document():
    # summarize reads the devices block alone: the same weighting as the diagnosis.
    doc = analyze(_trace([*GPU0_30, STRAY]))
    again = summarize({k: v for k, v in doc.items() if k != "summary"})
    assert again == doc["summary"]


def test_a_stray_gpu_beside_two_working_ones_leaves_their_imbalance_alone():
    # GPUs 0 and 1 over [0, 1000): busy 600 and 200 (as in the equal-window case); GPU 2 one 5 ns copy at 500.
    # GPU 2 spans 0.5% of the window: not compared. Imbalance among GPUs 0 and 1: (0 + 400) / 2 = 200, GPU 1 the
    # least busy (not GPU 2, busy 5 ns). n_eff = (1000 + 1000 + 5) / 1000 = 2.005.
    stray = {**STRAY, "start_ns": 500, "end_ns": 505, "device": 2}
    rows = [_kernel(0, 0, 300), _kernel(0, 700, 1000), _kernel(1, 0, 100), _kernel(1, 900, 1000), stray]
    doc = analyze(_trace(rows))
    lost = _lost(doc)
    assert lost["multi_gpu_imbalance"] == 200
    imbalance = next(c for c in doc["diagnosis"]["causes"] if c["cause"] == "multi_gpu_imbalance")
    ev = imbalance["evidence"]
    assert (ev["busiest_device"], ev["least_busy_device"], ev["busiest_ns"]) == (0, 1, 600)
    assert ev["busy_by_device"] == {"0": 600, "1": 200, "2": 5}  # every GPU still shown
    assert ev["within_trace_ns"] == 200
    assert lost["unexplained_idle"] == round((400 + 800) / 2.005)
    assert doc["summary"]["gpu_utilization"] == pytest.approx(805 / 2005)


def test_idle_causes_partition_the_weighted_mean_idle():
    # With host rows splitting the idle time: the idle-based causes add up to the device-mean idle, Σ idle / n_eff,
    # which is (1 - utilization) x span. GPU 0 over [0, 1000) (busy 600), GPU 1 over [200, 700) (busy 200).
    rows = [_kernel(0, 0, 300), _kernel(0, 700, 1000), _kernel(1, 200, 300), _kernel(1, 600, 700)]
    rows += [
        {"kind": "cpu_op", "name": "aten::x", "start_ns": 300, "end_ns": 450, "pid": 1, "tid": 1},
        {
            "kind": "runtime",
            "name": "cudaDeviceSynchronize",
            "start_ns": 450,
            "end_ns": 550,
            "pid": 1,
            "tid": 1,
        },
    ]
    doc = analyze(_trace(rows))
    diag, attribution = doc["diagnosis"], doc["attribution"]
    n_eff = 1.5
    idle = sum(d["idle_ns"] for d in attribution["devices"])
    assert idle == 400 + 300
    assert sum(attribution["mean_by_cause"].values()) == pytest.approx(idle / n_eff)
    assert idle / n_eff == pytest.approx((1 - diag["busy_share"]) * diag["span_ns"])
    idle_causes = ("startup", "input_pipeline", "host_launch_overhead", "synchronization", "unexplained_idle")
    lost = _lost(doc)
    # GPU 0's gap [300,700): cpu 150, sync 100, nothing 150; GPU 1's [300,600): cpu 150, sync 100, nothing 50.
    assert attribution["mean_by_cause"] == pytest.approx(
        {
            "startup": 0,
            "sync": 200 / n_eff,
            "input": 0,
            "launch": 0,
            "cpu": 300 / n_eff,
            "nothing": 200 / n_eff,
            "queued": 0,
        }
    )
    assert (lost["host_launch_overhead"], lost["synchronization"], lost["unexplained_idle"]) == (
        200,
        133,
        133,
    )
    # memcpy's idle part (sync_copy_ns) is 0 here: no copies.
    assert sum(lost.get(c, 0) for c in idle_causes) == pytest.approx(idle / n_eff, abs=len(idle_causes))
