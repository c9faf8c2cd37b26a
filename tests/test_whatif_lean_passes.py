"""The what-if section's leaner passes give exactly what the code they replace gave (speed lives in benchmarks/).

- graph.point_rows found once by the section and handed to the build vs the build finding them itself;
- remedies.Context._step_reading: the first and last worked step by masked min/max, the markers cleared by index,
  vs the copy of every worked point's step (the earlier code, kept here as the reference), markers-only steps,
  no steps and one step included;
- remedies.Context.has_input_waits: False only where input_overlap is 0 at every point;
- critical._path_facts: the collective-name test at the path's unlaunched GPU points only vs at every path point,
  and each point's time since its setter computed in place;
- engine.running_at(out=): the same indices written into the array given, compiled and numpy paths.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES, fixture_path
from tracelens.analyses.columns import event_columns
from tracelens.analyses.names import code_mask, is_collective_kernel
from tracelens.replay import critical, engine
from tracelens.replay import wake_edges as W
from tracelens.replay.graph import GPU_END, GPU_START, HOST_END, HOST_START, point_rows
from tracelens.replay.remedies import Context
from tracelens.trace import ALL_KINDS, KERNEL

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/pytorch_pageable-copies_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


def _graph_arrays(ctx: Context) -> dict[str, np.ndarray]:
    g = ctx.graph
    return {name: value for name, value in vars(g).items() if isinstance(value, np.ndarray)}


@pytest.mark.parametrize("name", TRACES)
def test_graph_from_rows_found_once_equals_the_build_alone(name: str) -> None:
    trace = tracelens.load(FIXTURES / name)
    alone, given = Context(trace), Context(trace, point_rows(trace))
    a, b = _graph_arrays(alone), _graph_arrays(given)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype, key
        assert np.array_equal(a[key], b[key]), key
    assert alone.graph.typical == given.graph.typical


def _step_reading_reference(ctx: Context) -> tuple | None:
    """The earlier reading: every worked point's step copied, then its min and max."""
    g = ctx.graph
    is_marker = np.zeros(g.size, bool)
    is_marker[g.call_start[g.call_is_marker]] = True
    is_marker[g.call_end[g.call_is_marker]] = True
    worked = (ctx.step_of >= 0) & ~is_marker
    if not worked.any():
        return None
    stepped = ctx.step_of[worked]
    first, last = int(stepped.min()), int(stepped.max())
    last_points = np.flatnonzero(ctx.step_of == last)
    if last > first:
        return first, last, np.flatnonzero(ctx.step_of == first), last_points, -1, 0
    host_first = np.flatnonzero(ctx.is_host & (ctx.step_of == first))
    if host_first.size == 0:
        return first, last, last_points, last_points, -1, 0
    markers = g.call_start[g.call_is_marker]
    markers = markers[ctx.step_of[markers] == first]
    p = markers[np.argmin(g.time[markers])] if markers.size else host_first[np.argmin(g.time[host_first])]
    lead = g.time[p] - int(ctx.windows.start[first])
    return first, last, last_points, last_points, int(p), int(lead)


def _same_reading(found: tuple | None, expected: tuple | None) -> None:
    assert (found is None) == (expected is None)
    if found is None or expected is None:
        return
    assert len(found) == len(expected)
    for x, y in zip(found, expected, strict=True):
        if isinstance(y, np.ndarray):
            assert np.array_equal(x, y)
        else:
            assert x == y


@pytest.mark.parametrize("name", TRACES)
def test_step_reading_equals_the_copied_steps(name: str) -> None:
    ctx = Context(tracelens.load(FIXTURES / name))
    _same_reading(ctx._step_reading, _step_reading_reference(ctx))


@pytest.mark.parametrize(
    "case", ["no steps", "one step", "first step markers only", "last step markers only"]
)
def test_step_reading_edge_cases_equal_the_copied_steps(case: str) -> None:
    """Steps rewritten over a real graph: none, one, and a first or last step holding its markers only."""
    ctx = Context(tracelens.load(FIXTURES / "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz"))
    g = ctx.graph
    step_of = ctx.step_of.copy()
    markers = np.concatenate([g.call_start[g.call_is_marker], g.call_end[g.call_is_marker]])
    assert markers.size >= 2 and step_of.max() >= 2
    if case == "no steps":
        step_of[:] = -1
    elif case == "one step":
        step_of[step_of >= 0] = 0
    elif case == "first step markers only":
        step_of[step_of == 0] = 1
        step_of[markers[0]] = 0
    else:
        top = int(step_of.max())
        step_of[step_of == top] = top - 1
        step_of[markers[-1]] = top
    ctx.__dict__["step_of"] = step_of  # the cached property, replaced
    expected = _step_reading_reference(ctx)
    _same_reading(ctx._step_reading, expected)


@pytest.mark.parametrize("name", TRACES)
def test_no_input_waits_means_no_input_overlap(name: str) -> None:
    ctx = Context(tracelens.load(FIXTURES / name))
    if not ctx.has_input_waits:
        assert not ctx.input_overlap.any()
    if "slow-input" in name:  # a trace with input waits: the full overlap is read
        assert ctx.has_input_waits and ctx.input_overlap.any()


def _path_facts_reference(graph, t, trace, path, setter):  # type: ignore[no-untyped-def]
    """The earlier categories: the collective-name test at every path point."""
    cols = event_columns(trace)
    kind = graph.kind[path]
    rows = graph.row[path]
    is_kernel = cols.kind[rows] == ALL_KINDS.index(KERNEL)
    collective = code_mask(cols.name[rows], cols.names, is_collective_kernel)
    waited = np.zeros(graph.size, bool)
    waited[graph.call_end[graph.call_waited]] = True
    category = np.full(path.size, 0, np.int64)
    category[(kind == HOST_END) & waited[path]] = 1
    gpu = (kind == GPU_START) | (kind == GPU_END)
    launched = (kind == GPU_START) & (setter >= 0) & (graph.kind[np.maximum(setter, 0)] == HOST_START)
    category[gpu & ~launched] = 2
    category[gpu & ~launched & ~is_kernel] = 3
    category[gpu & ~launched & collective] = 4
    seg = np.where(setter >= 0, t[path] - t[np.maximum(setter, 0)], 0)
    return category, seg


@pytest.mark.parametrize("name", TRACES)
def test_path_categories_equal_every_point_tested(name: str) -> None:
    trace = tracelens.load(FIXTURES / name)
    ctx = Context(trace)
    t = ctx.base.times
    path, setter = critical.path_points(ctx.graph, t)
    category, seg = critical.path_categories(ctx.graph, t, trace, path, setter)
    expected_category, expected_seg = _path_facts_reference(ctx.graph, t, trace, path, setter)
    assert np.array_equal(category, expected_category)
    assert np.array_equal(seg, expected_seg) and seg.dtype == expected_seg.dtype


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("size", [0, 1, 7, 200])
def test_running_at_into_an_array_equals_the_new_array(
    compiled: bool, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:
        monkeypatch.setattr(engine, "_replay_solve", None)
    rng = np.random.default_rng(size)
    starts = np.sort(rng.integers(0, 1000, 6)).astype(np.int64)
    ends = starts + rng.integers(0, 300, 6)
    t = np.sort(rng.integers(-50, 1400, size)).astype(np.int64)
    expected = engine.running_at(starts, ends, t)
    out = np.full(size + 3, -7, np.int64)
    written = engine.running_at(starts, ends, t, out=out[1 : size + 1])
    assert np.array_equal(written, expected)
    assert np.array_equal(out[1 : size + 1], expected)
    assert (out[0] == -7) and (out[size + 1 :] == -7).all()  # nothing written outside it


@pytest.mark.parametrize(
    "tids",
    [
        [1102, 1262, -1, -247463936],  # a Kineto trace's tids, held as int64
        [2**31 - 1, -(2**31), 0],  # the int32 limits
        [2**31, 5, -(2**31) - 1],  # beyond them: left as they are
        [7],
    ],
)
def test_thread_keys_of_narrowed_ids_equal_the_wide_keys(tids: list) -> None:
    from types import SimpleNamespace

    from tracelens.analyses.columns import thread_key
    from tracelens.replay.host_calls import _thread_keys_at

    tid = np.array(tids * 3, np.int64)
    for pid in (np.full(tid.size, 1102, np.int32), np.arange(tid.size, dtype=np.int64) - 4):
        cols = SimpleNamespace(pid=pid, tid=tid)
        rows = np.arange(tid.size)[::-1].copy()
        expected = thread_key(pid[rows].astype(np.int64), tid[rows])
        found = _thread_keys_at(cols, rows)  # type: ignore[arg-type]
        assert found.dtype == np.int64 and np.array_equal(found, expected)


@pytest.mark.parametrize("room", [1, 2, 1 << 16])
@pytest.mark.parametrize("name", TRACES)
def test_critical_walk_with_little_room_equals_the_numpy_path(
    name: str, room: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled walk's room for stretches: too little (the walk asked again with room for every point), or
    enough; either way the numpy path's points and setters."""
    if engine.native_solver() is None:
        pytest.skip("compiled solver not built")
    monkeypatch.setattr(critical, "WALK_ROOM", room)
    monkeypatch.setattr(critical, "WALK_ROOM_SHARE", 1 << 40)
    walks = []
    native_walk = engine.native_solver().critical_walk  # type: ignore[attr-defined]

    def counted(*args: object) -> int:
        walks.append(native_walk(*args))
        return walks[-1]

    monkeypatch.setattr(engine.native_solver(), "critical_walk", counted)
    ctx = Context(tracelens.load(FIXTURES / name))
    t = ctx.base.times
    path, setter = critical.path_points(ctx.graph, t)
    ref_path, ref_setter = critical.path_points_by_numpy(ctx.graph, t)
    np.testing.assert_array_equal(path, ref_path)
    np.testing.assert_array_equal(setter, ref_setter)
    if room == 1 and path.size > 1 and (np.diff(path) != 1).any():  # more than one stretch: asked again
        assert walks[0] == -1 and walks[-1] > 1


@pytest.mark.parametrize("name", TRACES)
def test_kernel_names_by_event_codes_equal_the_names_read_again(name: str) -> None:
    """occupancy_model.kernel_model tests the kernels' names by the event columns' codes: each kernel row's name
    there is the one its own read of the trace's name column gives (the earlier way), so the same rules hold."""
    from tracelens.analyses.columns import dictionary_codes
    from tracelens.replay.occupancy_model import KernelOccupancy

    trace = tracelens.load(FIXTURES / name)
    rows = KernelOccupancy(trace).rows
    codes, values = dictionary_codes(trace.take("name", rows))
    expected = [None if c < 0 else str(values[c]) for c in codes.tolist()]
    cols = event_columns(trace)
    found = [None if c < 0 else str(cols.names[c]) for c in cols.name[rows].tolist()]
    assert found == expected
    if "resnet18" in name:
        assert rows.size  # a trace with kernels: the names compared


@pytest.mark.parametrize("name", TRACES)
def test_blocking_calls_before_each_caller_equal_the_running_count(name: str) -> None:
    """host_launch_overhead's blocking calls before each launching call, by a search among the blocking calls vs
    the running count over every call (the earlier way); the remedy's graph then equals one built so."""
    from tracelens.replay import remedies

    ctx = Context(tracelens.load(FIXTURES / name))
    g = ctx.graph
    callers = np.unique(g.op_launch_call[g.op_launch_call >= 0])
    expected = (np.cumsum(g.call_waits) - g.call_waits)[callers]
    found = np.searchsorted(np.flatnonzero(g.call_waits), callers, side="left")
    assert np.array_equal(found, expected) and found.dtype == expected.dtype
    changed, _ = remedies.host_launch_overhead(ctx)
    if changed is not None:
        assert changed.lag.dtype == g.lag.dtype


# wake_edges.wake_edges as it was before the previous ends were read at the long gaps only (the reference)
def _wake_edges_reference(
    cols: Any,
    cs: np.ndarray,
    ce: np.ndarray,
    call_thread: np.ndarray,
    thread_keys: np.ndarray,
    first_call: np.ndarray,
    host_lag: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """wake_edges.wake_edges as it was: previous ends and gaps of every call."""
    empty = np.zeros(0, np.int64)
    n = cs.size
    if n == 0 or thread_keys.size < 2:
        return empty, empty, empty
    prev_end = np.full(n, W.NONE, np.int64)
    prev_end[1:] = ce[:-1]
    prev_end[first_call] = W.NONE
    gap = cs - prev_end
    middle = np.flatnonzero(~first_call & (gap >= W.IDLE_GAP_NS))
    covered = np.zeros(middle.size, np.int64)
    if middle.size:
        is_own = cols.of_kind(W.CPU_OP, W.PYTHON)
        is_own &= cols.tid >= 0
        keys = thread_keys[call_thread[middle]]
        waiting = np.unique(keys)
        if waiting.size <= W.WAKE_THREAD_LOOP:
            # a few threads with idle gaps: each one's own rows are in time order already, so their union needs
            # no sort (the join of every thread's rows below sorts them all); each thread's rows found by a
            # comparison per column (no key per row)
            halves = W._thread_key_halves(cols)
            for key in waiting:  # a loop over threads
                own = W._of_thread_key(halves, is_own, int(key))
                at = keys == key
                covered[at] = W._covered_by_rows(cols, own, prev_end[middle[at]], cs[middle[at]])
        else:
            own = np.flatnonzero(is_own)
            own_keys = W.thread_key(cols.pid[own], cols.tid[own])
            lo, hi, os_, oe = W.thread_time_positions(
                [(keys, [prev_end[middle], cs[middle]]), (own_keys, [cols.start[own], cols.end[own]])]
            )
            us, ue = W.intervals.merge(os_, oe)
            covered = W.intervals.overlap_with_union(lo, hi, us, ue)
        idle = covered < W.IDLE_COVERED * gap[middle]
        middle, covered = middle[idle], covered[idle]
    heads = np.flatnonzero(first_call)
    candidates = np.concatenate([middle, heads])
    covered = np.concatenate([covered, np.zeros(heads.size, np.int64)])
    # the latest host point (call start or end) before each candidate's start, over all threads; of points at
    # one time, the last of [every start..., every end...] (the order of a stable sort of those times)
    latest, index = W._latest_point_before(cs, ce, heads, cs[candidates])
    owner = np.where(index >= n, index - n, np.maximum(index, 0))
    ok = (index >= 0) & (latest > prev_end[candidates]) & (call_thread[owner] != call_thread[candidates])
    candidates, covered, latest, owner, index = (
        candidates[ok],
        covered[ok],
        latest[ok],
        owner[ok],
        index[ok],
    )
    middle_ok = ~first_call[candidates]
    host_lag[2 * candidates[middle_ok]] = covered[middle_ok]
    return (
        (2 * owner + (index >= n)).astype(np.int64),
        (2 * candidates).astype(np.int64),
        (cs[candidates] - latest).astype(np.int64),
    )


@pytest.mark.parametrize("loop", [True, False])
@pytest.mark.parametrize(
    "name",
    TRACES + ["gpu/transformer_bf16_cuda.pt.trace.json.gz", "gpu/pytorch_healthy_cuda.pt.trace.json.gz"],
)
def test_wake_edges_equal_every_previous_end_read(
    name: str, loop: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wake edges and the host lags they set, from previous ends read at the long gaps only vs every call's
    (both ways of finding the covered time: a loop over threads and the join)."""
    path = fixture_path(name)
    if not loop:
        monkeypatch.setattr(W, "WAKE_THREAD_LOOP", -1)
    trace = tracelens.load(path)
    g = Context(trace).graph
    cols = event_columns(trace)
    assert_wake_edges_match_reference(cols, g)


def assert_wake_edges_match_reference(cols: Any, g: Any) -> None:
    """The graph's wake edges and the host lags they set (a marker per call: which ones the edges set) equal the
    reference's, on the graph's own calls and threads."""
    n = g.call_row.size
    cs, ce = g.time[g.call_start], g.time[g.call_end]
    first_call = np.ones(n, bool)
    first_call[1:] = g.call_thread[1:] != g.call_thread[:-1]
    lag_a = np.zeros(2 * n, np.int64)
    lag_a[0::2] = np.arange(n)  # a marker per call: which ones the edges set
    lag_b = lag_a.copy()
    found = W.wake_edges(cols, cs, ce, g.call_thread, g.thread_keys, first_call, lag_a)
    expected = _wake_edges_reference(cols, cs, ce, g.call_thread, g.thread_keys, first_call, lag_b)
    for x, y in zip(found, expected, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(lag_a, lag_b)
