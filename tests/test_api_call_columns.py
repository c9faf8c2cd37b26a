"""The API calls' columns by the compiled walk (api_call_columns.py, ``_op_tree.call_columns``) against numpy
(a mask, gathers and ``dense_codes(thread_key(...))``) and sync's ``_api_calls`` with and without it."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from tracelens.analyses import api_call_columns, sync
from tracelens.analyses.columns import thread_key
from tracelens.values import dense_codes

needs_build = pytest.mark.skipif(
    api_call_columns._compiled is None or not hasattr(api_call_columns._compiled, "call_columns"),
    reason="the compiled op-tree pass is not built",
)
CODES = (3, 4)


def _columns(
    rnd: np.random.Generator, n: int, threads: list[tuple[int, int]], pid_type: type, tid_type: type
):
    kind = rnd.choice(np.array([0, 3, 4, 6], np.int8), n)
    name = rnd.integers(-1, 50, n).astype(np.int32)
    start = rnd.integers(-(10**12), 10**12, n).astype(np.int64)
    at = rnd.integers(0, len(threads), n)
    pid = np.array([p for p, _ in threads], np.int64)[at].astype(pid_type)
    tid = np.array([t for _, t in threads], np.int64)[at].astype(tid_type)
    return kind, name, start, pid, tid


def _check(kind, name, start, pid, tid) -> None:  # type: ignore[no-untyped-def]
    got = api_call_columns.call_columns(kind, CODES, name, start, pid, tid)
    assert got is not None
    rows = np.flatnonzero(np.isin(kind, CODES))
    codes, keys = dense_codes(thread_key(pid[rows], tid[rows]))
    want = (rows.astype(np.int32), name[rows], start[rows], codes.astype(np.int8), keys)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@needs_build
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pid_type", [np.int32, np.int64])
@pytest.mark.parametrize("tid_type", [np.int32, np.int64])
def test_call_columns_is_numpy(seed: int, pid_type: type, tid_type: type) -> None:
    rnd = np.random.default_rng(seed)
    threads = [(7, 1), (7, -3), (2**31 - 1, 2**31 - 1), (-5, 0), (1, 2**31 - 1)][: 1 + seed]
    _check(*_columns(rnd, int(rnd.integers(1, 5000)), threads, pid_type, tid_type))


@needs_build
def test_call_columns_edges() -> None:
    one = [
        np.array([x], t)
        for x, t in ((3, np.int8), (5, np.int32), (9, np.int64), (1, np.int32), (2, np.int64))
    ]
    _check(*one)  # one row, one call
    rnd = np.random.default_rng(1)
    # the most threads, every row a call (ties: rows in runs of one thread and interleaved)
    threads = [(1, t) for t in range(api_call_columns.COMPILED_THREADS)]
    kind, name, start, pid, tid = _columns(rnd, 3000, threads, np.int32, np.int64)
    _check(np.full(3000, 4, np.int8), name, start, np.sort(pid), tid)
    _check(np.full(3000, 3, np.int8), name, start, pid, tid)


@needs_build
def test_call_columns_declines() -> None:
    rnd = np.random.default_rng(2)
    threads = [(1, t) for t in range(api_call_columns.COMPILED_THREADS + 1)]
    kind, name, start, pid, tid = _columns(rnd, 4000, threads, np.int32, np.int64)
    assert api_call_columns.call_columns(np.full(4000, 3, np.int8), CODES, name, start, pid, tid) is None
    assert (
        api_call_columns.call_columns(np.zeros(4000, np.int8), CODES, name, start, pid, tid) is None
    )  # no call
    kind, name, start, pid, tid = _columns(rnd, 100, [(1, 1)], np.int32, np.int64)
    assert api_call_columns.call_columns(kind, CODES, name, start, pid, tid) is not None
    assert api_call_columns.call_columns(kind, CODES, name.astype(np.int64), start, pid, tid) is None
    assert api_call_columns.call_columns(kind, CODES, name, start, pid.astype(np.int16), tid) is None
    assert api_call_columns.call_columns(kind[:10], CODES, name, start, pid, tid) is None
    with mock.patch.object(api_call_columns, "_compiled", None):
        assert api_call_columns.call_columns(kind, CODES, name, start, pid, tid) is None


TRACES = [
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("name", TRACES)
def test_api_calls_with_and_without_the_walk(name: str) -> None:
    import tracelens
    from tests.conftest import fixture_path

    trace = tracelens.load(fixture_path(name))
    got, got_keys = sync._api_calls(trace)
    got_section = sync.section(trace, {})
    with mock.patch.object(api_call_columns, "_compiled", None):
        want, want_keys = sync._api_calls(trace)
        assert got_section == sync.section(trace, {})
    np.testing.assert_array_equal(got_keys, want_keys)
    for column in ("name", "start", "row", "thread", "blocking", "stream_wait"):
        assert got[column].dtype == want[column].dtype
        np.testing.assert_array_equal(got[column], want[column])
