"""The ops section's lean paths (working memory at the 41M-event Nsight benchmark) give what the paths they replace
gave (memory lives in benchmarks/results/section_memory_nsec7.md):

- the compiled op tree reading each op's start at its row in the start column (_op_tree.c ``starts_by_row``) vs
  given the gathered starts, on generated threads of nested ops and launch times;
- tree._by_thread without starts (group_rows writing none, the ties found by grouping.tied_positions a block at a
  time) vs with them: the same rows and bounds; and tied_positions vs the gathered starts compared;
- the whole op tree on generated traces (nested emit_nvtx ranges and cpu ops on two threads, launches, kernels),
  the compiled pass against the numpy path;
- tree.emit_nvtx_rows a block of the table at a time vs one mask of the whole table (the earlier code, kept here
  as the reference), blocks of a few rows;
- ops.sums_by_code_in_blocks (a block of rows at a time, the blocks' sums added) vs sums_by_code of every row,
  with sums that wrap around int64; the ops block (by name, by innermost op, the kernel and copy totals) and the
  launching ops computed a few GPU ops at a time vs in one block;
- tree.thread_range_at (the ranges' threads found a block of rows at a time, each thread's starts and ends gathered
  only where asked) vs running_on_thread_at given every range's key, start and end;
- evidence._blocking_calls (the blocking sync calls a block of the table at a time) and evidence._ops_at (the GPU
  ops ending or starting at given times, a block of GPU ops at a time) vs the earlier code's masks and searches;
- evidence._longest_gaps (each device's longest gaps first) vs every device's gaps concatenated and cut (the
  earlier code, kept here as the reference).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_ops_tree_levels import threads_layout
from tracelens.analyses import grouping, ops
from tracelens.analyses.columns import event_columns, thread_key
from tracelens.analyses.names import code_mask, is_blocking_sync
from tracelens.analyses.ops import evidence, sums, tree
from tracelens.trace import ALL_KINDS, ANNOTATION, DRIVER, RUNTIME, Trace

SPANS = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 30)), max_size=25)
TIMES = st.lists(st.integers(-5, 100), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(SPANS, TIMES), min_size=1, max_size=4),
    st.integers(0, 2**32 - 1),
    st.sampled_from([np.int32, np.int64]),
)
def test_compiled_pass_reads_starts_through_rows(threads, seed: int, row_type: type) -> None:
    if tree._compiled is None or not getattr(tree._compiled, "OP_TREE_START_ROWS", 0):
        return
    start, end, fixed = threads_layout(threads)
    rnd = np.random.default_rng(seed)
    size = start.size * 3 + 2
    rows = np.sort(rnd.choice(size, start.size, replace=False)).astype(row_type)
    start_column, end_column = rnd.integers(-50, 50, size), rnd.integers(-50, 50, size)
    start_column[rows], end_column[rows] = start, end
    launches = fixed[1].size
    results = []
    for args in ((start, end), (start, end_column, rows), (start_column, end_column, rows, True)):
        outer = np.zeros(start.size, np.uint8)
        out, inn = np.full(launches, -9, np.int64), np.full(launches, -9, np.int64)
        done = tree._compiled.op_tree(args[0], args[1], *fixed, outer, out, inn, *args[2:])
        results.append((done, outer.tolist(), out.tolist(), inn.tolist()))
    assert results[0] == results[1] == results[2]


def test_compiled_pass_refuses_a_row_outside_the_start_column() -> None:
    if tree._compiled is None or not getattr(tree._compiled, "OP_TREE_START_ROWS", 0):
        return
    outer, out, inn = np.zeros(1, np.uint8), np.empty(0, np.int64), np.empty(0, np.int64)
    tail = (np.array([0, 1], np.int64), np.empty(0, np.int64), np.array([0, 0], np.int64), outer, out, inn)
    with pytest.raises(ValueError, match="outside"):
        tree._compiled.op_tree(
            np.array([0], np.int64), np.array([5, 6], np.int64), *tail, np.array([1], np.int32), True
        )


def _columns(rnd: np.random.Generator, size: int, threads: int) -> SimpleNamespace:
    start = np.sort(rnd.integers(0, max(1, size // 3), size)).astype(np.int64)
    return SimpleNamespace(
        pid=np.full(size, 4, np.int32),
        tid=rnd.integers(1, threads + 1, size).astype(np.int32),
        start=start,
        end=start + rnd.integers(0, 9, size),
    )


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 300), st.integers(1, 5), st.integers(0, 2**32 - 1), st.sampled_from([np.int32, np.int64])
)
def test_by_thread_without_starts_is_the_same_order(
    size: int, threads: int, seed: int, row_type: type
) -> None:
    rnd = np.random.default_rng(seed)
    cols = _columns(rnd, size, threads)
    rows = np.flatnonzero(rnd.random(size) < 0.8).astype(row_type)
    with_starts = tree._by_thread(cols, rows)
    without = tree._by_thread(cols, rows, with_starts=False)
    assert without[2] is None
    np.testing.assert_array_equal(without[0], with_starts[0])
    np.testing.assert_array_equal(without[1], with_starts[1])
    np.testing.assert_array_equal(with_starts[2], cols.start[with_starts[0]])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=80), st.integers(1, 7))
def test_tied_positions_equal_the_gathered_starts_compared(starts: list[int], block: int) -> None:
    start = np.array(sorted(starts), np.int64)
    rows = np.arange(start.size)[::-1].copy()  # any order of rows
    expected = np.flatnonzero(start[rows][1:] == start[rows][:-1])
    original = grouping.TIE_BLOCK
    grouping.TIE_BLOCK = block
    try:
        got = grouping.tied_positions(start, rows)
    finally:
        grouping.TIE_BLOCK = original
    assert got.dtype == np.int64 and got.tolist() == expected.tolist()


_EMIT = ["aten::mm, seq = 1", "aten::add, seq = 2, op_id = 3, sizes = [[4], [4]]", "aten::relu, seq = 9"]


def _op_trace(rnd: np.random.Generator, plain: bool) -> list[dict]:
    rows: list[dict] = []
    corr = 0
    for tid in (1, 2):
        t = 0
        for _ in range(int(rnd.integers(1, 12))):
            t += int(rnd.integers(0, 30))
            length = int(rnd.integers(0, 60))
            kind = "cpu_op" if rnd.random() < 0.3 else "annotation"
            names = _EMIT + (["## forward ##"] if plain else [])
            name = names[int(rnd.integers(0, len(names)))]
            rows.append(
                {"kind": kind, "name": name, "start_ns": t, "end_ns": t + length, "pid": 1, "tid": tid}
            )
            if rnd.random() < 0.7:
                at = t + int(rnd.integers(0, 40))
                corr += 1
                rows.append(
                    {
                        "kind": "runtime",
                        "name": "cudaLaunchKernel",
                        "start_ns": at,
                        "end_ns": at + 2,
                        "pid": 1,
                        "tid": tid,
                        "correlation_id": corr,
                    }
                )
                rows.append(
                    {
                        "kind": "kernel",
                        "name": "k",
                        "start_ns": at + 50,
                        "end_ns": at + 60,
                        "device": 0,
                        "stream": 7,
                        "correlation_id": corr,
                    }
                )
    rows.append({"kind": "annotation", "name": _EMIT[0], "start_ns": 5, "end_ns": 9, "pid": 1, "tid": -1})
    return rows


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_op_tree_compiled_equals_numpy_on_generated_traces(seed: int, plain: bool) -> None:
    if tree._compiled is None:
        return
    rows = _op_trace(np.random.default_rng(seed), plain)
    compiled = tree._compute_op_tree(Trace.from_rows(rows))
    saved = tree._compiled
    tree._compiled = None  # type: ignore[assignment]
    try:
        reference = tree._compute_op_tree(Trace.from_rows(rows))
    finally:
        tree._compiled = saved
    for a, b in zip(compiled, reference, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def _reference_emit_nvtx_rows(trace: Trace) -> np.ndarray:
    cols = event_columns(trace)
    names = tree.op_names(trace)
    mask = cols.of_kind(ANNOTATION)
    if not names.all_annotations_nvtx:
        mask &= names.nvtx[cols.name]
    mask &= cols.tid >= 0
    return np.flatnonzero(mask).astype(np.int32)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.integers(1, 9))
def test_emit_nvtx_rows_by_blocks_equal_one_mask(seed: int, plain: bool, block: int) -> None:
    trace = Trace.from_rows(_op_trace(np.random.default_rng(seed), plain))
    original = tree.BLOCK_ROWS
    tree.BLOCK_ROWS = block
    try:
        got = tree.emit_nvtx_rows(trace)
    finally:
        tree.BLOCK_ROWS = original
    expected = _reference_emit_nvtx_rows(trace)
    assert got.dtype == expected.dtype and got.tolist() == expected.tolist()
    assert event_columns(trace).kind[got].tolist() == [ALL_KINDS.index(ANNOTATION)] * got.size


def _reference_longest_gaps(busy: dict, limit: int) -> tuple[np.ndarray, ...]:
    device = np.concatenate([np.full(b.gap_starts.size, d, np.int64) for d, b in busy.items()])
    start = np.concatenate([b.gap_starts for b in busy.values()]).astype(np.int64)
    end = np.concatenate([b.gap_ends for b in busy.values()]).astype(np.int64)
    length = end - start
    if length.size > limit:
        keep = np.flatnonzero(length >= np.partition(length, length.size - limit)[length.size - limit])
        device, start, end, length = device[keep], start[keep], end[keep], length[keep]
    return device, start, end, length


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(1, 6), min_size=0, max_size=30), min_size=1, max_size=4),
    st.integers(1, 8),
    st.integers(0, 2**32 - 1),
)
def test_longest_gaps_equal_the_concatenated_cut(devices: list[list[int]], limit: int, seed: int) -> None:
    rnd = np.random.default_rng(seed)
    busy = {}
    for d, steps in enumerate(devices):
        # busy intervals: ascending, disjoint; gaps of a few lengths (ties)
        bounds = np.cumsum(np.array([1, *steps, *rnd.integers(1, 4, len(steps))], np.int64))
        edges = np.sort(bounds)
        busy[d * 3] = SimpleNamespace(gap_starts=edges[1:-1:2], gap_ends=edges[2::2])
        busy[d * 3].gap_ends = busy[d * 3].gap_ends[: busy[d * 3].gap_starts.size]
        busy[d * 3].gap_starts = busy[d * 3].gap_starts[: busy[d * 3].gap_ends.size]
    got = evidence._longest_gaps(busy, limit)
    expected = _reference_longest_gaps(busy, limit)
    for a, b in zip(got, expected, strict=True):
        assert a.tolist() == b.tolist()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-1, 12), max_size=120),
    st.sampled_from([10, 2**40, 2**62]),
    st.integers(1, 9),
    st.integers(0, 2**32 - 1),
)
def test_sums_by_code_in_blocks_equal_one_pass(codes: list[int], scale: int, block: int, seed: int) -> None:
    rnd = np.random.default_rng(seed)
    code = np.array(codes, np.int64)
    a = rnd.integers(-scale, scale, code.size, dtype=np.int64)
    b = rnd.integers(0, scale, code.size, dtype=np.int64)
    expected = sums.sums_by_code(code, a=a, b=b)
    original = sums.SUM_BLOCK
    sums.SUM_BLOCK = block
    try:
        got = sums.sums_by_code_in_blocks(
            code.size, lambda lo, hi: (code[lo:hi], {"a": a[lo:hi], "b": b[lo:hi]})
        )
    finally:
        sums.SUM_BLOCK = original
    if code.size == 0:
        assert got.empty and expected.empty
        return
    pd.testing.assert_frame_equal(got, expected)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.integers(1, 5))
def test_ops_report_and_launching_ops_by_blocks_equal_one_block(seed: int, plain: bool, block: int) -> None:
    rows = _op_trace(np.random.default_rng(seed), plain)
    expected = (ops.ops_report(Trace.from_rows(rows)), evidence.launching_ops(Trace.from_rows(rows)))
    original = sums.SUM_BLOCK
    sums.SUM_BLOCK = evidence.SUM_BLOCK = block
    try:
        got = (ops.ops_report(Trace.from_rows(rows)), evidence.launching_ops(Trace.from_rows(rows)))
    finally:
        sums.SUM_BLOCK = evidence.SUM_BLOCK = original
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 4), st.integers(0, 8)), min_size=0, max_size=60),
    st.lists(st.tuples(st.integers(0, 5), st.integers(-2, 200)), max_size=20),
    st.integers(1, 7),
    st.integers(1, 70),
)
def test_thread_range_at_equals_the_search_of_every_range(
    threads: list[tuple[int, int]], asks: list[tuple[int, int]], block: int, few: int
) -> None:
    # ranges disjoint on each thread, sorted by thread key then start; rows of a table of them in another order
    by_thread: dict[int, int] = {}
    ranges = []
    for tid, gap in sorted(threads):
        begin = by_thread.get(tid, 0) + gap
        ranges.append((tid, begin, begin + gap % 3 + 1))
        by_thread[tid] = begin + gap % 3 + 1
    size = len(ranges)
    order = np.arange(size)[::-1].copy()
    cols = SimpleNamespace(
        pid=np.full(size, 2, np.int32),
        tid=np.array([ranges[i][0] for i in order], np.int32),
        start=np.array([ranges[i][1] for i in order], np.int64),
        end=np.array([ranges[i][2] for i in order], np.int64),
    )
    rows = np.argsort(order)  # rows[i]: the table row of range i
    pid = np.full(len(asks), 2, np.int32)
    tid = np.array([a for a, _ in asks], np.int32)
    t = np.array([b for _, b in asks], np.int64)
    keys = thread_key(cols.pid[rows], cols.tid[rows])
    expected = tree.running_on_thread_at(keys, cols.start[rows], cols.end[rows], thread_key(pid, tid), t)
    saved = grouping.TIE_BLOCK, tree.FEW_THREADS
    grouping.TIE_BLOCK, tree.FEW_THREADS = block, few
    try:
        got = tree.thread_range_at(cols, rows, pid, tid, t)
        reference = tree.running_on_thread_at(keys, cols.start[rows], cols.end[rows], thread_key(pid, tid), t)
    finally:
        grouping.TIE_BLOCK, tree.FEW_THREADS = saved
    assert got.tolist() == expected.tolist() == reference.tolist()


_CALL_NAMES = np.array(
    [
        "cudaLaunchKernel",
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaMemcpy",
        "x",
        "cudaEventSynchronize",
    ],
    dtype=object,
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-1, len(ALL_KINDS) - 1), st.integers(-1, 3), st.integers(-1, len(_CALL_NAMES) - 1)
        ),
        max_size=80,
    ),
    st.integers(1, 9),
)
def test_blocking_calls_by_blocks_equal_the_masked_calls(rows: list, block: int) -> None:
    kind = np.array([k for k, _, _ in rows], np.int8)
    tid = np.array([t for _, t, _ in rows], np.int32)
    name = np.array([n for _, _, n in rows], np.int32)
    cols = SimpleNamespace(kind=kind, tid=tid, name=name, names=_CALL_NAMES)
    api_kinds = (kind == ALL_KINDS.index(RUNTIME)) | (kind == ALL_KINDS.index(DRIVER))
    api = np.flatnonzero(api_kinds & (tid >= 0))
    expected = api[code_mask(name[api], _CALL_NAMES, is_blocking_sync)]  # the earlier code
    original = evidence.BLOCK_ROWS
    evidence.BLOCK_ROWS = block
    try:
        got = evidence._blocking_calls(cols)
    finally:
        evidence.BLOCK_ROWS = original
    assert got.dtype == np.int64 and got.tolist() == expected.tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=60), st.lists(st.integers(0, 30), max_size=5), st.integers(1, 9))
def test_ops_at_by_blocks_equal_is_member(values: list[int], times: list[int], block: int) -> None:
    from tracelens.analyses.columns import Table
    from tracelens.values import is_member

    pairs = Table({"end": np.array(values, np.int64)})
    wanted = np.array(times, np.int64)
    expected = np.flatnonzero(is_member(pairs["end"], wanted))
    original = evidence.SUM_BLOCK
    evidence.SUM_BLOCK = block
    try:
        got = evidence._ops_at(pairs, "end", wanted)
    finally:
        evidence.SUM_BLOCK = original
    assert got.tolist() == expected.tolist()


def test_op_tree_with_a_build_from_before_starts_by_row() -> None:
    """A build without OP_TREE_START_ROWS (group_rows writing the starts, op_tree given them gathered) gives the
    same tree as this one."""
    if tree._compiled is None or not getattr(tree._compiled, "OP_TREE_START_ROWS", 0):
        return
    built = tree._compiled
    older = SimpleNamespace(
        op_tree=built.op_tree, group_rows=built.group_rows, names_of_kind=built.names_of_kind, OP_TREE_ROWS=1
    )
    for seed in range(12):
        rows = _op_trace(np.random.default_rng(seed), bool(seed % 2))
        now = tree._compute_op_tree(Trace.from_rows(rows))
        tree._compiled = older  # type: ignore[assignment]
        try:
            before = tree._compute_op_tree(Trace.from_rows(rows))
        finally:
            tree._compiled = built
        for a, b in zip(now, before, strict=True):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()
