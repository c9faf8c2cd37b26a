"""NVTX/annotation ranges: CPU time, launched GPU work, projected span, GPU idle inside (hand-derived)."""

from __future__ import annotations

from tracelens.analyses import ranges
from tracelens.trace import Trace


def host(kind, name, start, end, tid=1, **extra):
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def kernel(start, end, corr, device=0):
    return {
        "kind": "kernel",
        "name": "k",
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "stream": 7,
        "correlation_id": corr,
    }


def _trace():
    # Thread 1: "step" [0,1000) holds "forward" [0,400) and "backward" [500,1000); forward is repeated [2000,2100).
    #   forward launches corr 1 [10,20) -> kernel [100,200) and corr 2 [30,40) -> kernel [300,350);
    #   backward launches corr 3 [600,610) -> kernel [700,900); a launch at exactly 1000 (corr 4) is outside
    #   "step" ([start, end) rule) -> kernel [1000,1100).
    #   second forward [2000,2100) launches nothing.
    # Thread 2 launches corr 5 [50,60) inside the time of "forward" but on another thread -> kernel [210,250).
    return Trace.from_rows(
        [
            host("annotation", "step", 0, 1000),
            host("annotation", "forward", 0, 400),
            host("annotation", "backward", 500, 1000),
            host("annotation", "forward", 2000, 2100),
            host("runtime", "cudaLaunchKernel", 10, 20, correlation_id=1),
            kernel(100, 200, 1),
            host("runtime", "cudaLaunchKernel", 30, 40, correlation_id=2),
            kernel(300, 350, 2),
            host("runtime", "cudaLaunchKernel", 600, 610, correlation_id=3),
            kernel(700, 900, 3),
            host("runtime", "cudaLaunchKernel", 1000, 1010, correlation_id=4),
            kernel(1000, 1100, 4),
            host("runtime", "cudaLaunchKernel", 50, 60, tid=2, correlation_id=5),
            kernel(210, 250, 5),
        ]
    )


def test_per_name_projection():
    out = ranges.section(_trace(), {})
    by = {r["name"]: r for r in out["ranges"]}
    assert out["count"] == 4 and out["names"] == 3
    # forward: ops [100,200) + [300,350): gpu 150, projected [100,350) = 250; device busy inside it:
    # [100,200) + [210,250) (thread 2's kernel is still GPU work) + [300,350) = 190 -> idle 60.
    assert by["forward"] == {
        "name": "forward",
        "count": 2,
        "texts": 1,
        "cpu_ns": 500,
        "gpu_ops": 2,
        "gpu_op_ns": 150,
        "projected_ns": 250,
        "gpu_idle_ns": 60,
        "instances_with_gpu": 1,
    }
    # backward: one op [700,900): projected 200, idle 0.
    assert by["backward"]["gpu_op_ns"] == 200 and by["backward"]["projected_ns"] == 200
    assert by["backward"]["gpu_idle_ns"] == 0
    # step (outer range): ops 1, 2, 3 -> gpu 350, projected [100,900) = 800; busy inside [100,200) [210,250)
    # [300,350) [700,900) = 390 -> idle 410.
    assert (
        by["step"]["gpu_ops"],
        by["step"]["gpu_op_ns"],
        by["step"]["projected_ns"],
        by["step"]["gpu_idle_ns"],
    ) == (3, 350, 800, 410)
    # Sorted by CPU time: step 1000, forward 500, backward 500 (ties by name).
    assert [r["name"] for r in out["ranges"]] == ["step", "backward", "forward"]


def test_multi_device_range_uses_joint_union():
    # One range launches onto GPU 0 [100,200) and GPU 1 [150,300) + [400,500): gpu 350, projected [100,500) = 400;
    # joint busy union of both GPUs inside it [100,300) + [400,500) = 300 -> idle 100.
    trace = Trace.from_rows(
        [
            host("annotation", "r", 0, 100),
            host("runtime", "cudaLaunchKernel", 10, 20, correlation_id=1),
            kernel(100, 200, 1, device=0),
            host("runtime", "cudaLaunchKernel", 30, 40, correlation_id=2),
            kernel(150, 300, 2, device=1),
            host("runtime", "cudaLaunchKernel", 50, 60, correlation_id=3),
            kernel(400, 500, 3, device=1),
        ]
    )
    (r,) = ranges.section(trace, {})["ranges"]
    assert (r["gpu_ops"], r["gpu_op_ns"], r["projected_ns"], r["gpu_idle_ns"]) == (3, 350, 400, 100)


def test_no_annotations():
    assert ranges.section(Trace.from_rows([kernel(0, 1, None)]), {}) == {
        "count": 0,
        "names": 0,
        "texts": 0,
        "ranges": [],
    }


def test_ranges_without_gpu_work():
    trace = Trace.from_rows(
        [host("annotation", "tracelens/data", 0, 70), host("annotation", "tracelens/data", 100, 130)]
    )
    (r,) = ranges.section(trace, {})["ranges"]
    assert (r["count"], r["cpu_ns"], r["gpu_ops"], r["projected_ns"]) == (2, 100, 0, 0)


def test_a_span_too_long_for_the_packed_key_gives_the_same_ranges(monkeypatch) -> None:
    """Ranks replace times when (threads x span) does not fit the int64 key: the same result as the key."""
    trace = _trace()
    packed = ranges.range_instances(trace)
    whole_summary = ranges.range_summary(trace)
    from tracelens.analyses import columns

    monkeypatch.setattr(columns, "PACKED_KEY_LIMIT", 1)  # every trace is "too long": the rank path
    ranked = ranges.range_instances(trace)
    assert packed["ops"].sum() > 0  # the comparison covers ranges that own GPU work
    assert ranked.equals(packed)
    assert ranges.range_summary(trace) == whole_summary


def test_slice_reduce_matches_direct_reduction_on_random_and_nested_slices():
    # The private helper is tested directly: its sparse-table algorithm is what keeps deeply nested ranges
    # (an outer range covering every launch) linearithmic, and random slices exercise every table level.
    import numpy as np

    from tracelens.analyses.ranges import _slice_reduce, _slice_reduce_each

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        values = rng.integers(-1000, 1000, n)
        lo = rng.integers(0, n + 1, 40)
        hi = np.minimum(n, lo + rng.integers(0, n + 1, 40))
        lo, hi = np.r_[lo, 0, 0], np.r_[hi, n, 0]  # the whole array, and an empty slice
        both = []
        for ufunc, empty in ((np.minimum, 0), (np.maximum, -1)):
            expected = [ufunc.reduce(values[a:b]) if b > a else empty for a, b in zip(lo, hi, strict=True)]
            assert _slice_reduce(ufunc, values, lo, hi, empty).tolist() == expected
            both.append(expected)
        other = values[::-1].copy()  # two reductions over the same slices at once, of different values
        got = _slice_reduce_each([(np.minimum, values, 0), (np.maximum, other, -1)], lo, hi)
        assert got[0].tolist() == both[0]
        assert got[1].tolist() == [np.max(other[a:b]) if b > a else -1 for a, b in zip(lo, hi, strict=True)]


def test_ranges_measured_in_chunks_sum_to_the_same_summary(monkeypatch) -> None:
    """range_summary sums per name chunk by chunk (memory on tens of millions of ranges): chunks of one or
    two ranges give the summary of one chunk."""
    trace = _trace()
    whole = ranges.range_summary(trace)
    assert whole["count"] >= 3 and any(r["gpu_ops"] for r in whole["ranges"])
    for size in (1, 2):
        monkeypatch.setattr(ranges, "CHUNK_RANGES", size)
        assert ranges.range_summary(trace) == whole


def test_range_on_a_thread_that_launched_nothing_owns_no_gpu_work():
    # Thread 3 has a range over [0, 2000) but launched nothing: the launches of threads 1 and 2 inside its time
    # are not its own (its thread is not among the launching threads' codes: packed as no launch).
    rows = _trace().events.to_pylist()
    rows.append(host("annotation", "idle thread", 0, 2000, tid=3))
    trace = Trace.from_rows([{k: v for k, v in r.items() if v is not None} for r in rows])
    by = {r["name"]: r for r in ranges.section(trace, {})["ranges"]}
    assert (by["idle thread"]["gpu_ops"], by["idle thread"]["projected_ns"]) == (0, 0)
    assert by["forward"]["gpu_ops"] == 2  # unchanged by the other thread's range
