"""grouping.thread_chunks where the kind has few rows (found once, each sampled thread's picked among them) gives
the very chunks of the scan of the table per thread: the same rows, thread keys, counts and slices, in the same
order, including threads the sample misses, unknown pids and tids, and chunks smaller than a thread's rows (the
scan then)."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import grouping


def _chunks(cols: mock.Mock, count: int, chunk: int, few: int) -> list[tuple]:
    with mock.patch.object(grouping, "FEW_SCAN_ROWS", few):
        return list(grouping.thread_chunks(cols, 3, count, chunk))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 3), st.booleans()), max_size=50),
    st.sampled_from([1, 2, 3, 4096]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from([1, 3, 1 << 20]),
    st.sampled_from([1, 2, 5, 1 << 20]),
    st.sampled_from([np.int32, np.int64]),
)
def test_few_rows_give_the_scans_chunks(
    table: list, sample: int, scan: int, block: int, chunk: int, tid_type: type
) -> None:
    pid = np.array([p for p, _, _ in table], np.int32)
    tid = np.array([t for _, t, _ in table], tid_type)
    kind = np.where([r for _, _, r in table], 3, 0).astype(np.int8)
    cols = mock.Mock(pid=pid, tid=tid, kind=kind)
    count = int(np.count_nonzero(kind == 3))
    with (
        mock.patch.object(grouping, "THREAD_SAMPLE", sample),
        mock.patch.object(grouping, "SCAN_THREADS", scan),
        mock.patch.object(grouping, "SCAN_BLOCK_ROWS", block),
    ):
        few = _chunks(cols, count, chunk, 1 << 17)
        scanned = _chunks(cols, count, chunk, 0)
    assert len(few) == len(scanned)
    for got, expected in zip(few, scanned, strict=True):
        for a, b in zip(got[:3], expected[:3], strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        assert got[3] == expected[3]


def test_no_rows_of_the_kind() -> None:
    cols = mock.Mock(pid=np.zeros(0, np.int32), tid=np.zeros(0, np.int64), kind=np.zeros(0, np.int8))
    assert _chunks(cols, 0, 8, 1 << 17) == _chunks(cols, 0, 8, 0) == []
