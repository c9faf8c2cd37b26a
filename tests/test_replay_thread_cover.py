"""The idle gaps' coverage of several threads in one pass (wake_edges._covered_natively, _replay_solve.c
thread_union_overlap) against a mask and a pass per thread (wake_edges._of_thread_key, wake_edges._covered_by_rows: the
reference), on random rows: several threads, own and other kinds, negative tids, 32- and 64-bit pid and tid
columns, overlapping and touching rows, empty gaps."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tracelens.analyses.columns import thread_key
from tracelens.replay import engine
from tracelens.replay import wake_edges as W
from tracelens.trace import ALL_KINDS, RUNTIME

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")


def _columns(rng: np.random.Generator, n: int, pid_type: type, tid_type: type) -> SimpleNamespace:
    kinds = np.array([ALL_KINDS.index(k) for k in (W.CPU_OP, W.PYTHON, RUNTIME)], np.int8)
    kind = kinds[rng.integers(0, kinds.size, n)]
    start = np.sort(rng.integers(0, 1_000, n)).astype(np.int64)
    end = start + rng.integers(0, 120, n)
    pid = rng.choice(np.array([1, 7, -3]), n).astype(pid_type)
    tid = rng.choice(np.array([5, 6, -1, 2**31 - 1]), n).astype(tid_type)

    def of_kind(*names: str) -> np.ndarray:
        return np.isin(kind, [ALL_KINDS.index(k) for k in names])

    return SimpleNamespace(kind=kind, start=start, end=end, pid=pid, tid=tid, of_kind=of_kind)


def _reference(cols: SimpleNamespace, waiting: np.ndarray, keys: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    covered = np.zeros(keys.size, np.int64)
    is_own = cols.of_kind(W.CPU_OP, W.PYTHON) & (cols.tid >= 0)
    halves = W._thread_key_halves(cols)
    for key in waiting:
        own = W._of_thread_key(halves, is_own, int(key))
        mine = np.flatnonzero(own)
        us, ue = W.intervals.merge(cols.start[mine], cols.end[mine])
        at = keys == key
        covered[at] = W.intervals.overlap_with_union(lo[at], hi[at], us, ue)
    return covered


@native
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("types", [(np.int64, np.int32), (np.int32, np.int32), (np.int64, np.int64)])
def test_threads_coverage_in_one_pass_equals_a_pass_per_thread(seed: int, types: tuple[type, type]) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 200))
    cols = _columns(rng, n, *types)
    threads = np.unique(thread_key(np.array([1, 7, 1, -3], types[0]), np.array([5, 6, 6, -1], types[1])))
    waiting = np.sort(rng.choice(threads, int(rng.integers(1, threads.size + 1)), replace=False))
    # each thread's gaps in time order, not overlapping (some empty), thread by thread
    parts_keys, parts_lo, parts_hi = [], [], []
    for key in waiting:
        edges = np.sort(rng.integers(0, 1_200, 2 * int(rng.integers(0, 6))))
        parts_lo.append(edges[0::2])
        parts_hi.append(edges[1::2])
        parts_keys.append(np.full(edges.size // 2, key, np.int64))
    keys, lo, hi = (np.concatenate(p).astype(np.int64) for p in (parts_keys, parts_lo, parts_hi))
    if keys.size == 0:
        return
    got = W._covered_natively(cols, waiting, keys, lo, hi)
    assert got is not None
    np.testing.assert_array_equal(got, _reference(cols, waiting, keys, lo, hi))


@native
def test_rows_out_of_start_order_are_left_to_the_reference() -> None:
    rng = np.random.default_rng(0)
    cols = _columns(rng, 50, np.int64, np.int32)
    cols.start = cols.start[::-1].copy()
    cols.end = cols.start + 10
    cols.kind[:] = ALL_KINDS.index(W.CPU_OP)
    cols.tid[:], cols.pid[:] = 5, 1
    key = thread_key(np.array([1]), np.array([5], np.int32))
    assert W._covered_natively(cols, key, key, np.array([0]), np.array([2_000])) is None
