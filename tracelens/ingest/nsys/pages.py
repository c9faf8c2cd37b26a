"""The page reader of Nsight Systems exports: the event tables' SELECTs (:mod:`.queries`) answered by walking
the table's B-tree pages in C (``tracelens/ingest/_sqlite_pages.c``) instead of through SQLite's VM and ADBC,
several times faster on big exports.

:func:`read` gives exactly the Arrow table ADBC gives for the same SELECT (same columns, types, values and
nulls), or None, and the caller then runs the query through SQLite as before. None whenever anything is
unusual: the extension missing, ``TRACELENS_NSYS_ENGINE`` naming another engine, a SELECT of another shape
than :func:`.queries._select` writes, a file that is not a plain UTF-8 rollback-journal database (WAL mode, a
``-wal`` or ``-journal`` file beside it), a table that is not a rowid table, a column whose values are not of
the type the engine expects (a REAL or TEXT where integers are read), or anything the page walker finds out
of the format (a corrupt or truncated file: SQLite then gives its own error).

While the pages are read a read transaction is held on a read-only connection (its SHARED lock keeps
writers out), and the header's change counter is compared before and after.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pyarrow as pa

from .database import BUSY_TIMEOUT_S, Database, rowid_bounds, sqlite_uri

_native: ModuleType | None
try:
    from .. import _sqlite_pages as _native
except ImportError:  # no C compiler at install time: SQLite reads every table
    _native = None

ENGINE_ENV = "TRACELENS_NSYS_ENGINE"
ENGINE = "pages"

# Schema metadata of the tables read off the pages: each column holds buffers of its own (not one shared batch,
# as ADBC's columns do), so that keeping one column keeps no other alive (:func:`owns_buffers`).
OWN_BUFFERS = {b"tracelens.own_buffers": b"1"}

_COLUMN = r'"[^"]+"'
_EXPR = rf"(?:{_COLUMN}|NULL|ifnull\(CAST\({_COLUMN} AS BLOB\), X''\))"
_SELECT = re.compile(
    rf"SELECT (?P<exprs>{_EXPR}(?:, {_EXPR})*) FROM (?P<table>{_COLUMN})\s*"
    r"(?:WHERE rowid >= (?P<lo>-?\d+) AND rowid < (?P<hi>-?\d+))?\s*"
)
_EXPR_RE = re.compile(_EXPR)
_CAST = re.compile(rf"ifnull\(CAST\(({_COLUMN}) AS BLOB\), X''\)")


def enabled() -> bool:
    """Whether the page reader may run: the extension is built and no other engine is asked for."""
    return _native is not None and os.environ.get(ENGINE_ENV, ENGINE) in ("", ENGINE)


@dataclass(frozen=True)
class _Header:
    page_size: int
    reserved: int
    page_count: int
    change_counter: int


def _header(path: Path) -> _Header | None:
    """The header fields the walk needs, or None where the file is not one the page reader reads."""
    with open(path, "rb") as f:
        head = f.read(100)
        size = os.fstat(f.fileno()).st_size
    if len(head) < 100 or head[:16] != b"SQLite format 3\0":
        return None
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return None
    if head[18] != 1 or head[19] != 1:  # 2: WAL mode (the last commits may live in the -wal file)
        return None
    reserved = head[20]
    if page_size - reserved < 480 or int.from_bytes(head[56:60], "big") != 1:  # text must be UTF-8
        return None
    change_counter = int.from_bytes(head[24:28], "big")
    page_count = int.from_bytes(head[28:32], "big")
    if page_count == 0 or int.from_bytes(head[92:96], "big") != change_counter:
        page_count = size // page_size  # the in-header size is stale (written by an old SQLite)
    if page_count < 1 or page_count * page_size > size:  # truncated
        return None
    return _Header(page_size, reserved, page_count, change_counter)


def _change_counter(path: Path) -> int | None:
    with open(path, "rb") as f:
        head = f.read(28)
    return int.from_bytes(head[24:28], "big") if len(head) == 28 else None


def read(
    db: Database, sql: str, names: list[str], capacity: int = 0, dictionary: Collection[str] = ()
) -> pa.Table | None:
    """``sql`` (a SELECT written by :func:`.queries._select`, maybe with a rowid range) read off the pages, as
    the Arrow table with columns ``names`` ADBC gives for it; None where the page reader declines.

    The columns named in ``dictionary`` whose expression is :func:`.queries.text_cast`'s
    ``ifnull(CAST(c AS BLOB), X'')`` come dictionary-encoded instead (``dictionary<int32, binary>``: the
    distinct values in order of first appearance, NULL read as b'' like the cast), hashed while the pages are
    read: the rows' bytes are never held. Decoded, such a column equals ADBC's binary column."""
    if not enabled():
        return None
    match = _SELECT.fullmatch(sql.strip())
    if match is None:
        return None
    exprs = _EXPR_RE.findall(match["exprs"])
    if len(exprs) != len(names):
        return None
    path = Path(db.path)
    if any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal")):
        return None
    table = match["table"][1:-1]
    lo = int(match["lo"]) if match["lo"] is not None else None
    hi = int(match["hi"]) if match["hi"] is not None else None
    try:
        conn = sqlite3.connect(sqlite_uri(path), uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        # The read transaction's SHARED lock, taken by the first SELECT and held until the end, keeps any
        # writer out while the pages are read.
        conn.execute("BEGIN")
        return _read_locked(conn, path, table, exprs, names, lo, hi, capacity, frozenset(dictionary))
    except (sqlite3.Error, OSError):
        return None
    finally:
        conn.close()


def _read_locked(
    conn: sqlite3.Connection,
    path: Path,
    table: str,
    exprs: list[str],
    names: list[str],
    lo: int | None,
    hi: int | None,
    capacity: int,
    dictionary: frozenset[str] = frozenset(),
) -> pa.Table | None:
    assert _native is not None
    master = conn.execute(
        "SELECT type, rootpage, sql FROM sqlite_master WHERE name = ? COLLATE NOCASE", (table,)
    ).fetchall()
    if len(master) != 1 or master[0][0] != "table" or not isinstance(master[0][1], int):
        return None
    root, create_sql = master[0][1], str(master[0][2] or "")
    if re.search(r"WITHOUT\s+ROWID", create_sql, re.IGNORECASE) or re.search(r"\bDESC\b", create_sql, re.I):
        return None  # not a rowid table; or an "INTEGER PRIMARY KEY DESC", which is no rowid alias
    # (cid, name, type, notnull, default, pk, hidden) in record order; hidden: generated or virtual columns
    info = conn.execute(f'SELECT * FROM pragma_table_xinfo("{table}")').fetchall()
    if not info or any(row[6] != 0 for row in info):
        return None
    primary = [row for row in info if row[5]]
    rowid_alias = primary[0][1] if len(primary) == 1 and str(primary[0][2]).upper() == "INTEGER" else None
    position = {row[1]: i for i, row in enumerate(info)}
    declared = {row[1]: str(row[2] or "").upper() for row in info}
    has_default = {row[1]: row[4] is not None and str(row[4]).upper() != "NULL" for row in info}
    specs: list[tuple[int, int, int]] = []
    kinds: list[str] = []  # per expression: "null", "int", "text", "cast", "dict"
    for expr, name in zip(exprs, names, strict=True):
        cast = _CAST.fullmatch(expr)
        column = cast[1][1:-1] if cast else (expr[1:-1] if expr.startswith('"') else None)
        if column is None:
            kinds.append("null")
            continue
        if column not in position:
            return None
        if column == rowid_alias:
            if cast:
                return None
            specs.append((0, _native.MODE_ROWID, 0))
            kinds.append("int")
            continue
        affinity = declared[column]
        if cast and name in dictionary:
            if not hasattr(_native, "MODE_DICT"):  # an extension built before the dictionary mode: decline
                return None
            mode, kind = _native.MODE_DICT, "dict"
        elif cast:
            mode, kind = _native.MODE_CAST, "cast"
        elif "INT" in affinity:
            mode, kind = _native.MODE_INT, "int"
        elif any(word in affinity for word in ("CHAR", "CLOB", "TEXT", "BLOB")) or not affinity:
            mode, kind = _native.MODE_TEXT, "text"
        else:
            return None  # REAL or NUMERIC affinity: SQLite may store reals (nsys never declares them)
        specs.append((position[column], mode, int(has_default[column])))
        kinds.append(kind)
    header = _header(path)
    if header is None or not 1 <= root <= header.page_count:
        return None
    if capacity <= 0:  # the rowid span bounds the rows: the column buffers are allocated once, not regrown
        capacity = _rowid_span(conn, table, lo, hi)
    status, rows, scanned = _native.scan(
        str(path),
        header.page_size,
        header.reserved,
        header.page_count,
        root,
        specs,
        lo,
        hi,
        capacity,
    )
    if status != _native.OK or _change_counter(path) != header.change_counter:
        return None
    arrays = []
    results = iter(scanned)
    for kind in kinds:
        if kind == "dict":
            indices, offsets, data, distinct = next(results)
            arrays.append(
                pa.DictionaryArray.from_arrays(
                    pa.Array.from_buffers(pa.int32(), rows, [None, pa.py_buffer(indices)]),
                    pa.Array.from_buffers(
                        pa.binary(), distinct, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
                    ),
                )
            )
            continue
        if kind == "null" or rows == 0:
            if kind != "null":
                next(results)
            arrays.append(pa.nulls(rows, pa.int64()))  # ADBC types a column without a value int64
            continue
        result = next(results)
        if kind == "int":
            values, validity, nulls = result
            arrays.append(
                pa.Array.from_buffers(
                    pa.int64(), rows, [_buffer(validity), pa.py_buffer(values)], null_count=nulls
                )
            )
            continue
        offsets, data, validity, nulls, saw_text, saw_blob = result
        if kind == "text" and not (saw_text or saw_blob):
            arrays.append(pa.nulls(rows, pa.int64()))
            continue
        # ADBC: binary once a BLOB is seen, else string; the cast expression is always binary
        kind_type = pa.binary() if kind == "cast" or saw_blob else pa.string()
        arrays.append(
            pa.Array.from_buffers(
                kind_type,
                rows,
                [_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)],
                null_count=nulls,
            )
        )
    return pa.Table.from_arrays(arrays, names=names, metadata=OWN_BUFFERS)


# Column buffers reserved up front at most for this many rows (a sparse rowid range grows them as needed).
_MAX_CAPACITY = 1 << 28


def owns_buffers(table: pa.Table) -> bool:
    """Whether each column of ``table`` holds buffers of its own (a table :func:`read` gave, or one derived from
    it keeping its schema's metadata, as ``filter`` and ``combine_chunks`` do): a column kept from it needs no
    copy to let the rest of the table go."""
    metadata = table.schema.metadata
    return bool(metadata) and metadata.get(b"tracelens.own_buffers") == b"1"


def _rowid_span(conn: sqlite3.Connection, table: str, lo: int | None, hi: int | None) -> int:
    """How many rowids the read can meet: the table's rowid bounds cut to the range."""
    bounds = rowid_bounds(lambda sql: conn.execute(sql).fetchall(), table)
    if bounds is None:
        return 0
    first, last = bounds
    first = first if lo is None else max(first, lo)
    last = last if hi is None else min(last, hi - 1)
    return max(0, min(last - first + 1, _MAX_CAPACITY))


def _buffer(validity: object) -> pa.Buffer | None:
    return None if validity is None else pa.py_buffer(validity)
