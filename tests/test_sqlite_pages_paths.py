"""The page walker's fast paths (tracelens/ingest/_sqlite_pages.c) against SQLite's own reading, on small
hand-made databases that hit each one: integers of every serial type at their edges (read by one 8-byte load
and a shift), NULLs at the first, the eighth, the ninth and the last row and columns that are all NULL or never
NULL (the validity bitmap is made on a column's first NULL), empty and one-row tables, dictionary values of every
length from 0 to 40 bytes and values that differ in one byte (the hash's overlapping loads), and overflow chains
whose pages lie far from their leaf page (read outside the read-ahead block)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from reference import sqlite_rows

from tracelens.ingest.nsys import database as nsys_database
from tracelens.ingest.nsys import pages

pytest.importorskip("tracelens.ingest._sqlite_pages")

CAST_T = "ifnull(CAST(\"t\" AS BLOB), X'')"


@pytest.fixture(autouse=True)
def _pages_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pages.ENGINE_ENV, raising=False)


def _make(path: Path, rows: list[tuple], page_size: int = 4096) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute('CREATE TABLE "T" (a INTEGER, b INTEGER, t TEXT)')
    conn.executemany('INSERT INTO "T" (a, b, t) VALUES (?, ?, ?)', rows)
    conn.commit()
    conn.close()


def _read(path: Path, sql: str, names: list[str], dictionary: tuple[str, ...] = ()) -> pa.Table:
    table = pages.read(SimpleNamespace(path=path), sql, names, dictionary=dictionary)  # type: ignore[arg-type]
    assert table is not None
    return table


def _check(path: Path) -> pa.Table:
    """The walker's table of a, b and t equals SQLite's rows and ADBC's table (types, nulls, validity)."""
    sql = 'SELECT "a", "b", "t" FROM "T"'
    table = _read(path, sql, ["a", "b", "t"])
    columns = [(c.cast(pa.binary()) if pa.types.is_string(c.type) else c).to_pylist() for c in table.columns]
    assert list(zip(*columns, strict=True)) == sqlite_rows(path, sql)
    adbc = nsys_database._adbc_query(nsys_database.sqlite_uri(path), sql).rename_columns(["a", "b", "t"])
    assert table.equals(adbc)
    for column in table.columns:  # the validity bitmap agrees with the null count (no stray bits)
        array = column.combine_chunks()
        assert array.null_count == sum(v is None for v in array.to_pylist())
        array.validate(full=True)
    return table


# every serial type's edges: 1 (8-bit), 2 (16), 3 (24), 4 (32), 5 (48), 6 (64), 8 (0), 9 (1)
EDGES = [0, 1, -1, 2, 127, -128, 128, -129, 2**15 - 1, -(2**15), 2**15, 2**23 - 1, -(2**23), 2**23]
EDGES += [2**31 - 1, -(2**31), 2**31, 2**47 - 1, -(2**47), 2**47, 2**63 - 1, -(2**63), 0x0123456789ABCDEF]


def test_integers_of_every_width(tmp_path: Path) -> None:
    path = tmp_path / "ints.sqlite"
    _make(path, [(v, -v if v != -(2**63) else 5, "x") for v in EDGES])
    table = _check(path)
    assert table.column("a").to_pylist() == EDGES


@pytest.mark.parametrize("count", [1, 7, 8, 9, 16, 17, 1000])
@pytest.mark.parametrize("nulls_at", ["first", "eighth", "ninth", "last", "all", "none", "every_third"])
def test_nulls_anywhere(tmp_path: Path, count: int, nulls_at: str) -> None:
    rows = []
    for i in range(count):
        null = {
            "first": i == 0,
            "eighth": i == 7,
            "ninth": i == 8,
            "last": i == count - 1,
            "all": True,
            "none": False,
            "every_third": i % 3 == 0,
        }[nulls_at]
        rows.append((None if null else i, i, None if null else f"v{i}"))
    path = tmp_path / "nulls.sqlite"
    _make(path, rows)
    _check(path)


def test_empty_and_one_row_tables(tmp_path: Path) -> None:
    for rows in ([], [(1, None, None)], [(None, 2**40, "")]):
        path = tmp_path / f"t{len(rows)}_{rows[0][0] if rows else 'e'}.sqlite"
        _make(path, rows)
        _check(path)


def test_dictionary_values_of_every_length(tmp_path: Path) -> None:
    # lengths 0-40 (each hash path: 0, 1-3, 4-7, 8, 9-16, longer), values differing in their middle byte, their
    # last byte or their length only; each repeated, in an order where repeats are not neighbours
    values = [b"a" * n for n in range(41)] + [b"abcdefghij"[:n] + b"x" for n in range(10)]
    values += [b"xyzq" + bytes([c]) + b"rs" for c in range(40, 50)] + [
        b"12345678" + bytes([c]) for c in b"ab"
    ]
    values += [None]
    rows = [(i, i, v) for i, v in enumerate(values * 3)]
    path = tmp_path / "dict.sqlite"
    _make(path, rows)
    sql = f'SELECT "a", {CAST_T} FROM "T"'
    table = _read(path, sql, ["a", "t"], dictionary=("t",))
    encoded = table.column("t").combine_chunks()
    expected = [row[1] for row in sqlite_rows(path, sql)]
    assert encoded.dictionary.take(encoded.indices).to_pylist() == expected
    assert encoded.dictionary.to_pylist() == list(dict.fromkeys(expected))


def test_overflow_pages_far_from_their_leaf(tmp_path: Path) -> None:
    # T's leaf page comes first; its rows grow into overflow chains only after hundreds of pages of another
    # table, so that the chains lie past the read-ahead block of the leaf page
    path = tmp_path / "far.sqlite"
    _make(path, [(i, i, "s") for i in range(3)], page_size=512)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE filler (x BLOB)")
    conn.executemany("INSERT INTO filler VALUES (?)", [(bytes(400),) for _ in range(600)])
    conn.execute("UPDATE \"T\" SET t = CAST(printf('%.*c', 3000 + a * 7, 'q') AS TEXT)")
    conn.commit()
    conn.close()
    table = _check(path)
    assert [len(v) for v in table.column("t").to_pylist()] == [3000, 3007, 3014]
