"""The Nsight reader's fast paths read the same table as its reference paths (issue 28): NVTX_EVENTS's text
columns fetched raw by ADBC against the reference query's ``CAST(... AS BLOB)``, and NVTX_EVENTS fetched in
rowid chunks on two threads against one fetch of the whole table. Exports are modified copies of a shared one,
built in tmp_path."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import copy_shared_trace, shared_params

from tracelens.ingest import load
from tracelens.ingest.nsys import database as nsys_database
from tracelens.ingest.nsys import nvtx as nsys_nvtx
from tracelens.trace import DeferredColumn

NSYS = shared_params("nsys", "*.sqlite")
WINDOW = "h100x2_fastvideo_window_nsys2026.2.sqlite"


def _reference(path: Path, monkeypatch: pytest.MonkeyPatch) -> pa.Table:
    """The event table read with the reference queries only (ADBC running the CAST queries, the NVTX text
    not dictionary-encoded by the page reader), in one chunk."""
    with monkeypatch.context() as patch:
        patch.setattr(nsys_database.Database, "arrow_fast", lambda self, sql, names: None)
        patch.setattr(nsys_nvtx, "_paged_dictionary_chunk", lambda db, sql, names: None)
        patch.setattr(nsys_nvtx, "NVTX_SPLIT_MIN_ROWS", 2**62)
        patch.setattr(nsys_nvtx, "NVTX_CHUNK_ROWS", 2**62)
        return load(path).events


def _assert_same(fast: pa.Table, reference: pa.Table) -> None:
    assert fast.schema == reference.schema
    # equals compares dictionary columns' dictionaries too, so the names' slots match, not only their text
    assert fast.equals(reference)


def _nvtx_rows(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        if not conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone()[0]:
            return 0
        return conn.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()[0]


@pytest.mark.parametrize("path", NSYS)
def test_fast_read_equals_reference(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same(load(path).events, _reference(path, monkeypatch))


@pytest.mark.parametrize("path", NSYS)
def test_parallel_nvtx_chunks_equal_one_fetch(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few rows (so several land on each of the two fetching threads, arriving in any order)."""
    if _nvtx_rows(path) < 4:
        pytest.skip("too few NVTX rows to cut")
    reference = _reference(path, monkeypatch)
    monkeypatch.setattr(nsys_nvtx, "NVTX_SPLIT_MIN_ROWS", 1)
    monkeypatch.setattr(nsys_nvtx, "NVTX_CHUNK_ROWS", max(2, _nvtx_rows(path) // 5))
    _assert_same(load(path).events, reference)


def test_chunk_queries_cover_every_rowid_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rowid ranges are contiguous, each at most NVTX_CHUNK_ROWS long, and at least two once the table has
    NVTX_SPLIT_MIN_ROWS rows; rowids with gaps (deleted rows) are read once each."""
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM NVTX_EVENTS WHERE rowid % 3 = 0")
    monkeypatch.setattr(nsys_nvtx, "NVTX_SPLIT_MIN_ROWS", 1000)
    monkeypatch.setattr(nsys_nvtx, "NVTX_CHUNK_ROWS", 4000)
    db = nsys_database.Database(path)
    try:
        sql = 'SELECT rowid FROM "NVTX_EVENTS"'
        queries = nsys_nvtx.nvtx_chunk_queries(db, sql, pieces=2)
        read = [r[0] for q in queries for r in db.small(q)]
        lo, hi = db.small('SELECT min(rowid), max(rowid) FROM "NVTX_EVENTS"')[0]
        expected = [r[0] for r in db.small(f"{sql} ORDER BY rowid")]
    finally:
        db.close()
    assert len(queries) == max(2, -(-(hi - lo + 1) // 4000))
    assert sorted(read) == expected
    assert len(read) == len(set(read))


def test_raw_text_of_every_storage_class_equals_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVTX text as nsys never writes it: invalid UTF-8 stored as TEXT, a BLOB, NULL, '' and a blob payload
    (binaryData) on some rows: the raw fetch (string promoted to binary by ADBC) reads what the CASTs read."""
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE NVTX_EVENTS SET text = CAST(X'72616e6765ff' AS TEXT) WHERE rowid % 7 = 1")
        conn.execute("UPDATE NVTX_EVENTS SET text = X'626c6f62' WHERE rowid % 11 = 2")
        conn.execute("UPDATE NVTX_EVENTS SET text = NULL WHERE rowid % 13 = 3")
        conn.execute("UPDATE NVTX_EVENTS SET text = '' WHERE rowid % 17 = 4")
        conn.execute("UPDATE NVTX_EVENTS SET binaryData = X'0102030405' WHERE rowid % 19 = 5")
    fast = load(path).events
    _assert_same(fast, _reference(path, monkeypatch))
    names = fast.column("name").cast(pa.string()).to_pylist()
    assert "range\ufffd" in names and "blob" in names


def test_numbers_in_a_text_column_without_affinity_take_the_reference_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand-made NVTX_EVENTS whose text column has no TEXT affinity holds numbers as numbers: ADBC types that
    column as numbers, so the chunk is read again with the reference query (SQLite's own text of each value)."""
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    with sqlite3.connect(path) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info('NVTX_EVENTS')")]
        declared = ", ".join(f'"{c}"' if c == "text" else f'"{c}" INTEGER' for c in columns)
        conn.execute(f"CREATE TABLE nvtx_copy ({declared})")
        conn.execute("INSERT INTO nvtx_copy SELECT * FROM NVTX_EVENTS")
        conn.execute("DROP TABLE NVTX_EVENTS")
        conn.execute("ALTER TABLE nvtx_copy RENAME TO NVTX_EVENTS")
        conn.execute("UPDATE NVTX_EVENTS SET text = 42")
        assert conn.execute("SELECT DISTINCT typeof(text) FROM NVTX_EVENTS").fetchall() == [("integer",)]
        conn.execute("UPDATE NVTX_EVENTS SET text = 1.5 WHERE rowid % 5 = 0")
        conn.execute("UPDATE NVTX_EVENTS SET text = 1e20 WHERE rowid % 5 = 1")
    fast = load(path).events
    _assert_same(fast, _reference(path, monkeypatch))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        as_text = {r[0] for r in conn.execute("SELECT DISTINCT CAST(text AS TEXT) FROM NVTX_EVENTS")}
    annotations = fast.filter(pc.equal(fast.column("kind").cast(pa.string()), "annotation"))
    names = set(annotations.column("name").cast(pa.string()).to_pylist())
    assert names == as_text


def test_deferred_depth_of_an_open_range_counts_everything_after_it(tmp_path: Path) -> None:
    """``depth`` is computed when first read (no analysis reads it): an NVTX range left open at the end of
    capture (NULL end) contains every later host interval of its thread. Checked against a SQL self-join."""
    path = copy_shared_trace(tmp_path, "nsys", "a100_saxpy_nsys2022.2.sqlite")
    with sqlite3.connect(path) as conn:
        first = conn.execute(
            "SELECT rowid FROM NVTX_EVENTS WHERE eventType IN (59, 60) ORDER BY start LIMIT 1"
        ).fetchone()[0]
        conn.execute("UPDATE NVTX_EVENTS SET end = NULL WHERE rowid = ?", (first,))
    host = " UNION ALL ".join(
        [
            "SELECT start AS s, ifnull(end, 4611686018427387904) AS e, globalTid AS tid"
            " FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass != 67",
            "SELECT start, ifnull(end, 4611686018427387904), globalTid FROM NVTX_EVENTS"
            " WHERE eventType IN (59, 60)",
            "SELECT start, end, globalTid FROM CUPTI_ACTIVITY_KIND_OVERHEAD",
            "SELECT start, end, globalTid FROM OSRT_API",
            "SELECT start, end, globalTid FROM PROFILER_OVERHEAD",
        ]
    )
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        host = " UNION ALL ".join(
            q for q in host.split(" UNION ALL ") if q.split(" FROM ")[1].split()[0] in have
        )
        expected = Counter(
            conn.execute(
                f"""WITH host(s, e, tid) AS ({host})
                SELECT h.s, (SELECT count(*) FROM host o WHERE o.tid = h.tid AND o.s <= h.s AND h.e <= o.e
                             AND NOT (o.s = h.s AND o.e = h.e)) FROM host h"""
            ).fetchall()
        )
    trace = load(path)
    assert isinstance(trace.store.columns["depth"], DeferredColumn)
    table = trace.events  # builds the documented table: computes the column
    assert not isinstance(trace.store.columns["depth"], DeferredColumn)
    depth = table.column("depth")
    rows = pc.is_valid(depth)
    origin = trace.metadata.time_origin_ns
    starts = pc.add(table.column("start_ns").filter(rows), origin).to_pylist()
    got = Counter(zip(starts, depth.filter(rows).to_pylist(), strict=True))
    assert got == expected
    assert max(d for _, d in expected) >= 2  # the open range nests what followed it


@pytest.mark.filterwarnings("ignore:.*StringIds lacks")
def test_chunks_where_only_some_rows_have_a_text_id_or_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk without any textId (or payload) keeps that column typed null; joined with chunks that have
    them, the table reads as one fetch of the whole table does (names from StringIds, payload blobs)."""
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    with sqlite3.connect(path) as conn:
        string_id = conn.execute("SELECT id FROM StringIds WHERE value != '' LIMIT 1").fetchone()[0]
        conn.execute("UPDATE NVTX_EVENTS SET text = NULL, textId = ? WHERE rowid < 40", (string_id,))
        conn.execute("UPDATE NVTX_EVENTS SET textId = 987654321 WHERE rowid = 45")  # missing: a placeholder
        conn.execute("UPDATE NVTX_EVENTS SET text = NULL WHERE rowid = 45")
        conn.execute("UPDATE NVTX_EVENTS SET binaryData = zeroblob(40) WHERE rowid BETWEEN 100 AND 120")
    reference = _reference(path, monkeypatch)
    monkeypatch.setattr(nsys_nvtx, "NVTX_SPLIT_MIN_ROWS", 1)
    monkeypatch.setattr(nsys_nvtx, "NVTX_CHUNK_ROWS", 1000)
    fast = load(path).events
    _assert_same(fast, reference)
    names = fast.column("name").cast(pa.string()).to_pylist()
    assert "<unknown string id 987654321>" in names
