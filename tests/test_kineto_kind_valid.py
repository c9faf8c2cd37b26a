"""kineto/table.py's ``kind_valid`` byte (each row's kind and the validity of its four id columns, joined and put
in table order as one array): the kind and id columns of a table built from several blocks equal a direct
reading of the events (json values, rows in start order, ties in file order), with each id missing, beyond
int64 or present on any row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import msgspec_engine, named_kinds, stored, table
from tracelens.trace import SparseColumn

_ROOT = Path("made.json")
_KIND = {
    "cpu_op": "cpu_op",
    "user_annotation": "annotation",
    "cuda_runtime": "runtime",
    "python_function": "python",
}
# an id as a trace may write it (None: left out), one beyond int64 (stored as null)
_ID = st.one_of(st.none(), st.integers(-5, 5), st.integers(2**40, 2**40 + 3), st.just(2**70))


@st.composite
def _event(draw: st.DrawFn) -> dict:
    cat = draw(st.sampled_from(sorted(_KIND)))
    event: dict = {
        "ph": "X",
        "cat": cat,
        "name": f"op{draw(st.integers(0, 3))}",
        "ts": draw(st.integers(0, 6)),
    }
    event["dur"] = draw(st.integers(-3, 3))  # a negative one ends at its start
    args = {}
    for key, into in (("pid", event), ("tid", event), ("correlation", args), ("External id", args)):
        value = draw(_ID)
        if value is not None:
            into[key] = value
    event["args"] = args
    return event


def _block(events: list[dict]) -> dict:
    payload = b"[" + b",".join(json.dumps(e).encode() for e in events) + b"]"
    return msgspec_engine.block_columns(msgspec_engine.decode_events(payload, _ROOT))


def _id(value: int | None) -> int | None:
    return value if value is not None and -(2**63) < value < 2**63 else None


@settings(max_examples=80, deadline=None)
@given(st.lists(_event(), min_size=1, max_size=30), st.lists(st.integers(1, 8), min_size=1, max_size=6))
def test_kind_and_ids_equal_the_events_in_start_order(events: list[dict], cuts: list[int]) -> None:
    columns = table.Columns(_ROOT)
    lo = 0
    for size in [*cuts, len(events)]:  # several blocks, the last one taking the rest
        if lo < len(events):
            columns.add(_block(events[lo : lo + size]))
        lo += size
    trace = columns.finish({})
    ordered = [events[i] for i in np.argsort([e["ts"] for e in events], kind="stable")]
    store = trace.store
    assert store.column("kind").to_pylist() == [_KIND[e["cat"]] for e in ordered]
    assert store.column("pid").to_pylist() == [_id(e.get("pid")) for e in ordered]
    assert store.column("tid").to_pylist() == [_id(e.get("tid")) for e in ordered]
    # a correlation id is kept on launch-side rows (runtime calls) only
    want = [_id(e["args"].get("correlation")) if e["cat"] == "cuda_runtime" else None for e in ordered]
    assert store.column("correlation_id").to_pylist() == want
    assert store.column("external_id").to_pylist() == [_id(e["args"].get("External id")) for e in ordered]
    origin = ordered[0]["ts"]
    assert store.column("start_ns").to_pylist() == [(e["ts"] - origin) * 1000 for e in ordered]
    assert store.column("end_ns").to_pylist() == [
        (e["ts"] + max(e["dur"], 0) - origin) * 1000 for e in ordered
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=20))
def test_an_id_column_taken_at_its_rows_equals_one_taken_whole(values: list[int | None]) -> None:
    """The sparse path of _id_column_in_order (the rows with a value gathered alone) against int_column of the
    whole column in table order, for ids on few, half or most rows."""
    n = len(values)
    data = np.array([v or 0 for v in values], dtype=np.int64)
    order = np.random.default_rng(n).permutation(n)
    bit = named_kinds.VALID_BIT["correlation"]
    kind_valid = np.array([bit if v is not None else 0 for v in values], dtype=np.uint8)[order]
    parts = table.Appended()
    parts.add("correlation", data)
    got = table._id_column_in_order(parts, order, kind_valid, "correlation", "correlation_id")
    want = stored.int_column(data[order], kind_valid.astype(bool), "correlation_id")
    assert type(got) is type(want)
    if isinstance(want, SparseColumn):
        np.testing.assert_array_equal(got.rows, want.rows)
        assert got.rows.dtype == want.rows.dtype
        assert got.values.equals(want.values)
    elif want is not None:
        assert got.equals(want)
