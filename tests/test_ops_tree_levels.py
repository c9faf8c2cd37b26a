"""The op tree's per-thread searches (outermost and innermost op at each launch time, from the nesting levels)
against loop references on small hypothesis-generated threads, nesting or overlapping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.columns import thread_key
from tracelens.analyses.ops.tree import _outermost_innermost_at, _sorted_depth, ops_by_thread
from tracelens.trace import ALL_KINDS

ops = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), min_size=1, max_size=25)
times = st.lists(st.integers(-2, 60), max_size=20)


def _reference(spans: list[tuple[int, int]], ts: list[int]) -> tuple[list[int], list[int]]:
    """Ops ordered by (start, longest first, row); an op's level = the earlier ops still running at its start
    (end after it); outermost at t = the last level-0 op starting at or before t if it still runs; innermost =
    per level the same, the deepest level that has one."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -(spans[i][1] - spans[i][0]), i))
    s = [spans[i][0] for i in order]
    e = [spans[i][1] for i in order]
    level = [sum(e[j] > s[i] for j in range(i)) for i in range(len(s))]
    outer, inner = [], []
    for t in ts:
        found = {}
        for lvl in set(level):
            last = [i for i in range(len(s)) if level[i] == lvl and s[i] <= t]
            if last and t < e[last[-1]]:
                found[lvl] = 10 * order[last[-1]] + 7  # the row, as the rows array below holds it
        outer.append(found.get(0, -1))
        inner.append(found[max(found)] if found else -1)
    return outer, inner


@settings(max_examples=400, deadline=None)
@given(ops, times)
def test_outermost_innermost_match_reference(spans: list[tuple[int, int]], ts: list[int]) -> None:
    spans = [(s, s + d) for s, d in spans]
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -(spans[i][1] - spans[i][0]), i))
    start = np.array([spans[i][0] for i in order], np.int64)
    end = np.array([spans[i][1] for i in order], np.int64)
    rows = np.array([10 * i + 7 for i in order], np.int64)
    t = np.array(ts, np.int64)
    level = _sorted_depth(start, end)
    outer, inner = _outermost_innermost_at(rows, start, end, level, t)
    expected_outer, expected_inner = _reference(spans, ts)
    assert outer.tolist() == expected_outer
    assert inner.tolist() == expected_inner
    # level 0 is the outermost ops: those starting once every earlier op has ended
    enclosed = np.r_[False, start[1:] < np.maximum.accumulate(end)[:-1]]
    assert np.array_equal(level == 0, ~enclosed)


class _Cols:
    def __init__(self, pid: list[int], tid: list[int], start: list[int], end: list[int]) -> None:
        self.pid = np.array(pid, np.int32)
        self.tid = np.array(tid, np.int32)
        self.start = np.array(start, np.int64)
        self.end = np.array(end, np.int64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 2), st.integers(-2, 3), st.integers(0, 12), st.integers(0, 5)), max_size=40
    ),
    st.booleans(),
    st.data(),
)
def test_ops_by_thread_is_lexsort(
    events: list[tuple[int, int, int, int]], in_start_order: bool, data: st.DataObject
) -> None:
    """Rows ordered by (thread, start, longest first, row), as np.lexsort orders them, and each thread's run."""
    if in_start_order:
        events = sorted(events, key=lambda e: e[2])
    cols = _Cols(
        [p for p, _, _, _ in events],
        [t for _, t, _, _ in events],
        [s for _, _, s, _ in events],
        [s + d for _, _, s, d in events],
    )
    rows = np.array(
        sorted(data.draw(st.sets(st.integers(0, max(len(events) - 1, 0))))) if events else [], np.int64
    )
    got, bounds = ops_by_thread(cols, rows)
    from tracelens.analyses.ops.tree import _by_thread

    assert _by_thread(cols, rows)[2].tolist() == cols.start[got].tolist()  # the ordered rows' starts
    key = thread_key(cols.pid[rows], cols.tid[rows])  # a negative tid after the others (unsigned low half)
    expected = rows[np.lexsort((rows, cols.start[rows] - cols.end[rows], cols.start[rows], key))]
    assert got.tolist() == expected.tolist()
    runs = [got[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    assert [len(set((cols.pid[r] * 100 + cols.tid[r]).tolist())) for r in runs] == [1] * len(runs)
    assert len({int(cols.pid[r[0]]) * 100 + int(cols.tid[r[0]]) for r in runs}) == len(runs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(ops, times), min_size=1, max_size=4))
def test_compiled_pass_matches_reference(threads: list[tuple[list[tuple[int, int]], list[int]]]) -> None:
    """The C pass (analyses/_op_tree.c) over several threads at once: each thread's outermost flags and
    outermost/innermost op at its launch times, as the reference finds them."""
    from tracelens.analyses import ops as _ops  # noqa: F401  (the package imports tree)
    from tracelens.analyses.ops import tree

    if tree._compiled is None:
        return  # not built here: the numpy path, tested above, serves
    starts: list[int] = []
    ends: list[int] = []
    times_all: list[int] = []
    bounds, edges = [0], [0]
    expected: list[tuple[list[int], list[int]]] = []
    for spans, ts in threads:
        spans = [(s, s + d) for s, d in spans]
        order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -(spans[i][1] - spans[i][0]), i))
        base = len(starts)
        starts += [spans[i][0] for i in order]
        ends += [spans[i][1] for i in order]
        times_all += ts
        bounds.append(len(starts))
        edges.append(len(times_all))
        ref_out, ref_inn = _reference(spans, ts)
        # the reference gives rows (10 * i + 7); the pass gives positions among all threads' ops
        position = {10 * i + 7: base + k for k, i in enumerate(order)}
        expected.append(([position.get(r, -1) for r in ref_out], [position.get(r, -1) for r in ref_inn]))
    start, end = np.array(starts, np.int64), np.array(ends, np.int64)
    outer = np.zeros(start.size, np.uint8)
    out, inn = np.empty(len(times_all), np.int64), np.empty(len(times_all), np.int64)
    assert tree._compiled.op_tree(
        start,
        end,
        np.array(bounds, np.int64),
        np.array(times_all, np.int64),
        np.array(edges, np.int64),
        outer,
        out,
        inn,
    )
    for i, (expected_out, expected_inn) in enumerate(expected):
        lo, hi = edges[i], edges[i + 1]
        assert out[lo:hi].tolist() == expected_out
        assert inn[lo:hi].tolist() == expected_inn
        s, e = start[bounds[i] : bounds[i + 1]], end[bounds[i] : bounds[i + 1]]
        enclosed = np.r_[False, s[1:] < np.maximum.accumulate(e)[:-1]] if s.size else np.zeros(0, bool)
        assert np.array_equal(outer[bounds[i] : bounds[i + 1]].view(bool), ~enclosed)


def threads_layout(
    threads: list[tuple[list[tuple[int, int]], list[int]]],
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The C pass's inputs for ops given as (start, duration) per thread with each thread's launch times: the ops'
    starts and ends (each thread's in start order, longer first at a tie), then (bounds, times, edges): where each
    thread's ops and times begin."""
    starts: list[int] = []
    ends: list[int] = []
    times_all: list[int] = []
    bounds, edges = [0], [0]
    for spans, ts in threads:
        spans = sorted(((s, s + d) for s, d in spans), key=lambda p: (p[0], p[0] - p[1]))
        starts += [s for s, _ in spans]
        ends += [e for _, e in spans]
        times_all += ts
        bounds.append(len(starts))
        edges.append(len(times_all))
    fixed = (np.array(bounds, np.int64), np.array(times_all, np.int64), np.array(edges, np.int64))
    return np.array(starts, np.int64), np.array(ends, np.int64), fixed


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(ops, times), min_size=1, max_size=4),
    st.integers(0, 2**32 - 1),
    st.sampled_from([np.int32, np.int64]),
)
def test_compiled_pass_reads_ends_through_rows(
    threads: list[tuple[list[tuple[int, int]], list[int]]], seed: int, row_type: type
) -> None:
    """The C pass given the whole end column and each op's row (its optional last argument) writes what it
    writes given the ops' gathered ends: the same outermost flags and outermost/innermost ops."""
    from tracelens.analyses import ops as _ops  # noqa: F401  (the package imports tree)
    from tracelens.analyses.ops import tree

    if tree._compiled is None or not getattr(tree._compiled, "OP_TREE_ROWS", 0):
        return
    start, end, fixed = threads_layout(threads)
    rnd = np.random.default_rng(seed)
    column = rnd.integers(-50, 50, start.size * 3 + 2)  # the whole end column: other rows hold other values
    rows = np.sort(rnd.choice(column.size, start.size, replace=False)).astype(row_type)
    column[rows] = end
    launches = fixed[1].size
    results = []
    for args in ((end,), (column, rows)):
        outer = np.zeros(start.size, np.uint8)
        out, inn = np.full(launches, -9, np.int64), np.full(launches, -9, np.int64)
        tail = (*fixed, outer, out, inn)
        done = tree._compiled.op_tree(start, args[0], *tail, *args[1:])
        results.append((done, outer.tolist(), out.tolist(), inn.tolist()))
    assert results[0] == results[1]


def test_compiled_pass_refuses_a_row_outside_the_end_column() -> None:
    from tracelens.analyses.ops import tree

    if tree._compiled is None or not getattr(tree._compiled, "OP_TREE_ROWS", 0):
        return
    outer, out, inn = np.zeros(1, np.uint8), np.empty(0, np.int64), np.empty(0, np.int64)
    tail = (np.array([0, 1], np.int64), np.empty(0, np.int64), np.array([0, 0], np.int64), outer, out, inn)
    with pytest.raises(ValueError, match="outside the end column"):
        tree._compiled.op_tree(
            np.array([0], np.int64), np.array([5], np.int64), *tail, np.array([1], np.int32)
        )


def test_compiled_pass_declines_an_op_ending_before_its_start() -> None:
    from tracelens.analyses.ops import tree

    if tree._compiled is None:
        return
    outer, out, inn = np.zeros(2, np.uint8), np.full(1, -5, np.int64), np.full(1, -5, np.int64)
    done = tree._compiled.op_tree(
        np.array([0, 5], np.int64),
        np.array([10, 3], np.int64),
        np.array([0, 2], np.int64),
        np.array([4], np.int64),
        np.array([0, 1], np.int64),
        outer,
        out,
        inn,
    )
    assert done is False and out[0] == -5  # nothing written: the numpy path serves


def test_op_tree_same_with_and_without_the_compiled_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole tree (outermost ops, each GPU op's outermost and innermost op) on the project's recorded GPU
    traces, the C pass against the numpy path."""
    from pathlib import Path

    from tracelens import load
    from tracelens.analyses.ops import tree

    if tree._compiled is None:
        return
    fixtures = sorted((Path(__file__).parent.parent / "fixtures" / "gpu").glob("*.pt.trace.json.gz"))
    assert fixtures
    for path in fixtures:
        compiled = tree._compute_op_tree(load(path))
        monkeypatch.setattr(tree, "_compiled", None)
        reference = tree._compute_op_tree(load(path))
        monkeypatch.undo()
        for a, b in zip(compiled, reference, strict=True):
            assert np.array_equal(a, b), path.name


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-3, 12), min_size=1, max_size=60),
    st.integers(1, 9),
    st.sampled_from([np.int64, np.int32]),
)
def test_grouped_is_stable_argsort(keys: list[int], few: int, dtype: type) -> None:
    """grouped (sampled candidate keys, a comparison each, up to FEW_GROUPS of them; a sort beyond, or where the
    sample missed a key) against np.argsort(stable): the same order, and bounds at each key's run."""
    from tracelens.analyses import grouping

    key = np.array(keys, dtype)
    expected = np.argsort(key, kind="stable")
    ordered = key[expected]
    runs = np.r_[0, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1, key.size]
    saved = grouping.FEW_GROUPS, grouping.KEY_SAMPLE
    grouping.FEW_GROUPS = few
    try:
        for sample in (1, 3, 1 << 16):  # candidates from one key, a few (some keys missed), every key
            grouping.KEY_SAMPLE = sample
            order, bounds = grouping.grouped(key)
            assert order.tolist() == expected.tolist()
            assert bounds.tolist() == runs.tolist()
    finally:
        grouping.FEW_GROUPS, grouping.KEY_SAMPLE = saved


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(-5, 30), st.integers(0, 8)), max_size=30),
    st.lists(st.tuples(st.integers(0, 5), st.integers(-8, 45)), max_size=20),
    st.booleans(),
)
def test_running_on_thread_at_equals_the_packed_search(
    ranges: list[tuple[int, int, int]], queries: list[tuple[int, int]], overlapping: bool
) -> None:
    """running_on_thread_at (each thread's times searched in its own ranges) against columns.range_running_at
    (every (thread, time) packed into one number), on ranges sorted by (thread key, start), overlapping or not;
    and where its keys are not ascending (the packed search itself then)."""
    from tracelens.analyses.columns import range_running_at
    from tracelens.analyses.ops import tree

    if not overlapping:  # one range at a time per thread: each starts at or after the previous one's end
        by_thread: dict[int, int] = {}
        kept = []
        for key, start, length in sorted(ranges, key=lambda r: (r[0], r[1])):
            if start >= by_thread.get(key, start):
                kept.append((key, start, length))
                by_thread[key] = start + length
        ranges = kept
    ranges = sorted(ranges, key=lambda r: (r[0], r[1]))
    keys = np.array([r[0] for r in ranges], np.int64) * 7 + 3
    starts = np.array([r[1] for r in ranges], np.int64)
    ends = starts + np.array([r[2] for r in ranges], np.int64)
    qkeys = np.array([q[0] for q in queries], np.int64) * 7 + 3
    t = np.array([q[1] for q in queries], np.int64)
    want = range_running_at(keys, starts, ends, qkeys, t)
    saved = tree.FEW_THREADS
    try:
        for few in (64, 0):  # searched thread by thread; packed
            tree.FEW_THREADS = few
            assert tree.running_on_thread_at(keys, starts, ends, qkeys, t).tolist() == want.tolist()
    finally:
        tree.FEW_THREADS = saved


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["aten::mm, seq = 1", "aten::add, op_id = 2", "my_range", None]),
            st.sampled_from(["annotation", "cpu_op"]),
            st.sampled_from([1, None]),
            st.integers(0, 30),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_emit_nvtx_rows_equal_the_name_test_per_row(
    rows: list[tuple[str | None, str, int | None, int]],
) -> None:
    """emit_nvtx_rows (every annotation taken where all annotation names are emit_nvtx op ranges) against the
    annotations on a thread whose name is an emit_nvtx op range's."""
    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.ops import tree
    from tracelens.trace import Trace

    trace = Trace.from_rows(
        [
            {"kind": kind, "name": name, "start_ns": start, "end_ns": start + 3, "pid": 1, "tid": tid}
            for name, kind, tid, start in sorted(rows, key=lambda r: r[3])
        ]
    )
    cols = event_columns(trace)
    names = [None if c < 0 else str(cols.names[c]) for c in cols.name]
    want = [
        i
        for i, (name, kind, tid) in enumerate(zip(names, cols.kind, cols.tid, strict=True))
        if kind == ALL_KINDS.index("annotation") and tid >= 0 and name is not None and ", " in name
    ]
    assert tree.emit_nvtx_rows(trace).tolist() == want
    annotation_names = {
        n for n, k in zip(names, cols.kind, strict=True) if k == ALL_KINDS.index("annotation")
    }
    every = bool(annotation_names) and all(n is not None and ", " in n for n in annotation_names)
    assert tree.op_names(trace).all_annotations_nvtx == every
