"""The ops section's fast paths give exactly what the paths they replace gave (speed lives in benchmarks/):

- ops.sums_by_code (each op name's count and int64 sums by bincounts) vs pandas' groupby size and sum, on
  generated codes and values: small values (one float64 bincount), values whose sums need the two-part split,
  values too large for either (pandas itself), and sums that wrap around int64 as pandas' do;
- flops._nvtx_dims_by_code (the emit_nvtx names' sizes tested among every emit_nvtx name, the rows' names
  gathered only where some has sizes) vs the sizes of the names the rows use, found from the rows (the earlier
  code, kept here as the reference), on hand-built traces with and without sizes and with a range off any thread;
- tree._by_thread through the compiled counting sort (_op_tree.c group_rows: rows grouped by thread with their
  starts in two passes) vs the numpy grouping (grouped, then gathers), on generated op rows: one or several
  processes, negative and large tids, int32 and int64 tids (Nsight, Kineto) and rows, ties on a start, and the cases it leaves to numpy
  (rows out of start order, more than 255 threads);
- tree._annotation_names through the compiled pass (_op_tree.c names_of_kind) vs the annotations' names compressed
  out and counted (the earlier code, kept here as the reference), on generated kind and name columns with unnamed
  rows, int32 and int64 names, and a name outside the dictionary (the numpy path then).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.columns import event_columns
from tracelens.analyses.names import names_in_use
from tracelens.analyses.ops import EXACT_BITS, sums_by_code, tree
from tracelens.analyses.ops.flops import _nvtx_dims_by_code
from tracelens.analyses.ops.tree import emit_nvtx_rows, emit_nvtx_sizes
from tracelens.trace import ALL_KINDS, ANNOTATION, Trace


def _reference(code: np.ndarray, **columns: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame({"name": code, **columns}).groupby("name")
    return frame.size().rename("size").to_frame().join(frame[list(columns)].sum())


SCALES = st.sampled_from([10, 10**9, 2**40, 2**50, 2**62])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-1, 40), min_size=1, max_size=300),
    st.randoms(use_true_random=False),
    SCALES,
    SCALES,
)
def test_sums_by_code_equal_pandas(codes: list[int], rnd, scale_a: int, scale_b: int) -> None:
    code = np.array(codes, np.int64)
    a = np.array([rnd.randint(-scale_a, scale_a) for _ in codes], np.int64)
    b = np.array([rnd.randint(0, scale_b) for _ in codes], np.int64)
    got = sums_by_code(code, first=a, second=b)
    pd.testing.assert_frame_equal(got, _reference(code, first=a, second=b))


def test_sums_by_code_split_and_wraparound() -> None:
    # 3 rows of 2**62 in one name: the sum wraps around int64 as pandas' does; many rows of 2**40: the two-part
    # split (2**40 x rows >= 2**53); a single column of small values: one bincount
    code = np.r_[np.zeros(3, np.int64), np.ones(10_000, np.int64), -np.ones(5, np.int64)]
    big = np.r_[np.full(3, 2**62), np.full(10_000, 2**40 + 12_345), np.arange(5)].astype(np.int64)
    assert (big[3:] >> EXACT_BITS).max() * code.size < 2**53  # the split path, not pandas
    got = sums_by_code(code, v=big)
    pd.testing.assert_frame_equal(got, _reference(code, v=big))
    assert got.loc[1, "v"] == 10_000 * (2**40 + 12_345)
    small = sums_by_code(code, v=np.arange(code.size, dtype=np.int64))
    pd.testing.assert_frame_equal(small, _reference(code, v=np.arange(code.size, dtype=np.int64)))


def _host(name: str, start: int, end: int, tid: int = 1) -> dict:
    return {"kind": "annotation", "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid}


def _reference_dims(trace: Trace) -> np.ndarray:
    cols = event_columns(trace)
    nvtx = emit_nvtx_rows(trace)
    present = names_in_use(cols.name[nvtx], len(cols.names))
    dims = np.full(len(cols.names) + 1, None, dtype=object)
    dims[present] = [emit_nvtx_sizes(str(cols.names[c])) for c in present]
    return dims


def test_nvtx_dims_equal_the_rows_names_sizes() -> None:
    sized = "aten::addmm, seq = 3, op_id = 2, sizes = [[32], [8, 64], [64, 32]]"
    cases = [
        # no sizes anywhere: nothing gathered, every slot None
        [_host("aten::mm, seq = 12", 0, 10), _host("aten::add, seq = 13", 20, 30)],
        # sizes on a range the rows use, and a plain annotation beside it
        [_host(sized, 0, 10), _host("aten::mm, seq = 12", 20, 30), _host("## forward ##", 0, 40)],
        # a sized emit_nvtx name only on a range off any thread (tid -1): not among the rows' names
        [_host("aten::mm, seq = 12", 0, 10), _host(sized, 20, 30, tid=-1)],
        # every annotation an emit_nvtx range, one with sizes
        [_host(sized, 0, 10), _host("aten::linear, seq = 4, op_id = 7, sizes = [[8, 64]]", 20, 30)],
    ]
    for rows in cases:
        trace = Trace.from_rows(rows)
        got = _nvtx_dims_by_code(trace, emit_nvtx_rows(trace))
        assert got.tolist() == _reference_dims(trace).tolist(), rows


def _columns(
    rnd, size: int, threads: list[tuple[int, int]], ordered: bool, wide: bool = False
) -> SimpleNamespace:
    start = np.array(sorted(rnd.randint(0, size // 2 + 1) for _ in range(size)), np.int64)
    if not ordered and size > 1:
        start[[0, -1]] = start[[-1, 0]] + np.array([1, 0])  # out of order (unless all equal)
    pick = [threads[rnd.randrange(len(threads))] for _ in range(size)]
    return SimpleNamespace(
        pid=np.array([p for p, _ in pick], np.int32),
        # (a tid past 32 bits, in an int64 column, shares its thread key with the tid of its low 32 bits)
        tid=np.array([t if wide else t & 0x7FFFFFFF for _, t in pick], np.int64 if wide else np.int32),
        start=start,
        end=start + np.array([rnd.randint(0, 50) for _ in range(size)], np.int64),
    )


def _numpy_by_thread(cols: SimpleNamespace, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    original = tree._grouped_compiled
    tree._grouped_compiled = lambda c, r, *more: None  # type: ignore[assignment]
    try:
        return tree._by_thread(cols, rows)
    finally:
        tree._grouped_compiled = original  # type: ignore[assignment]


THREADS = st.lists(
    st.tuples(
        st.sampled_from([7, 8, -3]), st.sampled_from([1, 2, -1, 2**31 - 1, -(2**31), 123456, 2**40 + 2])
    ),
    min_size=1,
    max_size=6,
    unique=True,
)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 400),
    THREADS,
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_compiled_grouping_equals_numpy(
    size: int, threads, narrow: bool, ordered: bool, wide: bool, rnd
) -> None:
    if tree._compiled is None:  # no compiler at install time: nothing to compare
        return
    cols = _columns(rnd, size, threads, ordered, wide)
    rows = np.flatnonzero(np.array([rnd.random() < 0.8 for _ in range(size)]))
    rows = rows.astype(np.int32 if narrow else np.int64)
    expected = _numpy_by_thread(cols, rows)
    got = tree._by_thread(cols, rows)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


def test_compiled_grouping_applies_where_it_should() -> None:
    import random

    rnd = random.Random(3)
    cols = _columns(rnd, 2000, [(1, t) for t in range(5)], True)
    rows = np.arange(2000, dtype=np.int64)
    if tree._compiled is not None:
        assert tree._grouped_compiled(cols, rows) is not None
        assert tree._grouped_compiled(_columns(rnd, 2000, [(1, 2**40)], True, wide=True), rows) is not None
    many = _columns(rnd, 2000, [(1, t) for t in range(300)], True)  # more than 255 threads: numpy
    assert tree._grouped_compiled(many, rows) is None
    unordered = _columns(rnd, 2000, [(1, t) for t in range(5)], False)  # starts out of order: numpy
    assert tree._grouped_compiled(unordered, rows) is None


def _reference_annotation_names(cols: SimpleNamespace, size: int) -> tuple[np.ndarray, bool]:
    ann = np.compress(cols.kind == ALL_KINDS.index(ANNOTATION), cols.name)
    named = ann >= 0
    unnamed = not bool(named.all())
    return np.flatnonzero(np.bincount(ann[named] if unnamed else ann, minlength=size) > 0), unnamed


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, len(ALL_KINDS) - 1), st.integers(-1, 30)), max_size=300),
    st.booleans(),
)
def test_annotation_names_equal_the_reference(rows: list[tuple[int, int]], wide: bool) -> None:
    kind = np.array([k for k, _ in rows], np.int8)
    name = np.array([n for _, n in rows], np.int64 if wide else np.int32)
    cols = SimpleNamespace(kind=kind, name=name, of_kind=lambda k: kind == ALL_KINDS.index(k))
    got, unnamed = tree._annotation_names(cols, 31)
    expected, expected_unnamed = _reference_annotation_names(cols, 31)
    np.testing.assert_array_equal(got, expected)
    assert unnamed == expected_unnamed


def test_annotation_names_outside_the_dictionary_go_to_numpy() -> None:
    kind = np.full(4, ALL_KINDS.index(ANNOTATION), np.int8)
    name = np.array([0, 3, -1, 2], np.int32)
    cols = SimpleNamespace(kind=kind, name=name, of_kind=lambda k: kind == ALL_KINDS.index(k))
    if tree._compiled is not None:
        assert not tree._compiled.names_of_kind(kind, name, ALL_KINDS.index(ANNOTATION), np.zeros(3, bool))
    used, unnamed = tree._annotation_names(cols, 4)  # a dictionary of 4: every name inside
    assert used.tolist() == [0, 2, 3] and unnamed
