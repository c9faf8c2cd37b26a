"""Read-only access to one Nsight Systems export: one small-table connection (stdlib ``sqlite3``) and a bulk
Arrow path (ADBC's SQLite driver, a core dependency; the stdlib path when it is absent or declines a query).

The export is opened read-only (``file:...?mode=ro`` URI) and nothing is ever written to it: no temp tables,
no indexes, no pragmas that write.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from ...errors import InputError

# Seconds to wait for a lock held by another process before giving up with one clear line.
BUSY_TIMEOUT_S = 5.0
ADBC_BATCH_ROWS = 1 << 28


def sqlite_uri(path: Path) -> str:
    """A read-only SQLite URI for ``path`` (percent-encoded, so '?', '#' and '%' in names are safe); immutable
    for a WAL-mode file without commits in a ``-wal`` file (:func:`_wal_without_commits`)."""
    uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro"
    return f"{uri}&immutable=1" if _wal_without_commits(Path(path)) else uri


def _wal_without_commits(path: Path) -> bool:
    """Whether ``path`` is a WAL-mode database (header bytes 18-19 are 2) whose every page is in the file itself
    (no ``-wal`` file, or an empty one). A read-only open of a WAL database creates the ``-shm`` index and a
    ``-wal`` beside it (files written next to the user's input), and fails where the directory is not writable
    ("attempt to write a readonly database"); opened immutable, SQLite reads the file alone and creates nothing."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
        wal = Path(f"{path}-wal")
        return (
            head[:16] == b"SQLite format 3\0"
            and head[18:20] == b"\2\2"
            and (not wal.exists() or wal.stat().st_size == 0)
        )
    except OSError:
        return False  # (unreadable: the open says why)


class Database:
    """Read-only access to one export: catalog, small lookups, and bulk Arrow queries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = sqlite_uri(path)
        try:
            self.conn = sqlite3.connect(self.uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            # Text from the export may hold invalid UTF-8: decode with replacement rather than fail.
            self.conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
            self.tables = {
                row[0]
                for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            }
        except sqlite3.Error as err:
            raise _input_error(err, path) from None
        self._columns: dict[str, list[str]] = {}

    def close(self) -> None:
        self.conn.close()

    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            rows = (
                self.small(f"SELECT name FROM pragma_table_info('{table}')") if table in self.tables else []
            )
            self._columns[table] = [r[0] for r in rows]
        return self._columns[table]

    def small(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql).fetchall()
        except sqlite3.Error as err:
            raise _input_error(err, self.path) from None

    def arrow(self, sql: str, names: list[str]) -> pa.Table:
        """Run ``sql`` and return its result as an Arrow table with columns ``names``."""
        if (table := _pages_read(self, sql, names)) is not None:
            return table
        if _adbc_available():
            try:
                return _adbc_query(self.uri, sql).rename_columns(names)
            except Exception:  # noqa: BLE001 - type inference mismatch, lock, corruption: the stdlib path says
                pass
        return self._stdlib_arrow(sql, names)

    def arrow_fast(self, sql: str, names: list[str]) -> pa.Table | None:
        """``sql``'s result through ADBC alone: None where ADBC is absent or declines the query (the caller then
        runs its reference query through :meth:`arrow`)."""
        if (table := _pages_read(self, sql, names)) is not None:
            return table
        if not _adbc_available():
            return None
        try:
            return _adbc_query(self.uri, sql).rename_columns(names)
        except Exception:  # noqa: BLE001 - type inference mismatch, lock, corruption: the reference query says
            return None

    def _stdlib_arrow(self, sql: str, names: list[str]) -> pa.Table:
        conn = sqlite3.connect(self.uri, uri=True, timeout=BUSY_TIMEOUT_S)
        conn.text_factory = bytes
        try:
            rows = conn.execute(sql).fetchall()
        except sqlite3.Error as err:
            raise _input_error(err, self.path) from None
        finally:
            conn.close()
        if not rows:
            return pa.table({n: pa.array([], pa.int64()) for n in names})
        columns = list(zip(*rows, strict=True))
        return pa.table({n: pa.array(col) for n, col in zip(names, columns, strict=True)})


def _pages_read(db: Database, sql: str, names: list[str]) -> pa.Table | None:
    """The page reader's table for ``sql`` (the same ADBC gives), or None where it declines (.pages)."""
    from . import pages  # imported here: pages reads this module's names

    return pages.read(db, sql, names)


def rowid_bounds(query: Callable[[str], list[tuple[Any, ...]]], table: str) -> tuple[int, int] | None:
    """The smallest and largest rowid of ``table`` (None when it has no rows), through ``query`` (a SELECT's
    rows). One aggregate per SELECT: SQLite reads a lone min() or max() of the rowid off the b-tree's edge, but
    both in one SELECT scan the whole table (0.5 s on the 1.7M-row NVTX table of the x100 benchmark export)."""
    lo = query(f'SELECT min(rowid) FROM "{table}"')
    hi = query(f'SELECT max(rowid) FROM "{table}"')
    first, last = (lo[0][0] if lo else None), (hi[0][0] if hi else None)
    return (first, last) if isinstance(first, int) and isinstance(last, int) else None


def _adbc_available() -> bool:
    """ADBC reads the tables the page reader (.pages) declines: adbc-driver-sqlite is a core dependency (the
    stdlib fetchall path is several times slower on big exports). TRACELENS_NSYS_ENGINE=adbc skips the page
    reader; False only when TRACELENS_NSYS_ENGINE=sqlite3 asks for the stdlib path
    (tests compare the two) or a broken install lacks the driver; .ci/core_install_check fails on that."""
    if os.environ.get("TRACELENS_NSYS_ENGINE") == "sqlite3":
        return False
    try:
        import adbc_driver_sqlite.dbapi  # noqa: F401
    except ImportError:
        return False
    return True


def _adbc_query(uri: str, sql: str) -> pa.Table:
    import adbc_driver_sqlite.dbapi as adbc

    with adbc.connect(uri) as conn, conn.cursor() as cur:
        # One batch for the whole result: the driver's default 1024-row batches cost a second copy when
        # combined (about 2x the table's memory at peak), and one batch also lets type inference see every row.
        cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(ADBC_BATCH_ROWS)})
        cur.execute(sql)
        return cur.fetch_arrow_table()


def _input_error(err: Exception, path: Path) -> InputError:
    text = str(err)
    journal = Path(f"{path}-journal")
    if "readonly" in text and journal.is_file() and journal.stat().st_size:
        # a hot rollback journal: a write was interrupted, and SQLite must undo it before any read, which a
        # read-only open may not do ("attempt to write a readonly database" named a write nobody asked for)
        return InputError(
            f"{journal.name} beside it holds an interrupted write (nsys export killed, or the file copied while "
            "it was written): re-export the report, or let sqlite3 roll it back on a copy opened read-write",
            path=path,
        )
    wal = Path(f"{path}-wal")
    if "readonly" in text and wal.is_file() and wal.stat().st_size:
        # a WAL file with commits: SQLite reads them through the -shm index, which it must create or write
        return InputError(
            f"{wal.name} beside it holds commits not yet in the file (a WAL-mode database), which a read-only "
            "open can read only where it may create or write the -shm index beside it: copy the file with its "
            "-wal to a writable directory, or checkpoint it there (sqlite3 FILE 'PRAGMA wal_checkpoint')",
            path=path,
        )
    if "locked" in text or "busy" in text:
        return InputError(
            f"database is locked by another process (waited {BUSY_TIMEOUT_S:g} s): {text}", path=path
        )
    if "not a database" in text or "malformed" in text or "disk I/O" in text:
        return InputError(f"corrupt or truncated SQLite database ({text})", path=path)
    return InputError(f"cannot read SQLite database ({text})", path=path)
