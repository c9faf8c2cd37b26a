"""An Nsight export's pid and tid held as one small code a row per thread (trace.CodedColumn, built by
ingest/nsys/threads.py, read by the sections through analyses/coded.CodedInts) read exactly as the plain int32
columns they replace (issue 28: 280 MiB less resident at 41M rows):

- CodedInts vs the plain array ``table[codes]``, on generated tables and codes: gathers (positions, masks, slices,
  a single row), elementwise operations with scalars (comparisons, bit masks), ``np.asarray``, min/max, and
  thread_key of a coded pid and tid;
- thread_columns vs the parts' pid and tid scattered to their table rows (the assembly's dense path, kept here as
  the reference), on generated parts with nulls, parts without a tid, small blocks, more than 127 threads (int16
  codes), and the cases it leaves to the dense path (a negative value, no part with either);
- EventStore's reads of a coded column vs the same store holding the plain column;
- the op tree's grouping by thread (compiled group_rows taking the codes, and the numpy path) vs the plain columns;
- each shared Nsight export loaded with codes vs loaded through the dense path: the same event table and the same
  pid and tid as the sections read them.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from conftest import shared_params
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.coded import CodedInts, coded_lookup
from tracelens.analyses.columns import event_columns, thread_key
from tracelens.analyses.ops import tree
from tracelens.ingest import load
from tracelens.ingest.nsys import assembly, threads
from tracelens.ingest.nsys.columns import Part
from tracelens.trace import CodedColumn, EventStore, code_lookup

NSYS = shared_params("nsys", "*.sqlite")


def _coded(rnd, size: int, values: list[int], dtype=np.int8) -> tuple[np.ndarray, np.ndarray]:
    table = np.array(values, np.int32)
    codes = np.array([rnd.randrange(len(values)) for _ in range(size)], dtype)
    codes[: len(values)] = np.arange(len(values))[:size]  # every code occurs (as a CodedColumn's do)
    return codes, table


VALUES = st.lists(st.integers(-1, 2**31 - 1), min_size=1, max_size=6, unique=True)


@settings(max_examples=60, deadline=None)
@given(st.integers(6, 300), VALUES, st.randoms(use_true_random=False))
def test_coded_ints_read_as_the_plain_array(size: int, values: list[int], rnd) -> None:
    codes, table = _coded(rnd, size, values)
    coded, plain = CodedInts(codes, table), table[codes]
    rows = np.array(sorted(rnd.randrange(size) for _ in range(size // 2)), np.int64)
    mask = np.array([rnd.random() < 0.5 for _ in range(size)])
    for got, want in [
        (coded[rows], plain[rows]),
        (coded[rows.astype(np.int32)], plain[rows.astype(np.int32)]),
        (coded[mask], plain[mask]),
        (np.asarray(coded[::3]), plain[::3]),
        (coded[2:5] == values[0], plain[2:5] == values[0]),
        (coded[1:] != values[-1], plain[1:] != values[-1]),
        (np.asarray(coded), plain),
        (coded >= 0, plain >= 0),
        (coded == values[0], plain == values[0]),
        (coded != values[-1], plain != values[-1]),
        (coded < 7, plain < 7),
        (coded & 0xFFFF, plain & 0xFFFF),
        (np.isin(coded, values[:2]), np.isin(plain, values[:2])),
        (np.unique(coded), np.unique(plain)),
    ]:
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert coded[3] == plain[3] and type(coded[3]) is type(plain[3])
    assert (coded.size, coded.shape, coded.dtype, len(coded)) == (
        plain.size,
        plain.shape,
        plain.dtype,
        len(plain),
    )
    assert coded.min() == plain.min() and coded.max() == plain.max()
    assert coded[2:4].min() == plain[2:4].min() and coded[1:3].max() == plain[1:3].max()  # some codes absent
    assert isinstance(coded[1:3], CodedInts) and coded[1:3][1] == plain[2]
    tid_codes, tid_table = codes, np.array([rnd.randrange(-1, 2**31) for _ in values], np.int32)
    np.testing.assert_array_equal(
        thread_key(coded, CodedInts(tid_codes, tid_table)), thread_key(plain, tid_table[tid_codes])
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.booleans(), min_size=1, max_size=10), st.integers(0, 200), st.randoms(use_true_random=False)
)
def test_coded_lookup_of_a_boolean_table(table: list[bool], size: int, rnd) -> None:
    codes = np.array([rnd.randrange(len(table)) for _ in range(size)], np.int8)
    np.testing.assert_array_equal(coded_lookup(np.array(table), codes), np.array(table)[codes])
    np.testing.assert_array_equal(code_lookup(np.array(table), codes), np.array(table)[codes])


def _part(rnd, n: int, pids: list[int], tids: list[int | None], with_tid: bool) -> Part:
    pid = pa.array([rnd.choice(pids) for _ in range(n)], pa.int32())
    tid = pa.array([rnd.choice(tids) for _ in range(n)], pa.int32()) if with_tid else None
    return Part(n, {"pid": pid, "tid": tid}, owned=("pid", "tid"))


def _reference(parts: list[Part], rank: np.ndarray, offsets: np.ndarray, total: int, name: str) -> list:
    out: list = [None] * total
    for i, p in enumerate(parts):
        values = p.columns.get(name)
        for j in range(p.n):
            out[int(rank[offsets[i] + j])] = None if values is None else values[j].as_py()
    return out


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.booleans()), min_size=1, max_size=4),
    st.lists(st.integers(0, 2**24 - 1), min_size=1, max_size=3, unique=True),
    st.lists(st.one_of(st.none(), st.integers(0, 2**24 - 1)), min_size=1, max_size=5, unique=True),
    st.sampled_from([3, 64, 1 << 22]),
    st.randoms(use_true_random=False),
)
def test_thread_columns_equal_the_scattered_columns(
    shapes, pids: list[int], tids: list[int | None], block: int, rnd
) -> None:
    parts = [_part(rnd, n, pids, tids, with_tid) for n, with_tid in shapes]
    total = sum(p.n for p in parts)
    offsets = np.cumsum([0] + [p.n for p in parts])
    rank = np.array(rnd.sample(range(total), total), np.int32)
    expected = {name: _reference(parts, rank, offsets, total, name) for name in ("pid", "tid")}
    original = threads._BLOCK
    threads._BLOCK = block
    try:
        got = threads.thread_columns(parts, rank, offsets, total)
    finally:
        threads._BLOCK = original
    assert got is not None
    pid, tid = got
    assert pid.codes is tid.codes and pid.codes.dtype == np.int8
    assert all("pid" not in p.columns and "tid" not in p.columns for p in parts)
    assert pid.values.take(pa.array(pid.codes)).to_pylist() == expected["pid"]
    assert tid.values.take(pa.array(tid.codes)).to_pylist() == expected["tid"]
    # the codes follow thread_key's order of the pairs (nulls read -1), and every code occurs
    keys = thread_key(
        pid.values.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32),
        tid.values.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32),
    )
    assert (np.diff(keys) > 0).all()
    assert np.unique(pid.codes).size == len(pid.values)


def test_thread_columns_widen_to_int16_codes_and_leave_other_cases_dense() -> None:
    import random

    rnd = random.Random(5)
    tids: list[int | None] = list(range(300))
    parts = [_part(rnd, 2000, [3, 9], tids, True), _part(rnd, 500, [3], [None], False)]
    offsets, total = np.cumsum([0, 2000, 500]), 2500
    rank = np.array(rnd.sample(range(total), total), np.int32)
    expected = _reference(parts, rank, offsets, total, "tid")
    original = threads._BLOCK
    threads._BLOCK = 256  # the 128th pair met in a later block: the codes widened on the way
    try:
        got = threads.thread_columns(parts, rank, offsets, total)
    finally:
        threads._BLOCK = original
    assert got is not None and got[1].codes.dtype == np.int16
    assert got[1].values.take(pa.array(got[1].codes)).to_pylist() == expected
    negative = [Part(3, {"pid": pa.array([1, -2, 1], pa.int32()), "tid": None})]
    assert threads.thread_columns(negative, np.arange(3, dtype=np.int32), np.array([0, 3]), 3) is None
    assert "pid" in negative[0].columns  # left for the dense path
    neither = [Part(3, {"device": pa.array([0, 0, 1], pa.int32())})]
    assert threads.thread_columns(neither, np.arange(3, dtype=np.int32), np.array([0, 3]), 3) is None


def test_store_reads_a_coded_column_as_the_plain_one() -> None:
    codes = np.array([2, 0, 1, 1, 2, 0, 2], np.int8)
    values = pa.array([7, None, 123456], pa.int32())
    plain = values.take(pa.array(codes))
    coded = EventStore(7, {"pid": CodedColumn(codes, values), "tid": CodedColumn(codes, values)})
    dense = EventStore(7, {"pid": plain, "tid": plain})
    rows = np.array([6, 0, 3, 3])
    for name in ("pid", "tid"):
        assert coded.column(name).equals(dense.column(name))
        assert coded.take(name, rows).equals(dense.take(name, rows))
        for fill, dtype in ((-1, np.int64), (0, np.int32)):
            got, want = coded.numpy(name, fill, dtype), dense.numpy(name, fill, dtype)
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype
        assert sorted(coded.unique(name)) == sorted(dense.unique(name))
    assert coded.table().equals(dense.table())
    assert coded.nbytes == codes.nbytes + 2 * values.nbytes  # the shared codes counted once


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 300),
    st.lists(
        st.tuples(st.sampled_from([7, 8]), st.sampled_from([1, 2, 123456, -1])),
        min_size=1,
        max_size=5,
        unique=True,
    ),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_grouping_by_thread_codes_equals_the_plain_columns(size: int, pairs, compiled: bool, rnd) -> None:
    ordered = sorted(pairs, key=lambda pt: int(thread_key(np.array([pt[0]]), np.array([pt[1]]))[0]))
    codes = np.array([rnd.randrange(len(ordered)) for _ in range(size)], np.int8)
    codes[: len(ordered)] = np.arange(len(ordered))[:size]
    pid_table = np.array([p for p, _ in ordered], np.int32)
    tid_table = np.array([t for _, t in ordered], np.int32)
    start = np.array(sorted(rnd.randrange(size // 2 + 1) for _ in range(size)), np.int64)
    end = start + np.array([rnd.randrange(50) for _ in range(size)], np.int64)
    plain = SimpleNamespace(pid=pid_table[codes], tid=tid_table[codes], start=start, end=end)
    coded = SimpleNamespace(
        pid=CodedInts(codes, pid_table), tid=CodedInts(codes, tid_table), start=start, end=end
    )
    rows = np.flatnonzero(np.array([rnd.random() < 0.8 for _ in range(size)])).astype(np.int32)
    original = tree._grouped_compiled
    try:
        tree._grouped_compiled = lambda c, r, *more: None  # type: ignore[assignment]
        expected = tree._by_thread(plain, rows)
        if not compiled:
            got = tree._by_thread(coded, rows)
    finally:
        tree._grouped_compiled = original  # type: ignore[assignment]
    if compiled:
        if tree._compiled is None:
            return
        if rows.size:
            assert tree._grouped_compiled(coded, rows) is not None  # the codes taken by group_rows
        got = tree._by_thread(coded, rows)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype


@pytest.mark.parametrize("path", NSYS)
def test_export_loaded_with_thread_codes_equals_the_dense_columns(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load(path)
    with monkeypatch.context() as patch:
        patch.setattr(assembly, "thread_columns", lambda *args: None)
        dense = load(path)
    assert trace.events.equals(dense.events)
    coded_cols, dense_cols = event_columns(trace), event_columns(dense)
    for name in ("pid", "tid"):
        got, want = getattr(coded_cols, name), getattr(dense_cols, name)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.dtype == want.dtype
    if trace.store.has("pid"):
        assert isinstance(trace.store.columns["pid"], CodedColumn)


def _correlated_rows(base: int) -> list[dict]:
    """Launch calls, kernels and copies joined by correlation ids from ``base`` (past 2^31 where it is), among NVTX
    ranges that carry none (the ids then stored sparse)."""
    rows: list[dict] = []
    for i in range(12):
        t = 1000 * i
        corr = base + 7 * i
        rows.append(
            {"kind": "annotation", "name": f"step{i}", "start_ns": t, "end_ns": t + 900, "pid": 1, "tid": 2}
        )
        rows.append(
            {"kind": "annotation", "name": "inner", "start_ns": t + 5, "end_ns": t + 800, "pid": 1, "tid": 2}
        )
        rows.append(
            {"kind": "annotation", "name": "more", "start_ns": t + 6, "end_ns": t + 700, "pid": 1, "tid": 2}
        )
        call = "cudaLaunchKernel" if i % 3 else "cudaMemcpyAsync"
        rows.append(
            {
                "kind": "runtime",
                "name": call,
                "start_ns": t + 10,
                "end_ns": t + 30,
                "pid": 1,
                "tid": 2,
                "correlation_id": corr,
            }
        )
        gpu = (
            {"kind": "kernel", "name": f"k{i % 4}"}
            if i % 3
            else {"kind": "memcpy", "name": "copy", "bytes": 4096, "copy_kind": "HtoD"}
        )
        rows.append(
            {
                **gpu,
                "start_ns": t + 40,
                "end_ns": t + 300,
                "device": 0,
                "stream": 7,
                "pid": 1,
                "correlation_id": corr,
            }
        )
    return rows


@pytest.mark.parametrize("base", [1, 2**31 + 5, 2**32 - 200])
def test_correlation_ids_stored_unsigned_read_as_the_int64_ones(base: int) -> None:
    """The assembly's uint32 sparse ids (assembly._UNSIGNED_IDS) vs the same ids as int64: the store's reads, the
    section's reads of them, and the analysis document."""
    from tracelens.analyses import analyze
    from tracelens.trace import SparseColumn, Trace

    wide, narrow = Trace.from_rows(_correlated_rows(base)), Trace.from_rows(_correlated_rows(base))
    stored = wide.store.columns["correlation_id"]
    assert isinstance(stored, SparseColumn)
    placement = assembly._Placement(stored.rows.copy())
    unsigned = assembly._sparse(placement, pa.chunked_array([stored.values.cast(pa.int64())]), True)
    assert (unsigned.values.type == pa.uint32()) == (base > 2**31)
    dict.__setitem__(narrow.store.columns, "correlation_id", unsigned)
    rows = np.arange(len(wide.store))
    assert narrow.store.column("correlation_id").equals(wide.store.column("correlation_id"))
    assert narrow.store.take("correlation_id", rows[::-1]).equals(
        wide.store.take("correlation_id", rows[::-1])
    )
    np.testing.assert_array_equal(narrow.store.numpy("correlation_id"), wide.store.numpy("correlation_id"))
    assert narrow.store.unique("correlation_id") == wide.store.unique("correlation_id")
    got, want = (
        event_columns(narrow).at("correlation_id", rows),
        event_columns(wide).at("correlation_id", rows),
    )
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    assert analyze(narrow) == analyze(wide)


def test_code_lookup_across_blocks() -> None:
    rng = np.random.default_rng(1)
    for dtype, k in ((np.int8, 5), (np.int16, 300)):
        codes = rng.integers(0, k, 3 * (1 << 16) + 17).astype(dtype)
        table = rng.integers(-(2**40), 2**40, k)
        np.testing.assert_array_equal(code_lookup(table, codes), table[codes])
