"""One-time work inside API calls (analyses/startup.py rule ``first_api``) and what the what-if's startup remedy
does with it (replay/remedies.py ``startup``): hand-built traces, numbers worked out by hand below."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_replay import by_cause, host, kernel, launch
from tracelens.analyses import startup
from tracelens.analyses.columns import event_columns
from tracelens.analyses.startup import FIRST_API, REASONS, one_time_work
from tracelens.analyses.whatif import whatif
from tracelens.replay import engine, remedies
from tracelens.trace import DRIVER, RUNTIME, Trace


def lazy_loading_rows(first_launch_ns: int = 500_000) -> list[dict[str, Any]]:
    """Three launches of 100 µs kernels, the first one loading its module (times in ns):
    L1 cudaLaunchKernel [0, first]           -> K1 [first + 5_000, first + 105_000]
    L2 cudaLaunchKernel [first + 10_000, +5_000] -> K2 queued behind K1, 1_000 after it
    L3 cudaLaunchKernel [first + 20_000, +5_000] -> K3 queued behind K2, 1_000 after it
    S  cudaDeviceSynchronize [first + 30_000, K3 end + 2_000]"""
    f = first_launch_ns
    return [
        launch(0, f, 1),
        kernel(f + 5_000, f + 105_000, 1),
        launch(f + 10_000, f + 15_000, 2),
        kernel(f + 106_000, f + 206_000, 2),
        launch(f + 20_000, f + 25_000, 3),
        kernel(f + 207_000, f + 307_000, 3),
        host("runtime", "cudaDeviceSynchronize", f + 30_000, f + 309_000),
    ]


def test_a_first_launch_far_longer_than_the_later_ones_holds_one_time_work() -> None:
    trace = Trace.from_rows(lazy_loading_rows())
    work = one_time_work(trace)
    # later cudaLaunchKernel calls: 5_000 each (median 5_000); the first: 500_000 >= 10 x 5_000 and 495_000 more,
    # on a GPU that has not run anything yet
    (row,) = np.flatnonzero(work.mask)
    assert REASONS[work.reason[row]] == "first_api" and work.reason[row] == FIRST_API
    assert work.first_api_rows.tolist() == [row]
    assert work.first_api_excess.tolist() == [495_000]
    assert work.later_median_ns(np.array([row])).tolist() == [5_000.0]
    assert work.excess_ns(np.array([row, row + 1])).tolist() == [495_000, -1]


def test_startup_remedy_removes_the_excess_and_keeps_the_launched_work() -> None:
    # The first launch keeps the later calls' median cost (5_000) and its kernel loses the 495_000 of loading it
    # waited for: L1 [0, 5_000], K1 at 0 + (505_000 - 495_000) = 10_000 -> 110_000; the host's gaps stay:
    # L2 [15_000, 20_000], L3 [30_000, 35_000], S starts 40_000. K2 and K3 queue behind K1 as recorded (1_000):
    # K2 [111_000, 211_000], K3 [212_000, 312_000]; S returns 2_000 after K3: 314_000.
    # Recorded span 809_000 (0 -> S end): gain 495_000, the excess, to the nanosecond.
    trace = Trace.from_rows(lazy_loading_rows())
    remedy = by_cause(whatif(trace))["startup"]
    assert (remedy["gain_ns"], remedy["predicted_span_ns"]) == (495_000, 314_000)
    ctx = remedies.Context(trace)
    changed, assumptions = remedies.startup(ctx)
    assert changed is not None and "first_api" in assumptions
    t = engine.solve(changed, ctx.plan)
    g = ctx.graph
    ops = [(int(t[g.op_start[o]]), int(t[g.op_end[o]])) for o in np.argsort(g.time[g.op_start])]
    assert ops == [(10_000, 110_000), (111_000, 211_000), (212_000, 312_000)]  # every kernel still runs


@pytest.mark.parametrize(
    ("first_launch_ns", "reason"),
    [
        (45_000, "9x the later median: not far enough above it"),
        (104_000, "10x but only 99_000 above it (FIRST_API_MIN_NS = 100_000)"),
    ],
)
def test_a_first_call_not_far_above_the_later_ones_is_not_one_time(first_launch_ns: int, reason: str) -> None:
    work = one_time_work(Trace.from_rows(lazy_loading_rows(first_launch_ns)))
    assert not work.mask.any(), reason
    assert "startup" not in by_cause(whatif(Trace.from_rows(lazy_loading_rows(first_launch_ns))))


def test_a_long_first_call_on_a_busy_gpu_is_not_one_time() -> None:
    # cudaFuncGetAttributes: first call 1 ms, later ones 5 µs, but a 2 ms kernel runs through the first: the call
    # may have waited for the GPU (an implicit synchronization), so it is not counted as one-time work
    rows = [
        launch(0, 5_000, 1),
        kernel(10_000, 2_010_000, 1),
        host("runtime", "cudaFuncGetAttributes", 20_000, 1_020_000),
        host("runtime", "cudaFuncGetAttributes", 1_030_000, 1_035_000),
        host("runtime", "cudaFuncGetAttributes", 1_040_000, 1_045_000),
        host("runtime", "cudaDeviceSynchronize", 1_050_000, 2_012_000),
    ]
    assert not one_time_work(Trace.from_rows(rows)).mask.any()
    # the same calls with the kernel after them: the GPU idles through the first call, which is one-time work
    rows[1] = kernel(1_100_000, 2_010_000, 1)
    work = one_time_work(Trace.from_rows(rows))
    assert work.first_api_excess.tolist() == [995_000]


def test_the_startup_finding_names_the_first_api_call() -> None:
    # K0 [10_000, 20_000], then the GPU idles until K1 at 1_060_000 while the host sits in the first
    # cudaFuncGetAttributes [30_000, 1_030_000] (later calls 5_000): 1_000_000 of GPU idle time is its one-time work
    import tracelens
    from tracelens.report.findings import sentence

    rows = [
        launch(0, 5_000, 1),
        kernel(10_000, 20_000, 1),
        host("runtime", "cudaFuncGetAttributes", 30_000, 1_030_000),
        host("runtime", "cudaFuncGetAttributes", 1_035_000, 1_040_000),
        host("runtime", "cudaFuncGetAttributes", 1_041_000, 1_046_000),
        launch(1_050_000, 1_055_000, 2),
        kernel(1_060_000, 1_160_000, 2),
        host("runtime", "cudaDeviceSynchronize", 1_056_000, 1_162_000),
    ]
    diagnosis = tracelens.analyze(Trace.from_rows(rows))["diagnosis"]
    startup = next(c for c in diagnosis["causes"] if c["cause"] == "startup")
    assert startup["lost_ns"] == 1_000_000
    (item,) = startup["evidence"]["items"]
    assert (item["name"], item["reason"], item["idle_ns"], item["later_median_ns"]) == (
        "cudaFuncGetAttributes",
        "first_api",
        1_000_000,
        5_000.0,
    )
    assert "the first “cudaFuncGetAttributes” (1 ms; later calls 5 µs)" in sentence(startup, diagnosis)


def _first_api_reference(trace: Trace, api: np.ndarray, blocking: np.ndarray):
    """The rule as the earlier pandas code computed it (a sort on pid, name, start; the median of every group's
    later calls), to check the numpy path against."""
    import pandas as pd

    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.startup import FIRST_API_MIN_NS, FIRST_CALL_FACTOR, _idle_share

    cols = event_columns(trace)
    rows = np.flatnonzero(api & ~blocking & (cols.name >= 0) & (cols.tid >= 0))
    frame = pd.DataFrame(
        {
            "row": rows,
            "pid": cols.pid[rows],
            "name": cols.name[rows],
            "start": cols.start[rows],
            "duration": cols.end[rows] - cols.start[rows],
        }
    ).sort_values(["pid", "name", "start"], kind="stable")
    first = ~frame.duplicated(["pid", "name"], keep="first")
    medians = frame[~first].groupby(["pid", "name"])["duration"].median().rename("later_median")
    firsts = frame[first].join(medians, on=["pid", "name"], how="inner")
    duration = firsts["duration"].to_numpy(np.int64)
    median = firsts["later_median"].to_numpy(np.float64)
    long = (duration >= FIRST_CALL_FACTOR * median) & (duration - median >= FIRST_API_MIN_NS)
    found, median = firsts["row"].to_numpy(np.int64)[long], median[long]
    idle = _idle_share(trace, cols.start[found], cols.end[found]) >= 0.5
    excess = np.round(cols.end[found] - cols.start[found] - median).astype(np.int64)
    order = np.argsort(found[idle])
    return found[idle][order], excess[idle][order], median[idle][order]


@pytest.mark.parametrize("seed", range(6))
def test_first_api_calls_equal_the_reference_computation(seed: int) -> None:
    # Random runtime calls on two processes (names from a small set, some calls with a negative duration on odd
    # seeds), a kernel late in the trace; the rows of the table in start order or, for the rule's input masks,
    # read as given. The numpy path (sort of dense (pid, name) codes, medians of the groups that can pass only)
    # gives the reference's rows, excess and medians.
    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.startup import _first_api_calls
    from tracelens.trace import DRIVER, RUNTIME

    rng = np.random.default_rng(seed)
    names = ["cudaLaunchKernel", "cudaMalloc", "cudaMemcpyAsync", "cudaEventRecord", "cuModuleLoad"]
    rows = []
    for _ in range(300):
        start = int(rng.integers(0, 10_000_000))
        duration = int(
            rng.choice([rng.integers(1_000, 20_000), rng.integers(100_000, 3_000_000)], p=[0.9, 0.1])
        )
        if seed % 2 and rng.random() < 0.05:
            duration = -duration
        rows.append(
            host(
                "runtime", str(rng.choice(names)), start, start + duration, pid=int(rng.integers(1, 3)), tid=7
            )
        )
    # Each (pid, name)'s earliest call, before any GPU work: long for some (the rule may fire), short for others.
    for i, (pid, name) in enumerate((p, n) for p in (1, 2) for n in names):
        start = -10_000_000 + 10 * i
        rows.append(host("runtime", name, start, start + [200_000, 2_000_000, 5_000][i % 3], pid=pid, tid=7))
    rows.append(kernel(20_000_000, 20_100_000, 999))
    trace = Trace.from_rows(rows)
    cols = event_columns(trace)
    api = cols.of_kind(RUNTIME, DRIVER)
    blocking = np.zeros(api.size, bool)
    got = _first_api_calls(trace, api, blocking)
    want = _first_api_reference(trace, api, blocking)
    assert want[0].size > 0  # the rule fires on these calls
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=40, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.integers(0, 2),  # pid
            st.sampled_from(["cudaLaunchKernel", "cudaMalloc", "cuModuleLoad", "cudaMemcpyAsync"]),
            st.integers(0, 50),  # start (ties on purpose)
            st.integers(0, 20),  # duration
            st.booleans(),  # driver
        ),
        min_size=1,
        max_size=40,
    )
)
def test_first_api_calls_equal_the_reference_with_the_thresholds_off(
    calls: list[tuple[int, str, int, int, bool]],
) -> None:
    rows = [
        {
            "kind": DRIVER if driver else RUNTIME,
            "name": name,
            "start_ns": s,
            "end_ns": s + d,
            "pid": p,
            "tid": 1,
        }
        for p, name, s, d, driver in calls
    ]
    trace = Trace.from_rows(rows)
    cols = event_columns(trace)
    api = cols.of_kind(RUNTIME, DRIVER)
    blocking = np.zeros(api.size, bool)
    # every first call with later ones compared (ties on start on purpose)
    saved = startup.FIRST_CALL_FACTOR, startup.FIRST_API_MIN_NS, startup._idle_share
    startup.FIRST_CALL_FACTOR, startup.FIRST_API_MIN_NS = 0.0, -(10**18)  # every first call with later ones
    startup._idle_share = lambda _trace, s, e: np.ones(s.size)
    try:
        got = startup._first_api_calls(trace, api, blocking)
        want = _first_api_reference(trace, api, blocking)
    finally:
        startup.FIRST_CALL_FACTOR, startup.FIRST_API_MIN_NS, startup._idle_share = saved
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)


@settings(max_examples=40, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.integers(0, 2),  # pid
            st.sampled_from(["cudaLaunchKernel", "cudaMalloc", "cudaDeviceSynchronize", "cudaMemcpy", None]),
            st.integers(0, 50),  # start (ties on purpose)
            st.integers(0, 20),  # duration
            st.sampled_from([1, -1]),  # tid (-1: not on a thread)
        ),
        min_size=1,
        max_size=40,
    )
)
def test_first_api_candidates_picked_by_the_caller_equal_the_rule_s_own_pick(
    calls: list[tuple[int, str | None, int, int, int]],
) -> None:
    # one_time_work picks the calls that take part (_api_candidates: named, on a thread, not blocking) and hands
    # _first_api_calls those only; the same rows, excess and medians as the rule's own pick from every API call
    # and a mask of the blocking ones
    from tracelens.analyses.names import HOST_CATEGORY_PRIORITY, SYNC

    rows = [
        {"kind": RUNTIME, "name": name, "start_ns": s, "end_ns": s + d, "pid": p, "tid": tid}
        for p, name, s, d, tid in calls
    ]
    trace = Trace.from_rows(rows)
    cols = event_columns(trace)
    api = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER))
    base = startup.host_categories(trace)
    blocking = base == HOST_CATEGORY_PRIORITY.index(SYNC)
    saved = startup.FIRST_CALL_FACTOR, startup.FIRST_API_MIN_NS, startup._idle_share
    startup.FIRST_CALL_FACTOR, startup.FIRST_API_MIN_NS = 0.0, -(10**18)  # every first call with later ones
    startup._idle_share = lambda _trace, s, e: np.ones(s.size)
    try:
        want = startup._first_api_calls(trace, api, blocking, cols.name[api])
        picked, names = startup._api_candidates(trace, api, cols.name[api], base)
        got = startup._first_api_calls(trace, picked, None, names)
    finally:
        startup.FIRST_CALL_FACTOR, startup.FIRST_API_MIN_NS, startup._idle_share = saved
    assert blocking[api].any() or not any(n == "cudaDeviceSynchronize" for _, n, _, _, _ in calls)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)
