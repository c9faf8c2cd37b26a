"""The Nsight assembly's time order by the compiled merge of sorted runs (``_merge_search.merge_runs``,
``assembly._merge_order``) against a stable sort of the concatenated starts (``assembly._sort_order``, the path
without the extension): the same sorted starts, origin and rank, ties kept in table order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tracelens.ingest.nsys import assembly
from tracelens.ingest.nsys.columns import Part, narrowest

compiled: Any = assembly._compiled
needs_compiled = pytest.mark.skipif(compiled is None, reason="no C compiler at install time")


def _reference(values: list[np.ndarray], index: type) -> tuple[np.ndarray, np.ndarray]:
    joined = np.concatenate(values) if values else np.empty(0, np.int64)
    order = np.argsort(joined, kind="stable")
    rank = np.empty(joined.size, index)
    rank[order] = np.arange(joined.size)
    return joined[order], rank


@needs_compiled
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_merge_runs_equals_a_stable_sort(index: type) -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        sizes = rng.integers(0, 40, rng.integers(0, 7))
        runs = [np.sort(rng.integers(-5, 20, s)) for s in sizes]  # few distinct values: many ties
        bases = [int(b) for b in np.cumsum([0, *sizes])[:-1]]
        expected_values, expected_rank = _reference(runs, index)
        out = np.full(expected_values.size, 99, np.int64)
        rank = np.full(expected_values.size, -1, index)
        compiled.merge_runs(runs, [None] * len(runs), bases, out, rank, 0, -5)
        assert np.array_equal(out, expected_values + 5)
        assert np.array_equal(rank, expected_rank)


@needs_compiled
def test_merge_runs_with_listed_rows_and_an_output_range() -> None:
    """A run given with its rows (a sorted unsorted table), and a range written after ``out_base``."""
    values = np.array([5, 1, 3, 3, 0], np.int64)
    order = np.argsort(values, kind="stable")
    rank = np.full(7, -1, np.int64)
    out = np.zeros(9, np.int64)
    compiled.merge_runs(
        [values[order], np.array([3, 4], np.int64)],
        [order.astype(np.int64), None],
        [0, 5],
        out[2:],
        rank,
        2,
        0,
    )
    # (value, row): (0,4) (1,1) (3,2) (3,3) (3,5) (4,6) (5,0), written from 2 on
    assert out[2:].tolist() == [0, 1, 3, 3, 3, 4, 5]
    assert rank.tolist() == [8, 3, 4, 5, 2, 6, 7]


@needs_compiled
def test_merge_runs_refuses_rows_outside_the_rank() -> None:
    with pytest.raises(IndexError):
        compiled.merge_runs(
            [np.array([1, 2], np.int64)], [None], [5], np.zeros(2, np.int64), np.zeros(6, np.int32), 0, 0
        )
    with pytest.raises(ValueError):
        compiled.merge_runs(
            [np.array([1, 2], np.int64)], [None], [0], np.zeros(3, np.int64), np.zeros(2, np.int32), 0, 0
        )


def _parts(rng: np.random.Generator, sizes: list[int], unsorted: set[int], nulls: bool) -> list[Part]:
    parts = []
    for i, n in enumerate(sizes):
        start = np.sort(rng.integers(1_000, 1_000 + 3 * max(sum(sizes), 1), n))
        if i in unsorted and n > 1:  # a table of several sorted runs (one per rank of a merged export)
            start = np.concatenate([start[n // 2 :], start[: n // 2]])
        mask = (rng.random(n) < 0.05) if nulls else None
        column: Any = pa.array(start, pa.int64(), mask=mask)
        if n > 3 and i % 2:  # a part whose starts come in fetched chunks
            column = pa.chunked_array([column.slice(0, n // 3), column.slice(n // 3)])
        parts.append(Part(n, {"start_ns": column}, owned=("start_ns",)))
    return parts


@needs_compiled
@pytest.mark.parametrize(
    ("sizes", "unsorted", "nulls"),
    [
        ([1], set(), False),
        ([1, 1, 1], set(), False),
        ([500, 3, 0, 200], {0}, False),
        ([3000, 1700, 40, 900], {1, 3}, True),
        ([20_000, 9_000, 4_000], {1}, False),
    ],
)
def test_merge_order_equals_sort_order(
    sizes: list[int], unsorted: set[int], nulls: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assembly, "_RANGE_MIN_ROWS", 1000)  # several ranges, in two threads, from 2,000 rows
    total = sum(sizes)
    index = np.int32
    offsets = np.cumsum([0, *sizes])
    expected = assembly._sort_order(
        _parts(np.random.default_rng(3), sizes, unsorted, nulls), offsets, total, index
    )
    got = assembly._merge_order(
        _parts(np.random.default_rng(3), sizes, unsorted, nulls), offsets, total, index
    )
    assert got[0] == expected[0]
    assert np.array_equal(got[1], expected[1])
    assert np.array_equal(got[2], expected[2])
    assert got[2].dtype == expected[2].dtype


@needs_compiled
def test_merge_order_of_no_rows() -> None:
    origin, start, rank = assembly._merge_order(
        [Part(0, {"start_ns": pa.array([], pa.int64())})], np.array([0, 0]), 0, np.int32
    )
    assert (origin, start.size, rank.size) == (0, 0, 0)


def test_assembly_without_the_compiled_merge_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole store, with and without the extension (the fallback sorts)."""
    rng = np.random.default_rng(11)
    sizes = [3000, 1200, 5]

    def store() -> Any:
        parts = _parts(np.random.default_rng(5), sizes, {0}, False)
        for p in parts:
            p.columns["end_ns"] = pa.array(
                p.columns["start_ns"].to_numpy(zero_copy_only=False) + rng.integers(0, 50, p.n)
            )
        return assembly.assemble(parts)

    rng = np.random.default_rng(11)
    origin, with_merge = store()
    monkeypatch.setattr(assembly, "_compiled", None)
    rng = np.random.default_rng(11)
    origin_sorted, with_sort = store()
    assert origin == origin_sorted
    for name in ("start_ns", "end_ns"):
        assert with_merge.numpy(name).tolist() == with_sort.numpy(name).tolist()


def _sparse_reference(
    positions: np.ndarray, values: pa.ChunkedArray, unsigned: bool
) -> tuple[np.ndarray, pa.Array]:
    """Gathered first, then narrowed: the values at their rows in row order, in the narrowest type."""
    joined = values.combine_chunks()
    valid = joined.is_valid().to_numpy(zero_copy_only=False)
    kept = positions[valid]
    order = np.argsort(kept, kind="stable")
    stored = narrowest(joined.filter(pa.array(valid)).take(pa.array(order)))
    if unsigned and stored.type == pa.int64() and len(stored):
        low, high = pc.min(stored).as_py(), pc.max(stored).as_py()
        if low >= 0 and high < 2**32:
            stored = stored.cast(pa.uint32())
    return kept[order], stored


@pytest.mark.parametrize("unsigned", [False, True])
def test_sparse_columns_narrowed_before_the_gather_equal_narrowed_after(unsigned: bool) -> None:
    rng = np.random.default_rng(2)
    for trial in range(300):
        n = int(rng.integers(0, 60))
        high = [2, 200, 40_000, 3_000_000_000, 2**40][trial % 5]
        low = -5 if trial % 2 else 0
        mask = rng.random(n) < [0, 0.3, 1.0][trial % 3]  # no nulls, some, all
        column = pa.array(rng.integers(low, high, n), pa.int64(), mask=mask)
        cuts = [0, *sorted(rng.integers(0, n + 1, 2)), n]
        values = pa.chunked_array(
            [column.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:], strict=True)], pa.int64()
        )
        positions = rng.permutation(2 * n)[:n].astype(np.int32)
        rows, stored = _sparse_reference(positions, values, unsigned)
        got = assembly._sparse(assembly._Placement(positions), values, unsigned)
        assert np.array_equal(got.rows, rows)
        assert got.values.type == stored.type
        assert got.values.equals(stored)
