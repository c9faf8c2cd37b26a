"""The lean-memory paths of the ranges, memcpy and communication sections against the code they replaced (or
the direct computation): block scans of the table, chunks of ranges per thread, launches read from the launch
pairs, a device's unions read by mask."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import blocks, communication, grouping, memcpy, ranges
from tracelens.analyses.communication import device_communication, device_without_collectives
from tracelens.trace import Trace

# --- blocks: positions among the rows of some kinds, a block of the table at a time -----------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-1, 4), max_size=60),
    st.sampled_from([(1,), (2,), (1, 3)]),
    st.sampled_from([1, 2, 5, 1 << 21]),
    st.data(),
)
def test_rows_of_kind_at_and_count_of_kind(
    kinds: list, codes: tuple, block: int, data: st.DataObject
) -> None:
    kind = np.array(kinds, np.int8)
    every = np.flatnonzero(np.isin(kind, codes))
    positions = np.array(
        sorted(data.draw(st.sets(st.integers(0, max(every.size - 1, 0)), max_size=every.size))), np.int64
    )
    with mock.patch.object(blocks, "BLOCK_ROWS", block):
        got = blocks.rows_of_kind_at(kind, codes, positions)
        count = blocks.count_of_kind(kind, codes[0])
    assert got.tolist() == every[positions].tolist()
    assert count == int(np.count_nonzero(kind == codes[0]))


# --- grouping.thread_chunks: the ranges in chunks, against rows_by_thread's order -------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 3), st.booleans()), max_size=40),
    st.sampled_from([1, 2, 3, 4096]),
    st.sampled_from([0, 1, 2, 4]),
    st.sampled_from([1, 3, 1 << 20]),
    st.sampled_from([1, 2, 5, 1 << 20]),
)
def test_thread_chunks_cut_the_stable_thread_order(
    table: list, sample: int, scan: int, block: int, chunk: int
) -> None:
    # pid, tid (-1: unknown) and whether the row is a range (kind 3); a sample that may miss threads, scans of
    # up to 0-4 threads, table blocks and chunks of a few rows
    pid = np.array([p for p, _, _ in table], np.int32)
    tid = np.array([t for _, t, _ in table], np.int32)
    kind = np.where([r for _, _, r in table], 3, 0).astype(np.int8)
    cols = mock.Mock(pid=pid, tid=tid, kind=kind)
    rows = np.flatnonzero(kind == 3)
    order, run_keys, run_lengths = grouping.thread_runs(grouping.thread_key(pid[rows], tid[rows]))
    expected = rows[order]
    expected_keys = np.repeat(run_keys, run_lengths)
    with (
        mock.patch.object(grouping, "THREAD_SAMPLE", sample),
        mock.patch.object(grouping, "SCAN_THREADS", scan),
        mock.patch.object(grouping, "SCAN_BLOCK_ROWS", block),
    ):
        chunks = list(grouping.thread_chunks(cols, 3, rows.size, chunk))
    got = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, np.int64)
    got_keys = np.concatenate([np.repeat(c[1], c[2]) for c in chunks]) if chunks else np.zeros(0, np.int64)
    # every range once; the threads in ascending key order where one scan found them all, each thread's rows in
    # row order; each chunk's run lengths count its rows, each run's rows are of its thread
    assert sorted(got.tolist()) == rows.tolist()
    assert all(c[2].sum() == c[0].size for c in chunks)
    assert np.array_equal(got_keys, grouping.thread_key(pid[got], tid[got]))
    for key in np.unique(expected_keys):
        assert got[got_keys == key].tolist() == expected[expected_keys == key].tolist()
    if sample == 4096:  # a sample of every row misses no thread: rows_by_thread's order itself
        assert got.tolist() == expected.tolist()


# --- range_summary: the block scan, the one-op launches and the chunked covered times against the other paths --


@st.composite
def _range_rows(draw: st.DrawFn) -> list[dict]:
    def host(kind: str, name: str, start: int, end: int, tid: int, **extra: object) -> dict:
        return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}

    rows: list[dict] = []
    for _ in range(draw(st.integers(1, 14))):  # ranges on threads 1-3 (thread 3 never launches)
        start = draw(st.integers(0, 120))
        name = draw(st.sampled_from(["alpha", "beta", "gamma"]))
        rows.append(
            host("annotation", name, start, start + draw(st.integers(-5, 60)), draw(st.integers(1, 3)))
        )
    graph = draw(st.booleans())  # launch calls of several ops (the per-launch reductions) or one op each
    for corr in range(1, draw(st.integers(0, 10)) + 1):
        t = draw(st.integers(0, 150))
        rows.append(
            host("runtime", "cudaLaunchKernel", t, t + 2, draw(st.integers(1, 2)), correlation_id=corr)
        )
        for _ in range(draw(st.integers(1, 2)) if graph else 1):
            ks = draw(st.integers(0, 200))
            rows.append(
                {
                    "kind": "kernel",
                    "name": "k",
                    "start_ns": ks,
                    "end_ns": ks + draw(st.integers(1, 30)),
                    "device": draw(st.integers(0, 1)),
                    "stream": 7,
                    "correlation_id": corr,
                }
            )
    return rows


@settings(max_examples=80, deadline=None)
@given(_range_rows(), st.sampled_from([1, 2, 1 << 20]), st.sampled_from([1, 3, 1 << 20]))
def test_range_summary_paths_agree(rows: list[dict], chunk: int, block: int) -> None:
    trace = Trace.from_rows(rows)
    expected = ranges.range_summary(trace)
    # the rows of every range gathered first (the path of traces whose times do not pack), launches always
    # reduced per launch call; small chunks of ranges and of launches, table blocks, a sample of a few rows
    with (
        mock.patch.object(ranges, "thread_chunks", _rows_in_chunks),
        mock.patch.object(ranges, "_one_op_launches", lambda pairs: None),
    ):
        assert ranges.range_summary(Trace.from_rows(rows)) == expected
    with (
        mock.patch.object(ranges, "CHUNK_RANGES", chunk),
        mock.patch.object(ranges, "COVER_CHUNK", chunk),
        mock.patch.object(grouping, "SCAN_BLOCK_ROWS", block),
        mock.patch.object(grouping, "THREAD_SAMPLE", 1),
    ):
        assert ranges.range_summary(Trace.from_rows(rows)) == expected


def _rows_in_chunks(cols, code, count, chunk):  # noqa: ANN001, ANN202 (the reference path of thread_chunks)
    rows, keys, lengths = grouping.rows_by_thread(cols, cols.kind == code)
    return grouping.cut_in_chunks(rows, keys, lengths, chunk)


# --- communication: a device without collectives read by mask, against device_communication ------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.integers(0, 30), st.booleans(), st.integers(0, 1)),
        min_size=1,
        max_size=25,
    ),
    st.booleans(),
)
def test_device_without_collectives_matches_device_communication(rows: list, backwards: bool) -> None:
    starts = np.array([s for s, _, _, _ in rows], np.int64)
    ends = starts + np.array([d for _, d, _, _ in rows], np.int64)
    if backwards:  # a row ending before it starts: the fallback path
        ends[-1] = starts[-1] - 5
    is_kernel = np.array([k for _, _, k, _ in rows])
    device = np.array([d for _, _, _, d in rows])
    for dev in np.unique(device):
        sel = device == dev
        n = int(sel.sum())
        expected = device_communication(
            starts[sel], ends[sel], np.zeros(n, bool), is_kernel[sel], np.full(n, "", object)
        )
        assert device_without_collectives(starts, ends, sel, is_kernel) == expected


def test_communication_report_reads_no_whole_table_mask_without_collectives() -> None:
    # two devices, kernels and copies, no collective: the report from the launch pairs' columns equals the
    # per-device figures of the rows gathered
    rows = [
        {"kind": "kernel", "name": "k", "start_ns": s, "end_ns": s + d, "device": dev, "stream": 7}
        for s, d, dev in [(0, 10, 0), (5, 10, 0), (30, 5, 1), (40, 3, 0)]
    ] + [
        {"kind": "memcpy", "name": "Memcpy HtoD", "start_ns": s, "end_ns": s + d, "device": dev, "stream": 8}
        for s, d, dev in [(8, 10, 0), (50, 5, 1)]
    ]
    out = communication.communication_report(Trace.from_rows(rows))
    starts = np.array([0, 5, 8, 30, 40, 50], np.int64)
    ends = np.array([10, 15, 18, 35, 43, 55], np.int64)
    kernel = np.array([True, True, False, True, True, False])
    device = np.array([0, 0, 0, 1, 0, 1])
    for entry in out["devices"]:
        sel = device == entry["device"]
        n = int(sel.sum())
        expected = device_communication(
            starts[sel], ends[sel], np.zeros(n, bool), kernel[sel], np.zeros(n, object)
        )
        assert {k: entry[k] for k in expected} == expected
    assert [d["breakdown"]["memcpy_exposed_ns"] for d in out["devices"]] == [3, 5]


# --- memcpy: the launching calls found a block of the table at a time ------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["runtime", "driver"]), st.integers(1, 6)), max_size=12))
def test_memcpy_report_is_the_same_whatever_the_block(calls: list) -> None:
    rows = [
        {
            "kind": kind,
            "name": "cudaMemcpyAsync" if i % 2 else "cuMemcpyHtoD",
            "start_ns": 10 * i,
            "end_ns": 10 * i + 1,
            "pid": 1,
            "tid": 1,
            "correlation_id": corr,
        }
        for i, (kind, corr) in enumerate(calls)
    ] + [
        {
            "kind": "memcpy",
            "name": "Memcpy HtoD",
            "start_ns": 200 + 10 * corr,
            "end_ns": 205 + 10 * corr,
            "device": 0,
            "stream": 1,
            "bytes": 10,
            "copy_kind": "HtoD",
            "correlation_id": corr,
            "pid": 1,
        }
        for corr in range(1, 7)
    ]
    expected = memcpy.memcpy_report(Trace.from_rows(rows))
    with mock.patch.object(blocks, "BLOCK_ROWS", 2):
        assert memcpy.memcpy_report(Trace.from_rows(rows)) == expected
    assert (
        expected["launch"]["async_count"]
        + expected["launch"]["sync_count"]
        + expected["launch"]["unknown_count"]
        == 6
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 12), st.integers(0, 1), st.booleans()), max_size=40
    ),
    st.sampled_from([1, 2, 3, 7, 1 << 20]),
    st.booleans(),
)
def test_kernel_union_is_the_merge_of_the_device_kernels(ops: list, block: int, in_order: bool) -> None:
    if in_order:
        ops = sorted(ops)
    starts = np.array([s for s, _, _, _ in ops], np.int64)
    ends = starts + np.array([d for _, d, _, _ in ops], np.int64)
    device = np.array([d for _, _, d, _ in ops], np.int8)
    is_kernel = np.array([k for _, _, _, k in ops], bool)
    for dev in (0, 1):
        mine = (device == dev) & is_kernel
        expected = intervals.merge(starts[mine], ends[mine])
        with mock.patch.object(memcpy, "UNION_BLOCK_OPS", block):
            got = memcpy._kernel_union(device, is_kernel, lambda at: (starts[at], ends[at]), dev)
        assert got[0].tolist() == expected[0].tolist()
        assert got[1].tolist() == expected[1].tolist()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(-5, 3000), max_size=50),
    st.lists(st.integers(0, 3000), max_size=20),
    st.sampled_from([1, 3, 1 << 20]),
    st.booleans(),
)
def test_member_ids_in_blocks(values: list, wanted: list, block: int, hashed: bool) -> None:
    v, w = np.array(values, np.int64), np.array(wanted, np.int64)
    # a dense table of ids, or (a tiny dense limit) the low-bits filter
    with (
        mock.patch.object(memcpy, "MEMBER_BLOCK", block),
        mock.patch.object(memcpy, "DENSE_IDS_MIN", 0 if hashed else 1 << 20),
        mock.patch.object(memcpy, "DENSE_IDS_PER_VALUE", 0 if hashed else 4),
    ):
        assert memcpy.member_ids(v, w).tolist() == np.isin(v, w).tolist()
