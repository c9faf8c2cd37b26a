"""Launch stats: latency, short/small kernels, rates, queue depth, CUDA graphs (hand-derived)."""

from __future__ import annotations

import pytest

from tracelens.analyses import launch
from tracelens.trace import Trace


def call(name, start, end, corr, kind="runtime", tid=1):
    return {
        "kind": kind,
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "pid": 1,
        "tid": tid,
        "correlation_id": corr,
    }


def op(start, end, corr, stream=7, kind="kernel", graph_id=None, device=0):
    return {
        "kind": kind,
        "name": kind,
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "stream": stream,
        "correlation_id": corr,
        "graph_id": graph_id,
    }


def _trace():
    # Four kernels on stream 7, launched by 10 ns calls:
    #   corr 1: call [0,10)   kernel [15,20)      latency 5,  dur 5  (< call 10: short, < 10 us: small)
    #   corr 2: call [10,20)  kernel [40,20040)   latency 20, dur 20000
    #   corr 3: call [20,30)  kernel [20040,20045) latency 20010, dur 5 (short, small)
    #   corr 4: call [30,40)  kernel [20030,20035) on stream 8, latency 19990, dur 5 (short, small)
    # plus an unmatched kernel [30000,30010) (no call). Kernel time 20025; small (<10 us) 5+5+5+10 = 25.
    return Trace.from_rows(
        [
            call("cudaLaunchKernel", 0, 10, 1),
            op(15, 20, 1),
            call("cudaLaunchKernel", 10, 20, 2),
            op(40, 20040, 2),
            call("cudaLaunchKernel", 20, 30, 3),
            op(20040, 20045, 3),
            call("cudaLaunchKernel", 30, 40, 4),
            op(20030, 20035, 4, stream=8),
            op(30000, 30010, None),
            call("cudaStreamSynchronize", 40, 20050, 5),
        ]
    )


def test_latency_percentiles():
    stats = launch.section(_trace(), {})
    lat = stats["latency"]
    # sorted latencies: 5, 20, 19990, 20010; "lower" percentiles: p50 -> index 1, p90/p99 -> index 2.
    assert lat["count"] == 4 and lat["negative_count"] == 0
    assert (lat["p50_ns"], lat["p90_ns"], lat["p99_ns"], lat["max_ns"]) == (20, 19990, 19990, 20010)
    assert lat["mean_ns"] == pytest.approx((5 + 20 + 19990 + 20010) / 4)
    assert (stats["gpu_ops"], stats["matched_ops"]) == (5, 4)


def test_short_and_small_kernels():
    stats = launch.section(_trace(), {})
    assert stats["short_kernels"] == {"count": 3, "kernel_ns": 15, "of_matched_kernels": 4}
    small = stats["small_kernels"]
    assert (small["count"], small["kernel_ns"], small["total_kernel_ns"]) == (4, 25, 20025)
    assert small["share"] == pytest.approx(25 / 20025)


def test_rates():
    rates = launch.section(_trace(), {})["rates"]
    # Launching calls: corr 1..4 (the sync has no GPU op): span [0,40) -> 4 / 40 ns = 1e8 per s.
    assert rates["launch_calls"] == 4 and rates["issue_span_ns"] == 40
    assert rates["issue_per_s"] == pytest.approx(4 / 40e-9)
    # Busy union: [15,20) + [40,20045) + [30000,30010) = 5 + 20005 + 10 = 20020 ns; 5 ops.
    assert rates["gpu_busy_ns"] == 20020
    assert rates["execution_per_s"] == pytest.approx(5 / 20020e-9)
    assert rates["issue_to_execution"] == pytest.approx((4 / 40e-9) / (5 / 20020e-9))


def test_two_gpus_fed_at_once_are_compared_with_their_joint_rate():
    # One thread launches corr 1..4 over [0, 40) ns: GPU 0 runs corr 1 [50, 150) and 3 [200, 300), GPU 1 corr 2
    # [50, 150) and 4 [200, 300). Issue: 4 ops / 40 ns. Each GPU runs 2 ops in 200 ns busy (execution_per_s =
    # 4 / 400 ns), both over one window [50, 300): n_eff = (250 + 250) / 250 = 2 GPUs, so the GPUs together run
    # 2 x 4 / 400 ns. Ratio (4 / 40) / (2 x 4 / 400) = 5; before, against one GPU's rate: 10 (n times too high).
    rows = []
    for corr, (device, start) in enumerate(((0, 50), (1, 50), (0, 200), (1, 200)), 1):
        rows += [
            call("cudaLaunchKernel", 10 * (corr - 1), 10 * corr, corr),
            op(start, start + 100, corr, device=device),
        ]
    rates = launch.section(Trace.from_rows(rows), {})["rates"]
    assert rates["execution_per_s"] == pytest.approx(4 / 400e-9)
    assert rates["issue_to_execution"] == pytest.approx(5.0)


def test_queue_depth():
    qd = {(q["device"], q["stream"]): q for q in launch.section(_trace(), {})["queue_depth"]}
    # Stream 7 events: +1@10, -1@20, +1@20, +1@30, -1@20040, -1@20045 (at equal times -1 first).
    # depth: 1 on [10,20), 1 on [20,30), 2 on [30,20040), 1 on [20040,20045) over span 20035.
    s7 = qd[(0, 7)]
    assert s7["max"] == 2 and s7["ops"] == 3
    assert s7["mean"] == pytest.approx((10 + 10 + 2 * 20010 + 5) / 20035)
    # Stream 8: +1@40, -1@20035 -> depth 1 over the whole span.
    assert qd[(0, 8)] == {"device": 0, "stream": 8, "max": 1, "mean": 1.0, "ops": 1}


def test_negative_latency_is_counted_and_clipped():
    # A synchronous copy: the GPU copy [5,8) runs inside its call [0,10): latency -2 -> clipped to 0.
    trace = Trace.from_rows([call("cudaMemcpy", 0, 10, 1), op(5, 8, 1, kind="memcpy")])
    lat = launch.section(trace, {})["latency"]
    assert lat["negative_count"] == 1 and lat["max_ns"] == 0


def test_runtime_call_preferred_over_driver_with_same_correlation():
    # cuLaunchKernel nested inside cudaLaunchKernel with the same id: the runtime call is the launch.
    trace = Trace.from_rows(
        [
            call("cudaLaunchKernel", 0, 10, 1),
            call("cuLaunchKernel", 2, 8, 1, kind="driver"),
            op(20, 30, 1),
        ]
    )
    stats = launch.section(trace, {})
    assert stats["latency"]["max_ns"] == 10 and stats["rates"]["launch_calls"] == 1


def test_cuda_graphs():
    trace = Trace.from_rows(
        [
            call("cudaGraphLaunch", 0, 10, 1),
            op(20, 30, 1, graph_id=5),
            op(30, 40, 1, graph_id=5),
        ]
    )
    graphs = launch.section(trace, {})["cuda_graphs"]
    assert graphs == {"in_use": True, "graph_launch_calls": 1, "graph_ops": 2}
    assert launch.section(_trace(), {})["cuda_graphs"]["in_use"] is False


def test_a_graph_launch_issues_every_op_of_its_graph():
    # One cudaGraphLaunch [0,10) enqueues four 10 ns kernels [20,60) (Kineto: the call's correlation id, no graph
    # id). Issue: 4 ops over the 10 ns issue span; execution: 4 ops over 40 ns busy -> 4.0, the host ahead (was
    # 1 call / 10 ns against 4 ops / 40 ns = 1.0, and 0.02x for a 50-kernel graph the host had long launched).
    trace = Trace.from_rows(
        [call("cudaGraphLaunch", 0, 10, 1)] + [op(20 + 10 * i, 30 + 10 * i, 1) for i in range(4)]
    )
    rates = launch.section(trace, {})["rates"]
    assert rates["launch_calls"] == 1 and rates["issue_per_s"] == pytest.approx(1 / 10e-9)
    assert rates["execution_per_s"] == pytest.approx(4 / 40e-9)
    assert rates["issue_to_execution"] == pytest.approx(4.0)
    # latency per call, of its first op: 20 - 10 = 10 (not 10, 20, 30, 40: the later ops wait behind the first)
    lat = launch.section(trace, {})["latency"]
    assert (lat["count"], lat["max_ns"], lat["p50_ns"]) == (1, 10, 10)
    # the markdown line names the ops enqueued, so that its ratio reads from its figures: 4 ops / 10 ns = 4e8/s
    from tracelens.report.markdown_sections import _launch

    launch_line = next(
        line for line in _launch({"launch": launch.section(trace, {})}) if "Launch rate" in line
    )
    assert "(GPU ops enqueued 400,000,000/s) vs execution rate 100,000,000/s (ratio 4)" in launch_line


def test_graph_launch_with_a_graph_id_issues_all_its_ops():
    # Nsight's form: the kernels carry the graph's id. One cudaGraphLaunch [0,10) enqueues 4 back-to-back 10 ns
    # kernels [20,60): 4 ops issued in the 10 ns issue span (4e8 per s) against 4 ops per 40 ns busy (1e8 per s):
    # 4.0, the host well ahead. Counting the one call (1e8 per s) read 1.0, and a graph of n such ops 4/n.
    trace = Trace.from_rows(
        [call("cudaGraphLaunch", 0, 10, 1)] + [op(20 + 10 * i, 30 + 10 * i, 1, graph_id=5) for i in range(4)]
    )
    rates = launch.section(trace, {})["rates"]
    assert rates["launch_calls"] == 1 and rates["issue_per_s"] == pytest.approx(1 / 10e-9)
    assert rates["execution_per_s"] == pytest.approx(4 / 40e-9)
    assert rates["issue_to_execution"] == pytest.approx((4 / 10e-9) / (4 / 40e-9))


def test_empty_trace():
    stats = launch.section(Trace.from_rows([{"kind": "cpu_op", "name": "a", "start_ns": 0, "end_ns": 1}]), {})
    assert stats["latency"]["count"] == 0 and stats["queue_depth"] == []
    assert stats["rates"]["issue_per_s"] is None


def test_queue_depth_without_the_packed_key_is_the_same(monkeypatch) -> None:
    """A span too long for the int64 key falls back to a three-key sort: the same depths."""
    packed = launch.section(_trace(), {})["queue_depth"]
    monkeypatch.setattr(launch, "KEY_LIMIT", 1)
    assert packed and launch.section(_trace(), {})["queue_depth"] == packed
