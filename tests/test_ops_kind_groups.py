"""The op rows of one kind grouped by thread straight from the table (ops/thread_groups.py ``group_kind_rows``,
_op_tree.c ``classify_kind_rows`` / ``place_kind_rows``) against the path it replaces on Kineto traces (the cpu ops
on threads found first, ``kind_rows.cpu_op_rows``, then grouped by ``group_rows_found``), and the op tree's rows
placed at the GPU ops (``place_rows``, compiled) against numpy's masked assignment: empty, one row, every row tied,
1 to 126 threads (127: declined), negative tids (not taken), starts out of order (declined), 4- and 8-byte ids,
rows and outputs; the op tree itself with and without the table-wide grouping on fixture traces."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import ops as _ops  # noqa: F401  (the package imports tree)
from tracelens.analyses.ops import thread_groups, tree
from tracelens.analyses.ops.kind_rows import cpu_op_rows
from tracelens.analyses.ops.thread_groups import KIND_THREADS, group_kind_rows, group_rows_found, place_rows
from tracelens.trace import ALL_KINDS, CPU_OP

compiled = tree._compiled
pytestmark = pytest.mark.skipif(
    compiled is None or not hasattr(compiled, "classify_kind_rows"), reason="no compiled op-tree pass"
)
CPU = ALL_KINDS.index(CPU_OP)


def _columns(
    rnd: random.Random, size: int, threads: list[tuple[int, int]], id_type: type, spread: int
) -> Any:
    start = np.array(sorted(rnd.randint(0, max(size // spread, 0)) for _ in range(size)), np.int64)
    pick = [threads[rnd.randrange(len(threads))] for _ in range(size)]
    kinds = [k for k in range(len(ALL_KINDS))]
    kind = np.array([CPU if rnd.random() < 0.6 else rnd.choice(kinds) for _ in range(size)], np.int8)
    return SimpleNamespace(
        kind=kind,
        pid=np.array([p for p, _ in pick], id_type),
        tid=np.array([t for _, t in pick], np.int64 if id_type is np.int64 else np.int32),
        start=start,
        end=start
        + np.array([rnd.randint(0, 3) for _ in range(size)], np.int64),  # ties ordered longest first
    )


def _reference(cols: Any) -> tuple[np.ndarray, ...] | None:
    """The replaced path: the cpu ops on threads (a numpy mask), grouped by group_rows_found."""
    rows = np.flatnonzero((cols.kind == CPU) & (cols.tid >= 0))
    if rows.size == 0:
        return None
    return group_rows_found(compiled, cols.pid, cols.tid, cols.start, rows, False)


CASES = [  # (rows, thread ids, rows per distinct start: 1 many ties, large few)
    (0, [(1, 2)], 1),
    (1, [(1, 2)], 1),
    (1, [(1, -3)], 1),  # a negative tid: not taken
    (60, [(1, 2)], 10**9),  # one start: every row tied
    (400, [(1, 2), (1, 3)], 2),
    (2000, [(7, t) for t in (1, 2, -1, 123456, 2**31 - 1)], 3),
    (3000, [(p, t) for p in (1, -5) for t in range(30)], 1),
    (6000, [(1, t) for t in range(KIND_THREADS)], 4),  # the most threads
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("id_type", [np.int32, np.int64])
def test_kind_groups_equal_the_gathered_path(case: int, id_type: type) -> None:
    size, threads, spread = CASES[case]
    cols = _columns(random.Random(case), size, threads, id_type, spread)
    got, want = group_kind_rows(compiled, cols), _reference(cols)
    if want is None:  # no cpu op on a thread: declined (the caller's path gives the empty rows)
        assert got is None
        return
    assert got is not None
    assert got[0].dtype == np.int32  # narrowed as the op tree keeps event rows
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] is None
    assert got[3] == want[3]
    np.testing.assert_array_equal(got[4], want[4])
    # and _by_thread orders the ties the same way from either
    for a, b in zip(
        tree._by_thread(cols, got[0], False, got), tree._by_thread(cols, want[0], False, want), strict=True
    ):
        np.testing.assert_array_equal(a, b)


def test_kind_groups_declined() -> None:
    rnd = random.Random(5)
    too_many = _columns(rnd, 3000, [(1, t) for t in range(KIND_THREADS + 1)], np.int32, 2)
    too_many.kind[:] = CPU
    assert group_kind_rows(compiled, too_many) is None
    unordered = _columns(rnd, 500, [(1, 2)], np.int64, 2)
    unordered.kind[:] = CPU
    unordered.start = unordered.start[::-1].copy()
    assert group_kind_rows(compiled, unordered) is None
    # the order checked among the kind's rows only: another kind's start out of order is fine
    mixed = _columns(rnd, 500, [(1, 2)], np.int64, 2)
    mixed.kind[:] = CPU
    mixed.kind[10] = CPU + 1
    mixed.start[10] = -1
    assert group_kind_rows(compiled, mixed) is not None
    wide = _columns(rnd, 50, [(1, 2)], np.int32, 2)
    wide.start = wide.start.astype(np.int32)  # not int64: declined
    assert group_kind_rows(compiled, wide) is None
    assert group_kind_rows(None, _columns(rnd, 50, [(1, 2)], np.int32, 2)) is None  # no compiled pass


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("row_type", [np.int32, np.int64])
@pytest.mark.parametrize("into_type", [np.int32, np.int64])
def test_place_rows_equals_numpy(seed: int, row_type: type, into_type: type) -> None:
    rnd = np.random.default_rng(seed)
    n, size, m = [0, 1, 50, 500, 5000, 20][seed], 3000, [0, 1, 40, 700, 2500, 3000][seed]
    rows = rnd.integers(0, 2**30, n).astype(row_type)
    found = rnd.integers(-1 if n else -1, max(n, 0), m) if n else np.full(m, -1)
    found = found.astype(np.int64)
    at = rnd.permutation(size)[:m].astype(np.int64)
    got, want = np.full(size, -1, into_type), np.full(size, -1, into_type)
    place_rows(compiled, found, rows, at, got)
    hit = found >= 0
    want[at[hit]] = rows[found[hit]]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == into_type


def test_place_rows_outside_raises() -> None:
    into = np.full(4, -1, np.int32)
    with pytest.raises(IndexError):
        place_rows(
            compiled, np.array([3], np.int64), np.arange(3, dtype=np.int32), np.array([0], np.int64), into
        )
    with pytest.raises(IndexError):
        place_rows(
            compiled, np.array([0], np.int64), np.arange(3, dtype=np.int32), np.array([4], np.int64), into
        )


TRACES = [
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "gpu/pairs/launch_after.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("name", TRACES)
def test_op_tree_with_and_without_kind_groups(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(fixture_path(name))
    got = tree._compute_op_tree(trace)
    monkeypatch.setattr(tree, "group_kind_rows", lambda *args: None)
    monkeypatch.setattr(thread_groups, "place_rows", thread_groups.place_rows)
    want = tree._compute_op_tree(trace)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    rows = cpu_op_rows(tree.event_columns(trace))
    assert got[0].size <= rows.size


class _Pairs:
    """A stand-in for launch_pairs' table: ``pairs[matched]`` and its launch columns."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns

    def __getitem__(self, at: np.ndarray) -> dict[str, np.ndarray]:
        return {name: values[at] for name, values in self.columns.items()}


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("id_type", [np.int32, np.int64])
def test_launches_by_thread_equal_numpy(seed: int, id_type: type) -> None:
    rnd = np.random.default_rng(seed)
    size = [0, 1, 2, 50, 400, 3000, 3000, 5000][seed]
    thread_ids = [(1, 2), (1, -1), (7, 2**31 - 1), (-5, 3), (1, 0)][: 1 + seed % 5]
    pick = rnd.integers(0, len(thread_ids), size)
    columns = {
        "pid": np.array([thread_ids[p][0] for p in pick], id_type),
        "tid": np.array([thread_ids[p][1] for p in pick], id_type),
        "launch_start": rnd.integers(-(10**6), 10**12, size),
    }
    pairs = _Pairs(columns)
    matched = np.flatnonzero(rnd.random(size) < 0.8)
    # the op threads: some of the launches' threads (one launch thread without ops), and one without launches
    keys = sorted({int(k) for k in tree.thread_key(columns["pid"], columns["tid"])} | {12345})
    threads = np.array(keys[1:] if len(keys) > 1 else keys, np.int64)
    cols = SimpleNamespace(pid=np.zeros(1, id_type), tid=np.zeros(1, id_type))
    got = thread_groups.launches_by_thread(compiled, cols, threads, pairs, matched)
    want = thread_groups.launches_by_thread(None, cols, threads, pairs, matched)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype == np.int64
        np.testing.assert_array_equal(a, b)
