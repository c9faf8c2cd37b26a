"""The launches' geometry key (enrich._numbered_by_geometry) skips one-valued columns and subtracts the columns'
minimums once, in wrapping int64 arithmetic: checked against the float64 path where the minimums are far from 0,
the radix product passes 2**62 with minimums still pending (the key renumbered), and columns hold one value."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_enrich_geometry_configs import GEOMETRY, _assert_same_configurations, _trace


def _kernels(
    rng: np.random.Generator, count: int, lows: dict[str, int], spans: dict[str, int]
) -> list[dict[str, int]]:
    return [{name: lows[name] + int(rng.integers(0, spans[name])) for name in GEOMETRY} for _ in range(count)]


@pytest.mark.parametrize("low", [-(2**31), -70_000, 1, 2**31 - 60_001])
def test_narrow_columns_far_from_zero_renumber_with_pending_minimums(low: int) -> None:
    rng = np.random.default_rng(abs(low) % 1000)
    spans = {name: 1 if name in ("device", "block_z") else 60_000 for name in GEOMETRY}
    lows = {name: 0 if name == "device" else low for name in GEOMETRY}
    kernels = _kernels(rng, 300, lows, spans)
    kernels += kernels[::7]  # repeated geometries
    _assert_same_configurations(_trace(kernels))


def test_every_column_one_value() -> None:
    one = {name: 7 for name in GEOMETRY} | {"device": 0}
    _assert_same_configurations(_trace([one, one, one]))
    _assert_same_configurations(_trace([one]))


@st.composite
def shifted(draw: Any) -> list[dict[str, int]]:
    lows = {name: 0 if name == "device" else draw(st.integers(-(2**31), 2**31 - 70_000)) for name in GEOMETRY}
    spans = {name: draw(st.sampled_from([1, 2, 3, 65_536])) for name in GEOMETRY} | {"device": 1}
    rows = draw(
        st.lists(
            st.lists(st.integers(0, 2**16), min_size=len(GEOMETRY), max_size=len(GEOMETRY)),
            min_size=1,
            max_size=25,
        )
    )
    return [
        {name: lows[name] + v % spans[name] for name, v in zip(GEOMETRY, row, strict=True)} for row in rows
    ]


@settings(max_examples=60, deadline=None)
@given(shifted())
def test_shifted_geometries_equal_the_float_path(kernels: list[dict[str, int]]) -> None:
    _assert_same_configurations(_trace(kernels))
