"""The compiled busy intervals of every GPU (analyses/busy_scan.py, ``_merge_search.busy_intervals``) against
``intervals.merge`` of each device's GPU ops (the numpy path of ``columns.device_busy``, written here from its
definition), on hypothesis-generated columns: no GPU op, one, several devices in any order, devices -1 (none), ops
touching, nested, ending before they start, starts out of order (the pass declines), more devices than it keeps;
and ``device_busy`` with the pass against without it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import busy_scan
from tracelens.analyses.columns import device_busy
from tracelens.trace import ALL_KINDS, GPU_ACTIVITY_KINDS, Trace

pytestmark = pytest.mark.skipif(
    busy_scan._compiled is None or not hasattr(busy_scan._compiled, "busy_intervals"),
    reason="the compiled pass is not built",
)

GPU_CODES = [ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS]


def reference(kind, device, start, end):
    gpu = np.flatnonzero(np.isin(kind, GPU_CODES) & (device >= 0))
    out = []
    for d in np.unique(device[gpu]):
        mine = gpu[device[gpu] == d]
        s, e = intervals.merge(start[mine], end[mine])
        out.append((int(d), s, e, int(start[mine].min()), int(end[mine].max())))
    return out


@st.composite
def columns(draw: st.DrawFn) -> tuple[Any, ...]:
    # a few rows, or past the pass's blocks of 4096 rows (drawn from a seed)
    n = draw(st.sampled_from([0, 1, 2, 7, 40, 9000]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = rng.integers(-1, len(ALL_KINDS), n).astype(np.int8)
    devices = draw(st.sampled_from([0, 2, 70]))
    device = rng.integers(-1, devices + 1, n).astype(draw(st.sampled_from([np.int8, np.int32])))
    start = rng.integers(0, 50 if n < 100 else 20_000, n).astype(np.int64)
    if draw(st.booleans()):
        start.sort()
    end = start + rng.integers(-3, 13, n)
    return kind, device, start, end


@settings(max_examples=300, deadline=None, database=None)
@given(columns())
def test_merged_busy_equals_the_merge_of_each_device(data: tuple[Any, ...]) -> None:
    kind, device, start, end = data
    got = busy_scan.merged_busy(kind, device, start, end)
    want = reference(kind, device, start, end)
    gpu = np.flatnonzero(np.isin(kind, GPU_CODES) & (device >= 0))
    in_order = all(bool((np.diff(start[gpu[device[gpu] == d]]) >= 0).all()) for d in np.unique(device[gpu]))
    if not in_order or len(want) > 64:
        assert got is None
        return
    assert got is not None and len(got) == len(want)
    for (d, s, e, lo, hi), (wd, ws, we, wlo, whi) in zip(got, want, strict=True):
        assert (d, lo, hi) == (wd, wlo, whi)
        assert s.dtype == ws.dtype == np.int64 and np.array_equal(s, ws) and np.array_equal(e, we)
        assert s.flags.writeable and e.flags.writeable


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["kernel", "memcpy", "memset", "runtime", "cpu_op"]))
        start = draw(st.integers(0, 60))
        rows.append(
            {
                "kind": kind,
                "name": "x",
                "start_ns": start,
                "end_ns": start + draw(st.integers(0, 9)),
                "device": draw(st.sampled_from([0, 1, 3, None]))
                if kind in ("kernel", "memcpy", "memset")
                else None,
                "pid": 1,
                "tid": None if kind in ("kernel", "memcpy", "memset") else 2,
            }
        )
    if draw(st.booleans()):
        rows.sort(key=lambda r: r["start_ns"])
    return rows or [{"kind": "runtime", "name": "x", "start_ns": 0, "end_ns": 1}]


@settings(max_examples=150, deadline=None, database=None)
@given(traces())
def test_device_busy_with_the_pass_equals_the_numpy_path(rows: list[dict[str, Any]]) -> None:
    got = device_busy(Trace.from_rows(rows))
    saved = busy_scan._compiled
    busy_scan._compiled = None  # type: ignore[assignment]
    try:
        want = device_busy(Trace.from_rows(rows))
    finally:
        busy_scan._compiled = saved
    assert list(got) == list(want)
    for d, busy in got.items():
        other = want[d]
        assert (busy.device, busy.first_start_ns, busy.last_end_ns) == (
            other.device,
            other.first_start_ns,
            other.last_end_ns,
        )
        assert type(busy.device) is type(other.device) and type(busy.first_start_ns) is type(
            other.first_start_ns
        )
        for a, b in ((busy.busy_starts, other.busy_starts), (busy.busy_ends, other.busy_ends)):
            assert a.dtype == b.dtype and np.array_equal(a, b)
