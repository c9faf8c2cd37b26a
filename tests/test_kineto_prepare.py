"""The Kineto reader's per-block steps (tracelens/ingest/kineto/prepare.py) and the table's placing of rows
against the plain formulas they replace: ids as int64 data and validity, the exactness test, and the rows of
a sorted table found without an inverse permutation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest import kineto
from tracelens.ingest.kineto import native, placing, prepare, table
from tracelens.ingest.kineto.stored import unrepresentable

_ID = st.one_of(
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**63, -(2.0**63), 2.0**62, 2.0**53, 0.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**64), 2**64).map(float),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ID, max_size=20))
def test_int_parts_and_exactness_match_the_formulas(ids: list[float]) -> None:
    values = np.array(ids, dtype=np.float64)
    data, valid = prepare.int_parts(values, "pid")
    missing = unrepresentable(values, np.dtype(np.int64))
    with np.errstate(invalid="ignore"):
        expected = values.astype(np.int64)
    expected[missing] = 0
    np.testing.assert_array_equal(valid, ~missing)
    np.testing.assert_array_equal(data, expected)
    with np.errstate(invalid="ignore"):
        exact = bool(np.all(np.isnan(values) | ((np.abs(values) < 2.0**63) & (np.trunc(values) == values))))
    assert prepare.stored_exactly(values) is exact
    assert prepare.stored_exactly(values, data) is exact


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=60), st.data())
def test_rows_in_table_order(starts: list[int], data: st.DataObject) -> None:
    m = len(starts)
    order = np.argsort(np.array(starts), kind="stable")
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, m - 1)))), dtype=np.int64)
    kept, at = placing.in_table_order(rows, order, m)
    position = np.empty(m, dtype=np.int64)
    position[order] = np.arange(m)
    expected_at = position[rows]
    expected_kept = np.argsort(expected_at)
    np.testing.assert_array_equal(kept, expected_kept)
    np.testing.assert_array_equal(at, expected_at[expected_kept])


def _events(n: int) -> list[dict]:
    kinds = [
        ("cpu_op", "aten::mm"),
        ("cuda_runtime", "cudaLaunchKernel"),
        ("kernel", "gemm"),
        ("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"),
    ]
    events = []
    for i in range(n):
        cat, name = kinds[i % len(kinds)]
        gpu = cat in ("kernel", "gpu_memcpy")
        args = {"correlation": 100 + i // 4, "External id": i}
        if gpu:
            args.update({"device": 0, "stream": 7, "grid": [1, 2, 3], "block": [4, 1, 1], "bytes": 64})
        if cat == "cpu_op" and i % 8 == 0:
            args["Input Dims"] = [[i, 2]]
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "ts": 1000.5 + 3 * ((i * 7) % n),
                "dur": 2.25,
                "pid": 0 if gpu else 12,
                "tid": 7 if gpu else 34,
                "args": args,
            }
        )
    return events


def _table(blocks: list[dict]) -> tuple:
    columns = table.Columns(Path("made.json"))
    for block in blocks:
        columns.add(block)
    trace = columns.finish({})
    return trace.events, trace.devices


@pytest.mark.skipif(not kineto.native_scanner_built(), reason="the native scanner was not built")
@pytest.mark.parametrize("dropped", [(0,), (5,), (3, 10, 11), tuple(range(1, 24, 2))])
def test_rows_dropped_by_prepare_block_leave_the_table_of_the_other_rows(dropped: tuple[int, ...]) -> None:
    """A block whose rows include some off the timeline (the engines drop them first; prepare_block drops any
    left) gives the table the block without them gives (the same values: a dictionary may keep a string that
    only the dropped rows had, as before prepare_block)."""
    events = _events(24)

    def block_of(evs: list[dict]) -> dict:
        text = b",".join(json.dumps(e).encode() for e in evs)
        block = native.scan_block_columns((text,))
        assert block is not None
        return block

    with_rows = block_of(events)
    with_rows["ts"] = with_rows["ts"].copy()
    with_rows["ts"][list(dropped)] = np.inf  # as if the scanner had kept them
    without = block_of([e for i, e in enumerate(events) if i not in dropped])
    events_a, devices_a = _table([with_rows])
    events_b, devices_b = _table([without])
    assert events_a.schema.equals(events_b.schema)
    for name in events_a.column_names:
        assert events_a.column(name).to_pylist() == events_b.column(name).to_pylist(), name
    assert devices_a.equals(devices_b)
