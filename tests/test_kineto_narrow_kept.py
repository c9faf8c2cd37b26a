"""The narrow columns the reader's row chunks keep beside the ids: durations as int32 (row_chunks.NARROW_KEYS) and the
GPU rows' float fields as float32 (row_chunks.FLOAT32_KEYS), each only where every value of a block is held exactly.

Checked against the wide path (independently: the same pass into int64 / float64 columns, numpy's casts): the
scanner's pass (``_kineto_scan.prepare_scanned``) on durations at and beyond int32's limits, negative ones, GPU
fields that float32 holds or not (NaN, -0.0, fractions, 2**24 + 1, beyond float32's range), its misfit bits; the
rest's float64 values copied into float32 slots only where they fit; the table build's readers of float32 fields
(gpu_columns.py) against float64 ones; and whole reads with and without chunks (a long span in an early block, a GPU
field float32 does not hold in some block, and the real traces under /work/shared/traces) giving the same table."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tracelens import load
from tracelens.ingest import kineto
from tracelens.ingest.kineto import gpu_columns, native, reader, row_chunks
from tracelens.ingest.kineto.appended import Appended
from tracelens.ingest.kineto.named_kinds import DRIVER_KIND, LAUNCH_SIDE_BYTES, STEP_KIND, NameFlags
from tracelens.trace import SparseColumn

needs_scanner = pytest.mark.skipif(
    not kineto.native_scanner_built(), reason="native scanner not built (no C compiler)"
)

INT32 = np.iinfo(np.int32)
FLOAT32 = sorted(row_chunks.FLOAT32_KEYS)
# durations (microseconds): within int32 ns, at its edges, beyond them, negative
DURATIONS = [1.5, 0.0, 2147483.647, 2147483.648, -2147483.648, -2147483.649, -3.0, 95699.037, 3.6e6]
# GPU field values: NaN (missing), exact float32 values, and values float32 does not hold
FITTING = [float("nan"), 0.0, -0.0, 0.5, 7.0, 65535.0, 2.0**24, -3.25, 2.0**100]
MISFITS = [2.0**24 + 1, 0.1, 1e39, -1e39, 2.0**25 + 1]


def _kernel(i: int, value: float, dur: float = 1.5) -> dict[str, Any]:
    args: dict[str, Any] = {"correlation": 100 + i, "device": 0, "stream": 7}
    if value == value:  # (NaN: the fields missing)
        # (a triple holds JSON integers only: the value where it is one)
        whole = int(value) if value.is_integer() and abs(value) < 2.0**53 else 3
        args.update(
            {
                "registers per thread": value,
                "shared memory": value,
                "est. achieved occupancy %": value,
                "grid": [whole, 1, 1],
                "block": [128, whole, 1],
                "bytes": value,
            }
        )
    return {
        "ph": "X",
        "cat": "kernel",
        "name": f"k{i % 3}",
        "pid": 0,
        "tid": 7,
        "ts": 100.0 + i,
        "dur": dur,
        "args": args,
    }


def _host(i: int, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i % 2}", "pid": 1, "tid": 2, "ts": 50.0 + i, "dur": dur}


def _scanned(events: list[dict[str, Any]]) -> dict[str, Any]:
    scanned = native.scan_raw((json.dumps(events).encode(),))
    assert scanned is not None
    return scanned


def _columns(scanned: dict[str, Any], narrow: bool) -> tuple[np.ndarray, ...]:
    sizes = native._sizes(scanned)
    assert sizes is not None
    gpu, launches = sizes
    counts = {"row": scanned["rows"], "gpu": gpu, "launch": launches}
    return tuple(
        np.full(
            (counts[per], 3) if key in ("grid", "block") else counts[per],
            7,
            dtype=native._narrow(key, dtype) if narrow else dtype,
        )
        for key, dtype, per in native._PREPARED
    )


def _names(scanned: dict[str, Any]) -> tuple[np.ndarray, ...]:
    names = scanned["names"]
    return (
        NameFlags().bits(names),
        STEP_KIND,
        DRIVER_KIND,
        LAUNCH_SIDE_BYTES,
        np.zeros(scanned["rows"], np.uint8),
        np.zeros(len(names), bool),
    )


def _fits(key: str, values: np.ndarray) -> bool:
    """Whether the wide ``values`` of ``key`` go into its narrow type exactly (an independent test: numpy's casts)."""
    if key in row_chunks.NARROW_KEYS:
        return bool(np.all((values >= INT32.min) & (values <= INT32.max)))
    with np.errstate(over="ignore"):
        back = values.astype(np.float32).astype(np.float64)
    return bool(np.array_equal(back.view(np.int64), values.view(np.int64)))


@needs_scanner
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("value", FITTING + MISFITS)
@pytest.mark.parametrize("dur", DURATIONS)
def test_narrow_columns_equal_the_wide_pass_where_every_value_fits(
    value: float, dur: float, named: bool
) -> None:
    events = [_host(0, 2.0), _kernel(1, 4.0), _host(2, dur), _kernel(3, value, dur), _kernel(4, float("nan"))]
    scanned = _scanned(events)
    sources = native._sources(scanned)
    module = native.scanner()
    wide = _columns(scanned, narrow=False)
    want = module.prepare_scanned(*sources, wide, _names(scanned) if named else None)
    narrow = _columns(scanned, narrow=True)
    got = module.prepare_scanned(*sources, narrow, _names(scanned) if named else None)
    assert want[3] == 0  # (wide columns hold every value)
    assert got[:3] == want[:3]
    fits = {
        key: _fits(key, w)
        for (key, _, _), w in zip(native._PREPARED, wide, strict=True)
        if key in native._NARROW_BIT
    }
    assert got[3] == sum(native._NARROW_BIT[key] for key, fit in fits.items() if not fit)
    assert fits["registers"] == (value not in MISFITS)
    assert fits["duration"] == (-2147483.648 <= (0.0 if named and dur < 0 else dur) <= 2147483.647)
    for (key, _, _), w, g in zip(native._PREPARED, wide, narrow, strict=True):
        if key in native._NARROW_BIT:
            assert g.dtype.itemsize == 4
            if fits[key]:  # (where one does not fit, the reader writes that column again, wide)
                have = g.astype(w.dtype)
                assert np.array_equal(have.view(np.int64), w.view(np.int64)), key  # bit for bit (NaN, -0.0)
        else:
            np.testing.assert_array_equal(g, w)


@needs_scanner
def test_a_block_with_values_beyond_the_narrow_types_is_the_wide_block() -> None:
    events = [_host(0, 3.6e6), _kernel(1, 2.0**24 + 1), _kernel(2, 5.0), _host(3, 1.0)]
    want = native._prepared_columns(_scanned(events))  # (no chunks: wide arrays of its own)
    with row_chunks.row_chunks(row_chunks.MIN_JSON_BYTES):
        scanned = native.reserve_rows(_scanned(events), 1000)
        slots = scanned["row_slots"]
        assert slots["duration"].dtype == np.int32 and slots["registers"].dtype == np.float32
        got = native._prepared_columns(scanned)
        for key in ("duration", "registers", "grid", "bytes"):  # the misfits: wide arrays of their own
            assert got[key].dtype.itemsize == 8 and got[key].base is not slots[key].base
        assert got["device"].dtype == np.float32  # (the fields that fit stay in their slots)
        later = native.reserve_rows(_scanned(events), 1000)["row_slots"]  # the next blocks' slots: wide
        assert later["duration"].dtype == np.int64 and later["registers"].dtype == np.float64
        assert later["device"].dtype == np.float32
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            have = (
                got[key].astype(value.dtype)
                if got[key].dtype.itemsize == 4 and key in native._NARROW_BIT
                else got[key]
            )
            assert have.dtype == value.dtype, key
            np.testing.assert_array_equal(have, value)


def test_the_rests_floats_go_into_float32_slots_only_where_they_fit() -> None:
    chunks = row_chunks.RowChunks(json_bytes=row_chunks.MIN_JSON_BYTES)
    slot = ("registers", np.float32, "gpu", 1)
    first = chunks.reserve({"gpu": 3}, 100, (slot,))["registers"]
    fitting = np.array([np.nan, -0.0, 2.0**24, 0.5])
    moved = chunks.taken("registers", fitting, slot)
    assert moved.dtype == np.float32 and moved.base is first.base
    assert np.array_equal(moved.astype(np.float64).view(np.int64), fitting.view(np.int64))
    for beyond in ([1.0, 2.0**24 + 1], [0.1], [1e39], [np.nan, -1e300]):
        values = np.array(beyond)
        assert chunks.taken("registers", values, slot) is values
    wide = chunks.taken("duration", np.array([1, INT32.max + 1]), ("duration", np.int32, "row", 1))
    assert wide.dtype == np.int64
    chunks.widen(["registers"])
    assert chunks.reserve({"gpu": 2}, 100, (slot,))["registers"].dtype == np.float64


def _parts(values: dict[str, np.ndarray], dtype: type) -> Appended:
    parts = Appended()
    for key, array in values.items():
        half = array.shape[0] // 2  # two blocks: joined by a copy
        parts.add(key, array[:half].astype(dtype))
        parts.add(key, array[half:].astype(dtype))
    return parts


def test_the_gpu_columns_of_float32_fields_equal_those_of_float64_ones() -> None:
    rng = np.random.default_rng(5)
    m = 40
    pick = [np.nan, 0.0, 1.0, 7.0, 255.0, 49152.0, 2.0**24, 2.0**31, -(2.0**31), 2.0**63, 66.0, 12.5]
    values = {k: rng.choice(pick, m) for k in FLOAT32 if k not in ("grid", "block")}
    values.update({k: rng.choice(pick, (m, 3)) for k in ("grid", "block")})
    rows = np.sort(rng.choice(m, 25, replace=False))
    at_rows = np.sort(rng.choice(100, 25, replace=False)).astype(np.int32)
    built = []
    for dtype in (np.float64, np.float32):  # (every value in pick is a float32 exactly)
        parts = _parts(values, dtype)
        built.append(
            [
                gpu_columns.field_at(parts, "registers", rows, at_rows, 100, "registers_per_thread"),
                gpu_columns.field_at(parts, "bytes", rows, at_rows, 100, "bytes"),
                gpu_columns.field_at(parts, "occupancy_pct", rows, at_rows, 100, "reported_occupancy", 100.0),
                *gpu_columns.geometry(parts, "grid", rows, at_rows, 100),
                *gpu_columns.geometry(parts, "block", rows, at_rows, 100),
                *gpu_columns.shared_memory(parts, rows, at_rows, 100),
                gpu_columns.stream_column(parts, rows, at_rows, 100),
                gpu_columns.with_fallback(parts, "device", "gpu_pid"),
            ]
        )
    for want, got in zip(*built, strict=True):
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype == np.float64
            np.testing.assert_array_equal(got, want)
        elif isinstance(want, SparseColumn):
            assert isinstance(got, SparseColumn)
            assert got.rows.dtype == want.rows.dtype
            np.testing.assert_array_equal(got.rows, want.rows)
            assert got.values.type == want.values.type and got.values.equals(want.values)
        else:
            assert got is None if want is None else (got.type == want.type and got.equals(want))


def _gzip_trace(path: Path, events: list[dict[str, Any]]) -> Path:
    text = json.dumps({"traceEvents": events}, indent=1).replace("\n {", "\n  {").replace("\n }", "\n  }")
    with gzip.open(path, "wt") as out:
        out.write(text)
    return path


def _chunked_read(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A read with row chunks and many small blocks (one scan worker beside this thread)."""
    with monkeypatch.context() as patched:
        patched.setattr(row_chunks, "MIN_JSON_BYTES", 0)
        patched.setattr(reader, "BLOCK_BYTES", 32 * 1024)
        patched.setattr(reader, "MIN_BLOCK_BYTES", 32 * 1024)
        patched.setattr(reader, "thread_budget", lambda: 2)
        return load(path, engine="native")


def _same_trace(got: Any, want: Any) -> None:
    assert got.events.equals(want.events)
    assert got.devices.equals(want.devices)


@needs_scanner
@pytest.mark.parametrize("long_at", [None, 3, 2500])
@pytest.mark.parametrize("odd_at", [None, 7, 2999])
def test_a_read_with_narrow_chunks_gives_the_table_of_one_without(
    long_at: int | None, odd_at: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = []
    for i in range(3000):
        if i % 2:
            value = 2.0**24 + 1 if i == odd_at else float(i % 97)
            events.append(_kernel(i, value if i % 5 else float("nan")))
        else:
            events.append(_host(i, 3.6e6 if i == long_at else 0.25 * (i % 9) - (1.0 if i % 11 == 0 else 0.0)))
    path = _gzip_trace(tmp_path / "t.json.gz", events)
    without = load(path, engine="native")
    _same_trace(load(path, engine="msgspec"), without)
    narrow: set[str] = set()  # the keys some block added narrow (the rest's duration is int64: ready_block)
    real = Appended.add

    def recording(self: Appended, key: str, values: np.ndarray, shift: int = 0) -> None:
        if values.size and values.dtype.itemsize == 4:
            narrow.add(key)
        real(self, key, values, shift)

    monkeypatch.setattr(Appended, "add", recording)
    _same_trace(_chunked_read(path, monkeypatch), without)
    if long_at is None:
        assert "duration" in narrow
    if odd_at is None:
        assert {"registers", "grid", "block", "gpu_pid"} <= narrow


REAL = Path("/work/shared/traces/pytorch")


@needs_scanner
@pytest.mark.skipif(not REAL.is_dir(), reason="no real traces here")
@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.json*")) if REAL.is_dir() else [])
def test_real_traces_read_with_narrow_chunks_give_the_same_table(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = REAL / name
    _same_trace(_chunked_read(path, monkeypatch), load(path, engine="native"))
