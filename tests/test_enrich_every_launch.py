"""annotate_occupancy's path for a column that the reader left empty and that the calculator fills for every launch
(the Kineto traces: no reported theoretical occupancy, every configuration computed): the column holds every kernel
row, made without the merge with the reported column or a selection. Checked against the values computed here from
KernelOccupancy (the rows whose result is not NaN, float32), on traces that take that path and traces that do not
(some configuration not computed, a reported column present)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import tracelens
from tracelens import enrich
from tracelens.ingest import kineto
from tracelens.trace import SparseColumn, Trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACES = [
    *sorted((FIXTURES / "gpu").glob("*.pt.trace.json.gz")),
    *sorted((FIXTURES / "kineto").glob("*.json")),
    FIXTURES / "demo.pt.trace.json.gz",
]


def _expected(trace: Trace) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each occupancy column's (rows, float32 values) as annotate_occupancy's general path makes them, from the
    reported column's values where the calculator gives NaN."""
    occ = enrich.KernelOccupancy(trace)
    out = {}
    for column, values in (
        ("theoretical_occupancy", occ.theoretical),
        ("estimated_achieved_occupancy", occ.estimated),
    ):
        reported = trace.take(column, occ.rows) if trace.store.columns.get(column) is not None else None
        if reported is not None:
            values = np.where(
                np.isnan(values), reported.to_numpy(zero_copy_only=False).astype(np.float64), values
            )
        known = ~np.isnan(values)
        if known.any():
            out[column] = (occ.rows[known], values[known].astype(np.float32))
    return out


def _check(trace: Trace, enriched: Trace) -> None:
    expected = _expected(trace)
    for column in ("theoretical_occupancy", "estimated_achieved_occupancy"):
        stored = enriched.store.columns.get(column)
        if column not in expected:
            assert stored is trace.store.columns.get(column)
            continue
        rows, values = expected[column]
        assert isinstance(stored, SparseColumn)
        assert stored.rows.dtype == np.int32
        np.testing.assert_array_equal(stored.rows, rows)
        assert stored.values.type == pa.float32()
        np.testing.assert_array_equal(stored.values.to_numpy(zero_copy_only=False), values)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_occupancy_columns_equal_the_general_path(path: Path) -> None:
    trace = kineto.read(path)
    if trace.num_events == 0:
        return
    occ = enrich.KernelOccupancy(trace)
    if occ.rows.size == 0 or np.isnan(occ.theoretical).all():
        return
    _check(trace, enrich.annotate_occupancy(trace))


def test_some_configuration_not_computed_takes_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = kineto.read(FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz")
    original = enrich.KernelOccupancy.__init__

    def one_config_unknown(self: enrich.KernelOccupancy, trace: Trace) -> None:
        original(self, trace)
        self._per_config["estimated"] = self._per_config["estimated"].copy()
        self._per_config["estimated"][0] = np.nan  # (the launches of configuration 0: not computed)

    monkeypatch.setattr(enrich.KernelOccupancy, "__init__", one_config_unknown)
    enriched = enrich.annotate_occupancy(trace)
    _check(trace, enriched)
    estimated = enriched.store.columns["estimated_achieved_occupancy"]
    theoretical = enriched.store.columns["theoretical_occupancy"]
    assert isinstance(estimated, SparseColumn) and isinstance(theoretical, SparseColumn)
    assert estimated.rows.size < theoretical.rows.size  # the NaN configuration's launches left out


def test_a_reported_column_takes_the_general_path() -> None:
    trace = kineto.read(FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz")
    occ = enrich.KernelOccupancy(trace)
    reported = SparseColumn(occ.rows[:3].astype(np.int32), pa.array([0.5, 0.25, 0.125], pa.float32()))
    with_reported = Trace(
        events=trace.store.with_columns({"theoretical_occupancy": reported}),
        devices=trace.devices,
        metadata=trace.metadata,
    )
    _check(with_reported, enrich.annotate_occupancy(with_reported))


def test_a_load_equals_annotating_the_read_trace() -> None:
    path = FIXTURES / "gpu" / "transformer_bf16_cuda.pt.trace.json.gz"
    loaded = tracelens.load(path)
    _check(kineto.read(path), loaded)
