"""The page reader's dictionary mode (MODE_DICT of tracelens/ingest/_sqlite_pages.c, ``pages.read(...,
dictionary=...)``) and the NVTX chunks read through it, against plain SQL and stdlib references: on generated
databases (repeats, NULLs, empty strings, invalid UTF-8, BLOBs, texts long enough for overflow chains, more
distinct values than the hash table's first size) the encoded column decodes to SQLite's
``ifnull(CAST(t AS BLOB), X'')``, its dictionary holds each distinct value once in order of first appearance,
and ``strings.decode_encoded`` gives what ``strings.decode_dictionary`` gives for the raw column and what a
stdlib first-appearance dictionary gives; a number in the text column is declined. On every real export and
fixture the NVTX chunks equal the chunks read without the dictionary mode."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from conftest import shared_traces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import sqlite_rows

from tracelens.ingest.nsys import database as nsys_database
from tracelens.ingest.nsys import nvtx, pages
from tracelens.ingest.nsys.queries import TABLE_NVTX, payload_schema_entries, table_queries
from tracelens.ingest.nsys.strings import decode_dictionary, decode_encoded

pytest.importorskip("tracelens.ingest._sqlite_pages")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nsys"
EXPORTS = shared_traces("nsys", "*.sqlite") + sorted(FIXTURES.glob("*.sqlite"))
CAST = "ifnull(CAST(\"t\" AS BLOB), X'')"


@pytest.fixture(autouse=True)
def _pages_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pages.ENGINE_ENV, raising=False)


# A small pool, so that values repeat: invalid UTF-8 (two invalid values decode to the same text), '' and
# values long enough to spill into overflow pages.
_POOL = st.one_of(
    st.none(),
    st.just(b""),
    st.binary(max_size=6),
    st.sampled_from([b"\xff", b"\xfe", "\ufffd".encode(), b"a\x00b", "é".encode()]),
    st.tuples(st.binary(min_size=1, max_size=2), st.integers(300, 3000)).map(lambda t: t[0] * t[1]),
)


@st.composite
def _databases(draw: st.DrawFn) -> dict:
    pool = draw(st.lists(_POOL, min_size=1, max_size=8))
    picks = draw(st.lists(st.tuples(st.integers(0, len(pool) - 1), st.booleans()), max_size=60))
    return {
        "page_size": draw(st.sampled_from([512, 4096])),
        "rows": [(pool[i], as_blob) for i, as_blob in picks],
        # distinct values past the hash table's first 1024 slots (it grows at 512)
        "many": draw(st.sampled_from([0, 0, 1500])),
        "odd": draw(st.sampled_from([None, None, None, "int", "real"])),
        "range": draw(st.one_of(st.none(), st.tuples(st.integers(-5, 40), st.integers(-5, 2000)))),
        "ipk": draw(st.booleans()),
    }


def _build(path: Path, spec: dict) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA page_size = {spec['page_size']}")
    key = "id INTEGER PRIMARY KEY, " if spec["ipk"] else ""
    conn.execute(f'CREATE TABLE "T" ({key}a INTEGER, t TEXT)')
    rows = list(spec["rows"])
    rows[len(rows) // 2 : len(rows) // 2] = [(f"v{i % 997}-{i}".encode(), False) for i in range(spec["many"])]
    for i, (value, as_blob) in enumerate(rows):
        cast = "?" if as_blob or value is None else "CAST(? AS TEXT)"
        conn.execute(f'INSERT INTO "T" (a, t) VALUES (?, {cast})', (i, value))
    if spec["odd"] == "int":
        conn.execute('INSERT INTO "T" (a, t) VALUES (0, CAST(5 AS INTEGER))')
    elif spec["odd"] == "real":
        conn.execute('INSERT INTO "T" (a, t) VALUES (0, 2.5)')
    conn.commit()
    conn.close()


def _where(spec: dict) -> str:
    return (
        "" if spec["range"] is None else f" WHERE rowid >= {spec['range'][0]} AND rowid < {spec['range'][1]}"
    )


def _first_appearance(values: list[bytes]) -> tuple[list[int], list[str]]:
    """The stdlib reference of decode_dictionary: -1 for b'', else the slot of the value's text (invalid UTF-8
    replaced) in order of first appearance; '' holds the slot of the first empty value."""
    slots: dict[str, int] = {}
    indices = []
    for value in values:
        text = value.decode("utf-8", "replace")
        slot = slots.setdefault(text, len(slots))
        indices.append(-1 if value == b"" else slot)
    return indices, list(slots)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_databases())
def test_dictionary_mode_against_sqlite(tmp_path_factory: pytest.TempPathFactory, spec: dict) -> None:
    path = tmp_path_factory.mktemp("dict") / "gen.sqlite"
    _build(path, spec)
    where = _where(spec)
    sql = f'SELECT "a", {CAST}, {CAST} FROM "T"{where}'
    names = ["a", "t", "t_plain"]
    table = pages.read(SimpleNamespace(path=path), sql, names, dictionary=("t",))  # type: ignore[arg-type]
    reference = sqlite_rows(path, sql)
    odd = sqlite_rows(
        path,
        f"SELECT count(*) FROM (SELECT t FROM \"T\"{where}) WHERE typeof(t) NOT IN ('text', 'blob', 'null')",
    )[0][0]
    if odd:  # a number in the text column: SQLite's CAST gives its text, the page reader declines
        assert table is None
        return
    assert table is not None
    encoded = table.column("t").combine_chunks()
    assert encoded.type == pa.dictionary(pa.int32(), pa.binary())
    expected = [row[1] for row in reference]
    # decoded: the cast column; the plain (MODE_CAST) column beside it unchanged
    assert encoded.dictionary.take(encoded.indices).to_pylist() == expected
    assert table.column("t_plain").to_pylist() == expected
    assert [row[0] for row in reference] == table.column("a").to_pylist()
    # each distinct value once, in order of first appearance
    assert encoded.dictionary.to_pylist() == list(dict.fromkeys(expected))
    # decoded to (indices, strings) as decode_dictionary decodes the raw column (NULLs kept), and as the
    # stdlib reference does
    indices, strings = decode_encoded(encoded.indices.to_numpy(), encoded.dictionary)
    raw = sqlite_rows(path, f'SELECT "t" FROM "T"{where}')
    ref_indices, ref_strings = decode_dictionary(pa.array([r[0] for r in raw], pa.binary()))
    assert indices.dtype == np.int32 and indices.tolist() == ref_indices.tolist()
    assert strings.type == pa.string() and strings.equals(ref_strings)
    stdlib_indices, stdlib_strings = _first_appearance(expected)
    assert indices.tolist() == stdlib_indices
    assert strings.to_pylist() == stdlib_strings


def test_dictionary_applies_to_cast_columns_only(tmp_path: Path) -> None:
    """A raw column named in ``dictionary`` is read as without it (the mode is the cast's)."""
    path = tmp_path / "raw.sqlite"
    _build(
        path,
        {"page_size": 4096, "rows": [(b"x", False), (None, False)], "many": 0, "odd": None, "ipk": False},
    )
    sql, names = 'SELECT "t" FROM "T"', ["t"]
    table = pages.read(SimpleNamespace(path=path), sql, names, dictionary=("t",))  # type: ignore[arg-type]
    assert table is not None
    assert table.column("t").type == pa.string()
    assert table.column("t").to_pylist() == ["x", None]


# ---- NVTX chunks of real exports ----


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_nvtx_chunks_equal_chunks_read_without_dictionary(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = nsys_database.Database(path)
    try:
        queries = table_queries(db, payload_schema_entries(db), [])
        if TABLE_NVTX not in queries:
            pytest.skip("no NVTX_EVENTS")
        sql, names = queries[TABLE_NVTX]
        selects = nvtx.nvtx_chunk_queries(db, sql, 2)
        read = pages.read
        encoded: list[bool] = []

        def spy(*args: object, **kwargs: object) -> pa.Table | None:
            table = read(*args, **kwargs)  # type: ignore[arg-type]
            if kwargs.get("dictionary"):
                encoded.append(table is not None and pa.types.is_dictionary(table.column("text").type))
            return table

        monkeypatch.setattr(pages, "read", spy)
        chunks = [nvtx.nvtx_chunk(db, select, names) for select in selects]
        # every chunk of a real export read through the dictionary mode
        assert encoded == [True] * len(selects)

        def plain(
            db_: object, sql_: str, names_: list[str], capacity: int = 0, dictionary: object = ()
        ) -> object:
            return read(db_, sql_, names_, capacity)  # type: ignore[arg-type]

        monkeypatch.setattr(pages, "read", plain)
        for select, chunk in zip(selects, chunks, strict=True):
            reference = nvtx.nvtx_chunk(db, select, names)
            assert chunk.schema == reference.schema
            assert chunk.equals(reference)
            # the text column's slots and values too (a dictionary column compares decoded)
            text, ref = chunk.column("text").combine_chunks(), reference.column("text").combine_chunks()
            assert text.dictionary.equals(ref.dictionary)
            assert text.indices.equals(ref.indices)
    finally:
        db.close()
