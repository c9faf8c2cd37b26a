"""The Kineto table's store (stored.store_columns) against the general builder it replaces
(trace.build_store(sort=False, derive_depth=False)): the same columns stored the same way (dense or sparse, the
same values), for columns in their schema types, in other types (cast; the narrow ids kept int32, read as int64),
all-null and mostly-null ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest import kineto
from tracelens.ingest.kineto.stored import NARROW, store_columns
from tracelens.trace import EventStore, SparseColumn, build_store, string_array


def _stored_values(store: EventStore) -> dict[str, tuple[str, object]]:
    """Each stored column as (how it is stored, its values): the storage choice and the values both compared."""
    out: dict[str, tuple[str, object]] = {}
    for name, stored in store.columns.items():
        if isinstance(stored, SparseColumn):
            out[name] = ("sparse", (stored.rows.tolist(), stored.values.type, stored.values.to_pylist()))
        else:
            out[name] = ("dense", (stored.type, stored.to_pylist()))
    return out


@st.composite
def _columns(draw: st.DrawFn) -> tuple[int, dict[str, pa.Array | None]]:
    n = draw(st.integers(1, 30))
    start = np.array(draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n)), dtype=np.int64)
    end = start + np.array(draw(st.lists(st.integers(0, 20), min_size=n, max_size=n)), dtype=np.int64)
    kinds = string_array(["kernel", "cpu_op", "runtime"])
    kind = pa.DictionaryArray.from_arrays(
        pa.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), pa.int32()), kinds
    )

    def nullable(values: st.SearchStrategy, typ: pa.DataType) -> pa.Array:
        return pa.array(draw(st.lists(st.one_of(st.none(), values), min_size=n, max_size=n)), typ)

    names = string_array(["a", "b", "c"])
    name_codes = nullable(st.integers(0, 2), pa.int32())
    columns: dict[str, pa.Array | None] = {
        "kind": kind,
        "name": pa.DictionaryArray.from_arrays(name_codes, names),
        "start_ns": pa.array(start, pa.int64()),
        "end_ns": pa.array(end, pa.int64()),
        "pid": nullable(st.integers(-(2**40), 2**40), pa.int64()),
        # another integer type than the schema's (int64): kept (a narrow id: stored.NARROW), read as int64
        "tid": nullable(st.integers(-(2**30), 2**30), pa.int32()),
        # another integer type, not a narrow id: cast, as build_store casts it
        "stream": nullable(st.integers(0, 2**20), pa.int32()),
        "correlation_id": draw(st.sampled_from([None, pa.nulls(n, pa.int64())])),
        "device": nullable(st.integers(0, 7), pa.int32()),
        "domain": None,
    }
    return n, columns


@settings(max_examples=150, deadline=None)
@given(_columns())
def test_store_columns_store_what_build_store_stores(case: tuple[int, dict[str, pa.Array | None]]) -> None:
    n, columns = case
    expected = build_store(columns, sort=False, derive_depth=False)
    got = store_columns(n, columns)
    assert got.num_rows == expected.num_rows == n
    assert list(got.columns) == list(expected.columns)
    # the narrow ids (stored.NARROW) stay int32 where they come so, their values build_store's int64 ones
    got_values, expected_values = _stored_values(got), _stored_values(expected)
    for name in NARROW & set(got_values):
        how, (*rows, typ, values) = got_values[name]
        assert typ == columns[name].type
        got_values[name] = (how, (*rows, pa.int64(), values))
    assert got_values == expected_values
    assert got.sentinel == expected.sentinel
    for name in got.columns:  # read in the schema's types
        assert got.column(name).equals(expected.column(name))


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_an_event_with_a_negative_duration_ends_at_its_start(tmp_path: Path, engine: str) -> None:
    if engine == "native" and not kineto.native_scanner_built():
        pytest.skip("the native scanner was not built")
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "a", "ts": 10.0, "dur": -5.0, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "b", "ts": 12.5, "dur": 2.0, "pid": 1, "tid": 1},
    ]
    path = tmp_path / "negative.json"
    path.write_text(json.dumps({"traceEvents": events}))
    table = kineto.read(path, engine=engine).events
    # times relative to the first start (10 us): a ends at its start, b at 2.5 + 2 us
    assert table.column("start_ns").to_pylist() == [0, 2500]
    assert table.column("end_ns").to_pylist() == [0, 4500]
