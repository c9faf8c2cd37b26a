"""enrich's launch configurations made from the kernels' integer geometry (a Kineto trace's columns: int32, no
null, on every kernel row) equal those of the float64 path numbered over every launch's five calculator inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import enrich
from tracelens import values as value_helpers
from tracelens.trace import KERNEL, SparseColumn, Trace

GEOMETRY = enrich._GEOMETRY


def _trace(kernels: list[dict[str, int]]) -> Trace:
    """Kernels with every geometry column, then a copy (a device, no geometry) and more host ops (neither):
    as in a Kineto trace, the geometry and device columns are stored sparse, the device on more rows."""
    rows: list[dict[str, Any]] = []
    for i, geometry in enumerate(kernels):
        rows.append({"kind": KERNEL, "name": "k", "start_ns": i, "end_ns": i + 1, **geometry})
    rows.append({"kind": "memcpy", "name": "c", "start_ns": 0, "end_ns": 2, "device": 0})
    for i in range(2 * len(kernels) + 2):
        rows.append({"kind": "cpu_op", "name": "op", "start_ns": i, "end_ns": i + 2})
    return Trace.from_rows(rows, devices=[{"id": 0, "compute_major": 8, "compute_minor": 0, "sm_count": 108}])


def _assert_same_configurations(trace: Trace) -> None:
    rows = enrich._kind_rows(trace, KERNEL)
    kernels = enrich._Rows(trace, rows)
    numbered = enrich._numbered_by_geometry(trace, kernels)
    assert numbered is not None
    config, per_config = numbered
    inputs = enrich._calculator_inputs(enrich._Rows(trace, rows))
    expected_config, first = enrich._configurations(inputs)
    assert config.dtype == expected_config.dtype
    np.testing.assert_array_equal(config, expected_config)
    for got, values in zip(per_config, inputs, strict=True):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got.view(np.int64), values[first].view(np.int64))


FEW = st.sampled_from([0, 1, 2, 32, 64, 1024])


@st.composite
def geometries(draw: Any) -> dict[str, int]:
    return {name: draw(st.integers(0, 1) if name == "device" else FEW) for name in GEOMETRY}


@settings(max_examples=60, deadline=None)
@given(st.lists(geometries(), min_size=1, max_size=30))
def test_geometry_numbering_equals_the_float_path(kernels: list[dict[str, int]]) -> None:
    trace = _trace(kernels)
    assert all(isinstance(trace.store.columns.get(name), SparseColumn) for name in GEOMETRY)
    device = trace.store.columns.get("device")
    assert isinstance(device, SparseColumn) and device.rows.size == len(kernels) + 1
    _assert_same_configurations(trace)


def test_one_kernel_and_ties() -> None:
    one = {name: 1 for name in GEOMETRY}
    _assert_same_configurations(_trace([one]))
    # block (2, 1, 1) and (1, 2, 1): two geometries, one configuration (the same threads), numbered by the first
    a = {**one, "block_x": 2}
    b = {**one, "block_y": 2}
    _assert_same_configurations(_trace([one, a, b, a, one]))
    # negative values (a column coded as its values less a negative minimum)
    c = {**one, "registers_per_thread": -5, "grid_x": -(2**31)}
    _assert_same_configurations(_trace([c, one, c, a]))


def test_geometries_numbered_without_the_compiled_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The geometries' first launches found by the running maximum where the compiled hash pass (which gives them
    with the numbers: values.first_seen_rows) is not built: the same configurations."""
    monkeypatch.setattr(value_helpers, "_compiled", None)
    one = {name: 1 for name in GEOMETRY}
    a = {**one, "block_x": 2}
    b = {**one, "block_y": 2, "grid_x": 7}
    _assert_same_configurations(_trace([one, a, b, a, one, b]))


def test_many_distinct_values_renumber_the_key() -> None:
    # 200 distinct values in each of nine columns: their radix product passes 2**62, the key is renumbered
    rng = np.random.default_rng(0)
    kernels = [
        {name: int(v) for name, v in zip(GEOMETRY, rng.integers(0, 2**31 - 1, len(GEOMETRY)), strict=True)}
        for _ in range(200)
    ]
    for geometry in kernels:
        geometry["device"] = 0
    kernels += kernels[:10]  # repeated launches
    _assert_same_configurations(_trace(kernels))


def test_a_null_or_missing_column_takes_the_float_path() -> None:
    one = {name: 1 for name in GEOMETRY}
    partial = {name: v for name, v in one.items() if name != "grid_z"}
    trace = _trace([one, partial])
    assert enrich._numbered_by_geometry(trace, enrich._Rows(trace, enrich._kind_rows(trace, KERNEL))) is None
