"""The ids the reader's row chunks hold as int32 (row_chunks.NARROW_KEYS: pid, tid, correlation, external id and
the duration):
the scanner's prepare pass writing them as int32 (``_kineto_scan.prepare_scanned``, ``fits`` False where one does
not fit) against the int64 pass, a block whose ids do not fit read as int64, the table build's widening
(``take_widened``, ``Appended.pop_taken``, ``rows_with_bit`` of int32 values) against numpy's take, the rest's
int64 ids copied into int32 slots only where they fit, and whole reads with and without chunks (ids beyond int32
in some blocks) giving the same table."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import load
from tracelens.ingest import kineto
from tracelens.ingest.kineto import appended, native, row_chunks
from tracelens.ingest.kineto.appended import Appended
from tracelens.ingest.kineto.named_kinds import DRIVER_KIND, LAUNCH_SIDE_BYTES, STEP_KIND, NameFlags
from tracelens.ingest.kineto.prepare import prepare_block
from tracelens.trace import SparseColumn

needs_scanner = pytest.mark.skipif(
    not kineto.native_scanner_built(), reason="native scanner not built (no C compiler)"
)

NARROW = sorted(row_chunks.NARROW_KEYS)
INT32 = np.iinfo(np.int32)

# ids: within int32, at its edges, beyond it, fractions, huge floats, missing
IDS = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from([INT32.min, INT32.max, INT32.min - 1, INT32.max + 1, 2**40, -(2**40), 2**62]),
    st.sampled_from([0.5, -3.25, 1e30, float(2**63)]),
    st.none(),
)
CATEGORIES = ["cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "user_annotation", "gpu_user_annotation"]


def _event(i: int, cat: str, pid: Any, tid: Any, correlation: Any, external: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "X", "cat": cat, "name": f"n{i % 3}", "ts": 100.0 + i, "dur": 1.5}
    for key, value in (("pid", pid), ("tid", tid)):
        if value is not None:
            event[key] = value
    args = {k: v for k, v in (("correlation", correlation), ("External id", external)) if v is not None}
    if args:
        event["args"] = args
    return event


def _scanned(events: list[dict[str, Any]]) -> dict[str, Any]:
    scanned = native.scan_raw((json.dumps(events).encode(),))
    assert scanned is not None
    return scanned


def _columns(scanned: dict[str, Any], narrow: bool) -> tuple[np.ndarray, ...]:
    gpu, launches = native._sizes(scanned)
    counts = {"row": scanned["rows"], "gpu": gpu, "launch": launches}
    return tuple(
        np.full(
            (counts[per], 3) if key in ("grid", "block") else counts[per],
            7,
            dtype=np.int32 if narrow and key in row_chunks.NARROW_KEYS else dtype,
        )
        for key, dtype, per in native._PREPARED
    )


def _names(scanned: dict[str, Any]) -> tuple[np.ndarray, ...]:
    rows, names = scanned["rows"], scanned["names"]
    bits = NameFlags().bits(names)
    return (
        bits,
        STEP_KIND,
        DRIVER_KIND,
        LAUNCH_SIDE_BYTES,
        np.zeros(rows, np.uint8),
        np.zeros(len(names), bool),
    )


@needs_scanner
@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(CATEGORIES), IDS, IDS, IDS, IDS), min_size=1, max_size=25))
def test_int32_id_columns_equal_the_int64_pass_where_every_id_fits(picked: list[tuple[Any, ...]]) -> None:
    scanned = _scanned([_event(i, *row) for i, row in enumerate(picked)])
    sources = native._sources(scanned)
    module = native.scanner()
    wide, wide_names = _columns(scanned, narrow=False), _names(scanned)
    want = module.prepare_scanned(*sources, wide, wide_names)
    narrow, narrow_names = _columns(scanned, narrow=True), _names(scanned)
    got = module.prepare_scanned(*sources, narrow, narrow_names)
    assert want[3] == 0  # (int64 columns hold every value)
    assert got[:3] == want[:3]
    at = {key: i for i, (key, _, _) in enumerate(native._PREPARED)}
    fits = {key: all(INT32.min <= v <= INT32.max for v in wide[at[key]].tolist()) for key in NARROW}
    assert got[3] == sum(bit for key, bit in native._NARROW_BIT.items() if not fits[key])
    for (key, _, _), w, g in zip(native._PREPARED, wide, narrow, strict=True):
        if key in row_chunks.NARROW_KEYS:
            assert g.dtype == np.int32
            if fits[key]:  # (where one does not fit, the reader writes that column again as int64)
                np.testing.assert_array_equal(g.astype(np.int64), w)
        else:
            np.testing.assert_array_equal(g, w)
    for w, g in zip(wide_names[4:], narrow_names[4:], strict=True):
        np.testing.assert_array_equal(g, w)


# durations (us): within int32 ns, at its edges (2147483.647 us = INT32_MAX ns), beyond it, negative, off the timeline
DURATIONS = st.sampled_from(
    [1.5, 0.0, -2.0, 2147483.647, 2147483.648, -2147483.648, -2147483.649, 3e6, 1e300]
)


@needs_scanner
@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(CATEGORIES), DURATIONS), min_size=1, max_size=25), st.booleans())
def test_an_int32_duration_column_equals_the_int64_pass_where_every_duration_fits(
    picked: list[tuple[str, float]], named: bool
) -> None:
    events = [{**_event(i, cat, 1, 2, 7, 8), "dur": dur} for i, (cat, dur) in enumerate(picked)]
    scanned = _scanned(events)
    sources = native._sources(scanned)
    module = native.scanner()
    wide = _columns(scanned, narrow=False)
    want = module.prepare_scanned(*sources, wide, _names(scanned) if named else None)
    narrow = _columns(scanned, narrow=True)
    got = module.prepare_scanned(*sources, narrow, _names(scanned) if named else None)
    assert want[3] == 0 and got[:3] == want[:3]  # (int64 columns hold every value; the flags the same)
    at = [key for key, _, _ in native._PREPARED].index("duration")
    durations = wide[at].tolist()  # (clamped at 0 where the names' steps ran: then no negative misfits)
    fits = all(INT32.min <= v <= INT32.max for v in durations)
    assert got[3] == (0 if fits else native._NARROW_BIT["duration"])
    assert narrow[at].dtype == np.int32
    if fits:
        np.testing.assert_array_equal(narrow[at].astype(np.int64), wide[at])


def _block_columns_equal(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            assert got[key].dtype == value.dtype, key
            np.testing.assert_array_equal(got[key], value)


@needs_scanner
@pytest.mark.parametrize("tid", [7, 2**40])
def test_a_block_written_into_int32_slots_is_the_block_of_int64_columns(tid: int) -> None:
    events = [_event(i, "cpu_op", 1, tid if i == 2 else 3, None, 10 + i) for i in range(5)]
    events += [_event(5, "cuda_runtime", 1, 3, 99, None), _event(6, "kernel", 0, 7, 99, None)]
    want = native._prepared_columns(_scanned(events))  # (no chunks: int64 arrays of its own)
    with row_chunks.row_chunks(row_chunks.MIN_JSON_BYTES):
        scanned = native.reserve_rows(_scanned(events), 1000)
        slots = scanned["row_slots"]
        assert all(slots[key].dtype == np.int32 for key in NARROW)
        got = native._prepared_columns(scanned)
        wide = tid != 7 and "tid"  # (the key of an id beyond int32)
        for key in NARROW:  # int32 slices of the chunks, or (an id beyond int32) an int64 array of its own
            assert got[key].dtype == (np.int64 if key == wide else np.int32)
            assert (got[key].base is slots[key].base) is (key != wide)
            got[key] = got[key].astype(np.int64)
        # the read's next blocks take that key's slots as int64
        later = native.reserve_rows(_scanned(events), 1000)["row_slots"]
        assert {key for key in NARROW if later[key].dtype == np.int64} == ({wide} if wide else set())
    _block_columns_equal(got, want)
    # prepare_block of the scanner's unprepared columns (the numpy steps) gives the same ids
    reference = prepare_block(native._scanned_columns(_scanned(events)))
    for key in NARROW:
        np.testing.assert_array_equal(got[key], reference[key])


@needs_scanner
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 200), st.integers(0, 2**32 - 1))
def test_take_widened_is_numpys_take_as_int64(rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(INT32.min, INT32.max, rows, dtype=np.int32, endpoint=True)
    order = rng.integers(0, max(rows, 1), rows * 2 if rows else 0).astype(np.int64)
    out = np.full(order.size, -1, dtype=np.int64)
    native.scanner().take_widened(values, order, out)
    np.testing.assert_array_equal(out, np.take(values, order).astype(np.int64))


@needs_scanner
def test_take_widened_and_rows_with_bit_check_their_sizes() -> None:
    module = native.scanner()
    values, order = np.arange(3, dtype=np.int32), np.array([2, 0, 1], dtype=np.int64)
    with pytest.raises(ValueError):  # out of another length
        module.take_widened(values, order, np.empty(2, dtype=np.int64))
    with pytest.raises(ValueError):  # an order entry outside the values
        module.take_widened(values, np.array([3, 0, 1], dtype=np.int64), np.empty(3, dtype=np.int64))
    with pytest.raises(ValueError):  # -1 too
        module.take_widened(values, np.array([-1, 0, 1], dtype=np.int64), np.empty(3, dtype=np.int64))
    flags = np.array([1, 0, 1], dtype=np.uint8)
    rows, data = np.empty(2, dtype=np.int32), np.empty(2, dtype=np.int64)
    module.rows_with_bit(flags, 1, order, np.array([10, 11, -12], dtype=np.int32), rows, data, 4)
    assert rows.tolist() == [0, 2] and data.tolist() == [-12, 11]
    with pytest.raises(ValueError):  # values of 2 bytes
        module.rows_with_bit(flags, 1, order, np.arange(3, dtype=np.int16), rows, data, 2)
    with pytest.raises(ValueError):  # int32 values read as int64: fewer values than the order reaches
        module.rows_with_bit(flags, 1, order, np.arange(3, dtype=np.int32), rows, data, 8)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_pop_taken_gives_the_ids_in_order_as_int64(
    compiled: bool, dtype: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not compiled:
        monkeypatch.setattr(appended, "scanner", lambda: None)
    elif not kineto.native_scanner_built():
        pytest.skip("native scanner not built")
    rng = np.random.default_rng(5)
    blocks = [rng.integers(INT32.min, INT32.max, size, dtype=dtype) for size in (4, 0, 9)]
    order = rng.permutation(13).astype(np.int64)
    parts = Appended()
    for values in blocks:
        parts.add("tid", values)
    got = parts.pop_taken("tid", order)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.take(np.concatenate(blocks).astype(np.int64), order))
    # blocks of both widths (a block whose ids did not fit) are joined as int64
    beyond = blocks[2].astype(np.int64) + 2**40
    parts.add("tid", blocks[0])
    parts.add("tid", beyond)
    mixed = parts.pop_taken("tid", np.arange(13, dtype=np.int64))
    np.testing.assert_array_equal(mixed, np.concatenate([blocks[0].astype(np.int64), beyond]))


def test_the_rests_ids_go_into_int32_slots_only_where_they_fit() -> None:
    chunks = row_chunks.RowChunks(json_bytes=row_chunks.MIN_JSON_BYTES)
    slot = ("tid", np.int32, "row", 1)
    first = chunks.reserve({"row": 3}, 100, (slot,))["tid"]
    fitting = np.array([INT32.min, 0, INT32.max], dtype=np.int64)
    moved = chunks.taken("tid", fitting, slot)
    assert moved.dtype == np.int32 and moved.base is first.base
    np.testing.assert_array_equal(moved, fitting)
    beyond = np.array([1, INT32.max + 1], dtype=np.int64)
    assert chunks.taken("tid", beyond, slot) is beyond
    assert chunks.taken("tid", np.array([-1.5]), slot).dtype == np.float64  # another type: left as is
    # an int64 column asked of a key whose current chunk is int32 comes from a new chunk of its own type
    column = chunks.column("tid", 4)
    assert column.dtype == np.int64 and column.base is not first.base
    # a key widened (a block held an id beyond int32): its slots int64 from then on, the rest's ids too
    chunks.widen(["tid"])
    assert chunks.reserve({"row": 2}, 100, (slot,))["tid"].dtype == np.int64
    assert chunks.taken("tid", fitting, slot).dtype == np.int64


def _trace(path: Path, huge_at: set[int], events: int = 3000, long_at: frozenset[int] = frozenset()) -> Path:
    rows = []
    for i in range(events):
        tid: Any = 2**40 + i if i in huge_at else 1 + i % 4
        rows.append(_event(i, CATEGORIES[i % len(CATEGORIES)], 1, tid, 1000 + i // 2, 50 + i))
        # a duration beyond int32 ns (3 s), or (odd positions) one just beyond: 2147483.648 us
        if i in long_at:
            rows[-1]["dur"] = 3e6 if i % 2 == 0 else 2147483.648
    text = json.dumps({"traceEvents": rows}, indent=1).replace("\n {", "\n  {").replace("\n }", "\n  }")
    with gzip.open(path, "wt") as out:
        out.write(text)
    return path


@needs_scanner
@pytest.mark.parametrize("huge_at", [set(), {1500}, {0, 2999}])
def test_a_read_with_int32_chunks_gives_the_table_of_one_without(
    huge_at: set[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _trace(tmp_path / "t.json.gz", huge_at)
    without = load(path, engine="native")
    msgspec = load(path, engine="msgspec")
    assert without.events.equals(msgspec.events)
    monkeypatch.setattr(row_chunks, "MIN_JSON_BYTES", 0)
    from tracelens.ingest.kineto import reader

    monkeypatch.setattr(reader, "BLOCK_BYTES", 32 * 1024)  # many blocks
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 32 * 1024)
    monkeypatch.setattr(reader, "thread_budget", lambda: 2)  # one scan worker beside this thread (gzip)
    with_chunks = load(path, engine="native")
    assert with_chunks.events.equals(without.events) and with_chunks.devices.equals(without.devices)
    # each id column read in the schema's int64, whatever the store holds
    for column in ("pid", "tid", "external_id"):
        assert with_chunks.store.column(column).type == pa.int64()
        assert np.array_equal(with_chunks.store.numpy(column), without.store.numpy(column))
    # held as the blocks held them: int32 where every block's ids were (a block with a huge tid: int64 tids)
    stored = {c: with_chunks.store.columns[c] for c in ("pid", "tid", "external_id")}
    types = {c: (v.values if isinstance(v, SparseColumn) else v).type for c, v in stored.items()}
    assert types == {
        "pid": pa.int32(),
        "tid": pa.int64() if huge_at else pa.int32(),
        "external_id": pa.int32(),
    }
    assert all(without.store.columns[c].type == pa.int64() for c in stored)  # (no chunks: int64 blocks)


@needs_scanner
@pytest.mark.parametrize(
    "long_at", [frozenset(), frozenset({1500}), frozenset({0, 2999}), frozenset({7, 1501})]
)
def test_a_read_with_durations_beyond_int32_gives_the_table_of_one_without(
    long_at: frozenset[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # int32 duration slots (row_chunks.NARROW_KEYS): a block with a duration beyond int32 ns written as int64, the
    # next blocks' slots int64; the ends the same as a read without chunks and msgspec's
    path = _trace(tmp_path / "t.json.gz", set(), long_at=long_at)
    without = load(path, engine="native")
    assert without.events.equals(load(path, engine="msgspec").events)
    monkeypatch.setattr(row_chunks, "MIN_JSON_BYTES", 0)
    from tracelens.ingest.kineto import reader

    monkeypatch.setattr(reader, "BLOCK_BYTES", 32 * 1024)  # many blocks
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 32 * 1024)
    monkeypatch.setattr(reader, "thread_budget", lambda: 2)  # one scan worker beside this thread (gzip)
    with_chunks = load(path, engine="native")
    assert with_chunks.events.equals(without.events)
    ends = with_chunks.store.numpy("end_ns") - with_chunks.store.numpy("start_ns")
    long_ends = ends > INT32.max
    assert int(np.count_nonzero(long_ends)) == len(long_at)  # (and each such row's end is its start + dur)
    assert set(ends[long_ends].tolist()) <= {3_000_000_000, 2_147_483_648}
