"""The kernel rows a reader notes on its store (``EventStore.kernel_rows``: the Kineto table build) are the rows
whose kind is ``kernel``, and a load with them equals a load whose enrich finds them from the kind column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tracelens
from tracelens import enrich
from tracelens.ingest import kineto
from tracelens.ingest.kineto import table
from tracelens.trace import EventStore, SparseColumn

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACES = sorted((FIXTURES / "kineto").glob("*.json")) + [
    FIXTURES / "demo.pt.trace.json.gz",
    FIXTURES / "pytorch_cpu_train.pt.trace.json.gz",
]


def _kernel_rows_from_kinds(trace: tracelens.Trace) -> np.ndarray:
    kinds = np.asarray(trace.store.column("kind").to_pylist(), dtype=object)
    return np.flatnonzero(kinds == "kernel")


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_noted_rows_are_the_kernel_kinds_rows(path: Path, engine: str) -> None:
    trace = kineto.read(path, engine=engine)
    noted = trace.store.kernel_rows
    assert noted is not None
    np.testing.assert_array_equal(noted, _kernel_rows_from_kinds(trace))
    assert np.all(noted[1:] > noted[:-1])


class _StoreWithoutKernelRows(EventStore):
    """A store that drops the kernel rows its reader notes: enrich then finds them from the kind column."""

    kernel_rows = property(lambda self: None, lambda self, rows: None)  # type: ignore[assignment]


def _stored(trace: tracelens.Trace) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in trace.store.columns:
        column = trace.store.columns[name]
        if isinstance(column, SparseColumn):
            out[name] = ("sparse", column.rows.tolist(), column.values.to_pylist())
        elif column is not None and hasattr(column, "to_pylist"):
            out[name] = column.to_pylist()
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_a_load_with_noted_rows_equals_one_without(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    noted = tracelens.load(path)
    rows = enrich.held_kernel_rows(noted)
    with monkeypatch.context() as patch:
        patch.setattr(table, "EventStore", _StoreWithoutKernelRows)
        found = tracelens.load(path)
    assert found.store.kernel_rows is None
    assert _stored(noted) == _stored(found)
    found_rows = enrich.held_kernel_rows(found)
    assert rows is not None and found_rows is not None
    assert rows.dtype == found_rows.dtype
    np.testing.assert_array_equal(rows, found_rows)
    a, b = enrich.KernelOccupancy(noted), enrich.KernelOccupancy(found)
    for name in ("theoretical", "estimated", "waves", "active", "limiter"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
