"""values.first_seen_codes and values.distinct (pandas-free) against pd.factorize and pd.unique."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import values as V
from tracelens.values import distinct, first_seen_codes

INTS = st.lists(st.integers(-(2**40), 2**40) | st.sampled_from([0, 1, 2, -1]), max_size=60)
FLOATS = st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 3.25]), max_size=60)
OBJECTS = st.lists(st.sampled_from(["a", "b", "", "gemm", None, np.nan]), max_size=60)


@pytest.fixture(params=["compiled", "sort"], autouse=True)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs through the compiled hash pass (where built) and through the sort-based fallback."""
    if request.param == "compiled" and V._compiled is None:
        pytest.skip("the compiled helper is not built")
    if request.param == "sort":
        monkeypatch.setattr(V, "_compiled", None)
    return str(request.param)


def _same(values: np.ndarray) -> None:
    want_codes, want_uniques = pd.factorize(values)
    codes, uniques = first_seen_codes(values)
    assert codes.dtype == np.intp and codes.tolist() == want_codes.tolist()
    assert uniques.dtype == np.asarray(want_uniques).dtype
    assert [str(v) for v in uniques] == [
        str(v) for v in np.asarray(want_uniques)
    ]  # str: -0.0 vs 0.0 kept apart
    want = pd.unique(values)
    assert [str(v) for v in distinct(values)] == [str(v) for v in want]


@settings(max_examples=200, deadline=None)
@given(INTS, st.sampled_from([np.int64, np.int32, np.int16]))
def test_integers_match_pandas(values: list[int], dtype: type) -> None:
    info = np.iinfo(dtype)
    _same(np.array([min(max(v, info.min), info.max) for v in values], dtype))


@settings(max_examples=200, deadline=None)
@given(FLOATS)
def test_floats_match_pandas_nan_and_signed_zero(values: list[float]) -> None:
    _same(np.array(values, np.float64))


@settings(max_examples=200, deadline=None)
@given(OBJECTS)
def test_objects_match_pandas(values: list) -> None:
    array = np.empty(len(values), object)
    array[:] = values
    want_codes, want_uniques = pd.factorize(array)
    codes, uniques = first_seen_codes(array)
    assert codes.tolist() == want_codes.tolist() and list(uniques) == list(want_uniques)


def test_strings_and_booleans_and_empty() -> None:
    _same(np.array(["b", "a", "b", "c"]))
    _same(np.array([True, False, True]))
    _same(np.zeros(0, np.int64))
    _same(np.array([np.nan, np.nan]))


def test_many_distinct_keys_grow_the_table() -> None:
    rng = np.random.default_rng(7)
    for distinct_count, dtype in (
        (50_000, np.int64),
        (3_000, np.int32),
        (70_000, np.uint64),
        (20_000, np.float64),
    ):
        pool = rng.integers(-(2**62), 2**62, distinct_count).astype(dtype)
        _same(pool[rng.integers(0, distinct_count, 200_000)])


@settings(max_examples=200, deadline=None)
@given(INTS, st.sampled_from([np.int64, np.int32, np.int16]))
def test_first_seen_rows_are_each_codes_first_row(values: list[int], dtype: type) -> None:
    """values.first_seen_rows (enrich's launch numbering): pd.factorize's codes, and each code's first row as
    np.unique's return_index gives it (put in first-seen order); None without the compiled pass or for int16."""
    info = np.iinfo(dtype)
    array = np.array([min(max(v, info.min), info.max) for v in values], dtype)
    found = V.first_seen_rows(array)
    if V._compiled is None or dtype == np.int16:
        assert found is None
        return
    assert found is not None
    codes, first_rows = found
    want_codes, _ = pd.factorize(array)
    assert codes.dtype == np.intp and codes.tolist() == want_codes.tolist()
    _, first_index = np.unique(array, return_index=True)
    assert first_rows.tolist() == sorted(first_index.tolist())
