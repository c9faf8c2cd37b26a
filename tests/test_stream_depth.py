"""analyses/stream_depth.merged_stream_depth (the compiled merge walk of each stream's launch ends and GPU ends) equals
launch._depth_by_sorted_keys (the packed keys' sort) on ops whose streams are each in order, interleaved or not (ties
of launch ends, of GPU ends, of a GPU end with a launch end, zero-length ops, one op, negative times), declines ops out
of order on a stream; and launch.queue_depth with the pass equals it without and the argsort reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_launch_fast_paths import reference_queue_depth

from tracelens.analyses import launch, stream_depth
from tracelens.analyses.stream_depth import merged_stream_depth, stream_of
from tracelens.analyses.table import Table

pytestmark = pytest.mark.skipif(
    stream_depth._compiled is None or not hasattr(stream_depth._compiled, "stream_depth"),
    reason="the compiled pass is not built",
)


@st.composite
def ordered_ops(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Ops of 1-4 streams, each stream's launch ends and GPU ends ascending in op order, the streams interleaved."""
    streams = draw(st.integers(1, 4))
    size = draw(st.integers(streams, 40))
    codes = np.array(list(range(streams)) + draw(st.lists(st.integers(0, streams - 1), min_size=size - streams,
                                                          max_size=size - streams)), np.intp)  # fmt: skip
    if draw(st.booleans()):
        codes = np.sort(codes)
    rnd = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rnd.shuffle(codes)
    launch_end = np.zeros(size, np.int64)
    gpu_end = np.zeros(size, np.int64)
    base = draw(st.sampled_from([0, -50, 10**12]))
    for s in range(streams):
        at = np.flatnonzero(codes == s)
        launch_end[at] = base + np.sort(rnd.integers(0, 20, at.size))
        lasting = rnd.integers(0, 3, at.size) * rnd.integers(0, 10, at.size)
        gpu_end[at] = np.maximum.accumulate(
            launch_end[at] + lasting
        )  # ascending, never before its launch end
    return codes.astype(draw(st.sampled_from([np.intp, np.int32]))), launch_end, gpu_end, streams


def _sorted_keys(codes, launch_end, gpu_end, streams):
    lo = int(launch_end.min())
    width = int(gpu_end.max()) - lo + 1
    maxima, first, last = launch._depth_by_sorted_keys(codes, launch_end - lo, gpu_end - lo, streams, width)
    return maxima, first + lo, last + lo


@settings(max_examples=300, deadline=None, database=None)
@given(ordered_ops())
def test_merge_walk_equals_the_sorted_keys(case) -> None:
    codes, launch_end, gpu_end, streams = case
    got = merged_stream_depth(codes, launch_end, gpu_end, streams)
    assert got is not None
    want = _sorted_keys(codes.astype(np.intp), launch_end, gpu_end, streams)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == np.int64 and a.tolist() == b.tolist()


@settings(max_examples=150, deadline=None, database=None)
@given(ordered_ops(), st.data())
def test_ops_out_of_order_on_a_stream_are_declined(case, data) -> None:
    codes, launch_end, gpu_end, streams = case
    on = np.flatnonzero(codes == codes[0])
    k = data.draw(st.integers(0, max(on.size - 2, 0)))
    which = data.draw(st.sampled_from(["launch", "gpu"]))
    times = (launch_end if which == "launch" else gpu_end).copy()
    if on.size < 2 or times[on[k]] == times[on[k + 1]]:
        return
    times[[on[k], on[k + 1]]] = times[[on[k + 1], on[k]]]  # one descent on the stream
    if which == "launch":
        assert merged_stream_depth(codes, times, gpu_end, streams) is None
    else:
        assert merged_stream_depth(codes, launch_end, times, streams) is None


def test_edges() -> None:
    one = np.zeros(1, np.intp)
    got = merged_stream_depth(one, np.array([2]), np.array([5]), 1)
    assert got is not None and [a.tolist() for a in got] == [[1], [2], [5]]
    # an end and a launch at one instant: the end first (depth 1, not 2)
    got = merged_stream_depth(np.zeros(2, np.intp), np.array([0, 5]), np.array([5, 9]), 1)
    assert got is not None and got[0].tolist() == [1]
    assert merged_stream_depth(np.zeros(0, np.intp), np.zeros(0, np.int64), np.zeros(0, np.int64), 0) is None
    with pytest.raises(ValueError):
        merged_stream_depth(
            np.array([0, 3]), np.array([0, 1]), np.array([1, 2]), 2
        )  # a code past the streams
    assert stream_of((1 << 32) | 0xFFFFFFFF) == -1 and stream_of(7) == 7


@settings(max_examples=200, deadline=None, database=None)
@given(ordered_ops(), st.lists(st.booleans(), min_size=40, max_size=40), st.integers(0, 2))
def test_queue_depth_with_the_pass_equals_without_and_the_reference(case, matched, devices) -> None:
    codes, launch_end, gpu_end, _ = case
    code = codes.astype(np.int64)
    pairs = Table(
        {
            "device": (code % (devices + 1)).astype(np.int8),
            "stream": (code // (devices + 1) - 1).astype(np.int32),  # -1: a stream id read as signed
            "launch_end": launch_end,
            "end": gpu_end,
            "matched": np.array(matched[: code.size], bool),
        }
    )
    want = reference_queue_depth(pairs)
    assert launch.queue_depth(pairs) == want
    saved = stream_depth._compiled
    stream_depth._compiled = None  # type: ignore[assignment]
    try:
        assert launch.queue_depth(pairs) == want
    finally:
        stream_depth._compiled = saved
