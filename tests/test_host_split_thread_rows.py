"""host_split._thread_rows (the host rows of some threads: a comparison per thread for a few of them, boolean
selections, times gathered a chunk of positions at a time) against the selection it replaced (an index array of
the rows picked, one gather), on random host rows."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import host_split


def _reference(rows: SimpleNamespace, thread_set: np.ndarray) -> tuple[np.ndarray, ...]:
    chosen = np.zeros(len(rows.threads), bool)
    chosen[thread_set] = True
    mine = np.flatnonzero(chosen[rows.thread])
    at = rows.row[mine]
    return rows.category[mine], rows.cols.start[at], rows.cols.end[at], rows.sync_copy[mine]


@settings(max_examples=60, deadline=None)
@given(
    threads=st.integers(1, 20),
    size=st.integers(0, 300),
    seed=st.integers(0, 2**32 - 1),
    chunk=st.sampled_from([1, 7, 1 << 20]),
    code_type=st.sampled_from([np.int8, np.int16, np.int32]),
)
def test_thread_rows_equal_the_index_selection(
    threads: int, size: int, seed: int, chunk: int, code_type: type
) -> None:
    rng = np.random.default_rng(seed)
    events = 2 * size + 1
    start = rng.integers(0, 10**9, events)
    rows = SimpleNamespace(
        cols=SimpleNamespace(start=start, end=start + rng.integers(0, 1000, events)),
        row=np.sort(rng.choice(events, size, replace=False)).astype(np.int32),
        category=rng.integers(0, 4, size).astype(np.int8),
        thread=rng.integers(0, threads, size).astype(code_type),
        sync_copy=rng.random(size) < 0.2,
        threads=pd.DataFrame({"pid": np.zeros(threads, np.int32), "tid": np.arange(threads, dtype=np.int32)}),
    )
    thread_set = np.sort(rng.choice(threads, int(rng.integers(1, threads + 1)), replace=False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(host_split, "GATHER_CHUNK", chunk)
        got = host_split._thread_rows(rows, thread_set)  # type: ignore[arg-type]
    for g, w in zip(got, _reference(rows, thread_set), strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)
