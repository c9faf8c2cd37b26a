"""The API calls' thread codes by the compiled pass (sync.py ``row_thread_codes``, _op_tree.c ``row_thread_codes``)
against ``values.dense_codes(thread_key(pid[rows], tid[rows]))``: one row, several threads in runs and interleaved,
negative and 32-bit-edge ids, int32/int64 ids and rows, the most threads (126) and one more (declined), no rows and
thread codes (declined), a row outside the columns (IndexError); and ``_api_calls`` with and without it on fixture
traces."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import sync
from tracelens.analyses.columns import thread_key
from tracelens.values import dense_codes

pytestmark = pytest.mark.skipif(
    not hasattr(sync._compiled, "row_thread_codes"), reason="no compiled op-tree pass"
)


def _ids(rnd: np.random.Generator, size: int, threads: list[tuple[int, int]], dtype: type, runs: bool):
    pick = np.sort(rnd.integers(0, len(threads), size)) if runs else rnd.integers(0, len(threads), size)
    return np.array([threads[p][0] for p in pick], dtype), np.array([threads[p][1] for p in pick], dtype)


CASES = [  # (rows in the table, threads, in runs)
    (1, [(1, 2)], True),
    (500, [(1, 2), (1, 3)], False),
    (2000, [(7, t) for t in (1, 2, -1, 123456, 2**31 - 1, -(2**31))], True),
    (3000, [(p, t) for p in (1, -5) for t in range(30)], False),
    (6000, [(1, t) for t in range(sync.COMPILED_THREADS)], False),  # the most threads
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("id_type", [np.int32, np.int64])
@pytest.mark.parametrize("row_type", [np.int32, np.int64])
def test_row_thread_codes_equal_dense_codes(case: int, id_type: type, row_type: type) -> None:
    size, threads, runs = CASES[case]
    rnd = np.random.default_rng(case)
    pid, tid = _ids(rnd, size, threads, id_type, runs)
    rows = np.flatnonzero(rnd.random(size) < 0.7 if size > 1 else np.ones(1, bool)).astype(row_type)
    got = sync.row_thread_codes(pid, tid, rows)
    assert got is not None
    codes, keys = dense_codes(thread_key(pid[rows], tid[rows]))
    np.testing.assert_array_equal(got[0], codes)
    assert got[0].dtype == np.int8
    np.testing.assert_array_equal(got[1], keys)
    assert got[1].dtype == np.int64


def test_row_thread_codes_declined_and_outside() -> None:
    rnd = np.random.default_rng(9)
    pid, tid = _ids(rnd, 4000, [(1, t) for t in range(sync.COMPILED_THREADS + 1)], np.int64, False)
    assert sync.row_thread_codes(pid, tid, np.arange(4000)) is None  # one thread too many
    assert sync.row_thread_codes(pid, tid, np.zeros(0, np.int64)) is None  # no rows
    assert sync.row_thread_codes(pid.astype(np.int16), tid, np.arange(10)) is None  # other types
    with pytest.raises(IndexError):
        sync.row_thread_codes(pid, tid, np.array([0, 4000], np.int64))


TRACES = [
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("name", TRACES)
def test_api_calls_with_and_without_the_compiled_codes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(fixture_path(name))
    got, got_keys = sync._api_calls(trace)
    monkeypatch.setattr(sync, "row_thread_codes", lambda *args: None)
    want, want_keys = sync._api_calls(trace)
    np.testing.assert_array_equal(got_keys, want_keys)
    for column in ("name", "start", "row", "thread", "blocking", "stream_wait"):
        assert got[column].dtype == want[column].dtype
        np.testing.assert_array_equal(got[column], want[column])
