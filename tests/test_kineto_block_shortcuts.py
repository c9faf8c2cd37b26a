"""The native engine's shortcuts in a block's columns (kld17) against the general steps they skip, and the reader's
float ids (fractional or huge pids and tids, whose depth is computed at load) against the msgspec engine, the
reference reader, over many blocks.

- ``native.op_record_columns(None, ...)`` (every row of the block kept: each op record is its own row's) against the
  same function given the kept rows ``np.arange(rows)`` (the search and gathers it skips);
- ``blocks.no_op_columns()`` (a block without op records) against the general path on no records;
- ``blocks.used_codes(codes, values)`` (all rows) against ``used_codes(codes, values, np.arange(n))``;
- the pid and tid validities read from ``kind_valid`` in the table build (the blocks no longer keep theirs);
- the names' steps (named_kinds.ready_block) done in the scanner's prepare pass against ready_block after it;
- a sparse id column (correlation ids) taken in one compiled pass (``_kineto_scan.rows_with_bit``) against the
  numpy steps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest import kineto
from tracelens.ingest.kineto import appended, blocks, native, reader, table
from tracelens.ingest.kineto.appended import Appended
from tracelens.ingest.kineto.fields import NATIVE_OP_FLOATS, NATIVE_OP_STRINGS
from tracelens.ingest.kineto.named_kinds import DRIVER_KIND, STEP_KIND, VALID_BIT, NameFlags, ready_block
from tracelens.ingest.kineto.prepare import NOT_HOST, prepare_block
from tracelens.trace import NOT_NESTED_KINDS, SparseColumn, depth_column

kineto_scan = blocks.scanner()
needs_scanner = pytest.mark.skipif(
    not kineto.native_scanner_built(), reason="native scanner not built (no C compiler)"
)


def assert_same_columns(got: dict, want: dict) -> None:
    assert list(got) == list(want)  # same keys, same order
    for key, value in want.items():
        other = got[key]
        if isinstance(value, tuple):
            assert isinstance(other, tuple), key
            assert other[0].dtype == value[0].dtype and other[0].shape == value[0].shape, key
            np.testing.assert_array_equal(other[0], value[0])
            assert list(other[1]) == list(value[1]), key
        else:
            assert other.dtype == value.dtype and other.shape == value.shape, key
            np.testing.assert_array_equal(other, value)  # (NaN equal to NaN)


def _scanned(events: list[dict]) -> dict:
    text = json.dumps(events).encode()
    scanned = native.scan_raw((text,))
    assert scanned is not None
    return scanned


OP_ARGS = {
    "Input Dims": [[8, 64], [64]],
    "Input type": ["float", "float"],
    "Concrete Inputs": ["", "[1, 1]"],
    "Input dims": [[1, 2]],  # the 2021 key: fills Input Dims where missing
    "Sequence number": 12,
    "Fwd thread id": 3,
    "flops": 1024.5,
    "Collective name": "allreduce",
    "In msg nelems": 4096,
    "Out msg nelems": 4096,
    "Group size": 8,
    "dtype": "Float",
    "Process Group Name": "0",
    "Process Group Ranks": "[0, 1]",
}


def _op_event(i: int, chosen: list[str]) -> dict:
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": f"aten::op{i % 3}",
        "pid": 1,
        "tid": 2,
        "ts": 1000.0 + i,
        "dur": 0.5,
        "args": {key: OP_ARGS[key] for key in chosen},
    }


@needs_scanner
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(sorted(OP_ARGS)), unique=True, max_size=5), max_size=12))
def test_op_records_of_every_row_equal_the_kept_rows_search(fields: list[list[str]]) -> None:
    events = [_op_event(i, chosen) for i, chosen in enumerate(fields)]
    events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5.0, "dur": 1.0})
    scanned = _scanned(events)
    rows = np.arange(scanned["rows"])
    assert_same_columns(native.op_record_columns(None, scanned), native.op_record_columns(rows, scanned))


@needs_scanner
@pytest.mark.parametrize("rows", [0, 1, 5])
def test_a_block_without_op_records_gives_what_the_general_steps_give(rows: int) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": float(i), "dur": 1.0, "args": {}}
        for i in range(rows)
    ]
    scanned = _scanned(events)
    assert np.frombuffer(scanned["op_rows"], dtype=np.int64).size == 0
    want = native.op_record_columns(np.arange(rows), scanned)
    assert_same_columns(blocks.no_op_columns(), want)
    assert_same_columns(native.op_record_columns(None, scanned), want)


def test_no_op_columns_match_op_columns_on_no_rows() -> None:
    empty = np.zeros(0, dtype=np.intp)
    numbers = {name: np.zeros(0) for name in NATIVE_OP_FLOATS}
    texts = {name: (np.zeros(0, dtype=np.int32), []) for name in NATIVE_OP_STRINGS}
    assert_same_columns(blocks.no_op_columns(), blocks.op_columns(empty, numbers, texts))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-1, 5), max_size=40),
    st.integers(0, 6),
)
def test_used_codes_of_all_rows_equal_the_rows_given(codes: list[int], n_values: int) -> None:
    values = [f"v{i}" for i in range(n_values)]
    array = np.array([c if c < n_values else -1 for c in codes], dtype=np.int32)
    got_codes, got_values = blocks.used_codes(array, values)
    want_codes, want_values = blocks.used_codes(array, values, np.arange(array.size))
    assert got_codes.dtype == want_codes.dtype
    np.testing.assert_array_equal(got_codes, want_codes)
    assert got_values == want_values


def _float_id_events(n: int) -> list[dict]:
    """Host ops, nested, with kernels and launches between them: in the first half on threads whose ids the int64
    columns cannot hold exactly (fractions, beyond int64; the blocks keep their floats), in the second on integer
    ids, some rows without a tid (those blocks' ids come from the int64 columns and their validity)."""
    events = []
    float_tids: list[float | None] = [10.25, 10.75, 2.0**70, None, 7]
    int_tids: list[float | None] = [10, None, 11, 7]
    pids = [1, 1.5, 3]
    for i in range(n):
        tid = float_tids[i % len(float_tids)] if i < n // 2 else int_tids[i % len(int_tids)]
        event = {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"op{i % 4}",
            "pid": pids[i % len(pids)] if i < n // 2 else 1 + i % 2,
            "ts": 100.0 + (i % 50) * 3,
            "dur": float(10 + i % 7),
            "args": {"External id": i},
        }
        if tid is not None:
            event["tid"] = tid
        events.append(event)
        if i % 9 == 0:
            events.append(
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 5,
                 "ts": 101.0 + i, "dur": 2.0, "args": {"correlation": i, "External id": i}}
            )  # fmt: skip
            events.append(
                {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 120.0 + i, "dur": 1.0,
                 "args": {"correlation": i, "device": 0, "stream": 7}}
            )  # fmt: skip
    return events


@needs_scanner
def test_float_ids_over_many_blocks_equal_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "float_ids.json"
    monkeypatch.setattr(reader, "BLOCK_BYTES", 16384)  # many blocks
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 8192)
    events = _float_id_events(3000)
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    got = reader.read(path, engine="native")
    want = reader.read(path, engine="msgspec")
    assert got.store.num_rows == want.store.num_rows
    for column in got.events.column_names:
        assert got.events.column(column).equals(want.events.column(column)), column
    # Both engines share the table build: its depth against one computed here from the JSON's own float ids
    # (NaN where a host row has no tid; table order: the stable sort of the file's rows by start).
    table = got.events
    order = np.argsort([event["ts"] for event in events], kind="stable")
    host = np.array([event["cat"] == "cpu_op" or event["cat"] == "cuda_runtime" for event in events])[order]
    pid = np.array([float(event["pid"]) for event in events])[order]
    tid = np.array([float(event.get("tid", np.nan)) for event in events])[order]
    kinds = np.asarray(table.column("kind").to_pylist(), dtype=object)
    nested = host & ~np.isnan(tid) & ~np.isin(kinds, NOT_NESTED_KINDS)
    start = table.column("start_ns").to_numpy()
    end = table.column("end_ns").to_numpy()
    assert table.column("depth").combine_chunks().equals(depth_column(nested, pid, tid, start, end))


NAMED_EVENTS = [
    {"cat": "cpu_op", "name": "aten::mm"},
    {"cat": "cpu_op", "name": "ProfilerStep#7"},  # a step marker: the op becomes a step
    {"cat": "user_annotation", "name": "ProfilerStep#8"},
    {"cat": "user_annotation", "name": "forward"},
    {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"correlation": 5}},
    {"cat": "cuda_runtime", "name": "cuLaunchKernel", "args": {"correlation": 6}},  # a driver call
    {"cat": "cuda_driver", "name": "cuLaunchKernel_v2", "args": {"correlation": 7}},
    {"cat": "kernel", "name": "k", "pid": 0, "tid": 7, "args": {"correlation": 5, "device": 0, "stream": 7}},
    {
        "cat": "gpu_memcpy",
        "name": "Memcpy HtoD (Pageable -> Device)",
        "pid": 0,
        "tid": 7,
        "args": {"bytes": 8},
    },
    {"cat": "gpu_user_annotation", "name": "ProfilerStep#7", "pid": 0, "tid": 7},
    {"cat": "python_function", "name": "train.py(12): step"},
    {"cat": "cpu_op"},  # no name
    {"cat": "cpu_op", "name": "aten::add", "tid": None},
]


def _named_event(i: int, template: dict, dur: float) -> dict:
    event = {"ph": "X", "pid": 1, "tid": 2, "ts": 10.0 + i, "dur": dur, **template}
    if event.get("tid", 0) is None:
        del event["tid"]
    return event


@needs_scanner
@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, len(NAMED_EVENTS) - 1), st.sampled_from([-2.0, 0.0, 3.5])), max_size=30)
)
def test_names_steps_in_the_prepare_pass_equal_ready_block_after_it(picked: list[tuple[int, float]]) -> None:
    events = [_named_event(i, NAMED_EVENTS[k], dur) for i, (k, dur) in enumerate(picked)]
    scanned = _scanned(events)
    fused = native.prepared_block(scanned)[blocks.PENDING](NameFlags())
    assert "kind_valid" in fused or "kind" not in fused
    want = ready_block(native.prepared_block(scanned)[blocks.PENDING](None), NameFlags())
    assert set(fused) == set(want)
    for key, value in want.items():
        got = fused[key]
        if isinstance(value, np.ndarray):
            assert got.dtype == value.dtype, key
            np.testing.assert_array_equal(got, value)
        elif isinstance(value, tuple):
            for part, other in zip(value, got, strict=True):
                if isinstance(part, np.ndarray):
                    np.testing.assert_array_equal(other, part)
                else:
                    assert list(other) == list(part), key
        else:
            assert got == value, key
    # the reader's path (prepared_block, then ready_block with the table's flags) and prepare_block alone
    assert ready_block(native.prepared_block(scanned), NameFlags()).keys() == want.keys()
    assert "kind_valid" not in prepare_block(native.prepared_block(scanned))


def test_the_kinds_names_change_stay_host_kinds() -> None:
    # the fused pass keeps a non-exact block's pid/tid floats by the kinds after the names' steps (numpy's steps
    # use those before): the same rows, as no name moves a row between host and GPU kinds
    np.testing.assert_array_equal(NOT_HOST[STEP_KIND], NOT_HOST)
    np.testing.assert_array_equal(NOT_HOST[DRIVER_KIND], NOT_HOST)


def _parts(key: str, values: np.ndarray) -> Appended:
    """The one joined array _id_column_in_order pops."""
    parts = Appended()
    parts.add(key, values)
    return parts


@needs_scanner
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 300), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1), st.booleans())
def test_sparse_correlation_ids_in_one_pass_equal_the_numpy_steps(
    rows: int, share: float, seed: int, narrow: bool
) -> None:
    rng = np.random.default_rng(seed)
    bit = VALID_BIT["correlation"]
    kind_valid = (rng.integers(0, 16, rows) | np.where(rng.random(rows) < share, bit, 0)).astype(np.uint8)
    kind_valid |= (rng.random(rows) < 0.5).astype(np.uint8) * np.uint8(VALID_BIT["external_id"])
    order = rng.permutation(rows).astype(np.int64)
    values = rng.integers(-(2**62), 2**62, rows, dtype=np.int64)
    if narrow:  # the row chunks' int32 ids (row_chunks.NARROW_KEYS); the reference: the same values as int64
        values = rng.integers(-(2**31), 2**31, rows, dtype=np.int32)
    got = table._id_column_in_order(
        _parts("correlation", values), order, kind_valid, "correlation", "correlation_id"
    )
    with pytest.MonkeyPatch.context() as patch:  # the numpy steps: no compiled helper
        patch.setattr(table, "scanner", lambda: None)
        patch.setattr(appended, "scanner", lambda: None)
        want = table._id_column_in_order(
            _parts("correlation", values.astype(np.int64)), order, kind_valid, "correlation", "correlation_id"
        )
        if narrow:  # the int32 ids through the numpy steps give the same column
            _assert_same_column(
                table._id_column_in_order(
                    _parts("correlation", values), order, kind_valid, "correlation", "correlation_id"
                ),
                want,
            )
    _assert_same_column(got, want)


def _assert_same_column(got: Any, want: Any) -> None:
    if want is None:
        assert got is None
        return
    assert type(got) is type(want)
    if isinstance(want, SparseColumn):
        assert got.rows.dtype == want.rows.dtype
        np.testing.assert_array_equal(got.rows, want.rows)
        assert got.values.equals(want.values)
    else:
        assert got.equals(want)


@needs_scanner
def test_rows_with_bit_checks_its_sizes() -> None:
    helper = kineto_scan.rows_with_bit
    flags = np.array([1, 0, 1], dtype=np.uint8)
    order = np.array([2, 0, 1], dtype=np.int64)
    values = np.array([10, 11, 12], dtype=np.int64)
    rows, data = np.empty(2, dtype=np.int32), np.empty(2, dtype=np.int64)
    helper(flags, 1, order, values, rows, data)
    assert rows.tolist() == [0, 2] and data.tolist() == [12, 11]
    with pytest.raises(ValueError):  # one row too many given
        helper(flags, 1, order, values, np.empty(3, dtype=np.int32), np.empty(3, dtype=np.int64))
    with pytest.raises(ValueError):  # an order entry outside the values
        helper(flags, 1, np.array([5, 0, 1], dtype=np.int64), values, rows, data)
