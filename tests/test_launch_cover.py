"""launch_cover's compiled walks (``_op_tree.covered_times``, ``time_span``) against their numpy references."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import launch_cover

needs_build = pytest.mark.skipif(
    launch_cover._compiled is None or not hasattr(launch_cover._compiled, "covered_times"),
    reason="the compiled op-tree pass is not built",
)


def _reference(first: np.ndarray, last: np.ndarray, us: np.ndarray, ue: np.ndarray, dtype: type) -> tuple:
    """The numpy path: covered_before of each time (an independent search) and the step-back running count."""
    cover_first = intervals.covered_before(first, us, ue)
    cover_last = intervals.covered_before(last, us, ue)
    steps = np.zeros(first.size, dtype)
    if first.size > 1:
        back = (first[1:] < first[:-1]) | (last[1:] < last[:-1])
        np.cumsum(back, dtype=dtype, out=steps[1:])
    return cover_first, cover_last, steps


def _union(spans: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.array([s for s, _ in spans], np.int64)
    ends = np.array([s + w for s, w in spans], np.int64)
    return intervals.merge(starts, ends) if starts.size else (starts, ends)


def _check(
    first: np.ndarray, last: np.ndarray, us: np.ndarray, ue: np.ndarray, dtype: type = np.int32
) -> None:
    got = launch_cover.covered_times(first, last, us, ue, np.dtype(dtype))
    assert got is not None
    want = _reference(first, last, us, ue, dtype)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        assert np.array_equal(g, w)
    # and the pair of the numpy path (the one ranges takes without the build)
    pair = launch_cover.covered_before_pair(first, last, us, ue) if first.size else (first, last)
    assert np.array_equal(got[0], pair[0]) and np.array_equal(got[1], pair[1])


@needs_build
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-50, 400), st.integers(0, 30)), max_size=30),
    st.lists(st.tuples(st.integers(-60, 450), st.integers(-5, 40)), max_size=60),
    st.sampled_from([np.int32, np.int64]),
)
def test_covered_times_is_covered_before(spans: list, launches: list, dtype: type) -> None:
    us, ue = _union(spans)
    first = np.array([f for f, _ in launches], np.int64)
    last = np.array([f + w for f, w in launches], np.int64)  # some end before they start (negative w)
    _check(first, last, us, ue, dtype)


@needs_build
def test_covered_times_edges() -> None:
    empty = np.zeros(0, np.int64)
    _check(empty, empty, np.array([0], np.int64), np.array([5], np.int64))  # no launch
    _check(np.array([3], np.int64), np.array([4], np.int64), empty, empty)  # no union: all 0
    _check(np.array([3], np.int64), np.array([9], np.int64), np.array([0], np.int64), np.array([5], np.int64))
    # ties: times equal to union starts and ends, touching intervals, launches in two ascending runs (threads)
    us, ue = np.array([0, 5, 10, 20], np.int64), np.array([5, 10, 15, 30], np.int64)
    first = np.array([0, 5, 5, 10, 15, 20, 30, 0, 5, 10, 15, 30, 31], np.int64)
    last = np.array([5, 10, 5, 15, 20, 30, 31, 10, 20, 10, 14, 30, 40], np.int64)
    _check(first, last, us, ue)
    _check(first[::-1].copy(), last[::-1].copy(), us, ue, np.int64)
    # a long union searched far each way (the doubling steps both up and down)
    us = np.arange(0, 20000, 10, dtype=np.int64)
    ue = us + 4
    t = np.r_[np.arange(-5, 20010, 7), np.arange(20010, -5, -13), [0, 19990, 5]].astype(np.int64)
    _check(t, t + 3, us, ue)


@needs_build
def test_covered_times_declines() -> None:
    one = np.array([1], np.int64)
    assert launch_cover.covered_times(one.astype(np.int32), one, one, one + 1, np.dtype(np.int32)) is None
    assert launch_cover.covered_times(one, one, one, one + 1, np.dtype(np.int8)) is None
    us = np.array([-(2**62), 1], np.int64)
    ue = np.array([0, 2**62 + 2], np.int64)  # each length fits, their total does not
    assert launch_cover.covered_times(one, one, us, ue, np.dtype(np.int32)) is None
    with mock.patch.object(launch_cover, "_compiled", None):
        assert launch_cover.covered_times(one, one, one, one + 1, np.dtype(np.int32)) is None


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(-(2**62), 2**62), max_size=20), st.lists(st.integers(-(2**62), 2**62), max_size=20)
)
def test_time_span(a: list, b: list) -> None:
    x, y = np.array(a, np.int64), np.array(b, np.int64)
    if not a or not b:
        if launch_cover._compiled is not None and hasattr(launch_cover._compiled, "time_span"):
            both = np.r_[x, y]
            want = (int(both.min()), int(both.max())) if both.size else (0, -1)
            assert launch_cover._compiled.time_span(x, y) == want
        return
    want = (min(int(x.min()), int(y.min())), max(int(x.max()), int(y.max())))
    assert launch_cover.time_span(x, y) == want
    with mock.patch.object(launch_cover, "_compiled", None):
        assert launch_cover.time_span(x, y) == want


RANGE_TRACES = [
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("name", RANGE_TRACES)
def test_ranges_with_and_without_the_walks(name: str) -> None:
    import tracelens
    from tests.conftest import fixture_path
    from tracelens.analyses import ranges

    got = ranges.range_summary(tracelens.load(fixture_path(name)))
    with mock.patch.object(launch_cover, "_compiled", None):
        want = ranges.range_summary(tracelens.load(fixture_path(name)))
    assert got == want


@pytest.mark.parametrize("name", RANGE_TRACES)
def test_launches_with_and_without_the_compiled_thread_codes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracelens
    from tests.conftest import fixture_path
    from tracelens.analyses import ranges

    trace = tracelens.load(fixture_path(name))
    got = ranges._Launches(trace, None)
    got_summary = ranges.range_summary(trace)
    monkeypatch.setattr(ranges, "row_thread_codes", lambda *args: None)
    want = ranges._Launches(trace, None)
    assert got.empty == want.empty
    if not got.empty:
        for field in ("threads", "key_end", "first", "last", "csum_ns", "csum_change"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    assert got_summary == ranges.range_summary(trace)
