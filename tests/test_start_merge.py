"""The Kineto table's row order from the host and GPU rows' keys sorted apart and merged (ingest/kineto/
start_order.py, ingest/_start_merge.c) against numpy's stable sort of all the starts and the starts gathered in
that order, and the GPU rows it places against placing.in_table_order: ties within and across the kinds, one row
of a kind, kinds at either end, and the cases it declines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import start_order as so
from tracelens.ingest.kineto.placing import in_table_order

pytestmark = pytest.mark.skipif(so._compiled is None, reason="the start merge is not compiled here")


def reference(start: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    order = np.argsort(start, kind="stable")
    origin = int(start[order[0]])
    return order, start[order] - origin, origin


def check(start: np.ndarray, gpu_rows: np.ndarray) -> None:
    merged = so.merged_start_order(start, gpu_rows)
    assert merged is not None
    order, relative, origin, (kept, at) = merged
    want_order, want_relative, want_origin = reference(start)
    np.testing.assert_array_equal(order, want_order)
    np.testing.assert_array_equal(relative, want_relative)
    assert origin == want_origin
    assert order.dtype == want_order.dtype and relative.dtype == np.int64
    want_kept, want_at = in_table_order(gpu_rows, want_order, start.size)
    np.testing.assert_array_equal(kept, want_kept)
    np.testing.assert_array_equal(at, want_at)
    assert kept.dtype == at.dtype == np.int64


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-50, 50), st.booleans()), min_size=2, max_size=300),
    st.integers(-(2**40), 2**40),
)
def test_equals_the_stable_sort(rows: list[tuple[int, bool]], offset: int) -> None:
    start = (
        np.array([s for s, _ in rows], np.int64) + offset
    )  # small range: many ties, within and across kinds
    gpu = np.flatnonzero([g for _, g in rows]).astype(np.int64)
    if not 0 < gpu.size < start.size:
        assert so.merged_start_order(start, gpu) is None
        return
    check(start, gpu)


def test_nearly_sorted_kinds_interleaved() -> None:
    rng = np.random.default_rng(3)
    n = 50_000
    start = np.cumsum(rng.integers(0, 5, n)).astype(np.int64)
    gpu = np.sort(rng.choice(n, n // 7, replace=False)).astype(np.int64)
    start[gpu] += 1000  # GPU rows run later than the host rows beside them
    start[20_000:21_000] -= 3000  # a host run going back
    check(start, gpu)


@pytest.mark.parametrize(
    ("start", "gpu"),
    [
        ([5, 5], [0]),
        ([5, 5], [1]),
        ([7, 3, 3, 1], [0]),
        ([7, 3, 3, 1], [3]),
        ([1, 1, 1, 1, 1], [0, 2, 4]),
        ([4, 3, 2, 1, 0], [1, 2, 3, 4]),
        ([-(2**40), 2**40, 0], [1]),
    ],
)
def test_edges(start: list[int], gpu: list[int]) -> None:
    check(np.array(start, np.int64), np.array(gpu, np.int64))


@pytest.mark.parametrize(
    ("start", "gpu"),
    [
        (np.arange(4, dtype=np.int64), np.array([2, 1], np.int64)),  # not ascending
        (np.arange(4, dtype=np.int64), np.array([1, 1], np.int64)),  # repeated
        (np.arange(4, dtype=np.int64), np.array([1, 4], np.int64)),  # past the rows
        (np.arange(4, dtype=np.int64), np.array([-1, 2], np.int64)),
        (np.array([0, 2**62, 5], np.int64), np.array([1], np.int64)),  # key past 63 bits
        (np.array([2**63 - 1, -(2**63), 5], np.int64), np.array([1], np.int64)),  # span past int64
        (np.arange(4, dtype=np.int32), np.array([1], np.int64)),  # not int64
        (np.arange(4, dtype=np.int64), np.zeros(0, np.int64)),  # no GPU row
        (np.arange(2, dtype=np.int64), np.array([0, 1], np.int64)),  # no host row
        (np.zeros(0, np.int64), np.zeros(0, np.int64)),
    ],
)
def test_declines_and_start_order_falls_back(start: np.ndarray, gpu: np.ndarray) -> None:
    assert so.merged_start_order(start, gpu) is None
    if start.size:
        order, relative, origin, placed = so.start_order([start], gpu)
        assert placed is None  # (placed by gpu_columns.gpu_placed then)
        want = reference(start)
        np.testing.assert_array_equal(order, want[0])
        np.testing.assert_array_equal(relative, want[1])
        assert origin == want[2]


def test_start_order_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    start = np.array([9, 2, 2, 7, 1, 8], np.int64)
    gpu = np.array([1, 3], np.int64)
    *merged, placed = so.start_order([start.copy()], gpu)
    monkeypatch.setattr(so, "_compiled", None)
    *fallback, none = so.start_order([start.copy()], gpu)
    for got, want in zip(merged, fallback, strict=True):
        np.testing.assert_array_equal(got, want)
    assert none is None and placed is not None
    for got, want in zip(placed, in_table_order(gpu, fallback[0], start.size), strict=True):
        np.testing.assert_array_equal(got, want)


def test_merge_refuses_an_index_past_the_gpu_rows() -> None:
    merge = so._compiled
    assert merge is not None
    order = np.array([0, 1, 2 << 2], np.int64)  # host keys at [1:], start 0 and 2
    relative = np.array([0, 0, (1 << 2) | 3], np.int64)  # the GPU key's index 3: one GPU row only
    with pytest.raises(ValueError, match="past gpu_rows"):
        merge.merge(order, relative, 2, np.array([1], np.int64), np.empty(1, np.int64), np.empty(1, np.int64))
