"""The low-memory paths equal their references (issue 28: peak RSS on the 41M-row Nsight export).

- ``ingest/nsys/assembly.assemble`` (columns scattered part by part, sparse columns sharing rows and narrowed)
  against the plain reading of what it stores: the parts concatenated (dictionaries unified by Arrow), sorted
  stably by start, ends clamped and open ends run to the last end;
- ``analyses/columns.kind_positions`` (the Nsight store's kind codes read in place) against the kind column;
(``analyses/startup._first_api_calls``, whose numpy path replaced a pandas one for the same reason, is checked
against that pandas reading in tests/test_startup_first_api.py.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import tracelens
from tracelens.analyses.columns import kind_positions
from tracelens.ingest.nsys.assembly import assemble
from tracelens.ingest.nsys.columns import Part, kind_const, narrowest
from tracelens.trace import ALL_KINDS, EVENT_SCHEMA, KERNEL, RUNTIME, EventStore

ROOT = Path(__file__).resolve().parent.parent

_NAMES = ["a", "b", "c", "d", "é", ""]


def _dictionary(rng: np.random.Generator, n: int, with_nulls: bool) -> pa.DictionaryArray:
    """A name column with its own dictionary (a random subset of names, in random order)."""
    values = list(rng.permutation(_NAMES)[: rng.integers(1, len(_NAMES) + 1)])
    indices = rng.integers(0, len(values), n).astype(np.int32)
    mask = (rng.random(n) < 0.3) if with_nulls else None
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32(), mask=mask), pa.array(values))


def _parts(seed: int) -> list[Part]:
    rng = np.random.default_rng(seed)
    parts = []
    for i in range(int(rng.integers(1, 5))):
        n = int(rng.integers(1, 40))
        start = (
            np.sort(rng.integers(10**12, 10**12 + 1000, n))
            if i % 2
            else rng.integers(10**12, 10**12 + 1000, n)
        )
        end = start + rng.integers(0, 50, n)
        end_mask = rng.random(n) < 0.1  # ranges still open at the end of capture
        columns: dict[str, Any] = {
            "kind": kind_const(n, KERNEL if i == 0 else RUNTIME),
            "name": _dictionary(rng, n, with_nulls=bool(i % 2)),
            "start_ns": pa.array(start),
            "end_ns": pa.array(end, mask=end_mask),
            "pid": pa.array(rng.integers(0, 3, n).astype(np.int32)),
            "tid": pa.array(rng.integers(0, 3, n).astype(np.int32), mask=rng.random(n) < 0.2) if i else None,
            "correlation_id": pa.array(rng.integers(0, 2**40 if seed % 3 == 0 else 300, n)),
        }
        if i == 0:  # the kernel part's geometry: sparse once the other parts outnumber it
            for name in ("grid_x", "block_x", "registers_per_thread"):
                columns[name] = pa.array(
                    rng.integers(1, 70_000 if name == "grid_x" else 1024, n).astype(np.int32)
                )
            columns["stream"] = pa.array(rng.integers(0, 8, n), mask=rng.random(n) < 0.2)
            if seed % 2:  # a column no row of the part has (graphs): held one byte a row until the assembly
                columns["graph_id"] = pa.nulls(n, pa.int64())
        owned: tuple[str, ...] = ()
        if i == 1 and n > 2:  # NVTX's times, left in their fetched chunks
            columns["start_ns"] = pa.chunked_array(
                [columns["start_ns"][: n // 2], columns["start_ns"][n // 2 :]]
            )
            columns["end_ns"] = pa.chunked_array([columns["end_ns"][: n // 3], columns["end_ns"][n // 3 :]])
            owned = ("start_ns", "end_ns")
        parts.append(Part(n, columns, owned=owned, host=bool(i)))  # part 0: kernels; the others: host rows
    return parts


def _reference(parts: list[Part]) -> dict[str, pa.Array]:
    """Each column as the plain reading gives it: parts concatenated, Arrow's unified dictionaries, stable sort."""
    start = np.concatenate([p.columns["start_ns"].to_numpy() for p in parts])
    origin = int(start.min())
    order = np.argsort(start, kind="stable")
    missing = np.iinfo(np.int64).min
    end = np.concatenate([p.columns["end_ns"].fill_null(missing).to_numpy() for p in parts])
    # a host row's missing end (a range open when capture stopped) runs to the last end; a GPU row's is its start
    host = np.concatenate([np.full(p.n, p.host) for p in parts])
    last = end.max()
    end[(end == missing) & ~host] = start[(end == missing) & ~host]
    end[end == missing] = last
    out = {
        "start_ns": pa.array((start - origin)[order]),
        "end_ns": pa.array(np.maximum((end - origin)[order], (start - origin)[order])),
    }
    for fld in EVENT_SCHEMA:
        if fld.name in out or not any(p.columns.get(fld.name) is not None for p in parts):
            continue
        typ = fld.type
        chunks = [
            p.columns[fld.name].cast(typ)
            if p.columns.get(fld.name) is not None
            else (
                pa.nulls(p.n, typ)
                if not pa.types.is_dictionary(typ)
                else pa.DictionaryArray.from_arrays(pa.nulls(p.n, pa.int32()), pa.array([], pa.string()))
            )
            for p in parts
        ]
        column = (
            pa.Table.from_arrays([pa.chunked_array(chunks, typ)], names=["x"]).unify_dictionaries().column(0)
        )
        out[fld.name] = column.take(pa.array(order)).combine_chunks()
    return out


@pytest.mark.parametrize("seed", range(40))
def test_assembly_equals_the_concatenated_sorted_parts(seed: int) -> None:
    expected = _reference(_parts(seed))
    origin, store = assemble(_parts(seed))
    assert origin == min(int(np.min(p.columns["start_ns"].to_numpy())) for p in _parts(seed))
    for name, want in expected.items():
        got = store.column(name)
        assert got.equals(want), name
        if pa.types.is_dictionary(want.type):  # the same dictionary, in the same order
            assert got.dictionary.equals(want.dictionary) and got.indices.equals(want.indices), name
        if name in store.sentinel:  # null slots hold -1: read without a copy
            assert store.numpy(name).tolist() == want.fill_null(-1).to_pylist()


def test_sparse_columns_of_the_same_parts_share_their_rows() -> None:
    parts = _parts(1)
    parts[0].columns.pop("stream")  # nulls in it: rows of its own
    _, store = assemble(parts)
    geometry = [store.columns[name] for name in ("grid_x", "block_x", "registers_per_thread")]
    if all(hasattr(g, "rows") for g in geometry):
        assert geometry[0].rows is geometry[1].rows is geometry[2].rows


def test_parts_hold_integer_columns_narrow() -> None:
    """What the assembly widens back (or stores narrow): the part's own narrowest copies, values unchanged."""
    n = 5
    values = {
        "grid_x": [1, 2, 3, 100, 7],
        "correlation_id": [10, 2**20, 5, 6, 7],
        "bytes": [2**40, 0, 1, 2, 3],
    }
    part = Part(n, {name: pa.array(v, pa.int64()) for name, v in values.items()} | {"graph_id": pa.nulls(n)})
    assert part.columns["grid_x"].type == pa.int8() and part.columns["correlation_id"].type == pa.int32()
    assert part.columns["bytes"].type == pa.int64() and part.columns["graph_id"].type == pa.int8()
    for name, v in values.items():
        assert part.columns[name].to_pylist() == v
    assert part.columns["graph_id"].null_count == n


@pytest.mark.parametrize(
    ("values", "typ"),
    [([0, 127, -128], pa.int8()), ([128], pa.int16()), ([-(2**15) - 1], pa.int32()), ([2**31], pa.int64())],
)
def test_narrowest_holds_every_value(values: list[int], typ: pa.DataType) -> None:
    narrowed = narrowest(pa.array(values, pa.int64()))
    assert narrowed.type == typ and narrowed.to_pylist() == values


def _kind_reference(store: Any) -> list[int]:
    """Each row's position in ALL_KINDS, read off the documented column (-1 for a null or unknown kind)."""
    return [ALL_KINDS.index(k) if k in ALL_KINDS else -1 for k in store.column("kind").to_pylist()]


@pytest.mark.parametrize(
    "path",
    [*sorted((ROOT / "fixtures" / "nsys").glob("*.sqlite"))[:2], ROOT / "fixtures" / "demo.pt.trace.json.gz"],
)
def test_kind_positions_equal_the_kind_column(path: Path) -> None:
    store = tracelens.load(path).store
    got = kind_positions(store)
    assert got.dtype == np.int8 and got.tolist() == _kind_reference(store)
    if path.suffix == ".sqlite":  # the Nsight reader's codes are ALL_KINDS positions: read in place
        assert not got.flags.writeable


def test_kind_positions_map_another_dictionary_and_nulls() -> None:
    kinds = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None, 2, 0], pa.int8()), pa.array([RUNTIME, "no such kind", KERNEL])
    )
    store = EventStore(5, {"kind": kinds, "start_ns": pa.array(range(5)), "end_ns": pa.array(range(5))})
    assert (
        kind_positions(store).tolist()
        == _kind_reference(store)
        == [ALL_KINDS.index(RUNTIME), -1, -1, ALL_KINDS.index(KERNEL), ALL_KINDS.index(RUNTIME)]
    )
