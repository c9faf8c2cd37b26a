"""The launches' configuration numbering a reader notes on its store (``EventStore.kernel_numbering``: the Kineto
table build makes it on its pool, ``enrich.LaunchNumbering``) equals the numbering enrich computes from the
launches' float64 calculator inputs (the reference path), and a load with it equals a load without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tracelens
from tracelens import enrich
from tracelens.ingest import kineto
from tracelens.ingest.kineto import table
from tracelens.trace import KERNEL, EventStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACES = sorted((FIXTURES / "kineto").glob("*.json")) + [
    FIXTURES / "demo.pt.trace.json.gz",
    FIXTURES / "pytorch_cpu_train.pt.trace.json.gz",
]


def _reference(trace: tracelens.Trace) -> tuple[np.ndarray, list[np.ndarray]]:
    """The per-launch float64 inputs numbered by their exact bits (no geometry codes, no noted numbering)."""
    inputs = enrich._calculator_inputs(enrich._Rows(trace, enrich._kind_rows(trace, KERNEL)))
    config, first = enrich._configurations(inputs)
    return config, [values[first] for values in inputs]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_the_noted_numbering_equals_the_float_inputs_numbering(path: Path, engine: str) -> None:
    trace = kineto.read(path, engine=engine)
    noted = trace.store.kernel_numbering
    if noted is None:  # a reader that does not note it: enrich computes it itself
        return
    assert isinstance(noted, enrich.LaunchNumbering)
    config, per_config = _reference(trace)
    if noted.numbered is None:  # declined (no integer geometry): only where no launch has one
        assert config.size == 0 or np.isnan(per_config[1]).all()
        return
    got_config, got_inputs = noted.numbered
    assert got_config.dtype == config.dtype
    np.testing.assert_array_equal(got_config, config)
    for got, expected in zip(got_inputs, per_config, strict=True):
        np.testing.assert_array_equal(got.view(np.int64), expected.view(np.int64))  # NaNs bit for bit


def test_the_demo_trace_notes_a_numbering() -> None:
    trace = kineto.read(FIXTURES / "demo.pt.trace.json.gz", engine="native")
    assert isinstance(trace.store.kernel_numbering, enrich.LaunchNumbering)
    assert trace.store.kernel_numbering.numbered is not None


class _StoreWithoutNumbering(EventStore):
    """A store that drops the numbering its reader notes: enrich then computes it from the stored columns."""

    kernel_numbering = property(lambda self: None, lambda self, noted: None)  # type: ignore[assignment]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_a_load_with_the_noted_numbering_equals_one_without(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    noted = tracelens.load(path)
    with monkeypatch.context() as patch:
        patch.setattr(table, "EventStore", _StoreWithoutNumbering)
        computed = tracelens.load(path)
    assert computed.store.kernel_numbering is None
    a, b = enrich._launches_of(noted), enrich._launches_of(computed)
    np.testing.assert_array_equal(a.rows, b.rows)
    assert a.config.dtype == b.config.dtype
    np.testing.assert_array_equal(a.config, b.config)
    for name in ("device", "threads", "grid", "registers", "shared"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    occ_a, occ_b = enrich.KernelOccupancy(noted), enrich.KernelOccupancy(computed)
    for name in ("theoretical", "estimated", "waves", "active", "limiter", "grid_fill", "shape"):
        np.testing.assert_array_equal(getattr(occ_a, name), getattr(occ_b, name))
    for column in ("theoretical_occupancy", "estimated_achieved_occupancy"):
        left, right = noted.store.columns.get(column), computed.store.columns.get(column)
        assert (left is None) == (right is None)
        if left is not None:
            np.testing.assert_array_equal(left.rows, right.rows)
            assert left.values.equals(right.values)
