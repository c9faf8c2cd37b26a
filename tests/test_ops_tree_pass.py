"""The compiled op tree pass's shortcuts give what the references give (speed lives in benchmarks/):

- op_tree with each thread's launch times in several ascending runs (as a thread's launches come: a few descents a
  step), sorted by its natural merge sort and answered within its one walk over the ops, vs the loop reference of
  test_ops_tree_levels, on threads with nested, overlapping and zero-length ops, ties among the times, and no
  launch or no op on a thread;
- op_tree declining (False) an op that ends before it starts on a later thread, after earlier threads were walked;
- group_rows' count of the rows starting with their thread's previous row (``ties``) vs the ties found in the
  grouped rows' starts (the positions tree._by_thread reorders), and _by_thread with the count vs without it.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_ops_tree_levels import _reference, threads_layout
from tracelens.analyses import ops as _ops  # noqa: F401  (the package imports tree)
from tracelens.analyses.ops import tree

OPS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), max_size=25)
RUNS = st.lists(st.lists(st.integers(-2, 60), min_size=1, max_size=30), max_size=9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(OPS, RUNS), min_size=1, max_size=3))
def test_compiled_pass_with_launch_times_in_runs(
    threads: list[tuple[list[tuple[int, int]], list[list[int]]]],
) -> None:
    if tree._compiled is None:
        return  # not built here: the numpy path serves
    layout = [(spans, [t for run in runs for t in sorted(run)]) for spans, runs in threads]
    start, end, (bounds, times, edges) = threads_layout(layout)
    outer = np.zeros(start.size, np.uint8)
    out, inn = np.full(times.size, -9, np.int64), np.full(times.size, -9, np.int64)
    assert tree._compiled.op_tree(start, end, bounds, times, edges, outer, out, inn)
    for i, (spans, ts) in enumerate(layout):
        # the reference gives rows 10 * i + 7 of the spans as given; the pass, positions among all threads' ops
        order = sorted(range(len(spans)), key=lambda k: (spans[k][0], -spans[k][1], k))
        position = {10 * k + 7: int(bounds[i]) + p for p, k in enumerate(order)}
        ref_out, ref_inn = _reference([(s, s + d) for s, d in spans], ts)
        lo, hi = edges[i], edges[i + 1]
        assert out[lo:hi].tolist() == [position.get(r, -1) for r in ref_out]
        assert inn[lo:hi].tolist() == [position.get(r, -1) for r in ref_inn]


def test_compiled_pass_declines_a_bad_op_on_a_later_thread() -> None:
    if tree._compiled is None:
        return
    start, end, (bounds, times, edges) = threads_layout([([(0, 5), (2, 1)], [1, 3]), ([(4, 2)], [5])])
    end[-1] = start[-1] - 1  # the second thread's op ends before it starts
    outer = np.zeros(start.size, np.uint8)
    out, inn = np.full(times.size, -9, np.int64), np.full(times.size, -9, np.int64)
    assert tree._compiled.op_tree(start, end, bounds, times, edges, outer, out, inn) is False


def _columns(rnd: random.Random, size: int, threads: int, spread: int) -> SimpleNamespace:
    start = np.sort(np.array([rnd.randrange(spread) for _ in range(size)], np.int64))
    return SimpleNamespace(
        pid=np.full(size, 3, np.int32),
        tid=np.array([rnd.randrange(threads) for _ in range(size)], np.int32),
        start=start,
        end=start + np.array([rnd.randrange(6) for _ in range(size)], np.int64),
    )


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 300), st.integers(1, 5), st.sampled_from([2, 50, 10**6]), st.randoms(use_true_random=False)
)
def test_group_rows_counts_the_ties_the_grouping_has(size: int, threads: int, spread: int, rnd) -> None:
    if tree._compiled is None or not getattr(tree._compiled, "GROUP_ROWS_TIES", 0):
        return
    cols = _columns(rnd, size, threads, spread)
    rows = np.flatnonzero(np.array([rnd.random() < 0.9 for _ in range(size)]))
    if rows.size == 0:
        return
    fused = tree._grouped_compiled(cols, rows, False)
    assert fused is not None
    grouped_rows, bounds, _, ties, *_ = fused  # (and the tied positions, where found)
    starts = cols.start[grouped_rows]
    same = starts[1:] == starts[:-1]
    same[bounds[1:-1] - 1] = False  # the last row of a thread and the first of the next: no tie
    assert ties == int(same.sum())
    # and _by_thread, which skips its search for ties where there is none, orders as without the count
    counted = tree._by_thread(cols, rows, with_starts=False)
    uncounted = tree._grouped_compiled
    try:
        tree._grouped_compiled = lambda *args: (*uncounted(*args)[:3], None)  # type: ignore[assignment,misc]
        reference = tree._by_thread(cols, rows, with_starts=False)
    finally:
        tree._grouped_compiled = uncounted  # type: ignore[assignment]
    np.testing.assert_array_equal(counted[0], reference[0])
    np.testing.assert_array_equal(counted[1], reference[1])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([(5, 1), (5, -2), (9, 2**31 - 1), (-1, 7)]), st.integers(0, 60)),
        max_size=60,
    ),
    st.lists(
        st.tuples(st.sampled_from([(5, 1), (5, -2), (9, 2**31 - 1), (-1, 7), (4, 4)]), st.integers(-3, 70))
    ),
    st.randoms(use_true_random=False),
)
def test_few_times_range_at_equals_the_gathered_search(
    ranges: list[tuple[tuple[int, int], int]], asked: list[tuple[tuple[int, int], int]], rnd
) -> None:
    """The binary search of a few times among the ranges where they lie vs running_on_thread_at given every
    range's thread key, start and end gathered (ranges disjoint on a thread, some of zero length, threads with no
    range, times before, between and after them)."""
    from tracelens.analyses.columns import thread_key
    from tracelens.analyses.grouping import few_times_range_at

    # disjoint ranges per thread: each thread's starts cut into [start, next start) or shorter
    events = []
    for (pid, tid), start in sorted(set(ranges)):
        events.append((pid, tid, start, start + rnd.randint(0, 3)))
    events.sort(key=lambda e: (e[2], e[0], e[1]))
    cols = SimpleNamespace(
        pid=np.array([e[0] for e in events], np.int32),
        tid=np.array([e[1] for e in events], np.int32),
        start=np.array([e[2] for e in events], np.int64),
        end=np.array([e[3] for e in events], np.int64),
    )
    rows = np.arange(len(events), dtype=np.int64)
    key = thread_key(cols.pid, cols.tid)
    rows = rows[np.lexsort((cols.start, key))]
    # keep the ranges disjoint on each thread (a range starting before the previous one's end dropped)
    keep = np.ones(rows.size, bool)
    for i in range(1, rows.size):  # a loop over a few test rows
        j = i - 1
        while j >= 0 and not keep[j]:
            j -= 1
        if j >= 0 and key[rows[j]] == key[rows[i]] and cols.start[rows[i]] < cols.end[rows[j]]:
            keep[i] = False
    rows = rows[keep]
    keys = thread_key(
        np.array([p for (p, _), _ in asked], np.int32), np.array([t for (_, t), _ in asked], np.int32)
    )
    t = np.array([t for _, t in asked], np.int64)
    expected = tree.running_on_thread_at(key[rows], cols.start[rows], cols.end[rows], keys, t)
    np.testing.assert_array_equal(few_times_range_at(cols, rows, keys, t), expected)


def test_blocking_calls_from_the_host_categories_equal_the_block_pass() -> None:
    """The diagnosis's sync ops find the blocking calls as the host categories' ``sync`` rows on threads, where the
    categories are held, vs the pass over the kind, thread and name columns, on the recorded GPU traces (syncs every
    step, pageable copies) and a hand-made one (a sync off any thread, a launch, a name of no call)."""
    from pathlib import Path

    from tracelens import load
    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.ops.evidence import _blocking_calls
    from tracelens.analyses.startup import host_categories
    from tracelens.trace import Trace

    fixtures = sorted((Path(__file__).parent.parent / "fixtures" / "gpu").glob("*.pt.trace.json.gz"))
    handmade = Trace.from_rows(
        [
            {
                "kind": "runtime",
                "name": "cudaDeviceSynchronize",
                "start_ns": 0,
                "end_ns": 5,
                "pid": 1,
                "tid": 2,
            },
            {
                "kind": "runtime",
                "name": "cudaStreamSynchronize",
                "start_ns": 1,
                "end_ns": 4,
                "pid": 1,
                "tid": -1,
            },
            {"kind": "driver", "name": "cuMemcpyDtoH_v2", "start_ns": 2, "end_ns": 9, "pid": 1, "tid": 3},
            {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 3, "end_ns": 4, "pid": 1, "tid": 2},
            {
                "kind": "cpu_op",
                "name": "cudaDeviceSynchronize",
                "start_ns": 4,
                "end_ns": 8,
                "pid": 1,
                "tid": 2,
            },
        ]
    )
    found = 0
    for trace in [handmade, *(load(path) for path in fixtures)]:
        cols = event_columns(trace)
        expected = _blocking_calls(cols)
        got = _blocking_calls(cols, host_categories(trace))
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype == np.int64
        found += got.size
    assert found


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 300),
    st.booleans(),
    st.booleans(),
    st.sampled_from([np.int32, np.int64]),
    st.randoms(use_true_random=False),
)
def test_kind_rows_equal_the_masks(size: int, coded: bool, every_name: bool, name_type, rnd) -> None:
    """The compiled pass picking one kind's rows on a thread with a name the table takes vs the masks of the kind,
    the name table and the thread (int32 rows), with thread codes (an Nsight export's) or plain tids, unnamed rows,
    and every name taken (no table); a name outside the table: not applied (None)."""
    from tracelens.analyses.coded import CodedInts
    from tracelens.analyses.ops.kind_rows import kind_rows

    if tree._compiled is None:
        return
    names = 7
    kind = np.array([rnd.randrange(4) for _ in range(size)], np.int8)
    name = np.array([rnd.randrange(-1, names) for _ in range(size)], name_type)
    threads = np.array([-3, 5, 2**31 - 1, -1], np.int32)
    codes = np.array([rnd.randrange(threads.size) for _ in range(size)], np.int8)
    tid = CodedInts(codes, threads) if coded else threads[codes]
    nvtx = None if every_name else np.array([rnd.random() < 0.5 for _ in range(names)] + [False])
    cols = SimpleNamespace(kind=kind, name=name, tid=tid)
    mask = (kind == 2) & (threads[codes] >= 0)
    if nvtx is not None:
        mask &= nvtx[name]
    got = kind_rows(cols, 2, nvtx)
    assert got is not None and got.dtype == np.int32
    np.testing.assert_array_equal(got, np.flatnonzero(mask))
    if nvtx is not None and (kind == 2).any():
        name[np.flatnonzero(kind == 2)[0]] = names  # a name past the table's end: the numpy blocks serve
        assert kind_rows(cols, 2, nvtx) is None


def test_emit_nvtx_rows_same_with_and_without_the_compiled_pass(monkeypatch) -> None:
    """emit_nvtx_rows on a hand-made trace (emit_nvtx ranges and other annotations, one off any thread, an unnamed
    one, cpu ops) through kind_rows vs the numpy blocks, and framework_op_rows with them."""
    from tracelens.analyses.derived import forget
    from tracelens.trace import Trace

    rows = [
        {
            "kind": "annotation",
            "name": "aten::mm, seq = 1, op_id = 2",
            "start_ns": 0,
            "end_ns": 9,
            "pid": 1,
            "tid": 2,
        },
        {"kind": "annotation", "name": "my range", "start_ns": 1, "end_ns": 8, "pid": 1, "tid": 2},
        {
            "kind": "annotation",
            "name": "aten::add, op_id = 3",
            "start_ns": 2,
            "end_ns": 5,
            "pid": 1,
            "tid": -1,
        },
        {"kind": "annotation", "start_ns": 3, "end_ns": 4, "pid": 1, "tid": 2},
        {"kind": "cpu_op", "name": "aten::relu", "start_ns": 4, "end_ns": 6, "pid": 1, "tid": 3},
        {
            "kind": "annotation",
            "name": "aten::add, op_id = 4",
            "start_ns": 5,
            "end_ns": 7,
            "pid": 1,
            "tid": 3,
        },
    ]
    trace = Trace.from_rows(rows)
    compiled = tree.emit_nvtx_rows(trace), tree.framework_op_rows(trace)
    forget(trace, {"emit_nvtx_rows", "framework_op_rows"})
    monkeypatch.setattr(tree, "kind_rows", lambda *args: None)
    reference = tree.emit_nvtx_rows(trace), tree.framework_op_rows(trace)
    for a, b in zip(compiled, reference, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert compiled[0].tolist() == [0, 5]


def test_op_tree_with_thread_codes_equals_the_dense_columns(monkeypatch) -> None:
    """The op tree of the Nsight fixtures and real exports loaded with thread codes (each launch's thread found by
    its call's code, ops.kind_rows.launch_threads) vs loaded with dense pid and tid columns (by thread keys)."""
    from pathlib import Path

    from tests.conftest import shared_traces
    from tracelens import load
    from tracelens.ingest.nsys import assembly

    paths = sorted((Path(__file__).parent.parent / "fixtures" / "nsys").glob("*.sqlite"))
    for path in [*paths, *shared_traces("nsys", "*.sqlite")]:
        coded = tree._compute_op_tree(load(path))
        with monkeypatch.context() as patch:
            patch.setattr(assembly, "thread_columns", lambda *args: None)
            dense = tree._compute_op_tree(load(path))
        for a, b in zip(coded, dense, strict=True):
            np.testing.assert_array_equal(a, b)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200), st.integers(1, 6), st.randoms(use_true_random=False))
def test_launch_threads_by_code_equal_by_key(size: int, among: int, rnd) -> None:
    """Each launch's thread position among the op threads read at its call's thread code vs found by its thread
    key, with calls on threads that have no op (-1) and negative tids."""
    from tracelens.analyses.coded import CodedInts
    from tracelens.analyses.columns import thread_key
    from tracelens.analyses.ops.kind_rows import launch_threads
    from tracelens.analyses.table import Table

    pids = np.array([3, 3, 3, 9, 9, 4], np.int32)
    tids = np.array([1, -2, 7, 1, 2**31 - 1, 5], np.int32)
    codes = np.array([rnd.randrange(pids.size) for _ in range(size)], np.int8)
    keys = np.unique(thread_key(pids, tids))
    threads = np.sort(np.array(rnd.sample(list(keys), min(among, keys.size)), np.int64))
    launch_row = np.array([rnd.randrange(size) for _ in range(size)], np.int32)
    matched = np.flatnonzero(np.array([rnd.random() < 0.8 for _ in range(size)]))
    coded = SimpleNamespace(pid=CodedInts(codes, pids), tid=CodedInts(codes, tids))
    pairs = Table({"launch_row": launch_row, "pid": pids[codes][launch_row], "tid": tids[codes][launch_row]})
    got = launch_threads(coded, threads, pairs, matched, pairs[matched])
    dense = SimpleNamespace(pid=pids[codes], tid=tids[codes])
    expected = launch_threads(dense, threads, pairs, matched, pairs[matched])
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype
