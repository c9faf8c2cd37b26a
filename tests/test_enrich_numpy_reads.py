"""The enrich step's numpy reads (no pyarrow.compute at load) against the Arrow code they replaced, kept here as
the references: the launch configurations numbered by Arrow's dictionary_encode, and the columns read as
float64 by an Arrow take and cast."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import enrich
from tracelens.arrow_read import arrow_numpy
from tracelens.enrich import first_appearance_codes
from tracelens.trace import Trace, TraceMetadata, build_store, numpy_array, string_array


def _arrow_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """enrich._configurations' numbering before: Arrow's dictionary_encode, firsts where the running maximum
    steps up."""
    config = arrow_numpy(pc.dictionary_encode(numpy_array(key, pa.int64())).indices).astype(np.int32)
    first = np.flatnonzero(np.diff(np.maximum.accumulate(config), prepend=-1))
    return config, first


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(-3, 3), st.sampled_from([-(2**63), 2**63 - 1, 2**40])), min_size=0, max_size=60
    )
)
def test_first_appearance_codes_number_as_arrow_does(values: list[int]) -> None:
    key = np.array(values, dtype=np.int64)
    codes, first = first_appearance_codes(key)
    expected_codes, expected_first = _arrow_codes(key)
    assert codes.dtype == np.int32
    np.testing.assert_array_equal(codes, expected_codes)
    np.testing.assert_array_equal(first, expected_first)


_TYPES = [pa.int32(), pa.int16(), pa.float32(), pa.float64(), pa.int64()]


@st.composite
def _trace_and_rows(draw: st.DrawFn) -> tuple[Trace, np.ndarray, str]:
    n = draw(st.integers(1, 40))
    typ = draw(st.sampled_from(_TYPES))
    # a column some rows carry (dense or sparse by how many), or none
    values = draw(st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=n, max_size=n))
    kinds = string_array(["kernel", "cpu_op"])
    columns = {
        "kind": pa.DictionaryArray.from_arrays(pa.array([i % 2 for i in range(n)], pa.int32()), kinds),
        "start_ns": pa.array(range(n), pa.int64()),
        "end_ns": pa.array(range(1, n + 1), pa.int64()),
        "grid_x": pa.array(values, typ) if any(v is not None for v in values) else None,
    }
    store = build_store(columns, sort=False, derive_depth=False)
    trace = Trace(
        events=store,
        devices=pa.table({"id": pa.array([], pa.int32())}),
        metadata=TraceMetadata(source_format="kineto", source_path="made.json"),
    )
    rows = np.array(sorted(draw(st.sets(st.integers(0, n - 1)))), dtype=np.int64)
    return trace, rows, draw(st.sampled_from(["grid_x", "grid_y"]))


@settings(max_examples=200, deadline=None)
@given(_trace_and_rows())
def test_rows_columns_equal_an_arrow_take_and_cast(case: tuple[Trace, np.ndarray, str]) -> None:
    trace, rows, name = case
    got = enrich._Rows(trace, rows).column(name)
    expected = arrow_numpy(pc.cast(trace.take(name, rows), pa.float64()))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)
