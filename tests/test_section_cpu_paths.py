"""Issue 28 (CPU of the mid-sized sections): each shortcut against the computation it replaces.

- dense_thread_codes (threads read from an Nsight export's thread codes) vs values.dense_codes of the rows'
  thread keys; host's thread count from the codes seen (a comparison per code not seen yet, or a scatter) vs the
  keys of every row;
- devices.busy_by_kind given the busy union's length (copies only by overlap, memsets only as the remainder) vs
  the subtractions and merge it skips, on proper intervals with ties, touching and zero-length ones, and rows
  ending before they start (which take the subtractions);
- memcpy.member_ids (wanted ids sorted once) vs np.isin;
- communication.device_without_collectives given the busy union's length (and span) vs its unions of kernels and of
  copies;
- occupancy.empty_sm_ns_at (empty shares per table entry, then gathered) vs empty_sm_ns_each of the gathered fills
  (the per-slot counts and sums of occupancy_report are checked by the golden outputs);
- sync's GPU waits per sync kind by dictionary codes vs the pandas groupby of the kinds as strings.
"""

from __future__ import annotations

import numpy as np
import pytest

from tracelens import intervals
from tracelens.analyses import memcpy
from tracelens.analyses.coded import CodedInts
from tracelens.analyses.columns import thread_key
from tracelens.analyses.devices import busy_by_kind
from tracelens.analyses.host import _chunk_threads
from tracelens.analyses.thread_codes import (
    codes_seen,
    dense_thread_codes,
    mark_codes_where,
    shared_thread_codes,
)
from tracelens.trace import ALL_KINDS, KERNEL, MEMCPY, MEMSET
from tracelens.values import dense_codes, distinct


def _coded(rng: np.random.Generator, threads: int, rows: int) -> tuple[CodedInts, CodedInts]:
    pid = rng.integers(-1, 4, threads).astype(np.int32)
    tid = rng.integers(-1, 9, threads).astype(np.int32)
    codes = rng.integers(0, threads, rows).astype(np.int8 if threads <= 127 else np.int16)
    return CodedInts(codes, pid), CodedInts(codes, tid)


@pytest.mark.parametrize("threads", [1, 2, 5, 200])
@pytest.mark.parametrize("rows", [0, 1, 7, 1000])
def test_dense_thread_codes_equal_dense_codes_of_keys(threads: int, rows: int) -> None:
    rng = np.random.default_rng(threads * 1000 + rows)
    pid, tid = _coded(rng, threads, rows)
    for picked in (np.arange(rows), np.flatnonzero(rng.random(rows) < 0.3), np.zeros(0, np.int64)):
        got = dense_thread_codes(pid, tid, picked)
        assert got is not None
        want_codes, want_keys = dense_codes(thread_key(np.asarray(pid)[picked], np.asarray(tid)[picked]))
        np.testing.assert_array_equal(got[1], want_keys)
        np.testing.assert_array_equal(got[0], want_codes)


def test_dense_thread_codes_only_for_shared_codes() -> None:
    rng = np.random.default_rng(3)
    pid, tid = _coded(rng, 3, 10)
    assert dense_thread_codes(np.asarray(pid), np.asarray(tid), np.arange(10)) is None
    other = CodedInts(pid.codes.copy(), tid.table)  # equal codes, another array: not one thread column
    assert shared_thread_codes(pid, other) is None
    assert shared_thread_codes(pid, tid) is pid.codes


@pytest.mark.parametrize("threads", [1, 3, 16, 17, 40])
def test_host_threads_from_codes_seen(threads: int) -> None:
    rng = np.random.default_rng(threads)
    pid, tid = _coded(rng, threads, 5000)
    chunks = [np.flatnonzero(rng.random(5000) < 0.2) for _ in range(3)]
    seen = np.zeros(threads, bool)
    for rows in chunks:
        codes_seen(pid.codes, rows, threads, seen)
    marked = np.zeros(threads, bool)
    for rows in chunks:  # by masks of the whole column, as host_summary's chunks give them
        mask = np.zeros(5000, bool)
        mask[rows] = True
        mark_codes_where(pid.codes, mask, marked)
    np.testing.assert_array_equal(marked, seen)
    picked = np.flatnonzero(seen)
    got = _chunk_threads(pid.table[picked], tid.table[picked])
    rows = np.concatenate(chunks)
    p, t = np.asarray(pid)[rows], np.asarray(tid)[rows]
    known = (p >= 0) & (t >= 0)
    want = distinct(thread_key(p[known], t[known]))
    assert sorted(got.tolist()) == sorted(want.tolist())


def _busy_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    s, e = intervals.merge(starts, ends)
    return int((e - s).sum())


@pytest.mark.parametrize("seed", range(40))
def test_busy_by_kind_with_busy_union_equals_subtractions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    starts = rng.integers(0, 120, n)
    ends = starts + rng.integers(0, 12, n)  # zero-length, touching and tied intervals
    improper = seed % 5 == 4 and n > 0
    if improper:  # a row ending before it starts: the subtractions decide
        ends[0] = starts[0] - 3
    codes = np.array([ALL_KINDS.index(k) for k in (KERNEL, MEMCPY, MEMSET)])[rng.integers(0, 3, n)]
    want = busy_by_kind(starts, ends, codes)
    assert busy_by_kind(starts, ends, codes, _busy_ns(starts, ends)) == want
    if not improper:
        kernel = codes == ALL_KINDS.index(KERNEL)
        assert want[0] == _busy_ns(starts[kernel], ends[kernel])
        assert sum(want) == _busy_ns(starts, ends)


def test_busy_by_kind_one_kind_and_empty() -> None:
    empty = np.zeros(0, np.int64)
    assert busy_by_kind(empty, empty, empty.astype(np.int8), 0) == (0, 0, 0)
    s, e = np.array([5, 5, 9]), np.array([8, 7, 9])
    for k in (KERNEL, MEMCPY, MEMSET):
        codes = np.full(3, ALL_KINDS.index(k))
        assert busy_by_kind(s, e, codes, 3) == busy_by_kind(s, e, codes)


@pytest.mark.parametrize("spread", [10, 10**9])  # the dense table and the hashed low bits
def test_member_ids_equal_isin(spread: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(spread % 97)
    monkeypatch.setattr(memcpy, "MEMBER_BLOCK", 64)  # several blocks
    values = rng.integers(0, spread, 1000)
    wanted = np.concatenate([rng.choice(values, 300), rng.integers(0, spread, 50), rng.choice(values, 20)])
    for v, w in ((values, wanted), (values[:1], wanted), (values, wanted[:1]), (values, wanted[:0])):
        np.testing.assert_array_equal(memcpy.member_ids(v, w), np.isin(v, w))


@pytest.mark.parametrize("seed", range(30))
def test_device_without_collectives_from_busy_union_equals_unions(seed: int) -> None:
    from tracelens.analyses.communication import device_without_collectives

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    starts = rng.integers(0, 100, n)
    ends = starts + rng.integers(0, 10, n)
    if seed % 6 == 5 and n:  # a row ending before it starts: the unions decide
        ends[-1] = starts[-1] - 2
    device = rng.integers(0, 2, n)
    is_kernel = rng.random(n) < 0.6
    for dev in (0, 1):
        on = device == dev
        busy = _busy_ns(starts[on], ends[on])
        want = device_without_collectives(starts, ends, on.copy(), is_kernel)
        assert device_without_collectives(starts, ends, on.copy(), is_kernel, busy) == want
        if on.any():  # the span and properness given, as device_busy and one pass over every op give them
            span = int(ends[on].max()) - int(starts[on].min())
            proper = True if bool((ends >= starts).all()) else None
            got = device_without_collectives(starts, ends, on.copy(), is_kernel, busy, span, proper)
            assert got == want


@pytest.mark.parametrize("seed", range(20))
def test_empty_sm_ns_at_equals_per_launch_fills(seed: int) -> None:
    from tracelens.analyses.occupancy import empty_sm_ns_at, empty_sm_ns_each

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 50))
    if seed % 2:  # one at a time (the shortcut's case)
        gaps = rng.integers(1, 5, n)
        lengths = rng.integers(0, 9, n)
        starts = np.cumsum(gaps + np.r_[0, lengths[:-1]]) if n else np.zeros(0, np.int64)
        ends = starts + lengths
    else:  # overlapping
        starts = rng.integers(0, 60, n)
        ends = starts + rng.integers(0, 20, n)
    tables = [rng.random(8) * 1.4 - 0.1, rng.random(8) / 3 + 1e-10]
    if seed % 5 == 3:
        tables[1][2] = np.nan
    at = rng.integers(0, 8, n)
    want = empty_sm_ns_each(starts, ends, [t[at] for t in tables])
    got = empty_sm_ns_at(starts, ends, tables, at)
    assert [x.hex() if x == x else "nan" for x in got] == [x.hex() if x == x else "nan" for x in want]


@pytest.mark.parametrize(
    "path",
    [
        "fixtures/nsys/handmade_nsys2026.sqlite",
        "fixtures/kineto/bare_list.json",
        "fixtures/demo.pt.trace.json.gz",
    ],
)
def test_gpu_waits_by_codes_equal_groupby_of_kind_strings(path: str) -> None:
    from pathlib import Path

    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    import tracelens
    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.sync import _gpu_waits
    from tracelens.trace import GPU_SYNC

    trace = tracelens.load(Path(__file__).resolve().parents[1] / path)
    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(GPU_SYNC))
    kinds = pc.fill_null(pc.cast(trace.take("sync_kind", rows), pa.string()), "unknown").to_pylist()
    duration = cols.end[rows] - cols.start[rows]
    grouped = pd.DataFrame({"kind": np.array(kinds, dtype=object), "dur": duration}).groupby("kind")["dur"]
    want = [
        {"sync_kind": k, "count": int(r["count"]), "total_ns": int(r["sum"])}
        for k, r in grouped.agg(["count", "sum"]).iterrows()
    ]
    assert _gpu_waits(trace, rows) == want
    assert _gpu_waits(trace, rows[:0]) == []
