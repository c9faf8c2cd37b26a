"""The fast paths of the ranges, memcpy and communication sections against independent references: plain numpy
(np.add.at, np.isin), a loop over every range (ranges), and the interval operations the shortcuts replace
(communication)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import grouping, memcpy, ranges
from tracelens.analyses.communication import device_communication
from tracelens.trace import Trace

# --- sum_per_slot: bincount where exact, np.add.at otherwise ---------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(-(2**62), 2**62)), max_size=40),
    st.booleans(),
)
def test_sum_per_slot_is_add_at(pairs: list[tuple[int, int]], small: bool) -> None:
    slot = np.array([s for s, _ in pairs], np.int64)
    values = np.array([v for _, v in pairs], np.int64)
    if small:  # the bincount path: every partial sum below 2^53
        values //= 2**20
    expected = np.zeros(7, np.int64)
    np.add.at(expected, slot, values)
    assert np.array_equal(grouping.sum_per_slot(slot, values, 7), expected)


def test_sum_per_slot_exact_just_below_and_above_the_float_bound() -> None:
    # 2^52 + 1 twice: exact in float64 partial sums (2^53 + 2 is even), and 2^53 + 1 alone is not a float64
    # (the np.add.at path must take it).
    for value in (2**52 + 1, 2**53 + 1, 2**61 + 3):
        values = np.array([value, value, 1], np.int64)
        slot = np.array([1, 1, 1])
        assert grouping.sum_per_slot(slot, values, 2).tolist() == [0, 2 * value + 1]


# --- member_ids: a flag table or a low-bits prefilter, against np.isin -------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-5, 2**31 - 1), max_size=60),
    st.lists(st.integers(-5, 2**31 - 1), max_size=30),
    st.sampled_from([np.int32, np.int64]),
    st.booleans(),
)
def test_member_ids_is_isin(values: list[int], wanted: list[int], dtype: type, near: bool) -> None:
    v = np.array(values, dtype)
    w = np.array(wanted, np.int64)
    if near:  # values close to the wanted ones: the flag table over their range
        v = (v % 50).astype(dtype)
        w = w % 50
    assert np.array_equal(memcpy.member_ids(v, w), np.isin(v, w))


def test_member_ids_both_paths_on_many_ids() -> None:
    rng = np.random.default_rng(3)
    wanted = rng.integers(0, 10**9, 5000)
    values = np.concatenate([wanted[::3], rng.integers(0, 10**9, 20000)]).astype(np.int64)
    assert np.array_equal(memcpy.member_ids(values, wanted), np.isin(values, wanted))  # the low-bits filter
    dense_w, dense_v = wanted % 100_000, values % 100_000
    assert np.array_equal(memcpy.member_ids(dense_v, dense_w), np.isin(dense_v, dense_w))  # the flag table


# --- range_summary against a loop over every range ------------------------------------------------------------


def _host(kind: str, name: str, start: int, end: int, tid: int, **extra: object) -> dict:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}


def _reference_summary(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per range name, from the definitions (docs/analyses.md "ranges") by loops: launched ops are the kernels
    whose launch call (same correlation id) starts inside [start, end) on the range's thread."""
    calls = {r["correlation_id"]: r for r in rows if r["kind"] == "runtime"}
    ops = [r for r in rows if r["kind"] == "kernel"]
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        if r["kind"] != "annotation":
            continue
        mine = [
            op
            for op in ops
            if calls[op["correlation_id"]]["tid"] == r["tid"]
            and r["start_ns"] <= calls[op["correlation_id"]]["start_ns"] < r["end_ns"]
        ]
        e = out.setdefault(
            r["name"],
            dict.fromkeys(
                ("count", "cpu_ns", "gpu_ops", "gpu_op_ns", "projected_ns", "gpu_idle_ns", "with"), 0
            ),
        )
        e["count"] += 1
        e["cpu_ns"] += r["end_ns"] - r["start_ns"]
        if not mine:
            continue
        e["with"] += 1
        e["gpu_ops"] += len(mine)
        e["gpu_op_ns"] += sum(op["end_ns"] - op["start_ns"] for op in mine)
        lo, hi = min(op["start_ns"] for op in mine), max(op["end_ns"] for op in mine)
        e["projected_ns"] += hi - lo
        devices = {op["device"] for op in mine}
        busy = {t for op in ops if op["device"] in devices for t in range(op["start_ns"], op["end_ns"])}
        e["gpu_idle_ns"] += sum(1 for t in range(lo, hi) if t not in busy)
    return out


@st.composite
def _range_traces(draw: st.DrawFn) -> list[dict]:
    rows: list[dict] = []
    for _ in range(draw(st.integers(1, 12))):  # ranges on threads 1-3 (thread 3 never launches)
        start = draw(st.integers(0, 120))
        rows.append(
            _host(
                "annotation",
                draw(st.sampled_from(["alpha", "beta", "gamma"])),
                start,
                start + draw(st.integers(0, 60)),
                draw(st.integers(1, 3)),
            )
        )
    for corr in range(1, draw(st.integers(0, 10)) + 1):  # launches on threads 1-2, one or two kernels each
        t = draw(st.integers(0, 150))
        rows.append(
            _host("runtime", "cudaLaunchKernel", t, t + 2, draw(st.integers(1, 2)), correlation_id=corr)
        )
        for _ in range(draw(st.integers(1, 2))):
            ks = draw(st.integers(0, 200))
            rows.append(
                {
                    "kind": "kernel",
                    "name": "k",
                    "start_ns": ks,
                    "end_ns": ks + draw(st.integers(1, 30)),
                    "device": draw(st.integers(0, 1)),
                    "stream": 7,
                    "correlation_id": corr,
                }
            )
    return rows


@settings(max_examples=60, deadline=None)
@given(_range_traces(), st.sampled_from([1, 2, 3, 1 << 21]))
def test_range_summary_matches_a_loop_over_every_range(rows: list[dict], chunk: int) -> None:
    expected = _reference_summary(rows)
    saved = ranges.CHUNK_RANGES
    ranges.CHUNK_RANGES = chunk  # chunks that cut a thread's run of ranges
    try:
        out = ranges.range_summary(Trace.from_rows(rows))
    finally:
        ranges.CHUNK_RANGES = saved
    assert out["count"] == sum(e["count"] for e in expected.values())
    got = {
        r["name"]: {
            "count": r["count"],
            "cpu_ns": r["cpu_ns"],
            "gpu_ops": r["gpu_ops"],
            "gpu_op_ns": r["gpu_op_ns"],
            "projected_ns": r["projected_ns"],
            "gpu_idle_ns": r["gpu_idle_ns"],
            "with": r["instances_with_gpu"],
        }
        for r in out["ranges"]
    }
    assert got == expected


def test_range_summary_with_many_threads_takes_the_sorted_thread_order() -> None:
    # More threads than FEW_THREADS: the order by a code per range; threads without launches among them.
    rows = []
    for tid in range(1, 40):
        rows.append(_host("annotation", "r", tid, tid + 100, tid))
        if tid % 3 == 0:
            rows.append(_host("runtime", "cudaLaunchKernel", tid + 5, tid + 6, tid, correlation_id=tid))
            rows.append(
                {
                    "kind": "kernel",
                    "name": "k",
                    "start_ns": 200 + tid,
                    "end_ns": 210 + tid,
                    "device": 0,
                    "stream": 7,
                    "correlation_id": tid,
                }
            )
    assert 39 > grouping.FEW_THREADS
    (r,) = ranges.range_summary(Trace.from_rows(rows))["ranges"]
    expected = _reference_summary(rows)["r"]
    assert (r["count"], r["gpu_ops"], r["gpu_op_ns"], r["projected_ns"], r["gpu_idle_ns"]) == (
        expected["count"],
        expected["gpu_ops"],
        expected["gpu_op_ns"],
        expected["projected_ns"],
        expected["gpu_idle_ns"],
    )


# --- device_communication: the unions' arithmetic against subtraction and a merge of every row -------------


def _reference_breakdown(starts, ends, is_collective, is_kernel):
    c = intervals.merge(starts[is_collective], ends[is_collective])
    k = intervals.merge(starts[is_kernel & ~is_collective], ends[is_kernel & ~is_collective])
    m = intervals.merge(starts[~is_kernel & ~is_collective], ends[~is_kernel & ~is_collective])
    kc = intervals.merge(np.concatenate([c[0], k[0]]), np.concatenate([c[1], k[1]]))
    exposed = int(np.sum(np.subtract(*intervals.subtract(*c, *k)[::-1])))
    memcpy_exposed = int(np.sum(np.subtract(*intervals.subtract(*m, *kc)[::-1])))
    everything = intervals.union_length(starts, ends)
    alone = (ends - starts) - intervals.overlap_with_union(starts, ends, *k)
    return exposed, memcpy_exposed, everything, alone


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.integers(0, 30), st.sampled_from(["coll", "kernel", "copy"])),
        min_size=1,
        max_size=25,
    ),
    st.booleans(),
)
def test_device_communication_matches_subtraction_and_merge(rows: list, backwards: bool) -> None:
    starts = np.array([s for s, _, _ in rows], np.int64)
    ends = starts + np.array([d for _, d, _ in rows], np.int64)
    if backwards:  # a row ending before it starts: the fallback path
        ends[0] = starts[0] - 5
    is_collective = np.array([k == "coll" for _, _, k in rows])
    is_kernel = np.array([k != "copy" for _, _, k in rows])
    types = np.where(is_collective, "all_reduce", "").astype(object)
    exposed, memcpy_exposed, everything, alone = _reference_breakdown(starts, ends, is_collective, is_kernel)
    out = device_communication(starts, ends, is_collective, is_kernel, types)
    assert out["exposed_ns"] == exposed
    assert out["breakdown"]["memcpy_exposed_ns"] == memcpy_exposed
    span = int(ends.max() - starts.min())
    assert out["breakdown"]["idle_ns"] == span - everything
    by_type = out["by_type"]
    if is_collective.any():
        assert by_type[0]["exposed_ns"] == int(alone[is_collective].sum())
    else:
        assert by_type == []


# --- memcpy's integer codes against the string classifications ------------------------------------------------


@pytest.mark.parametrize("categorical", [True, False])
def test_kind_codes_label_like_astype_string(categorical: bool) -> None:
    import pandas as pd

    column = pd.Series(
        ["HtoD", None, "DtoH", "HtoD", "unknown", None], dtype="category" if categorical else object
    )
    labels, codes = memcpy._kind_codes(column)
    expected = column.astype("string").fillna(memcpy.UNKNOWN).to_numpy(dtype=object)
    assert [labels[c] for c in codes] == expected.tolist()
    assert len(labels) == len(set(labels))


# --- memcpy's launch mode: the joins against a loop over the documented rules ---------------------------------


def _launch_mode_by_loop(copies: list[dict], calls: list[dict]) -> list[str]:
    """Per copy: the first call (copy APIs before other calls, then in time order) with its correlation id and
    its pid when both know one; a copy without a pid takes any call with its id; a copy whose pid no call with
    its id has takes a call without a pid. Unknown where none (docs/memcpy.md)."""
    ordered = sorted(calls, key=lambda c: (memcpy._api_class(c["name"]) == memcpy.UNKNOWN, c["start_ns"]))
    out = []
    for copy in copies:
        corr, pid = copy["correlation_id"], copy["pid"]
        same = [c for c in ordered if corr is not None and c["correlation_id"] == corr]
        if pid is None:
            found = same
        else:
            found = [c for c in same if c["pid"] == pid] or [c for c in same if c["pid"] is None]
        out.append(memcpy._api_class(found[0]["name"]) if found else memcpy.UNKNOWN)
    return out


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([None, 1, 2]), st.sampled_from([None, 1, 2, 3, 4])), min_size=1, max_size=8
    ),
    st.lists(
        st.tuples(
            st.sampled_from([None, 1, 2]),
            st.integers(1, 4),
            st.sampled_from(["cudaMemcpy", "cudaMemcpyAsync", "cudaGetDevice", "cudaGraphLaunch"]),
        ),
        max_size=10,
    ),
)
def test_launch_mode_matches_a_loop_over_the_rules(copy_keys: list, call_keys: list) -> None:
    from tracelens.trace import TraceMetadata

    copies = [
        {
            "kind": "memcpy",
            "name": "Memcpy HtoD",
            "start_ns": 1000 + 10 * i,
            "end_ns": 1005 + 10 * i,
            "device": 0,
            "stream": 1,
            "bytes": 10,
            "copy_kind": "HtoD",
            "correlation_id": corr,
            "pid": pid,
        }
        for i, (pid, corr) in enumerate(copy_keys)
    ]
    calls = [
        {
            "kind": "runtime",
            "name": name,
            "start_ns": 10 * i,
            "end_ns": 10 * i + 1,
            "pid": pid,
            "tid": 1,
            "correlation_id": corr,
        }
        for i, (pid, corr, name) in enumerate(call_keys)
    ]
    trace = Trace.from_rows(
        copies + calls, metadata=TraceMetadata(source_format="handmade", framework="pytorch")
    )
    from tracelens.analyses.columns import event_columns
    from tracelens.trace import MEMCPY

    frame = trace.frame(event_columns(trace).of_kind(MEMCPY), ["pid", "correlation_id", "start_ns"])
    assert frame["start_ns"].tolist() == [c["start_ns"] for c in copies]
    got = memcpy._launch_mode(trace, frame.reset_index(drop=True))
    assert got.tolist() == _launch_mode_by_loop(copies, calls)


def test_join_on_pid_falls_back_to_the_merge_for_negative_ids() -> None:
    import pandas as pd

    copies = pd.DataFrame(
        {"row": [0, 1, 2], "pid": [1, -3, 1], "correlation_id": [5, 6, np.iinfo(np.int64).min]}
    )
    calls = pd.DataFrame(
        {
            "pid": [1, -3, 1],
            "correlation_id": [5, 6, 5],
            "mode": np.array([1, 0, 2], np.int8),
            "has_pid": True,
        }
    )
    got = memcpy._join_on_pid(copies, calls).sort_values("row")
    assert got["row"].tolist() == [0, 1] and got["mode"].tolist() == [1, 0]
    packed = memcpy._join_on_pid(copies.iloc[[0, 2]], calls.iloc[[0, 2]])
    assert packed["row"].tolist() == [0] and packed["mode"].tolist() == [1]  # the first call of the pair


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 80), st.integers(-10, 40)), max_size=12),
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 20)), max_size=12),
)
def test_overlap_in_window_is_overlap_with_union(spans: list, union: list) -> None:
    # intervals (some ending before they start) against a merged union, sliced to their window or not
    starts = np.array([s for s, _ in spans], np.int64)
    ends = starts + np.array([d for _, d in spans], np.int64)
    us, ue = intervals.merge(
        np.array([s for s, _ in union], np.int64), np.array([s + d for s, d in union], np.int64)
    )
    expected = intervals.overlap_with_union(starts, ends, us, ue)
    assert np.array_equal(ranges._overlap_in_window(starts, ends, us, ue), expected)


@settings(max_examples=60, deadline=None)
@given(_range_traces(), st.lists(st.tuples(st.integers(0, 150), st.integers(1, 80)), max_size=4))
def test_range_summary_sums_range_instances(rows: list[dict], backwards: list[tuple[int, int]]) -> None:
    # The summary's sums per name against range_instances (the per-range measures through the per-range
    # binary-search path), with ranges given ending before they start among them (the trace clamps those).
    rows = rows + [_host("annotation", "alpha", s, s - d, 1) for s, d in backwards]
    trace = Trace.from_rows(rows)
    inst = ranges.range_instances(trace)
    summary = {r["name"]: r for r in ranges.range_summary(trace)["ranges"]}
    from tracelens.analyses.columns import event_columns

    names = event_columns(trace).names
    for code, group in inst.groupby("name"):
        r = summary[str(names[code])]
        assert r["count"] == len(group)
        assert r["cpu_ns"] == int((group["end"] - group["start"]).sum())
        assert r["gpu_ops"] == int(group["ops"].sum())
        assert r["gpu_op_ns"] == int(group["gpu_op_ns"].sum())
        assert r["projected_ns"] == int((group["proj_end"] - group["proj_start"]).sum())
        assert r["gpu_idle_ns"] == int(group["gpu_idle_ns"].sum())
        assert r["instances_with_gpu"] == int((group["ops"] > 0).sum())
