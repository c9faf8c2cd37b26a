"""The compiled pass of analyses/first_scan.py (``_merge_search.long_group_firsts``: the long first rows of groups,
for the first_call and first_api rules of analyses/startup.py) against a row-by-row reference written from its
definition, and ``one_time_work`` with the pass against ``one_time_work`` without it (the numpy path), on
hypothesis-generated columns and traces: empty tables, one row, ties of start, starts out of order, rows without a
name or a thread, thread ids past 2^32, negative durations, pids that share their low 32 bits."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import first_scan, startup, startup_first
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY
from tracelens.trace import ALL_KINDS, ANNOTATION, CPU_OP, DRIVER, RUNTIME, Trace

pytestmark = pytest.mark.skipif(
    first_scan._compiled is None or not hasattr(first_scan._compiled, "long_group_firsts"),
    reason="the compiled pass is not built",
)

CATEGORIES = len(HOST_CATEGORY_PRIORITY)


def reference(cols, category, allowed, by_thread, min_first, rows):
    """Row by row, from the definition: (long first rows or None, least duration of the rows looked at)."""
    table = allowed.reshape(len(ALL_KINDS) + 1, CATEGORIES + 1)
    seen: set = set()
    firsts, least, last_start = [], 2**63 - 1, None
    for i in range(cols.kind.size) if rows is None else rows.tolist():
        k, c = int(cols.kind[i]), int(category[i])
        if not table[k if k >= 0 else len(ALL_KINDS), c + 1]:
            continue
        name, tid, pid = int(cols.name[i]), int(cols.tid[i]), int(cols.pid[i])
        start, duration = int(cols.start[i]), int(cols.end[i]) - int(cols.start[i])
        # the rows looked at (candidates or not): in start order, thread ids below 2^32 by thread
        if (last_start is not None and start < last_start) or (by_thread and tid >= 2**32):
            return None
        last_start = start
        least = min(least, duration)
        if name < 0 or tid < 0:
            continue
        # thread_key's bits: pid's low 32 above tid's low 32
        outer = ((pid & 0xFFFFFFFF) << 32 | (tid & 0xFFFFFFFF)) if by_thread else pid
        if (outer, name) in seen:
            continue
        seen.add((outer, name))
        if duration >= min_first:
            firsts.append(i)
    return firsts, least


@st.composite
def columns(draw: st.DrawFn):
    n = draw(st.integers(0, 60))
    ints = lambda lo, hi: st.lists(st.integers(lo, hi), min_size=n, max_size=n)  # noqa: E731
    kind = np.array(draw(ints(-1, len(ALL_KINDS) - 1)), np.int8)
    category = np.array(draw(ints(-1, CATEGORIES - 1)), np.int8)
    name = np.array(draw(ints(-1, 4)), draw(st.sampled_from([np.int32, np.int64])))
    pid_pool = draw(st.sampled_from([[1], [1, 2], [3, 3 + 2**32]]))  # the last two: one low 32 bits
    pid = np.array(draw(st.lists(st.sampled_from(pid_pool), min_size=n, max_size=n)), np.int64)
    tid_pool = draw(st.sampled_from([[7], [7, 8, -1], [7, 7 + 2**32]]))
    tid = np.array(draw(st.lists(st.sampled_from(tid_pool), min_size=n, max_size=n)), np.int64)
    start = np.array(draw(ints(0, 30)), np.int64)
    if draw(st.booleans()):
        start.sort()  # ties of start kept
    end = start + np.array(draw(ints(-2, 12)), np.int64)
    cols = SimpleNamespace(
        kind=kind,
        name=name,
        pid=pid.astype(np.int32) if draw(st.booleans()) and pid.max(initial=0) < 2**31 else pid,
        tid=tid,
        start=start,
        end=end,
    )
    rows = None
    if draw(st.booleans()):
        rows = np.flatnonzero(np.array(draw(ints(0, 1)), bool)).astype(
            draw(st.sampled_from([np.int32, np.int64]))
        )
    allowed = np.array(
        draw(
            st.lists(
                st.integers(0, 1),
                min_size=(len(ALL_KINDS) + 1) * (CATEGORIES + 1),
                max_size=(len(ALL_KINDS) + 1) * (CATEGORIES + 1),
            )
        ),
        np.uint8,
    )
    return cols, category, allowed, rows


@settings(max_examples=400, deadline=None, database=None)
@given(columns(), st.booleans(), st.sampled_from([0, 5, 10, 100]))
def test_long_group_firsts_equal_the_reference(data, by_thread: bool, min_first: int) -> None:
    cols, category, allowed, rows = data
    got = first_scan.long_group_firsts(cols, category, allowed, by_thread, min_first, rows)  # type: ignore[arg-type]
    want = reference(cols, category, allowed, by_thread, min_first, rows)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got[0].dtype == np.int64
    assert got[0].tolist() == want[0]
    assert got[1] == want[1]


def test_allowed_table_sets_the_kinds_at_their_categories() -> None:
    table = first_scan.allowed_table((CPU_OP, ANNOTATION), {ANNOTATION: (2,)})
    table = table.reshape(len(ALL_KINDS) + 1, CATEGORIES + 1)
    assert table[ALL_KINDS.index(CPU_OP)].all()
    assert table[ALL_KINDS.index(ANNOTATION)].tolist() == [0, 0, 0, 1] + [0] * (CATEGORIES - 3)
    assert int(table.sum()) == CATEGORIES + 2


def test_a_row_outside_the_tables_is_refused() -> None:
    cols = SimpleNamespace(
        kind=np.array([len(ALL_KINDS)], np.int8),
        name=np.zeros(1, np.int32),
        pid=np.ones(1, np.int64),
        tid=np.ones(1, np.int64),
        start=np.zeros(1, np.int64),
        end=np.ones(1, np.int64),
    )
    allowed = np.ones((len(ALL_KINDS) + 1) * (CATEGORIES + 1), np.uint8)
    with pytest.raises(IndexError):
        first_scan.long_group_firsts(cols, np.zeros(1, np.int8), allowed, True, 0)  # type: ignore[arg-type]
    with pytest.raises(IndexError):
        first_scan.long_group_firsts(
            cols,  # type: ignore[arg-type]
            np.zeros(1, np.int8),
            allowed,
            True,
            0,
            np.array([1], np.int64),
        )


US = 1_000


@st.composite
def traces(draw: st.DrawFn) -> list[dict]:
    """Host rows with repeated names (first calls long or not), API calls, input ranges and a few kernels."""
    rows: list[dict] = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["runtime", "driver", "cpu_op", "annotation", "kernel"]))
        start = draw(st.integers(0, 20_000)) * US
        duration = draw(st.sampled_from([1, 150, 1_200, 12_000])) * US
        row = {"kind": kind, "start_ns": start, "end_ns": start + duration, "pid": draw(st.integers(1, 2))}
        if kind == "kernel":
            row.update({"name": "k0", "device": 0, "stream": 7})
        else:
            pool = {
                "runtime": ["cudaLaunchKernel", "cudaMalloc", "cudaStreamSynchronize", "cudaEventRecord"],
                "driver": ["cuLaunchKernel", "cuMemAlloc_v2"],
                "cpu_op": [
                    "aten::mm",
                    "aten::add",
                    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                ],
                "annotation": ["forward", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"],
            }[kind]
            row["name"] = draw(st.sampled_from(pool)) if draw(st.integers(0, 9)) else None
            row["tid"] = draw(st.sampled_from([7, 8, None]))
        rows.append(row)
    for name, kind in draw(
        st.lists(
            st.tuples(st.sampled_from(["aten::mm", "cudaMalloc"]), st.sampled_from(["runtime", "cpu_op"]))
        )
    ):
        first, t = draw(st.sampled_from([5, 200, 2_000, 20_000])) * US, draw(st.integers(0, 1_000)) * US
        for i in range(draw(st.integers(1, 5))):
            d = first if i == 0 else draw(st.sampled_from([2, 10, 30])) * US
            rows.append({"kind": kind, "name": name, "start_ns": t, "end_ns": t + d, "pid": 1, "tid": 7})
            t += d + draw(st.integers(1, 3_000)) * US
    if draw(st.booleans()):
        rows.sort(key=lambda r: r["start_ns"])
    return rows


def _fields(work: startup.OneTime) -> list:
    return [
        work.rows.tolist(),
        work.reasons.tolist(),
        work.first_call_rows.tolist(),
        work.first_call_medians.tolist(),
        work.first_api_rows.tolist(),
        work.first_api_excess.tolist(),
        work.first_api_medians.tolist(),
        work.first_call_rows.dtype,
        work.first_api_rows.dtype,
        work.first_api_excess.dtype,
        work.first_api_medians.dtype,
    ]


@settings(max_examples=150, deadline=None, database=None)
@given(traces())
def test_one_time_work_with_the_pass_equals_the_numpy_path(rows: list[dict]) -> None:
    # the two rules by this module's pass (startup_first's walk of both at once off: test_first_rule_scans)
    walk, saved = startup_first._compiled, first_scan._compiled
    startup_first._compiled = None  # type: ignore[assignment]
    try:
        got = _fields(startup.one_time_work(Trace.from_rows(rows)))
        first_scan._compiled = None  # type: ignore[assignment]
        want = _fields(startup.one_time_work(Trace.from_rows(rows)))
    finally:
        startup_first._compiled, first_scan._compiled = walk, saved
    assert got == want


def test_the_first_rules_candidates() -> None:
    # first_call: every op, input-wait ranges only; first_api: runtime and driver calls but blocking syncs
    call = startup._FIRST_CALL_TABLE.reshape(len(ALL_KINDS) + 1, CATEGORIES + 1)
    api = startup._FIRST_API_TABLE.reshape(len(ALL_KINDS) + 1, CATEGORIES + 1)
    sync, input_ = HOST_CATEGORY_PRIORITY.index("sync") + 1, HOST_CATEGORY_PRIORITY.index("input") + 1
    assert call[ALL_KINDS.index(CPU_OP)].all()
    assert np.flatnonzero(call[ALL_KINDS.index(ANNOTATION)]).tolist() == [input_]
    assert int(call.sum()) == CATEGORIES + 2
    for kind in (RUNTIME, DRIVER):
        assert np.flatnonzero(api[ALL_KINDS.index(kind)] == 0).tolist() == [sync]
    assert int(api.sum()) == 2 * CATEGORIES
