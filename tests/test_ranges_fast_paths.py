"""The ranges section's fast paths against the code they replaced (kept here as the reference)."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import grouping, launch_cover, ranges
from tracelens.analyses.columns import DeviceBusy
from tracelens.analyses.launch import launch_pairs
from tracelens.trace import Trace

# --- _Launches.spans_of: per-launch covered times and in-order launches, against sparse tables and a union
# search per range (the code before) ----------------------------------------------------------------------------


def _reference_spans_of(
    first_op: np.ndarray,
    last_op: np.ndarray,
    dev_min: np.ndarray,
    csum_multi: np.ndarray,
    csum_change: np.ndarray,
    busy: dict[int, DeviceBusy],
    lo: np.ndarray,
    hi: np.ndarray,
) -> dict[str, np.ndarray]:
    """_Launches.spans_of as it was: sparse-table minimum and maximum of every range's launches, then the busy
    overlap of [first, last) searched in its device's union (the joint union for ranges on several devices)."""
    if lo.size == 0:
        return {k: np.zeros(0, np.int64) for k in ("proj_start", "proj_end", "gpu_idle_ns")}
    win = slice(int(lo.min()), int(hi.max()))
    first, last = ranges._slice_reduce_each(
        [(np.minimum, first_op[win], 0), (np.maximum, last_op[win], 0)], lo - win.start, hi - win.start
    )
    n = dev_min.size
    one_device = csum_multi[hi] == csum_multi[lo]
    one_device &= csum_change[hi] == csum_change[np.minimum(lo + 1, n)]
    device_of = dev_min[lo]
    idle = np.zeros(lo.size, np.int64)
    for device, b in busy.items():
        sel = np.flatnonzero(one_device & (device_of == device))
        idle[sel] = (last[sel] - first[sel]) - ranges._overlap_in_window(
            first[sel], last[sel], b.busy_starts, b.busy_ends
        )
    mixed = np.flatnonzero(~one_device)
    if mixed.size:
        us, ue = intervals.merge(
            np.concatenate([b.busy_starts for b in busy.values()]),
            np.concatenate([b.busy_ends for b in busy.values()]),
        )
        idle[mixed] = (last[mixed] - first[mixed]) - ranges._overlap_in_window(
            first[mixed], last[mixed], us, ue
        )
    return {"proj_start": first, "proj_end": last, "gpu_idle_ns": idle}


def _launches(
    first: np.ndarray, last: np.ndarray, dev_min: np.ndarray, dev_max: np.ndarray
) -> ranges._Launches:
    """A _Launches holding these launch calls' op spans and devices, its running counts as __init__ builds them."""
    launches = object.__new__(ranges._Launches)
    launches._covered_cache = None
    launches.first, launches.last, launches.dev_min, launches.dev_max = first, last, dev_min, dev_max
    launches.csum_multi = np.concatenate([[0], np.cumsum(dev_min != dev_max)])
    launches.csum_change = np.concatenate([[0, 0], np.cumsum(dev_min[1:] != dev_min[:-1])])
    return launches


@st.composite
def _spans_case(draw: st.DrawFn) -> tuple:
    n = draw(st.integers(1, 14))
    first = np.array(draw(st.lists(st.integers(0, 120), min_size=n, max_size=n)), np.int64)
    if draw(st.booleans()):  # launches in op order, as most are: the in-order path for most ranges
        first = np.sort(first)
    last = first + np.array(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)), np.int64)
    # devices 0-2; device 2 has no busy union (its ranges are idle 0); a launch may span two devices
    dev_min = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.int64)
    dev_max = dev_min + np.array(draw(st.lists(st.sampled_from([0, 0, 0, 1]), min_size=n, max_size=n)))
    dev_max = np.minimum(dev_max, 2)
    busy = {}
    for device in (0, 1):
        spans = draw(st.lists(st.tuples(st.integers(0, 170), st.integers(0, 30)), max_size=8))
        s = np.array([a for a, _ in spans], np.int64)
        e = s + np.array([d for _, d in spans], np.int64)
        us, ue = intervals.merge(s, e)
        busy[device] = DeviceBusy(
            device, us, ue, int(s.min()) if s.size else 0, int(e.max()) if e.size else 0
        )
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n)), max_size=12))
    lo = np.array([a for a, _ in pairs], np.int64)
    hi = np.minimum(lo + np.array([b for _, b in pairs], np.int64), n)
    return first, last, dev_min, dev_max, busy, lo, hi


@settings(max_examples=200, deadline=None)
@given(_spans_case())
def test_spans_of_matches_sparse_tables_and_a_search_per_range(case: tuple) -> None:
    first, last, dev_min, dev_max, busy, lo, hi = case
    launches = _launches(first, last, dev_min, dev_max)
    expected = _reference_spans_of(
        first, last, dev_min, launches.csum_multi, launches.csum_change, busy, lo, hi
    )
    with mock.patch.object(ranges, "device_busy", lambda trace: busy):
        got = launches.spans_of(None, lo, hi)  # type: ignore[arg-type]
        again = launches.spans_of(None, lo, hi)  # type: ignore[arg-type]  # the cached covered times
    for key, values in expected.items():
        assert np.array_equal(got[key], values), key
        assert np.array_equal(again[key], values), key


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-20, 200), st.integers(-10, 40)), max_size=12),
    st.lists(st.tuples(st.integers(0, 150), st.integers(0, 20)), max_size=10),
)
def test_covered_before_pair_is_covered_before(spans: list, union: list) -> None:
    # (first, last) pairs, some ending before they start, some inside one union interval, some across several
    us, ue = intervals.merge(
        np.array([s for s, _ in union], np.int64), np.array([s + d for s, d in union], np.int64)
    )
    first = np.array([s for s, _ in spans], np.int64)
    last = first + np.array([d for _, d in spans], np.int64)
    got_first, got_last = launch_cover.covered_before_pair(first, last, us, ue)
    assert np.array_equal(got_first, intervals.covered_before(first, us, ue))
    assert np.array_equal(got_last, intervals.covered_before(last, us, ue))


# --- _rows_by_thread: a scan of the table per thread, against a thread key per range and its stable order ------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 3), st.booleans()), max_size=40),
    st.sampled_from([1, 2, 3, 4096]),
    st.sampled_from([0, 1, 2, 4]),
)
def test_rows_by_thread_is_the_stable_thread_order(table: list, sample: int, scan: int) -> None:
    # pid, tid (-1: unknown) and whether the row is a range; a sample of every few rows that may miss threads;
    # scans of up to 0-4 threads, or none
    pid = np.array([p for p, _, _ in table], np.int32)
    tid = np.array([t for _, t, _ in table], np.int32)
    is_row = np.array([r for _, _, r in table], bool)
    rows = np.flatnonzero(is_row)
    cols = mock.Mock(pid=pid, tid=tid)
    if rows.size == 0:  # no rows: none, no threads (the code before took no empty input)
        got_rows, got_keys, got_lengths = grouping.rows_by_thread(cols, is_row)
        assert got_rows.size == got_keys.size == got_lengths.size == 0
        return
    # the code before: one thread key per row, its stable order, the rows gathered in it
    order, run_keys, run_lengths = grouping.thread_runs(grouping.thread_key(pid[rows], tid[rows]))
    with (
        mock.patch.object(grouping, "THREAD_SAMPLE", sample),
        mock.patch.object(grouping, "SCAN_THREADS", scan),
    ):
        got_rows, got_keys, got_lengths = grouping.rows_by_thread(cols, is_row)
    assert np.array_equal(got_rows, rows[order])
    assert np.array_equal(got_keys, run_keys)
    assert np.array_equal(got_lengths, run_lengths)


# --- _per_launch: one op per launch call taken as it is, against reductions over each call's ops ----------------


def _reference_per_launch(trace: Trace) -> dict[str, np.ndarray]:
    """_per_launch as it was: every launch call's ops reduced (np.*.reduceat) whatever their number."""
    pairs = launch_pairs(trace)
    m = pairs[pairs["matched"]]
    m = m[np.argsort(m["correlation_id"], kind="stable")]
    cid = m["correlation_id"]
    group = np.flatnonzero(np.r_[True, cid[1:] != cid[:-1]])
    start, end, dev = m["start"], m["end"], m["device"]
    return {
        "pid": m["pid"][group],
        "tid": m["tid"][group],
        "t": m["launch_start"][group],
        "op_ns": np.add.reduceat(end - start, group),
        "first": np.minimum.reduceat(start, group),
        "last": np.maximum.reduceat(end, group),
        "dev_min": np.minimum.reduceat(dev, group),
        "dev_max": np.maximum.reduceat(dev, group),
        "ops": np.diff(np.r_[group, cid.size]),
    }


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 100),
            st.integers(1, 2),
            st.lists(st.tuples(st.integers(0, 150), st.integers(0, 1)), min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
)
def test_per_launch_matches_reductions_per_call(calls: list, one_op_each: bool) -> None:
    rows: list[dict] = []
    for corr, (t, tid, ops) in enumerate(calls, start=1):
        rows.append(
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": t,
                "end_ns": t + 2,
                "pid": 1,
                "tid": tid,
                "correlation_id": corr,
            }
        )
        for ks, device in ops[:1] if one_op_each else ops:
            rows.append(
                {
                    "kind": "kernel",
                    "name": "k",
                    "start_ns": ks,
                    "end_ns": ks + 5 + corr,
                    "device": device,
                    "stream": 7,
                    "correlation_id": corr,
                }
            )
    trace = Trace.from_rows(rows)
    expected = _reference_per_launch(trace)
    got = ranges._per_launch(trace)
    assert set(got) == set(expected)
    for key, values in expected.items():
        assert np.array_equal(got[key].astype(np.int64), values.astype(np.int64)), key
