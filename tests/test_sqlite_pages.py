"""The Nsight reader's page reader (tracelens/ingest/nsys/pages.py and its C walker _sqlite_pages.c) against
SQLite itself: on generated databases (page sizes, reserved bytes, auto_vacuum, interior pages, deleted rows,
overflow chains, invalid UTF-8, NULLs, every integer width, INTEGER PRIMARY KEY, ALTER TABLE ADD COLUMN) its
table equals a plain SELECT through the stdlib sqlite3 and the table ADBC gives; on every real export and
fixture each event table and the loaded events equal the ADBC engine's; unusual or damaged files are declined
(WAL, UTF-16, truncated, cycles, random bytes) and then read, or refused, exactly as before."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from conftest import copy_shared_trace, shared_traces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import sqlite_rows

from tracelens.ingest import load
from tracelens.ingest.nsys import database as nsys_database
from tracelens.ingest.nsys import pages
from tracelens.ingest.nsys.nvtx import nvtx_chunk_queries
from tracelens.ingest.nsys.queries import (
    NVTX_TEXT_COLUMNS,
    TABLE_NVTX,
    payload_schema_entries,
    table_queries,
    uncast_text,
)

pytest.importorskip("tracelens.ingest._sqlite_pages")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nsys"
EXPORTS = shared_traces("nsys", "*.sqlite") + sorted(FIXTURES.glob("*.sqlite"))
WINDOW = "h100x2_fastvideo_window_nsys2026.2.sqlite"


@pytest.fixture(autouse=True)
def _pages_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pages.ENGINE_ENV, raising=False)


def _adbc(path: Path, sql: str, names: list[str]) -> pa.Table:
    return nsys_database._adbc_query(nsys_database.sqlite_uri(path), sql).rename_columns(names)


def _rows(table: pa.Table) -> list[tuple]:
    columns = [(c.cast(pa.binary()) if pa.types.is_string(c.type) else c).to_pylist() for c in table.columns]
    return list(zip(*columns, strict=True)) if columns else []


def _read(path: Path, sql: str, names: list[str]) -> pa.Table | None:
    """pages.read on ``path`` (only the path of the Database is read: also for files SQLite cannot open)."""
    return pages.read(SimpleNamespace(path=path), sql, names)  # type: ignore[arg-type]


# ---- generated databases ----

_INTS = st.one_of(
    st.none(),
    st.sampled_from([0, 1, -1, 127, -128, 2**63 - 1, -(2**63)]),
    st.integers(-(2**7), 2**7),
    st.integers(-(2**23), 2**23),
    st.integers(-(2**47), 2**47),
    st.integers(-(2**63), 2**63 - 1),
)
# (bytes, repeat): short values, invalid UTF-8 included, and long ones spilling into overflow chains
_BYTES = st.one_of(
    st.none(),
    st.tuples(st.binary(max_size=12), st.just(1)),
    st.tuples(st.binary(min_size=1, max_size=3), st.integers(100, 3000)),
)


def _value(spec: tuple[bytes, int] | None) -> bytes | None:
    return None if spec is None else spec[0] * spec[1]


@st.composite
def _databases(draw: st.DrawFn) -> dict:
    page_size = draw(st.sampled_from([512, 1024, 4096, 65536]))
    return {
        "page_size": page_size,
        "reserved": draw(st.sampled_from([0, 1, 32] if page_size == 512 else [0, 1, 37, 200])),
        "auto_vacuum": draw(st.sampled_from(["NONE", "FULL", "INCREMENTAL"])),
        "ipk": draw(st.booleans()),
        "rows": draw(st.lists(st.tuples(_INTS, _BYTES, _BYTES), max_size=30)),
        "repeat": draw(st.integers(1, 40)),
        "delete_every": draw(st.sampled_from([0, 2, 3, 7])),
        "add_column": draw(st.sampled_from([None, "NULL", "7"])),
        "odd": draw(st.sampled_from([None, "real", "int_text", "text_int", "blob_text"])),
        "range": draw(st.one_of(st.none(), st.tuples(st.integers(-5, 900), st.integers(-5, 2000)))),
    }


def _build(path: Path, spec: dict) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA page_size = {spec['page_size']}")
    conn.execute(f"PRAGMA auto_vacuum = {spec['auto_vacuum']}")
    conn.execute("PRAGMA user_version = 1")  # writes page 1 (no table yet)
    conn.commit()
    conn.close()
    if spec["reserved"]:  # no pragma sets reserved bytes: set them in the header of the empty database
        data = bytearray(path.read_bytes())
        usable = spec["page_size"] - spec["reserved"]
        data[20] = spec["reserved"]
        data[105:107] = (usable % 65536).to_bytes(2, "big")  # page 1's content area starts at the usable end
        path.write_bytes(bytes(data))
    conn = sqlite3.connect(path)
    key = "id INTEGER PRIMARY KEY, " if spec["ipk"] else ""
    conn.execute(f'CREATE TABLE "T" ({key}a INTEGER, t TEXT, b BLOB)')
    rows = [(a, _value(t), _value(b)) for a, t, b in spec["rows"]] * spec["repeat"]
    half = len(rows) // 2
    insert = 'INSERT INTO "T" (a, t, b) VALUES (?, CAST(? AS TEXT), ?)'
    conn.executemany(insert, rows[:half])
    if spec["add_column"] is not None:
        conn.execute(f'ALTER TABLE "T" ADD COLUMN extra INTEGER DEFAULT {spec["add_column"]}')
        conn.executemany(
            'INSERT INTO "T" (a, t, b, extra) VALUES (?, CAST(? AS TEXT), ?, ?)',
            [(a, t, b, i) for i, (a, t, b) in enumerate(rows[half:])],
        )
    else:
        conn.executemany(insert, rows[half:])
    odd = spec["odd"]
    if odd == "real":
        conn.execute('INSERT INTO "T" (a) VALUES (1.5)')
    elif odd == "int_text":
        conn.execute("INSERT INTO \"T\" (a) VALUES ('x')")
    elif odd == "text_int":
        conn.execute('INSERT INTO "T" (t) VALUES (CAST(5 AS INTEGER))')
    elif odd == "blob_text":
        conn.execute("INSERT INTO \"T\" (t) VALUES (X'00ff')")
    if spec["delete_every"]:
        conn.execute(f'DELETE FROM "T" WHERE rowid % {spec["delete_every"]} = 0')
    conn.commit()
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=_databases())
def test_generated_databases_read_as_sqlite_and_adbc_do(
    tmp_path_factory: pytest.TempPathFactory, spec: dict
) -> None:
    path = tmp_path_factory.mktemp("pages") / "gen.sqlite"
    _build(path, spec)
    exprs = (['"id"'] if spec["ipk"] else []) + ['"a"', '"t"', '"b"', "NULL"]
    exprs += ["ifnull(CAST(\"t\" AS BLOB), X'')", "ifnull(CAST(\"b\" AS BLOB), X'')"]
    if spec["add_column"] is not None:
        exprs.append('"extra"')
    sql = f'SELECT {", ".join(exprs)} FROM "T" '
    if spec["range"] is not None:
        sql += f" WHERE rowid >= {spec['range'][0]} AND rowid < {spec['range'][1]}"
    names = [f"c{i}" for i in range(len(exprs))]
    table = _read(path, sql, names)
    reference = sqlite_rows(path, sql)
    where = "" if spec["range"] is None else f"AND rowid >= {spec['range'][0]} AND rowid < {spec['range'][1]}"
    # a REAL or a TEXT among integers, a number among texts: SQLite's own read is needed (declined)
    odd = sqlite_rows(
        path,
        "SELECT count(*) FROM \"T\" WHERE (typeof(a) NOT IN ('integer', 'null') "
        f"OR typeof(t) NOT IN ('text', 'blob', 'null')) {where}",
    )[0][0]
    # a row written before ADD COLUMN ... DEFAULT 7 reads 7 without holding it: declined
    half = len(spec["rows"]) * spec["repeat"] // 2
    defaulted = (
        spec["add_column"] == "7"
        and sqlite_rows(path, f'SELECT count(*) FROM "T" WHERE rowid <= {half} {where}')[0][0]
    )
    if odd or defaulted:
        assert table is None
        return
    assert table is not None
    assert _rows(table) == reference
    adbc = _adbc(path, sql, names)
    assert table.schema == adbc.schema
    assert table.equals(adbc)


# ---- real exports and fixtures ----


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_event_tables_equal_adbc(path: Path) -> None:
    """Every event table's SELECT (NVTX in rowid chunks, raw and cast text) through the page reader equals
    ADBC's table, and the page reader reads every one of them (declines nothing on real exports)."""
    db = nsys_database.Database(path)
    try:
        queries = table_queries(db, payload_schema_entries(db), [])
        assert queries
        for name, (sql, names) in queries.items():
            selects = nvtx_chunk_queries(db, sql, 2) if name == TABLE_NVTX else [sql]
            if name == TABLE_NVTX:
                selects += [uncast_text(s, NVTX_TEXT_COLUMNS) for s in selects]
            for select in selects:
                table = pages.read(db, select, names)
                assert table is not None, select
                adbc = _adbc(path, select, names)
                assert table.schema == adbc.schema, select
                assert table.equals(adbc), select
    finally:
        db.close()


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.name)
def test_loaded_events_equal_adbc_engine(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = load(path).events
    monkeypatch.setenv(pages.ENGINE_ENV, "adbc")
    reference = load(path).events
    assert events.schema == reference.schema
    assert events.equals(reference)


def test_engine_switch_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "handmade_nsys2026.sqlite"
    sql, names = 'SELECT "start", "end" FROM "CUPTI_ACTIVITY_KIND_KERNEL" ', ["start", "end"]
    assert _read(path, sql, names) is not None
    for engine in ("adbc", "sqlite3", "other"):
        monkeypatch.setenv(pages.ENGINE_ENV, engine)
        assert _read(path, sql, names) is None
    monkeypatch.setenv(pages.ENGINE_ENV, "pages")
    assert _read(path, sql, names) is not None
    # another shape of SELECT than queries._select writes
    assert _read(path, 'SELECT "start" + 1, "end" FROM "CUPTI_ACTIVITY_KIND_KERNEL"', names) is None


# ---- declines: unusual and damaged files ----


def _cli(path: Path, engine: str) -> tuple[int, str, str]:
    env = {**os.environ, pages.ENGINE_ENV: engine}
    done = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a walk that never ends fails here instead of hanging the suite
        cwd=Path(__file__).resolve().parent.parent,
    )
    return done.returncode, done.stdout, done.stderr


def _same_as_adbc(path: Path) -> tuple[int, str, str]:
    result = _cli(path, "pages")
    assert result == _cli(path, "adbc")
    return result


def _kernel_sql(path: Path) -> tuple[str, list[str]]:
    return 'SELECT "start", "end", "deviceId" FROM "CUPTI_ACTIVITY_KIND_KERNEL" ', [
        "start",
        "end",
        "deviceId",
    ]


def test_wal_mode_is_declined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "wal.sqlite"
    shutil.copyfile(FIXTURES / "handmade_nsys2026.sqlite", path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    assert path.read_bytes()[18:20] == b"\x02\x02"
    assert _read(path, *_kernel_sql(path)) is None
    events = load(path).events
    monkeypatch.setenv(pages.ENGINE_ENV, "adbc")
    assert events.equals(load(path).events)


def test_journal_beside_the_export_is_declined(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    shutil.copyfile(FIXTURES / "handmade_nsys2026.sqlite", path)
    assert _read(path, *_kernel_sql(path)) is not None
    Path(f"{path}-journal").write_bytes(b"")
    assert _read(path, *_kernel_sql(path)) is None


def test_utf16_database_is_declined(tmp_path: Path) -> None:
    path = tmp_path / "utf16.sqlite"
    source = sqlite3.connect(FIXTURES / "handmade_nsys2026.sqlite")
    target = sqlite3.connect(path)
    target.execute("PRAGMA encoding = 'UTF-16le'")
    for line in source.iterdump():
        if line not in ("BEGIN TRANSACTION;", "COMMIT;"):
            target.execute(line)
    target.commit()
    source.close()
    target.close()
    assert path.read_bytes()[56:60] == (2).to_bytes(4, "big")
    assert _read(path, *_kernel_sql(path)) is None
    code, _, _ = _same_as_adbc(path)
    assert code == 0


def test_truncated_export_gives_the_same_error(tmp_path: Path) -> None:
    source = copy_shared_trace(tmp_path, "nsys", WINDOW)
    path = tmp_path / "truncated.sqlite"
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    assert _read(path, *_kernel_sql(path)) is None
    code, _, err = _same_as_adbc(path)
    assert code == 2 and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_bytes_over_a_table_page(tmp_path: Path, seed: int) -> None:
    """Random bytes over a leaf of the kernel table: both engines exit alike (SQLite's error, or rows)."""
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'"
        ).fetchone()[0]
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    at = (root - 1) * page_size  # the root: every row of the table hangs below it
    data[at : at + page_size] = rng.randbytes(page_size)
    path.write_bytes(bytes(data))
    assert _read(path, *_kernel_sql(path)) is None
    code, _, err = _same_as_adbc(path)
    assert code in (0, 2)
    if code == 2:
        assert len(err.strip().splitlines()) == 1


def _page_of(path: Path, table: str) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    return page_size, root


def test_cycle_in_the_tree_is_declined(tmp_path: Path) -> None:
    """An interior page whose right child is itself: declined at once, never walked forever."""
    path = tmp_path / "cycle.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size = 512")
    conn.execute("CREATE TABLE t (a INTEGER, t TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 40) for i in range(2000)])
    conn.commit()
    conn.close()
    page_size, root = _page_of(path, "t")
    data = bytearray(path.read_bytes())
    at = (root - 1) * page_size
    assert data[at] == 0x05  # an interior page
    data[at + 8 : at + 12] = root.to_bytes(4, "big")
    path.write_bytes(bytes(data))
    assert _read(path, 'SELECT "a", "t" FROM "t"', ["a", "t"]) is None


def test_overflow_chain_cycle_is_declined(tmp_path: Path) -> None:
    """A row's overflow chain pointing back at its own first overflow page: declined."""
    path = tmp_path / "overflow.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size = 512")
    conn.execute("CREATE TABLE t (a INTEGER, t TEXT)")
    conn.execute("INSERT INTO t VALUES (1, ?)", ("y" * 5000,))
    conn.commit()
    conn.close()
    sql, names = 'SELECT "a", "t" FROM "t"', ["a", "t"]
    assert _rows(_read(path, sql, names)) == [(1, b"y" * 5000)]
    page_size, root = _page_of(path, "t")
    data = bytearray(path.read_bytes())
    page = data[(root - 1) * page_size : root * page_size]
    assert page[0] == 0x0D
    cell = int.from_bytes(page[8:10], "big")
    # payload size (a 2-byte varint), rowid (1 byte), then the local part, then the first overflow page
    assert page[cell] & 0x80 and not page[cell + 1] & 0x80
    payload = ((page[cell] & 0x7F) << 7) | page[cell + 1]
    usable = page_size
    min_local = (usable - 12) * 32 // 255 - 23
    local = min_local + (payload - min_local) % (usable - 4)
    local = local if local <= usable - 35 else min_local
    pointer = (root - 1) * page_size + cell + 3 + local
    first = int.from_bytes(data[pointer : pointer + 4], "big")
    second = int.from_bytes(data[(first - 1) * page_size : (first - 1) * page_size + 4], "big")
    assert second  # the chain goes on
    data[(first - 1) * page_size : (first - 1) * page_size + 4] = first.to_bytes(4, "big")
    path.write_bytes(bytes(data))
    assert _read(path, sql, names) is None


def test_without_the_extension_the_reader_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "handmade_nsys2026.sqlite"
    events = load(path).events
    monkeypatch.setattr(pages, "_native", None)
    assert not pages.enabled()
    assert _read(path, *_kernel_sql(path)) is None
    assert load(path).events.equals(events)


def test_a_change_during_the_read_is_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    """The header's change counter read after the walk differs from the one before: the rows may mix two
    versions of the file, so they are dropped and SQLite reads the table."""
    path = FIXTURES / "handmade_nsys2026.sqlite"
    assert _read(path, *_kernel_sql(path)) is not None
    monkeypatch.setattr(pages, "_change_counter", lambda _path: -1)
    assert _read(path, *_kernel_sql(path)) is None


def test_text_column_types_follow_adbc(tmp_path: Path) -> None:
    """ADBC types a text column string while it meets only TEXT, binary once it meets a BLOB (first or later),
    int64 without a value; the page reader gives the same."""
    path = tmp_path / "types.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE m (blob_first BLOB, text_only TEXT, empty TEXT, text_first TEXT)")
        conn.executemany(
            "INSERT INTO m VALUES (?, ?, NULL, ?)",
            [(None, "a", "x"), (b"\x01", None, b"\xff"), ("txt", "", None)],
        )
    columns = ["blob_first", "text_only", "empty", "text_first"]
    sql = f'SELECT {", ".join(f"{c!r}".replace(chr(39), chr(34)) for c in columns)} FROM "m"'
    table = _read(path, sql, columns)
    assert table is not None
    assert [f.type for f in table.schema] == [pa.binary(), pa.string(), pa.int64(), pa.binary()]
    assert table.equals(_adbc(path, sql, columns))
