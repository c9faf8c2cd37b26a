"""analyses/long_launches.py: the startup rule long_launch's rows read at the matched calls' event rows (the compiled
``_kernel_stats.long_matched`` pass, or numpy gathers) equal the reference through launch_pairs' lean launch columns
(the code it replaced), on hypothesis-generated traces (matched and unmatched ops, graph launches, two devices, calls
lasting exactly the threshold) and thresholds; and ``long_matched`` by the pass equals its numpy path and a
row-by-row reference (empty, one op, ties at the threshold, int32/int64 rows, unmatched rows 0 / -1 / out of range)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_startup_row_fast_paths import ref_long_launches, traces

from tracelens.analyses import long_launches as module
from tracelens.analyses.long_launches import long_launches, long_matched
from tracelens.analyses.startup import LONG_LAUNCH_NS
from tracelens.trace import Trace

US = 1_000
compiled = pytest.mark.skipif(
    module._compiled is None or not hasattr(module._compiled, "long_matched"),
    reason="the compiled pass is not built",
)


def reference_long_matched(
    matched: np.ndarray, rows: np.ndarray, start: np.ndarray, end: np.ndarray, min_ns: int
) -> np.ndarray:
    return np.array(
        [i for i in range(rows.size) if matched[i] and end[rows[i]] - start[rows[i]] >= min_ns], np.int64
    )


@settings(max_examples=150, deadline=None, database=None)
@given(traces(), st.sampled_from([0, 1, 1_200 * US, LONG_LAUNCH_NS, 3_000 * US]), st.booleans())
def test_long_launches_equal_the_reference(rows: list[dict], min_ns: int, hide_pass: bool) -> None:
    trace = Trace.from_rows(rows)
    saved = module._compiled
    if hide_pass:
        module._compiled = None  # type: ignore[assignment]
    try:
        got = long_launches(trace, min_ns)
    finally:
        module._compiled = saved
    want = ref_long_launches(Trace.from_rows(rows), min_ns)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


@st.composite
def ops(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    size = draw(st.integers(1, 30))
    n = draw(st.integers(0, 40))
    start = np.array(draw(st.lists(st.integers(0, 50), min_size=size, max_size=size)), np.int64)
    end = start + np.array(draw(st.lists(st.integers(-3, 12), min_size=size, max_size=size)), np.int64)
    matched = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    rows = np.array(draw(st.lists(st.integers(0, size - 1), min_size=n, max_size=n)), np.int64)
    # an unmatched op's row is 0, -1 or anything: never read
    rows[~matched] = draw(st.sampled_from([0, -1, size + 5]))
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    return matched, rows.astype(dtype), start, end, draw(st.sampled_from([-1, 0, 3, 5, 12]))


@compiled
@settings(max_examples=300, deadline=None, database=None)
@given(ops())
def test_long_matched_pass_equals_numpy_and_the_reference(case) -> None:
    matched, rows, start, end, min_ns = case
    got = long_matched(matched, rows, start, end, min_ns)
    want = reference_long_matched(matched, rows, start, end, min_ns)
    assert got.dtype == np.int64 and np.array_equal(got, want)
    if (rows[~matched] >= 0).all() and (rows[~matched] < start.size).all():  # numpy reads every op's row
        saved = module._compiled
        module._compiled = None  # type: ignore[assignment]
        try:
            assert np.array_equal(long_matched(matched, rows, start, end, min_ns), want)
        finally:
            module._compiled = saved


@compiled
def test_long_matched_edges() -> None:
    empty = np.zeros(0, np.int32)
    assert long_matched(np.zeros(0, bool), empty, np.zeros(3, np.int64), np.ones(3, np.int64), 1).size == 0
    one = long_matched(
        np.ones(1, bool), np.zeros(1, np.int32), np.array([5], np.int64), np.array([9], np.int64), 4
    )
    assert one.tolist() == [0]  # a tie at the threshold counts
    with pytest.raises(IndexError):  # a matched op's row outside the table
        module._compiled.long_matched(
            np.array([7], np.int32), np.ones(1, bool), np.zeros(3, np.int64), np.zeros(3, np.int64), 0,
            np.empty(1, np.int64),
        )  # fmt: skip
