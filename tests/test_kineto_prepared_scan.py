"""The scanner's prepared blocks (``_kineto_scan.prepare_scanned``, native.scan_block) against the two steps
they replace: the block columns of native.scan_block_columns made ready by prepare.prepare_block with its
numpy steps. The same keys in the same order, dtypes, shapes and values (bit for bit), writable columns; on
Kineto's own event shapes, rows the numpy steps drop (then taken by them), odd values, empty blocks, and the
real traces and fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from tests.conftest import FIXTURES, shared_traces
from tests.test_kineto_native import READ_NATIVELY, event_list
from tests.test_kineto_prepare import _events
from tracelens.ingest import kineto
from tracelens.ingest.kineto import native, prepare, split
from tracelens.ingest.kineto.fields import DEVICE_FIELDS, NATIVE_SPARSE_FLOATS

pytestmark = pytest.mark.skipif(
    getattr(kineto._kineto_scan, "prepared_sizes", None) is None, reason="the native scanner is not built"
)


def _numpy_steps(scanned: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    with monkeypatch.context() as patch:
        patch.setattr(prepare, "scanner", lambda: None)  # prepare_block's numpy steps
        return prepare.prepare_block(native._scanned_columns(scanned))


def _scanned(text: bytes) -> dict[str, Any] | None:
    return native.scanner().scan_events((text,), native.to_number, msgspec.json.decode)


def assert_same_prepared(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for key, value in want.items():
        have = got[key]
        if isinstance(value, tuple):  # (codes, distinct strings)
            assert list(have[1]) == list(value[1]), key
            have, value = have[0], value[0]
        if isinstance(value, np.ndarray):
            assert (have.dtype, have.shape) == (value.dtype, value.shape), key
            assert have.tobytes() == value.tobytes(), key
            assert have.flags.writeable, key
        else:
            assert type(have) is type(value) and have == value, key


def _check(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = _scanned(text)
    assert scanned is not None
    want = _numpy_steps(scanned, monkeypatch)
    assert_same_prepared(native._prepared_columns(_scanned(text)), want)


@pytest.mark.parametrize("case", READ_NATIVELY)
def test_prepared_blocks_equal_the_numpy_steps(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(event_list(*READ_NATIVELY[case]).encode(), monkeypatch)


@pytest.mark.parametrize("n", [1, 2, 24, 1000])
def test_kineto_shaped_blocks(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(b",".join(json.dumps(e).encode() for e in _events(n)), monkeypatch)


ODD = [
    # ids that are NaN, beyond int64, fractions, written as text; durations off the timeline; no args
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1.5, "tid": "stream 7", "ts": 1, "dur": 1e300},
    {
        "ph": "X",
        "cat": "cpu_op",
        "name": "b",
        "pid": 1e30,
        "tid": -3,
        "ts": -2.5,
        "args": {"External id": 2**70},
    },
    {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 4,
        "tid": 4,
        "ts": 3,
        "dur": 1,
        "args": {"correlation": 9},
    },
    {"ph": "X", "cat": "cuda_runtime", "name": "no pid", "tid": 4, "ts": 3, "args": {"correlation": 10}},
    {
        "ph": "X",
        "cat": "kernel",
        "name": "k",
        "pid": 0,
        "tid": 7,
        "ts": 4,
        "dur": 2,
        "args": {"correlation": 9, "device": 0, "stream": "7", "grid": [1, 2, 3], "external id": 5},
    },
    {
        "ph": "X",
        "cat": "gpu_user_annotation",
        "name": "g",
        "pid": 0,
        "tid": 7,
        "ts": 5,
        "args": {"correlation": 3},
    },
    {
        "ph": "X",
        "cat": "cuda_sync",
        "name": "s",
        "pid": 0,
        "tid": 7,
        "ts": 6,
        "args": {"cuda_sync_kind": "x"},
    },
    {
        "ph": "X",
        "cat": "cpu_op",
        "name": "sync kind on a host row",
        "pid": 1,
        "tid": 1,
        "ts": 7,
        "args": {"cuda_sync_kind": "only here", "external id": 8},
    },
    {"ph": "X", "name": "no category", "pid": 1, "tid": 1, "ts": 8},
    {"ph": "X", "cat": "Trace", "name": "the profiler's span", "pid": 1, "tid": 1, "ts": 0, "dur": 1e6},
]


@pytest.mark.parametrize("first", range(len(ODD)))
def test_odd_values_one_row_and_more(first: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(json.dumps(ODD[first]).encode(), monkeypatch)  # one row (or none)
    _check(b",".join(json.dumps(e).encode() for e in ODD[first:] + ODD[:first]), monkeypatch)


def test_rows_to_drop_are_left_to_the_numpy_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "kept", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "X", "cat": "cpu_op", "name": "off the timeline", "pid": 1, "tid": 1, "ts": 1e300},
        {"ph": "X", "cat": "trace", "name": "not an event", "pid": 1, "tid": 1, "ts": 2},
    ]
    for dropped in events[1:]:
        text = b",".join(json.dumps(e).encode() for e in (events[0], dropped))
        scanned = _scanned(text)
        assert scanned is not None
        sizes = native.scanner().prepared_sizes(*_size_sources(scanned))
        assert sizes is None
        _check(text, monkeypatch)


def test_an_empty_block_has_its_counts_only() -> None:
    text = json.dumps({"ph": "i", "name": "instant", "pid": 1, "tid": 1, "ts": 1}).encode()
    block = native.scan_block((text,))
    assert block == {"counts": native.scan_block_columns((text,))["counts"]}


def test_the_device_fields_follow_external_id_old_in_the_sparse_floats() -> None:
    # prepare_scanned gives them in the order of the sparse floats after external_id_old, then grid, block
    assert NATIVE_SPARSE_FLOATS[0] == "external_id_old"
    assert NATIVE_SPARSE_FLOATS[1 : 1 + len(DEVICE_FIELDS)] == DEVICE_FIELDS
    assert NATIVE_SPARSE_FLOATS[1 + len(DEVICE_FIELDS) :] == tuple(
        f"{name}_{axis}" for name in ("grid", "block") for axis in "xyz"
    )


class _Quiet:
    def advance(self, n: int) -> None:
        pass


def _traces() -> list[Path]:
    found = [
        p
        for p in FIXTURES.rglob("*.json*")
        if p.name.endswith((".json", ".json.gz")) and p.parent.name != "causes" and "facts" not in p.name
    ]
    return sorted(found) + list(shared_traces("pytorch", "*.json.gz", "*.json"))


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_real_traces_blocks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for kind, payload, _ in split.split_stream(path, _Quiet(), 1 << 20):
        if kind != "events":
            continue
        scanned = native.scanner().scan_events(payload.pieces(), native.to_number, msgspec.json.decode)
        if scanned is None:
            continue
        want = _numpy_steps(scanned, monkeypatch)
        again = native.scanner().scan_events(payload.pieces(), native.to_number, msgspec.json.decode)
        assert_same_prepared(native._prepared_columns(again), want)


def _size_sources(scanned: dict) -> tuple:
    """The arguments of the scanner's ``prepared_sizes`` for one scanned block."""
    return (
        scanned["floats"],
        scanned["codes"],
        scanned["sparse_rows"],
        scanned["sparse_floats"],
        native.kind_table(scanned["categories"]),
        prepare.KIND_FLAGS,
        native.MAX_TIME_US,
    )


def test_columns_of_other_sizes_are_refused() -> None:
    text = b",".join(json.dumps(e).encode() for e in _events(8))
    scanned = _scanned(text)
    assert scanned is not None
    sources = _size_sources(scanned)
    n_gpu, n_launches = native.scanner().prepared_sizes(*sources)
    counts = {"row": 8, "gpu": n_gpu + 1, "launch": n_launches}  # one GPU row too many
    columns = tuple(
        np.empty((counts[per], 3) if key in ("grid", "block") else counts[per], dtype=dtype)
        for key, dtype, per in native._PREPARED
    )
    with pytest.raises(ValueError, match="sizes"):
        native.scanner().prepare_scanned(*sources, columns)
    with pytest.raises(ValueError, match="columns"):
        native.scanner().prepare_scanned(*sources, columns[:-1])
