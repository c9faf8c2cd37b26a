"""Gap attribution: priority split, feeding threads, sync copies, after-sync and late-launch gaps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import valid_traces as vt
from hypothesis import given, settings

import tracelens
from tests.conftest import FIXTURES, shared_params
from tracelens.analyses import attribution
from tracelens.analyses.columns import device_busy
from tracelens.trace import Trace, TraceMetadata


def host(kind, name, start, end, tid=1, pid=1, **extra):
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": pid, "tid": tid, **extra}


def kernel(start, end, corr=None, device=0, pid=None):
    return {
        "kind": "kernel",
        "name": "k",
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "stream": 7,
        "correlation_id": corr,
        "pid": pid,
    }


def by_cause(trace, device=0):
    out = attribution.section(trace, {})
    return next(d for d in out["devices"] if d["device"] == device)


def test_priority_sync_input_launch_cpu_nothing():
    # Gap [100, 1000) = 900 on GPU 0. Host thread (1,1), all overlapping on purpose:
    #   cpu_op [100, 900), cudaLaunchKernel [200, 300) (corr 2 -> the kernel after the gap),
    #   DataLoader next [250, 500), cudaStreamSynchronize [450, 600).
    # sync [450,600) = 150; input [250,450) = 200; launch [200,250) = 50;
    # cpu [100,200) + [600,900) = 400; nothing [900,1000) = 100. Sum 900. startup 0: no one-time names, every
    # row far under the 1 ms first-call/long-launch thresholds, no steps.
    rows = [
        host("runtime", "cudaLaunchKernel", 0, 5, correlation_id=1),
        kernel(10, 100, corr=1),
        host("cpu_op", "aten::linear", 100, 900),
        host("runtime", "cudaLaunchKernel", 200, 300, correlation_id=2),
        host("cpu_op", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 250, 500),
        host("runtime", "cudaStreamSynchronize", 450, 600),
        kernel(1000, 1100, corr=2),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 150,
        "input": 200,
        "launch": 50,
        "cpu": 400,
        "nothing": 100,
        "queued": 0,
    }
    assert dev["idle_ns"] == 900 == sum(dev["by_cause"].values())
    assert dev["feeding_threads_from"] == "correlation"
    assert dev["feeding_threads"] == [[1, 1]]
    # The kernel after the gap was launched by a call ending at 300 > gap start 100: a late launch.
    assert dev["late_launch"] == {"count": 1, "idle_ns": 900}
    # The gap starts at 100, when no sync is running.
    assert dev["after_sync"] == {"count": 0, "idle_ns": 0}


def test_startup_comes_before_sync():
    # Gap [100, 1000) = 900 on GPU 0. On the feeding thread: cudnnCreate [100, 400) (one-time by name) and
    # cudaDeviceSynchronize [300, 700). startup takes [100,400) = 300 although the sync overlaps it at
    # [300,400); sync keeps [400,700) = 300; nothing [700,1000) = 300. Sum 900.
    dev = by_cause(
        one_gap(
            [host("runtime", "cudnnCreate", 100, 400), host("runtime", "cudaDeviceSynchronize", 300, 700)],
            gap_end=1000,
        )
    )
    assert dev["by_cause"] == {
        "startup": 300,
        "sync": 300,
        "input": 0,
        "launch": 0,
        "cpu": 0,
        "nothing": 300,
        "queued": 0,
    }


def one_gap(rows_in_gap: list[dict], gap_end: int) -> Trace:
    """Kernel [10,100) then kernel [gap_end, gap_end+100), both launched early by thread (1,1), plus the rows."""
    return Trace.from_rows(
        [
            host("runtime", "cudaLaunchKernel", 0, 5, correlation_id=1),
            kernel(10, 100, corr=1),
            *rows_in_gap,
            host("runtime", "cudaLaunchKernel", 20, 30, correlation_id=2),
            kernel(gap_end, gap_end + 100, corr=2),
        ]
    )


def test_only_feeding_threads_count():
    # Thread (1,2) never launches: its cpu work during the gap [100, 300) is ignored -> nothing. No one-time work.
    rows = [
        host("runtime", "cudaLaunchKernel", 0, 5, correlation_id=1),
        kernel(10, 100, corr=1),
        host("cpu_op", "aten::busy_elsewhere", 100, 300, tid=2),
        host("runtime", "cudaLaunchKernel", 5, 10, correlation_id=2),
        kernel(300, 400, corr=2),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 0,
        "input": 0,
        "launch": 0,
        "cpu": 0,
        "nothing": 200,
        "queued": 0,
    }
    assert dev["late_launch"]["count"] == 0  # launched at 10, long before the gap


def test_fallback_to_process_threads_without_correlation():
    # No correlation ids: every host thread of the GPU rows' process (pid 7) feeds; pid 8 does not.
    # Gap [100,300): aten::a covers [100,150) = 50 cpu, the rest 150 nothing; no one-time work (startup 0).
    rows = [
        kernel(0, 100, pid=7),
        host("cpu_op", "aten::a", 100, 150, pid=7, tid=3),
        host("cpu_op", "aten::b", 150, 300, pid=8, tid=3),
        kernel(300, 400, pid=7),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["feeding_threads_from"] == "process"
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 0,
        "input": 0,
        "launch": 0,
        "cpu": 50,
        "nothing": 150,
        "queued": 0,
    }


def test_without_correlation_the_threads_that_made_launch_calls_feed_the_gpu():
    # No correlation ids anywhere. Thread (7, 1) makes the cudaLaunchKernel calls [90, 95) and [290, 300); thread
    # (7, 2), a monitor, sits in one Python frame [0, 400) and launches nothing. Gap [100, 300): before, every
    # thread of pid 7 fed the GPU and the monitor's frame made all 200 `cpu` (host_launch_overhead); now only the
    # launching thread: launch [290, 300) = 10, nothing 190.
    rows = [
        host("runtime", "cudaLaunchKernel", 90, 95, pid=7, tid=1),
        kernel(0, 100, pid=7),
        host("python", "threading.py(655): wait", 0, 400, pid=7, tid=2),
        host("runtime", "cudaLaunchKernel", 290, 300, pid=7, tid=1),
        kernel(300, 400, pid=7),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["feeding_threads_from"] == "launch_calls"
    assert dev["feeding_threads"] == [[7, 1]]
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 0,
        "input": 0,
        "launch": 10,
        "cpu": 0,
        "nothing": 190,
        "queued": 0,
    }


def test_fallback_to_all_threads():
    rows = [kernel(0, 100), host("python", "train.py(3): step", 120, 180, pid=5, tid=5), kernel(200, 300)]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["feeding_threads_from"] == "all"
    assert dev["by_cause"]["cpu"] == 60 and dev["by_cause"]["nothing"] == 40


def test_sync_copy_and_after_sync():
    # cudaMemcpy (synchronous) [50, 250) and cudaDeviceSynchronize [200, 260) on the feeding thread.
    # Gap [100, 300): sync covers [100, 260) = 160 of which only-copy [100, 200) = 100; nothing 40.
    # The gap starts at 100, inside the blocking cudaMemcpy: an after-sync gap. cudaMemcpy lasts 200 ns, far
    # under the 1 ms first-call threshold: not one-time work (startup 0).
    dev = by_cause(
        one_gap(
            [host("runtime", "cudaMemcpy", 50, 250), host("runtime", "cudaDeviceSynchronize", 200, 260)],
            gap_end=300,
        )
    )
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 160,
        "input": 0,
        "launch": 0,
        "cpu": 0,
        "nothing": 40,
        "queued": 0,
    }
    assert dev["sync_copy_ns"] == 100
    assert dev["after_sync"] == {"count": 1, "idle_ns": 200}


def test_annotations_are_containers_unless_input():
    # An NVTX range over the whole gap is not activity; tracelens/data is input; hip sync counts as sync.
    # Gap [100,300): input [120,170) = 50, sync [180,200) = 20, nothing 200 - 70 = 130 (pthread_cond_wait is
    # not a host category); "forward" is not a warm-up or compile name: startup 0.
    rows = [
        host("runtime", "hipLaunchKernel", 0, 5, correlation_id=1),
        kernel(10, 100, corr=1),
        host("annotation", "forward", 0, 400),
        host("annotation", "tracelens/data", 120, 170),
        host("runtime", "hipStreamSynchronize", 180, 200),
        host("osrt", "pthread_cond_wait", 100, 300),
        kernel(300, 400, corr=2),
        host("runtime", "hipLaunchKernel", 6, 9, correlation_id=2),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 20,
        "input": 50,
        "launch": 0,
        "cpu": 0,
        "nothing": 130,
        "queued": 0,
    }


def test_totals_over_devices():
    rows = [
        host("runtime", "cudaLaunchKernel", 0, 5, correlation_id=1),
        kernel(10, 100, corr=1),
        kernel(200, 300, corr=2),
        host("runtime", "cudaLaunchKernel", 5, 10, correlation_id=2),
        kernel(10, 50, corr=3, device=1),
        host("runtime", "cudaLaunchKernel", 10, 12, correlation_id=3),
        host("cpu_op", "aten::x", 100, 150),
        kernel(90, 100, corr=4, device=1),
        host("runtime", "cudaLaunchKernel", 12, 14, correlation_id=4),
    ]
    out = attribution.section(Trace.from_rows(rows), {})
    # GPU 0 gap [100,200): cpu 50, nothing 50. GPU 1 gap [50,90): nothing 40. No one-time work: startup 0.
    assert out["total_by_cause"] == {
        "startup": 0,
        "sync": 0,
        "input": 0,
        "launch": 0,
        "cpu": 50,
        "nothing": 90,
        "queued": 0,
    }
    # Device-mean, GPU-time weighted: GPU 0 spans [10,300) = 290, GPU 1 [10,100) = 90, their union 290, so
    # n_eff = (290 + 90) / 290 and nothing per GPU = 90 / n_eff = 90 x 290 / 380 (the plain mean read 45).
    assert out["mean_by_cause"]["nothing"] == pytest.approx(90 * 290 / 380)


def test_name_patterns():
    from tracelens.analyses import names

    blocking = [
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cuCtxSynchronize",
        "hipDeviceSynchronize",
        "cudaMemcpy",
        "cudaMemcpy2D",
        "hipMemcpy",
        "hipMemcpyWithStream",
        "cuMemcpyDtoH_v2",
        "cudaStreamSynchronize_v3020",
    ]
    not_blocking = [
        "cudaMemcpyAsync",
        "hipMemcpyAsync",
        "cudaLaunchKernel",
        "cudaStreamWaitEvent",
        "cudaEventRecord",
        "cuMemcpyDtoHAsync_v2",
        "cudaStreamQuery",
    ]
    assert all(names.is_blocking_sync(n) for n in blocking)
    assert not any(names.is_blocking_sync(n) for n in not_blocking)
    assert names.is_sync_copy("cudaMemcpy") and not names.is_sync_copy("cudaDeviceSynchronize")
    inputs = [
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        "tracelens/data",
        "IteratorGetNext",
        "Iterator::Root::Prefetch",
        "IteratorGetNextAsOptional",
        "torch/utils/data/dataloader.py(630): __next__",
    ]
    assert all(names.is_input(n) for n in inputs)
    assert not any(names.is_input(n) for n in ["tracelens/data2", "aten::next", "DataParallel.forward"])
    assert all(
        names.is_kernel_launch(n)
        for n in [
            "cudaLaunchKernel",
            "cudaLaunchKernelExC",
            "cuLaunchKernelEx",
            "hipExtModuleLaunchKernel",
            "hipModuleLaunchKernel",
            "cudaGraphLaunch",
            "cudaLaunchKernel_v7000",
        ]
    )
    assert names.is_graph_launch("hipGraphLaunch") and not names.is_graph_launch("cudaLaunchKernel")


def test_sync_echo_claims_the_work_the_host_could_have_queued_while_waiting():
    # Kernel A [0,1000) (launched at [-20,-10)). The thread blocks in cudaStreamSynchronize [100,1005), runs
    # aten::mul [1005,1100) and launches kernel B with [1100,1110); B runs [1120,2000). Gap [1000,1120) = 120.
    # sync covers [1000,1005) = 5. The wait saw W = 900 ns of kernel A, so the echo claims the launch/cpu work
    # after it, [1005,1110) = 105, as sync; [1110,1120) has nothing: 10. Sum 120.
    rows = [
        host("runtime", "cudaLaunchKernel", -20, -10, correlation_id=1),
        kernel(0, 1000, corr=1),
        host("runtime", "cudaStreamSynchronize", 100, 1005),
        host("cpu_op", "aten::mul", 1005, 1100),
        host("runtime", "cudaLaunchKernel", 1100, 1110, correlation_id=2),
        kernel(1120, 2000, corr=2),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 110,
        "input": 0,
        "launch": 0,
        "cpu": 0,
        "nothing": 10,
        "queued": 0,
    }
    assert dev["sync_copy_ns"] == 0


def test_sync_echo_is_bounded_by_the_gpu_time_waited_for():
    # Launch-bound: kernel A is [0,120), so the same wait [100,1005) saw W = 20 ns of GPU work. Gap
    # [120,1120) = 1000: sync [120,1005) = 885 plus an echo of 20 ([1005,1025) of the cpu op); cpu
    # [1025,1100) = 75; launch [1100,1110) = 10; nothing 10. Sum 1000.
    rows = [
        host("runtime", "cudaLaunchKernel", -20, -10, correlation_id=1),
        kernel(0, 120, corr=1),
        host("runtime", "cudaStreamSynchronize", 100, 1005),
        host("cpu_op", "aten::mul", 1005, 1100),
        host("runtime", "cudaLaunchKernel", 1100, 1110, correlation_id=2),
        kernel(1120, 2000, corr=2),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 905,
        "input": 0,
        "launch": 10,
        "cpu": 75,
        "nothing": 10,
        "queued": 0,
    }


def test_sync_echo_ranks_after_input_and_of_a_sync_copy_is_a_sync_copy():
    # A blocking cudaMemcpy [100,1005) waited W = 900 ns of kernel A [0,1000); after it the thread fetches a
    # batch [1005,1050) (input: kept) and launches B with [1050,1060); B runs [1080,2000). Gap [1000,1080) = 80:
    # sync 5 (the copy), input 45, echo [1050,1060) = 10 -> sync, nothing 20. The copy's part and its echo
    # are sync_copy_ns: 15.
    rows = [
        host("runtime", "cudaLaunchKernel", -20, -10, correlation_id=1),
        kernel(0, 1000, corr=1),
        host("runtime", "cudaMemcpy", 100, 1005),
        host("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1005, 1050),
        host("runtime", "cudaLaunchKernel", 1050, 1060, correlation_id=2),
        kernel(1080, 2000, corr=2),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 15,
        "input": 45,
        "launch": 0,
        "cpu": 0,
        "nothing": 20,
        "queued": 0,
    }
    assert dev["sync_copy_ns"] == 15


def _load(path: Path) -> Trace:
    if path.parent.name != "causes":
        return tracelens.load(path)
    data = json.loads(path.read_text())  # hand-built rows (fixtures/causes/make_causes.py)
    return Trace.from_rows(
        data["rows"], data["devices"], TraceMetadata("handmade", framework=data["framework"])
    )


@pytest.mark.parametrize(
    "path",
    shared_params("nsys", "h100x2*")
    + shared_params("pytorch", "a100_nccl*", "mi250*", "a100_alexnet_cuda_sync*")
    + [
        FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz",
        FIXTURES
        / "gpu"
        / "pytorch_sync-every-step_cuda.pt.trace.json.gz",  # syncs: their echo joins the union
        FIXTURES / "causes" / "unexplained_idle.json",
    ],
)
def test_unexplained_intervals_kept_by_the_attribution_equal_the_recomputed_ones(path):
    # The attribution keeps each device's `nothing` intervals from its own union of the feeding rows; a trace
    # whose attribution was not computed gets them from the rows directly. Both, and the `nothing` totals.
    with_section, alone = _load(path), _load(path)
    out = attribution.section(with_section, {})
    busy = device_busy(with_section)
    assert busy
    for a in out["devices"]:
        kept = attribution.unexplained_intervals(with_section, busy[a["device"]])
        recomputed = attribution.unexplained_intervals(alone, device_busy(alone)[a["device"]])
        assert kept[0].tolist() == recomputed[0].tolist() and kept[1].tolist() == recomputed[1].tolist()
        assert int((kept[1] - kept[0]).sum()) == a["by_cause"]["nothing"]


@settings(max_examples=25, deadline=None, database=None, derandomize=True)
@given(scen=vt.scenarios())
def test_kept_unexplained_intervals_on_generated_traces(scen: vt.Scenario, tmp_path_factory) -> None:
    # The same comparison on valid traces of every shape the generator makes (nested, zero-length, overlapping
    # host rows).
    if scen.empty or not scen.gpu:
        return
    path = vt.WRITERS["kineto"](scen, tmp_path_factory.mktemp("trace"))
    with_section, alone = tracelens.load(path), tracelens.load(path)
    out = attribution.section(with_section, {})
    for a in out["devices"]:
        kept = attribution.unexplained_intervals(with_section, device_busy(with_section)[a["device"]])
        recomputed = attribution.unexplained_intervals(alone, device_busy(alone)[a["device"]])
        assert kept[0].tolist() == recomputed[0].tolist() and kept[1].tolist() == recomputed[1].tolist()
        assert int((kept[1] - kept[0]).sum()) == a["by_cause"]["nothing"]


@pytest.mark.parametrize("zero_length_op", [False, True])
def test_gaps_that_touch_at_a_zero_length_op(zero_length_op):
    # Kernel A [0,100) (launched at [-20,-10)) and B [1000,1100) (launched by cudaLaunchKernel [200,300)); the
    # thread runs aten::linear [50,700). Without Z the gap is [100,1000) = 900; a zero-length kernel Z at 500
    # splits it into [100,500) and [500,1000), which touch (the split's windows are then not the gaps apart).
    # Either way: launch [200,300) = 100; cpu [100,200) + [300,700) = 500; nothing [700,1000) = 300.
    rows = [
        host("runtime", "cudaLaunchKernel", -20, -10, correlation_id=1),
        kernel(0, 100, corr=1),
        host("cpu_op", "aten::linear", 50, 700),
        host("runtime", "cudaLaunchKernel", 200, 300, correlation_id=2),
        kernel(1000, 1100, corr=2),
    ]
    if zero_length_op:
        rows.append(kernel(500, 500))
    dev = by_cause(Trace.from_rows(rows))
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 0,
        "input": 0,
        "launch": 100,
        "cpu": 500,
        "nothing": 300,
        "queued": 0,
    }
    assert dev["gap_count"] == (2 if zero_length_op else 1)
    if zero_length_op:
        # [100,500): launch 100, cpu 300; [500,1000): cpu 200, nothing 300.
        by_gap = {g["start_ns"]: g["by_cause"] for g in dev["largest"]}
        assert by_gap[100] == {
            "startup": 0,
            "sync": 0,
            "input": 0,
            "launch": 100,
            "cpu": 300,
            "nothing": 0,
            "queued": 0,
        }
        assert by_gap[500] == {
            "startup": 0,
            "sync": 0,
            "input": 0,
            "launch": 0,
            "cpu": 200,
            "nothing": 300,
            "queued": 0,
        }


def _graph_replay_with_sync_rows() -> list[dict]:
    """A CUDA graph replay the host waits for in cudaStreamSynchronize (ns):
    cudaGraphLaunch [0, 10_000) corr 1 -> k [20_000, 40_000), [60_000, 80_000), [100_000, 120_000),
    [150_000, 190_000); cudaStreamSynchronize [10_000, 200_000); then cudaGraphLaunch [200_000, 210_000) corr 2 ->
    k [220_000, 240_000), cudaStreamSynchronize [210_000, 250_000)."""
    rows = [host("runtime", "cudaGraphLaunch", 0, 10_000, correlation_id=1)]
    rows += [
        kernel(s, e, corr=1)
        for s, e in ((20_000, 40_000), (60_000, 80_000), (100_000, 120_000), (150_000, 190_000))
    ]
    rows += [
        host("runtime", "cudaStreamSynchronize", 10_000, 200_000),
        host("runtime", "cudaGraphLaunch", 200_000, 210_000, correlation_id=2),
        kernel(220_000, 240_000, corr=2),
        host("runtime", "cudaStreamSynchronize", 210_000, 250_000),
    ]
    return rows


def test_gaps_inside_a_graph_replay_are_queued_not_the_synchronize_the_host_sat_in():
    # Gaps [40, 60), [80, 100), [120, 150) µs: each op's graph launch returned at 10 µs, before the gap began (and
    # more than QUEUED_AFTER_NS before it), so the GPU had the op and did not run it: 70 µs `queued`, although the
    # host sat in cudaStreamSynchronize all along (before: 70 µs more `sync`). Gap [190, 220) µs: its op's launch
    # returned at 210, after the gap began (late): the host's. Its split: [190, 200) in the first synchronize
    # (10 µs sync); [200, 210) the next graph launch, inside the first synchronize's echo (the GPU ran 100 µs while
    # it waited): sync 10 µs; [210, 220) in the second synchronize: sync 10 µs.
    assert attribution.QUEUED_AFTER_NS == 10_000
    dev = by_cause(Trace.from_rows(_graph_replay_with_sync_rows()))
    assert dev["idle_ns"] == 100_000
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 30_000,
        "input": 0,
        "launch": 0,
        "cpu": 0,
        "nothing": 0,
        "queued": 70_000,
    }
    assert dev["queued"] == {"count": 3, "idle_ns": 70_000}
    assert dev["late_launch"] == {"count": 1, "idle_ns": 30_000}
    by_gap = {g["start_ns"]: g["by_cause"] for g in dev["largest"]}
    assert by_gap[120_000]["queued"] == 30_000 and by_gap[120_000]["sync"] == 0
    assert by_gap[190_000]["queued"] == 0 and by_gap[190_000]["sync"] == 30_000


def test_a_graph_op_launched_just_before_its_gap_leaves_the_first_queued_after_ns_to_the_host():
    # cudaGraphLaunch [0, 5_000) corr 1 -> k [6_000, 7_000) and k [20_000, 30_000); cudaStreamSynchronize
    # [5_000, 31_000). Gap [7_000, 20_000): the op's launch returned at 5 µs, before it: the host's part runs to
    # 5 + 10 = 15 µs (8 µs, sync), the rest [15_000, 20_000) is queued (5 µs).
    rows = [
        host("runtime", "cudaGraphLaunch", 0, 5_000, correlation_id=1),
        kernel(6_000, 7_000, corr=1),
        kernel(20_000, 30_000, corr=1),
        host("runtime", "cudaStreamSynchronize", 5_000, 31_000),
    ]
    dev = by_cause(Trace.from_rows(rows))
    assert (dev["by_cause"]["sync"], dev["by_cause"]["queued"]) == (8_000, 5_000)


def test_gaps_between_ops_launched_one_by_one_are_launch_overheads_after_queued_after_ns():
    # the same times with cudaLaunchKernel (one op a call, both returned before the gap): no graph, no `queued`; the
    # host's part of gap [7_000, 20_000) runs to 5 + 10 = 15 µs (8 µs, sync), the rest [15_000, 20_000) is launch
    # overhead's (5 µs), not the synchronize's (before: sync 13 µs)
    rows = [
        host("runtime", "cudaLaunchKernel", 0, 2_000, correlation_id=1),
        host("runtime", "cudaLaunchKernel", 2_000, 5_000, correlation_id=2),
        kernel(6_000, 7_000, corr=1),
        kernel(20_000, 30_000, corr=2),
        host("runtime", "cudaStreamSynchronize", 5_000, 31_000),
    ]
    dev = by_cause(Trace.from_rows(rows))
    split = dev["by_cause"]
    assert (split["sync"], split["launch"], split["queued"]) == (8_000, 5_000, 0)
    assert dev["queued_launch"] == {"count": 1, "idle_ns": 5_000}


def _queued_kernels_rows() -> list[dict]:
    """Kernels launched one by one ahead of the GPU, then a wait (ns), thread (1, 1):
    cudaLaunchKernel [0, 2_000) corr 1 -> k [10_000, 40_000); [3_000, 5_000) corr 2 -> k [42_000, 50_000);
    aten::add [5_000, 44_000); cudaLaunchKernel [44_000, 46_000) corr 3 -> k [62_000, 65_000);
    [46_000, 48_000) corr 4 -> k [70_000, 75_000); cudaDeviceSynchronize [48_000, 76_000);
    cudaLaunchKernel [78_000, 80_000) corr 5 -> k [82_000, 85_000)."""
    return [
        host("runtime", "cudaLaunchKernel", 0, 2_000, correlation_id=1),
        host("runtime", "cudaLaunchKernel", 3_000, 5_000, correlation_id=2),
        host("cpu_op", "aten::add", 5_000, 44_000),
        host("runtime", "cudaLaunchKernel", 44_000, 46_000, correlation_id=3),
        host("runtime", "cudaLaunchKernel", 46_000, 48_000, correlation_id=4),
        host("runtime", "cudaDeviceSynchronize", 48_000, 76_000),
        host("runtime", "cudaLaunchKernel", 78_000, 80_000, correlation_id=5),
        kernel(10_000, 40_000, corr=1),
        kernel(42_000, 50_000, corr=2),
        kernel(62_000, 65_000, corr=3),
        kernel(70_000, 75_000, corr=4),
        kernel(82_000, 85_000, corr=5),
    ]


def test_gaps_before_kernels_the_gpu_already_had_are_launch_not_what_the_host_did_meanwhile():
    # Gap [40, 42) µs: its kernel's launch returned at 5 µs, 5 + 10 <= 40: all 2 µs launch (the host ran aten::add:
    # before, 2 µs cpu). Gap [50, 62): launch returned at 46, host part [50, 56) in the synchronize (6 µs sync), the
    # rest [56, 62) launch (6 µs). Gap [65, 70): returned at 48, 58 <= 65: all 5 µs launch (before: sync). Gap
    # [75, 82): its launch returned at 80, after the gap began (late): the host's. [75, 76) in the synchronize
    # (1 µs sync); [76, 78) nothing (2 µs); [78, 80) the launch call, in the synchronize's echo (the GPU ran
    # [48, 50) + [62, 65) + [70, 75) = 10 µs while it waited, 2 µs of eligible idle follow): 2 µs sync; [80, 82)
    # nothing (2 µs). Idle 2 + 12 + 5 + 7 = 26 µs = sync 9 + launch 13 + nothing 4. Before the rule held: sync 20,
    # cpu 2, nothing 4 (the synchronize took the GPU's gaps between kernels it already had).
    dev = by_cause(Trace.from_rows(_queued_kernels_rows()))
    assert dev["idle_ns"] == 26_000
    assert dev["by_cause"] == {
        "startup": 0,
        "sync": 9_000,
        "input": 0,
        "launch": 13_000,
        "cpu": 0,
        "nothing": 4_000,
        "queued": 0,
    }
    assert dev["queued_launch"] == {"count": 3, "idle_ns": 13_000}
    assert dev["queued"] == {"count": 0, "idle_ns": 0}
    assert dev["late_launch"] == {"count": 1, "idle_ns": 7_000}
    # the gaps that begin in the synchronize with a host part ([50, 62) and [75, 82)): [65, 70) had its kernel
    # queued since 48 µs, the queue did not drain
    assert dev["after_sync"] == {"count": 2, "idle_ns": 19_000}
    by_gap = {g["start_ns"]: g["by_cause"] for g in dev["largest"]}
    assert (by_gap[50_000]["sync"], by_gap[50_000]["launch"]) == (6_000, 6_000)
    assert (by_gap[65_000]["sync"], by_gap[65_000]["launch"]) == (0, 5_000)
    assert (by_gap[40_000]["cpu"], by_gap[40_000]["launch"]) == (0, 2_000)
    assert (by_gap[75_000]["sync"], by_gap[75_000]["nothing"], by_gap[75_000]["launch"]) == (3_000, 4_000, 0)
    # the unexplained intervals are the host parts' only: [76, 78) and [80, 82)
    busy = device_busy(Trace.from_rows(_queued_kernels_rows()))[0]
    starts, ends = attribution.unexplained_intervals(Trace.from_rows(_queued_kernels_rows()), busy)
    assert (list(starts), list(ends)) == ([76_000, 80_000], [78_000, 82_000])
