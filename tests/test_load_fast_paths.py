"""The load path's shortcuts against the general code they stand in for.

- The Kineto table stores the columns few rows carry as SparseColumns built from those rows
  (ingest/kineto/table.py); the reference is EventStore.from_columns over the full-length columns of the same
  table, which decides dense or sparse itself.
- The nesting depth orders a thread's intervals by start, longer first, sorting only the runs of equal starts
  when the starts are in order already (trace._start_order); the reference is ``np.lexsort``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, shared_params

from tracelens.ingest import kineto
from tracelens.trace import EVENT_COLUMNS, EventStore, SparseColumn, _start_order

KINETO_FIXTURES = sorted(
    p
    for p in (
        FIXTURES / "gpu" / "pytorch_healthy_cuda.pt.trace.json.gz",
        FIXTURES / "gpu" / "pytorch_pageable-copies_cuda.pt.trace.json.gz",
        FIXTURES / "gpu" / "pytorch_sync-every-step_cuda.pt.trace.json.gz",
        FIXTURES / "gpu" / "cuda_graph_cuda.pt.trace.json.gz",
        FIXTURES / "pytorch_cpu_train.pt.trace.json.gz",
    )
    if p.is_file()
)


def _assert_store_as_from_columns(store: EventStore) -> None:
    table = store.table()
    reference = EventStore.from_columns(
        table.num_rows, {name: table.column(name).combine_chunks() for name in EVENT_COLUMNS}
    )
    assert list(store.columns) == list(reference.columns)
    for name, expected in reference.columns.items():
        got = store.columns[name]
        assert type(got) is type(expected), name
        if isinstance(expected, SparseColumn):
            assert isinstance(got, SparseColumn)
            assert got.rows.dtype == expected.rows.dtype, name
            assert np.array_equal(got.rows, expected.rows), name
            assert got.values.type == expected.values.type, name
            assert got.values.equals(expected.values), name
        else:
            assert got.type == expected.type, name
            assert got.equals(expected), name


@pytest.mark.parametrize("path", KINETO_FIXTURES, ids=lambda p: p.name)
def test_kineto_store_is_what_from_columns_makes(path: Path) -> None:
    store = kineto.read(path).store  # as the reader builds it (enrich adds columns by its own rule)
    assert any(isinstance(c, SparseColumn) for c in store.columns.values())  # the shortcut is exercised
    _assert_store_as_from_columns(store)


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_kineto_store_is_what_from_columns_makes_on_real_traces(path: Path) -> None:
    _assert_store_as_from_columns(kineto.read(path).store)


def test_start_order_is_lexsort() -> None:
    rng = np.random.default_rng(28)
    for trial in range(2000):
        n = int(rng.integers(0, 40))
        start = rng.integers(0, 8, n)
        if trial % 3:  # mostly in start order, as the readers' tables are: the shortcut's case
            start = np.sort(start)
        end = start + rng.integers(-2, 5, n)
        expected = np.lexsort((np.negative(end), start))
        assert np.array_equal(_start_order(start, end), expected), (start, end)
