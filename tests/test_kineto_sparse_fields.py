"""The native scanner's sparse records (external_id_old and the GPU-side fields, kept only for the complete
events holding one): expanded to a column per field, they equal the dense columns an independent reading of
the same events gives (json.loads, a value per complete event, NaN where missing), and the scanner's block
still equals msgspec's."""

from __future__ import annotations

import json

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_kineto_native import assert_same_block, native, needs_scanner, reference
from tracelens.ingest import kineto
from tracelens.ingest.kineto import fields
from tracelens.ingest.kineto.blocks import to_number

# The JSON key of each sparse field read from an event's args (a triple's three columns share one key).
_KEY = {f.name: f.key for f in fields.ARG_FIELDS}

# A value as a trace may write it: integers, decimals, a 20-digit number (deferred to Python's parser by the
# scanner), and for "stream" text ("stream 7", "0x0") and null.
_NUMBER = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    st.just("12345678901234567890.5"),
)
_STREAM = st.one_of(_NUMBER, st.sampled_from(['"stream 7"', '"0x1f"', '"Spans"']))
_TRIPLE = st.one_of(
    st.just("null"),
    st.lists(st.integers(0, 2**31), min_size=0, max_size=4).map(json.dumps),
)
_ARG_VALUES = {
    "external_id_old": _NUMBER,
    "device": _NUMBER,
    "stream": _STREAM,
    "bytes": _NUMBER,
    "registers": _NUMBER,
    "shared_memory": _NUMBER,
    "occupancy_pct": _NUMBER,
    "grid": _TRIPLE,
    "block": _TRIPLE,
}
_CATEGORIES = ["kernel", "gpu_memcpy", "cuda_runtime", "cpu_op", "gpu_user_annotation", "cuda_sync", "trace"]


@st.composite
def _events(draw: st.DrawFn) -> str:
    """One event: a complete event of any category, or now and then a flow or instant event, with a random
    subset of the sparse fields in its args (beside a correlation id)."""
    phase = draw(st.sampled_from(["X", "X", "X", "X", "f", "i"]))
    args = {"correlation": str(draw(st.integers(0, 100)))}
    for name in draw(st.lists(st.sampled_from(sorted(_ARG_VALUES)), unique=True, max_size=3)):
        args[_KEY[name]] = draw(_ARG_VALUES[name])
    members = {
        "ph": json.dumps(phase),
        "cat": json.dumps(draw(st.sampled_from(_CATEGORIES))),
        "name": '"e"',
        "pid": "1",
        "tid": "2",
        "ts": str(draw(st.integers(0, 10**6))),
        "dur": "1",
        "args": "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in args.items()) + "}",
    }
    return "{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + "}"


def _dense_reference(events: list[dict]) -> dict[str, np.ndarray]:
    """Each sparse field as a column of the complete events (in order), read from the decoded JSON: numbers as
    floats, a stream written as text through to_number, a triple's columns from a list of exactly three."""
    complete = [e for e in events if e.get("ph") == "X"]
    columns = {name: np.full(len(complete), np.nan) for name in fields.NATIVE_SPARSE_FLOATS}
    for row, event in enumerate(complete):
        args = event["args"]
        for field in fields.ARG_FIELDS:
            if field.key not in args or field.op or field.name not in _ARG_VALUES:
                continue
            value = args[field.key]
            if field.type == fields.TRIPLE:
                if isinstance(value, list) and len(value) == 3:
                    for axis, v in zip("xyz", value, strict=True):
                        columns[f"{field.name}_{axis}"][row] = float(v)
            else:
                columns[field.name][row] = to_number(value)
    return columns


@needs_scanner
def test_the_scanner_keeps_the_sparse_fields_after_the_row_fields() -> None:
    assert fields.NATIVE_FLOATS == fields.NATIVE_ROW_FLOATS + fields.NATIVE_SPARSE_FLOATS
    assert kineto._kineto_scan.N_ROW_FLOATS == len(fields.NATIVE_ROW_FLOATS)
    assert set(fields.DEVICE_FIELDS) < set(fields.NATIVE_SPARSE_FLOATS)
    assert "ts" in fields.NATIVE_ROW_FLOATS and "external_id" in fields.NATIVE_ROW_FLOATS


@needs_scanner
@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(st.lists(_events(), min_size=1, max_size=25), st.booleans())
def test_sparse_records_expanded_equal_dense_columns(events: list[str], indented: bool) -> None:
    text = "[\n  " + ",\n  ".join(events) + "\n]" if indented else "[" + ",".join(events) + "]"
    scanned = kineto._kineto_scan.scan_events((text.encode(),), to_number, msgspec.json.decode)
    assert scanned is not None, text[:300]
    n = scanned["rows"]
    rows = np.frombuffer(scanned["sparse_rows"], dtype=np.int64)
    records = np.frombuffer(scanned["sparse_floats"], dtype=np.float64).reshape(
        rows.size, len(fields.NATIVE_SPARSE_FLOATS)
    )
    assert np.all(np.diff(rows) > 0) and (rows.size == 0 or (rows[0] >= 0 and rows[-1] < n))
    expanded = np.full((len(fields.NATIVE_SPARSE_FLOATS), n), np.nan)
    expanded[:, rows] = records.T
    want = _dense_reference(json.loads(text))
    for i, name in enumerate(fields.NATIVE_SPARSE_FLOATS):
        # bit for bit: NaN where missing, every value the double Python reads
        assert expanded[i].tobytes() == want[name].tobytes(), name
    # and the block the reader makes of it is msgspec's
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))


@needs_scanner
@pytest.mark.parametrize(
    "args",
    ['{"stream": "stream 3"}', '{"device": 12345678901234567890.5}', '{"grid": [1, 2, 3]}', "{}"],
)
def test_a_record_is_made_for_each_way_a_sparse_field_is_written(args: str) -> None:
    text = f'[{{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "args": {args}}}]'
    scanned = kineto._kineto_scan.scan_events((text.encode(),), to_number, msgspec.json.decode)
    rows = np.frombuffer(scanned["sparse_rows"], dtype=np.int64)
    assert rows.tolist() == ([] if args == "{}" else [0])
