"""Nsight Systems reader: ``nsys export --type sqlite`` files (and ``.nsys-rep`` through a cached export).

The export is opened read-only (``file:...?mode=ro`` URI) and nothing is ever written to it: no temp
tables, no indexes, no pragmas that write. Event tables are read as Arrow through ADBC's SQLite driver when
it is installed (several tables at once, one connection per thread), else through the standard library.
Columns and tables are looked up by name first, so exports from 2022 (schema 2.x) to 2026 (3.25) read the
same way; see ``docs/formats/nsys.md`` for the tables, columns and enum mappings used.
"""

from __future__ import annotations

import os
import queue
import re
import sqlite3
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from ..trace import (
    ALL_KINDS,
    ANNOTATION,
    DRIVER,
    EVENT_SCHEMA,
    GPU_SYNC,
    KERNEL,
    MAX_TIME_NS,
    MEMCPY,
    MEMSET,
    OSRT,
    OVERHEAD,
    RUNTIME,
    STEP,
    EventStore,
    SparseColumn,
    Trace,
    TraceMetadata,
    build_devices,
    build_store,
    nesting_depth,
    with_sentinel_nulls,
)
from . import nvtx_payload
from .nsys_rep import export_report
from .profiler_log import profiler_drops

# Schema majors this reader was written against (2 = nsys 2021-2023, 3 = 2024-2026).
KNOWN_SCHEMA_MAJOR = 3
# Seconds to wait for a lock held by another process before giving up with one clear line.
BUSY_TIMEOUT_S = 5.0
ADBC_BATCH_ROWS = 1 << 28

_STRING_DICT = pa.dictionary(pa.int32(), pa.string())
_KIND_INDEX = {kind: i for i, kind in enumerate(ALL_KINDS)}
_KIND_VALUES = pa.array(list(ALL_KINDS), pa.string())
_MASK24 = 0xFFFFFF

# Built-in enum mappings, used when the export has no ENUM_* tables (2022 and older).
_MEMCPY_KIND_BY_ID = {0: None, 1: "HTOD", 2: "DTOH", 3: "HTOA", 4: "ATOH", 5: "ATOA", 6: "ATOD", 7: "DTOA",
                      8: "DTOD", 9: "HTOH", 10: "PTOP", 11: "UVM_HTOD", 12: "UVM_DTOH", 13: "UVM_DTOD"}
_MEMCPY_LABEL = {"HTOD": "HtoD", "DTOH": "DtoH", "HTOA": "HtoA", "ATOH": "AtoH", "ATOA": "AtoA", "ATOD": "AtoD",
                 "DTOA": "DtoA", "DTOD": "DtoD", "HTOH": "HtoH", "PTOP": "PtoP", "UVM_HTOD": "UVM HtoD",
                 "UVM_DTOH": "UVM DtoH", "UVM_DTOD": "UVM DtoD"}
_MEM_KIND_BY_ID = {0: "PAGEABLE", 1: "PINNED", 2: "DEVICE", 3: "ARRAY", 4: "MANAGED", 5: "DEVICE_STATIC",
                   6: "MANAGED_STATIC", 7: "UNKNOWN"}
_MEM_KIND_LABEL = {"PAGEABLE": "pageable", "PINNED": "pinned", "DEVICE": "device", "ARRAY": "array",
                   "MANAGED": "managed", "DEVICE_STATIC": "device", "MANAGED_STATIC": "managed"}
_SYNC_KIND_BY_ID = {0: None, 1: "EVENT_SYNCHRONIZE", 2: "STREAM_WAIT_EVENT", 3: "STREAM_SYNCHRONIZE",
                    4: "CONTEXT_SYNCHRONIZE"}
_SYNC_LABEL = {"EVENT_SYNCHRONIZE": "event_sync", "STREAM_WAIT_EVENT": "stream_wait_event",
               "STREAM_SYNCHRONIZE": "stream_sync", "CONTEXT_SYNCHRONIZE": "context_sync"}

# RUNTIME eventClass values (ENUM_NSYS_EVENT_CLASS): driver API classes, and the backtrace classes under
# which some exports repeat a call that already has its own row.
_DRIVER_CLASSES = (1, 13)
_BACKTRACE_CLASSES = (67, 68, 69)
# NVTX eventType values (ENUM_NSYS_EVENT_TYPE): ranges we keep, and domain creation.
_NVTX_RANGE_TYPES = (59, 60, 70, 71)
_NVTX_DOMAIN_CREATE = 75

_STEP_NAME = re.compile(r"^tracelens/step#(\d+)$")
_API_VERSION_SUFFIX = r"_v\d+$"

TABLE_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
TABLE_MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
TABLE_MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
TABLE_SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
TABLE_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
TABLE_NVTX = "NVTX_EVENTS"
TABLE_OSRT = "OSRT_API"
TABLE_PROFILER_OVERHEAD = "PROFILER_OVERHEAD"
TABLE_CUPTI_OVERHEAD = "CUPTI_ACTIVITY_KIND_OVERHEAD"
GPU_TABLES = (TABLE_KERNEL, TABLE_MEMCPY, TABLE_MEMSET)
HOST_TABLES = (TABLE_NVTX, TABLE_RUNTIME, TABLE_OSRT, TABLE_PROFILER_OVERHEAD, TABLE_CUPTI_OVERHEAD)


def read(path: Path, fmt: str = "nsys", **_: Any) -> Trace:
    """Read an Nsight Systems SQLite export (or a ``.nsys-rep``, exported once into a cache)."""
    path = Path(path)
    if fmt == "nsys-rep" or path.name.endswith((".nsys-rep", ".qdrep")):
        report = path
        path = export_report(report)
        trace = NsysReader(path).read()
        trace.metadata.extra["nsys_report"] = str(report)
        return trace
    return NsysReader(path).read()


def sqlite_uri(path: Path) -> str:
    """A read-only SQLite URI for ``path`` (percent-encoded, so '?', '#' and '%' in names are safe)."""
    return f"file:{quote(str(Path(path).resolve()))}?mode=ro"


# --------------------------------------------------------------------------------------------------------
# Fetching: one small-table connection (stdlib) and a bulk Arrow path (ADBC, a core dependency).


class _Database:
    """Read-only access to one export: catalog, small lookups, and bulk Arrow queries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = sqlite_uri(path)
        try:
            self.conn = sqlite3.connect(self.uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            # Text from the export may hold invalid UTF-8: decode with replacement rather than fail.
            self.conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
            self.tables = {row[0] for row in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except sqlite3.Error as err:
            raise _input_error(err, path) from None
        self._columns: dict[str, list[str]] = {}

    def close(self) -> None:
        self.conn.close()

    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            rows = self.small(f"SELECT name FROM pragma_table_info('{table}')") if table in self.tables else []
            self._columns[table] = [r[0] for r in rows]
        return self._columns[table]

    def small(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql).fetchall()
        except sqlite3.Error as err:
            raise _input_error(err, self.path) from None

    def arrow(self, sql: str, names: list[str]) -> pa.Table:
        """Run ``sql`` and return its result as an Arrow table with columns ``names``."""
        if _adbc_available():
            try:
                return _adbc_query(self.uri, sql).rename_columns(names)
            except Exception:  # noqa: BLE001 - type inference mismatch, lock, corruption: the stdlib path says
                pass
        return self._stdlib_arrow(sql, names)

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


def _adbc_available() -> bool:
    """ADBC reads the tables: adbc-driver-sqlite is a core dependency (the stdlib fetchall path is several
    times slower on big exports). False only when TRACELENS_NSYS_ENGINE=sqlite3 asks for the stdlib path
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
    if "locked" in text or "busy" in text:
        return InputError(f"database is locked by another process (waited {BUSY_TIMEOUT_S:g} s): {text}",
                          path=path)
    if "not a database" in text or "malformed" in text or "disk I/O" in text:
        return InputError(f"corrupt or truncated SQLite database ({text})", path=path)
    return InputError(f"cannot read SQLite database ({text})", path=path)


# --------------------------------------------------------------------------------------------------------
# Strings: StringIds as one Arrow dictionary, with vectorized id -> index lookups.


def _decode_dictionary(binary: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary-encode a binary column: (int32 indices with -1 for null/empty, unique string values).

    Invalid UTF-8 is decoded with U+FFFD replacement (only the unique values are decoded in Python).
    """
    if isinstance(binary, pa.ChunkedArray):
        binary = binary.combine_chunks()
    if not (pa.types.is_binary(binary.type) or pa.types.is_string(binary.type)):
        binary = binary.cast(pa.string()).cast(pa.binary())
    encoded = pc.dictionary_encode(binary)
    values = encoded.dictionary
    try:
        strings = values.cast(pa.string())
    except pa.ArrowInvalid:
        strings = pa.array([v.decode("utf-8", "replace") for v in values.to_pylist()], pa.string())
    indices = encoded.indices.fill_null(-1).to_numpy().astype(np.int32, copy=False)
    empty = np.flatnonzero(pc.equal(pc.binary_length(values), 0).fill_null(True).to_numpy(zero_copy_only=False))
    if empty.size:
        indices = np.where(np.isin(indices, empty), -1, indices).astype(np.int32)
    return _dedupe(indices, strings)


def _dedupe(indices: np.ndarray, values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Make dictionary values unique (e.g. after stripping suffixes), remapping indices."""
    unique = pc.unique(values)
    if len(unique) == len(values):
        return indices, values
    remap = pc.index_in(values, value_set=unique).to_numpy(zero_copy_only=False).astype(np.int32)
    out = np.where(indices >= 0, remap[np.maximum(indices, 0)], -1).astype(np.int32)
    return out, unique


def _dict_array(indices: np.ndarray, values: pa.Array) -> pa.DictionaryArray:
    mask = indices < 0
    idx = pa.array(np.where(mask, 0, indices).astype(np.int32), pa.int32(), mask=mask if mask.any() else None)
    return pa.DictionaryArray.from_arrays(idx, values)


# StringIds ids are keys, not positions: nsys numbers a full export's strings densely from 0, but an export
# cut out of a bigger one keeps the original ids (126 strings with ids up to 3,436,172). Ids up to this many
# slots past the row count get a dense id -> slot table (4 bytes a slot: at most 4 MiB more than the strings
# need); sparser ids are looked up by binary search in the sorted ids.
_DENSE_SLACK = 2**20
# Lookup codes besides a position in ``values``: no name (a null id, or an empty or null value), and an id
# that StringIds lacks (named by _PLACEHOLDER).
_UNNAMED = -1
_MISSING = -2
# The name given to rows whose string id StringIds lacks: "<unknown string id 3436172>".
_PLACEHOLDER = ("<unknown string id ", ">")


@dataclass
class _Strings:
    """StringIds: ``keys`` (sorted, unique ids) -> ``slots`` (positions in ``values``, -1 for an empty value);
    ``table`` is the same map as a dense array (``_MISSING`` where absent) when the ids are compact enough."""

    keys: np.ndarray
    slots: np.ndarray
    values: pa.Array
    table: np.ndarray | None = None
    _stripped: tuple[np.ndarray, pa.Array] | None = field(default=None, repr=False)
    # Distinct missing ids and row counts, one entry per looked-up column (appends are atomic: the tables
    # are built in parallel threads).
    _missing: list[tuple[np.ndarray, int]] = field(default_factory=list, repr=False)

    @classmethod
    def load(cls, db: _Database) -> _Strings:
        if "StringIds" not in db.tables or not {"id", "value"} <= set(db.columns("StringIds")):
            return cls(np.empty(0, np.int64), np.empty(0, np.int32), pa.array([], pa.string()))
        # nsys declares id INTEGER PRIMARY KEY (never anything else); rows of a hand-edited table whose id is
        # NULL, text, a blob or a real (e.g. beyond int64) are left out, like odd rows of the other lookups.
        table = db.arrow("SELECT id, ifnull(CAST(value AS BLOB), X'') FROM StringIds WHERE typeof(id) = 'integer'",
                         ["id", "value"])
        if not table.num_rows:
            return cls(np.empty(0, np.int64), np.empty(0, np.int32), pa.array([], pa.string()))
        ids = _numpy(table.column("id"))
        slots, values = _decode_dictionary(table.column("value"))
        del table
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():  # a rowid table comes sorted and unique
            order = np.argsort(ids, kind="stable")
            ids, slots = ids[order], slots[order]
            last = np.ones(ids.size, bool)  # a repeated id (not nsys): its last row wins
            last[:-1] = ids[1:] != ids[:-1]
            ids, slots = ids[last], slots[last]
        dense = None
        if ids[0] >= 0 and ids[-1] < ids.size + _DENSE_SLACK:
            dense = np.full(int(ids[-1]) + 1, _MISSING, np.int32)
            dense[ids] = slots
        return cls(ids, slots, values, dense)

    def lookup(self, ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Positions in ``values`` for an id column: ``_UNNAMED`` (-1) for a null id or an empty string,
        ``_MISSING`` (-2) for an id StringIds lacks."""
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        arr = _id_numpy(ids)
        if self.table is not None:
            ok = (arr >= 0) & (arr < self.table.size)
            codes = np.where(ok, self.table[np.where(ok, arr, 0)], _MISSING).astype(np.int32)
        elif self.keys.size:
            at = np.minimum(np.searchsorted(self.keys, arr), self.keys.size - 1)
            codes = np.where(self.keys[at] == arr, self.slots[at], _MISSING).astype(np.int32)
        else:
            codes = np.full(arr.size, _MISSING, np.int32)
        if ids.null_count:
            codes[ids.is_null().to_numpy(zero_copy_only=False)] = _UNNAMED
        return codes

    def placeholders(self, codes: np.ndarray, ids: np.ndarray, values: pa.Array) -> tuple[np.ndarray, pa.Array]:
        """Name the ``_MISSING`` rows of ``codes`` ``<unknown string id N>`` (N from ``ids``, the rows' id
        column as int64): (codes, values) with one placeholder value per distinct missing id appended, and
        the ids recorded for the file's warning. Vectorized: one np.unique and one Arrow string join."""
        missing = codes == _MISSING
        if not missing.any():
            return codes, values
        unique, inverse = np.unique(ids[missing], return_inverse=True)
        self._missing.append((unique, int(missing.sum())))
        text = pc.binary_join_element_wise(_PLACEHOLDER[0], pa.array(unique).cast(pa.string()), _PLACEHOLDER[1], "")
        codes = codes.copy()
        codes[missing] = len(values) + inverse.astype(np.int32)
        # A real string equal to a placeholder (never in nsys) would repeat a dictionary value: dedupe maps
        # each repeat onto its first occurrence.
        return _dedupe(codes, pa.concat_arrays([values, text.cast(values.type)]))

    def missing_summary(self) -> str | None:
        """One line about the ids StringIds lacks (None when every id was found)."""
        if not self._missing:
            return None
        ids = np.unique(np.concatenate([m for m, _ in self._missing]))
        rows = sum(n for _, n in self._missing)
        shown = ", ".join(str(i) for i in ids[:3]) + (", ..." if ids.size > 3 else "")
        # The count and the placeholder first: the terminal report cuts long warning lines.
        return (f"{rows:,} row(s) named '{_PLACEHOLDER[0]}N{_PLACEHOLDER[1]}': StringIds lacks their "
                f"{ids.size:,} string id(s) ({shown})")

    def names(self, ids: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
        codes = self.lookup(ids)
        codes, values = self.placeholders(codes, _id_numpy(ids), self.values) if (codes == _MISSING).any() else (
            codes, self.values)
        return _dict_array(codes, values)

    def api_names(self, ids: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
        """Names with the CUDA API version suffix (``_v7000``) stripped."""
        if self._stripped is None:
            stripped = pc.replace_substring_regex(self.values, _API_VERSION_SUFFIX, "")
            self._stripped = _dedupe(np.arange(len(self.values), dtype=np.int32), stripped)
        remap, values = self._stripped
        pos = self.lookup(ids)
        codes = pos.copy()
        found = pos >= 0
        codes[found] = remap[pos[found]]
        if (codes == _MISSING).any():
            codes, values = self.placeholders(codes, _id_numpy(ids), values)
        return _dict_array(codes, values)

    def get(self, string_id: int | None) -> str | None:
        """One id's string (None for an id StringIds lacks or an empty string)."""
        if not isinstance(string_id, int) or not self.keys.size:
            return None
        at = int(np.searchsorted(self.keys, string_id)) if -2**63 <= string_id < 2**63 else self.keys.size
        if at == self.keys.size or self.keys[at] != string_id or self.slots[at] < 0:
            return None
        return self.values[int(self.slots[at])].as_py()


def _numpy(arr: pa.Array | pa.ChunkedArray, fill: int = 0) -> np.ndarray:
    """An integer column as int64 numpy, nulls replaced by ``fill``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_integer(arr.type):
        arr = arr.cast(pa.int64(), safe=False)
    return arr.fill_null(fill).to_numpy().astype(np.int64, copy=False)


def _id_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A string id column as int64 numpy (nulls read 0: callers mask them). Unlike ``_numpy`` the cast is
    checked: a real where nsys writes an integer id (a fraction, or beyond int64) raises ArrowInvalid, which
    the reader reports as one InputError, rather than wrapping to an arbitrary id."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_integer(arr.type):
        arr = arr.cast(pa.int64())
    return arr.fill_null(0).to_numpy().astype(np.int64, copy=False)


def _detach(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A copy of a column, so that keeping it does not keep its whole fetched batch alive.

    An Arrow batch imported from ADBC is released only when every one of its columns is: holding the
    two time columns of NVTX_EVENTS would otherwise pin its text column too.
    """
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return pa.concat_arrays(chunks) if chunks else pa.array([], arr.type)


def _const_dict(n: int, value: str | None, values: pa.Array) -> pa.DictionaryArray:
    """A dictionary column holding one value (or null) on every row."""
    if value is None:
        return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), values)
    index = values.to_pylist().index(value)
    return pa.DictionaryArray.from_arrays(pa.array(np.full(n, index, np.int32)), values)


def _kind_column(kinds: np.ndarray) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(kinds.astype(np.int8)), _KIND_VALUES)


def _kind_const(n: int, kind: str) -> pa.DictionaryArray:
    return _kind_column(np.full(n, _KIND_INDEX[kind], np.int8))


def _decode_pid(global_ids: pa.Array) -> pa.Array:
    return pc.bit_wise_and(pc.shift_right(global_ids.cast(pa.int64()), 24), _MASK24).cast(pa.int32())


def _decode_tid(global_tids: pa.Array) -> pa.Array:
    return pc.bit_wise_and(global_tids.cast(pa.int64()), _MASK24).cast(pa.int32())


# --------------------------------------------------------------------------------------------------------
# Enums: from the export's ENUM_* tables when present, else the built-in ids.


# Enum and NVTX domain ids are small; a larger one (a damaged export) is left out of the dense lookups below
# rather than sizing them.
_MAX_DENSE_ID = 2**20


def _dense_lookup(positions: dict[int, int], fill: int) -> np.ndarray:
    """int32 table with ``table[id] = positions[id]`` and ``fill`` elsewhere (ids outside [0, _MAX_DENSE_ID)
    are left out)."""
    ids = [i for i in positions if isinstance(i, int) and 0 <= i < _MAX_DENSE_ID]
    table = np.full(max(ids, default=0) + 1, fill, np.int32)  # never empty: callers index it at 0
    for i in ids:
        table[i] = positions[i]
    return table


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _enum_names(db: _Database, table: str, builtin: Mapping[int, str | None], prefix: str) -> dict[int, str | None]:
    """id -> short enum name (``CUDA_MEMCPY_KIND_HTOD`` -> ``HTOD``) from ``table`` or ``builtin``."""
    if table in db.tables and {"id", "name"} <= set(db.columns(table)):
        out: dict[int, str | None] = {}
        for ident, name in db.small(f"SELECT id, name FROM {table}"):
            if not isinstance(ident, int) or not isinstance(name, str):  # NULLs, or cells of another type
                continue
            short = name.split(prefix, 1)[1] if prefix in name else name
            out[int(ident)] = None if short in ("UNKNOWN",) else short
        if out:
            return out
    return dict(builtin)


def _coded_column(codes: pa.Array, labels: Mapping[int, str | None], default: str | None = None) -> pa.DictionaryArray:
    """Map integer codes to a dictionary column of labels; unknown codes, null codes and None labels
    become ``default`` (null when None)."""
    values = sorted({v for v in labels.values() if v is not None} | ({default} if default else set()))
    index = {v: i for i, v in enumerate(values)}
    fallback = index[default] if default else -1
    table = _dense_lookup({code: index[label] for code, label in labels.items() if label is not None}, fallback)
    arr = _numpy(codes, fill=-1)
    ok = (arr >= 0) & (arr < table.size)
    idx = np.where(ok, table[np.where(ok, arr, 0)], fallback).astype(np.int32)
    return _dict_array(idx, pa.array(values, pa.string()))


# --------------------------------------------------------------------------------------------------------
# The reader.


# How a part stores a column when narrower than the schema: nsys's pid and tid are 24-bit fields of a global
# id, and there are 14 kinds. The store casts back on the way out (EventStore.column).
_STORAGE_TYPES = {"kind": pa.dictionary(pa.int8(), pa.string()), "pid": pa.int32(), "tid": pa.int32()}


def _storage_type(name: str) -> pa.DataType:
    return _STORAGE_TYPES.get(name, EVENT_SCHEMA.field(name).type)


@dataclass
class _Part:
    """Rows of one kind group, as Arrow arrays keyed by event column (absent columns are null).

    Every column is the part's own copy in its storage type: a column left pointing into the fetched batch
    would keep the whole batch (every column the query read) alive until the assembly.
    """

    n: int
    columns: dict[str, Any]
    owned: tuple[str, ...] = ()  # columns already the part's own copies, in their storage type

    def __post_init__(self) -> None:
        for name, values in self.columns.items():
            if values is None or name == "depth" or name in self.owned:
                continue
            typ = _storage_type(name)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            self.columns[name] = values.cast(typ) if values.type != typ else _detach(values)


class NsysReader:
    """Reads one export into a :class:`Trace`. Use :func:`read`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []

    def read(self) -> Trace:
        db = _Database(self.path)
        try:
            return self._read(db)
        except (pa.ArrowException, OverflowError) as err:
            # SQLite types each cell, not each column: a damaged or hand-edited export can hold text or
            # out-of-range numbers where nsys writes integers, which the Arrow conversion refuses.
            raise InputError(f"a table holds values of an unexpected type or size ({err})", path=self.path) from None
        finally:
            db.close()

    def queries(self) -> dict[str, tuple[str, list[str]]]:
        """The SELECTs :meth:`read` runs on this export, per table: ``{table: (sql, column names)}``
        (tables the export lacks are left out). For benchmarks that time the queries alone."""
        db = _Database(self.path)
        try:
            return self._queries(db)
        finally:
            db.close()

    def _read(self, db: _Database) -> Trace:
        meta = self._export_metadata(db)
        self._check_is_nsys(db, meta)
        self._check_schema_version(meta)
        strings = _Strings.load(db)

        queries = self._queries(db)
        # A builder takes the fetched table out of a one-item list: an object passed as an argument stays
        # referenced by the caller until the call returns, and the NVTX builder frees its batch halfway.
        builders: dict[str, Callable[[list[pa.Table]], _Part | None]] = {
            TABLE_KERNEL: lambda box: self._kernels(box.pop(), strings),
            TABLE_MEMCPY: lambda box: self._memcpys(box.pop(), db),
            TABLE_MEMSET: lambda box: self._memsets(box.pop(), db),
            TABLE_SYNC: lambda box: self._syncs(box.pop(), db),
            TABLE_RUNTIME: lambda box: self._runtime(box.pop(), strings),
            TABLE_NVTX: lambda box: self._nvtx(box, strings),
            TABLE_OSRT: lambda box: self._host_named(box.pop(), strings, OSRT),
            TABLE_PROFILER_OVERHEAD: lambda box: self._host_named(box.pop(), strings, OVERHEAD),
            TABLE_CUPTI_OVERHEAD: lambda box: self._host_named(box.pop(), strings, OVERHEAD),
        }
        # Tables are fetched in parallel (the Arrow fetch releases the GIL); each is turned into rows as soon
        # as it arrives, overlapping that work with the remaining fetches. Host tables come first (NVTX, the
        # biggest, leading): once they are all in, their nesting depth is computed in another thread while
        # the GPU tables are still being fetched.
        order = sorted(queries, key=lambda name: (name not in HOST_TABLES, name != TABLE_NVTX))
        waiting_host = {name for name in order if name in HOST_TABLES}
        row_counts: dict[str, int] = {}
        built: dict[str, _Part | None] = {}
        depth_future = None
        # Each fetched table goes through a queue, not a Future's result: a finished Future keeps its result
        # alive as long as the Future is referenced, which held every raw table (NVTX text included) until
        # the last one was read.
        arrived: queue.Queue[tuple[str, list[pa.Table], BaseException | None]] = queue.Queue()

        def fetch(name: str) -> None:
            try:
                table = (_nvtx_compact(db, *queries[name]) if name == TABLE_NVTX
                         else db.arrow(*queries[name]).combine_chunks())
                arrived.put((name, [table], None))
                del table
            except BaseException as err:  # handed to the reading thread, which raises it
                arrived.put((name, [], err))

        with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 1))) as pool, \
                ThreadPoolExecutor(max_workers=1) as depth_pool:
            futures = [pool.submit(fetch, name) for name in order]
            try:
                for _ in order:
                    name, box, error = arrived.get()
                    if error is not None:
                        raise error
                    row_counts[name] = box[0].num_rows
                    built[name] = builders[name](box)  # the part keeps copies of the columns it uses
                    waiting_host.discard(name)
                    if not waiting_host and depth_future is None:
                        host_parts = [p for n in order
                                      if n in HOST_TABLES and (p := built.get(n)) is not None and p.n]
                        if host_parts:
                            depth_future = depth_pool.submit(_host_depth, host_parts)
            except BaseException:
                for future in futures:  # one failed table fails the read: do not wait for the others
                    future.cancel()
                raise
            if depth_future is not None:
                for part, depth in zip(host_parts, depth_future.result(), strict=True):
                    part.columns["depth"] = depth
        parts = [p for name in order if (p := built[name]) is not None and p.n]
        del built

        if not any(row_counts.get(t) for t in GPU_TABLES):
            self.warnings.append("no GPU activity: the export has no CUDA kernel, memcpy or memset rows "
                                 "(was the CUDA trace enabled?)")
        missing = strings.missing_summary()
        if missing:  # one warning per file, however many tables and ids
            self.warnings.append(missing)
            warnings.warn(f"{self.path}: {missing}", UserWarning, stacklevel=3)

        origin, events = self._assemble(parts)
        del parts
        if events.num_rows and np.abs(events.numpy("end_ns")).max() >= MAX_TIME_NS:
            raise InputError(f"timestamps span more than 2^62 ns ({MAX_TIME_NS / 3.15576e16:.0f} years): "
                             "a damaged export", path=self.path)
        metadata = TraceMetadata(
            source_format="nsys",
            source_path=str(self.path),
            producer=meta.get("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            producer_version=meta.get("EXPORT_PRODUCT_VERSION", ""),
            format_version=meta.get("EXPORT_SCHEMA_VERSION", ""),
            framework=self._framework(db, strings, row_counts),
            time_origin_ns=origin,
            clock="nsys-session",
            warnings=self.warnings,
            extra=self._extra(db, strings, meta, row_counts, events),
        )
        return Trace(events=events, devices=self._devices(db, events), metadata=metadata)

    # -- metadata -------------------------------------------------------------------------------------

    def _export_metadata(self, db: _Database) -> dict[str, str]:
        meta: dict[str, str] = {}
        for table in ("EXPORT_META_DATA", "META_DATA_EXPORT"):
            if table in db.tables and {"name", "value"} <= set(db.columns(table)):
                meta.update({str(k): str(v) for k, v in db.small(f"SELECT name, value FROM {table}")
                             if k is not None and v is not None})
        return meta

    def _check_is_nsys(self, db: _Database, meta: dict[str, str]) -> None:
        known = {"StringIds", TABLE_KERNEL, TABLE_RUNTIME, TABLE_NVTX, TABLE_OSRT, "TARGET_INFO_GPU"}
        if not meta and not (known & db.tables):
            raise InputError("SQLite database is not an Nsight Systems export (no StringIds, CUPTI_ACTIVITY_KIND_*"
                             " or NVTX_EVENTS tables, no export metadata)", path=self.path)

    def _check_schema_version(self, meta: dict[str, str]) -> None:
        major = meta.get("EXPORT_SCHEMA_VERSION_MAJOR") or meta.get("EXPORT_SCHEMA_VERSION", "").split(".")[0]
        try:
            major_number = int(major)
        except ValueError:
            return
        if major_number > KNOWN_SCHEMA_MAJOR:
            message = (f"export schema {meta.get('EXPORT_SCHEMA_VERSION', major)} is newer than any this tracelens "
                       f"knows (major {KNOWN_SCHEMA_MAJOR}); reading the tables and columns that match")
            self.warnings.append(message)
            warnings.warn(f"{self.path}: {message}", UserWarning, stacklevel=4)

    def _payload_schema_entries(self, db: _Database) -> list[tuple[int, int, str, int, int | None]]:
        """(domain id, schema id, field name, entry type, offset) of the NVTX payload fields NCCL's message
        columns come from; empty without the table (exports before 2024, or without NCCL)."""
        table = "NVTX_PAYLOAD_SCHEMA_ENTRIES"
        if table not in db.tables or not {"domainId", "schemaId", "name", "type", "offset"} <= set(db.columns(table)):
            return []
        names = ", ".join(f"'{n}'" for n in nvtx_payload.PAYLOAD_FIELDS)
        rows = db.small(f'SELECT DISTINCT domainId, schemaId, name, "type", "offset" FROM {table} '
                        f"WHERE name IN ({names})")
        return [r for r in rows if isinstance(r[0], int) and isinstance(r[1], int) and isinstance(r[3], int)
                and (r[4] is None or isinstance(r[4], int))]

    # -- queries --------------------------------------------------------------------------------------

    def _select(self, db: _Database, table: str, wanted: Iterable[str], required: Iterable[str],
                text: Iterable[str] = (), where: str = "") -> tuple[str, list[str]] | None:
        """SQL selecting the ``wanted`` columns the table has (NULL for the rest); None without the table."""
        if table not in db.tables:
            return None
        have = set(db.columns(table))
        missing = [c for c in required if c not in have]
        if missing:
            self.warnings.append(f"{table} lacks column(s) {', '.join(missing)}; table skipped")
            return None
        text = set(text)
        exprs, names = [], []
        for col in wanted:
            if col not in have:
                exprs.append("NULL")
            elif col in text:
                # BLOB keeps invalid UTF-8 intact for replacement decoding; '' stands for NULL so that the
                # Arrow type of the column does not depend on which rows come first.
                exprs.append(f"ifnull(CAST(\"{col}\" AS BLOB), X'')")
            else:
                exprs.append(f'"{col}"')
            names.append(col)
        return f"SELECT {', '.join(exprs)} FROM \"{table}\" {where}", names

    def _queries(self, db: _Database) -> dict[str, tuple[str, list[str]]]:
        self._payload_entries = self._payload_schema_entries(db)
        gpu = ["start", "end", "deviceId", "streamId", "correlationId", "globalPid"]
        specs = {
            TABLE_KERNEL: self._select(db, TABLE_KERNEL, gpu + [
                "demangledName", "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                "registersPerThread", "staticSharedMemory", "dynamicSharedMemory", "graphId"],
                ["start", "end"]),
            TABLE_MEMCPY: self._select(db, TABLE_MEMCPY, gpu + ["bytes", "copyKind", "srcKind", "dstKind"],
                                       ["start", "end"]),
            TABLE_MEMSET: self._select(db, TABLE_MEMSET, gpu + ["bytes", "memKind"], ["start", "end"]),
            TABLE_SYNC: self._select(db, TABLE_SYNC, gpu + ["syncType"], ["start", "end"]),
            TABLE_RUNTIME: self._select(db, TABLE_RUNTIME, ["start", "end", "eventClass", "globalTid",
                                                            "correlationId", "nameId"], ["start", "end"]),
            # binaryData (NCCL's payloads) only where the export declares the payload fields read from it.
            TABLE_NVTX: self._select(db, TABLE_NVTX, ["start", "end", "eventType", "globalTid", "text", "textId",
                                                      "domainId"] + (["binaryData"] if self._payload_entries else []),
                                     ["start", "eventType"], text=["text", "binaryData"]),
            TABLE_OSRT: self._select(db, TABLE_OSRT, ["start", "end", "globalTid", "nameId"], ["start", "end"]),
            TABLE_PROFILER_OVERHEAD: self._select(db, TABLE_PROFILER_OVERHEAD,
                                                  ["start", "end", "globalTid", "nameId"], ["start", "end"]),
            TABLE_CUPTI_OVERHEAD: self._select(db, TABLE_CUPTI_OVERHEAD,
                                               ["start", "end", "globalTid", "nameId"], ["start", "end"]),
        }
        return {name: spec for name, spec in specs.items() if spec is not None}

    # -- per-table rows -------------------------------------------------------------------------------

    @staticmethod
    def _gpu_common(t: pa.Table) -> dict[str, Any]:
        return {
            "start_ns": t.column("start"),
            "end_ns": t.column("end"),
            "device": t.column("deviceId"),
            "stream": t.column("streamId"),
            "correlation_id": t.column("correlationId"),
            "pid": _decode_pid(t.column("globalPid")),
        }

    def _kernels(self, t: pa.Table, strings: _Strings) -> _Part:
        name = strings.lookup(t.column("demangledName"))
        short_ids = t.column("shortName")
        values = strings.values
        if (name < 0).any():
            # The short name stands in for a null, empty or missing demangled name; a row with neither is
            # named after its missing id (the demangled one first).
            short = strings.lookup(short_ids)
            fallback = np.where((short == _UNNAMED) & (name == _MISSING), _MISSING, short)
            missing_id = np.where(name == _MISSING, _id_numpy(t.column("demangledName")), _id_numpy(short_ids))
            name = np.where(name >= 0, name, fallback).astype(np.int32)
            name, values = strings.placeholders(name, missing_id, values)
        cols = self._gpu_common(t)
        cols.update({
            "kind": _kind_const(t.num_rows, KERNEL),
            "name": _dict_array(name, values),
            "grid_x": t.column("gridX"), "grid_y": t.column("gridY"), "grid_z": t.column("gridZ"),
            "block_x": t.column("blockX"), "block_y": t.column("blockY"), "block_z": t.column("blockZ"),
            "registers_per_thread": t.column("registersPerThread"),
            "static_shared_bytes": t.column("staticSharedMemory"),
            "dynamic_shared_bytes": t.column("dynamicSharedMemory"),
            "graph_id": t.column("graphId"),
        })
        # Keep the short names reachable: demangled name -> short name, read at each name's first row.
        first_row = np.full(len(values) + 1, -1, np.int64)
        rows = np.arange(name.size, dtype=np.int64)
        first_row[name[::-1]] = rows[::-1]  # the last write wins: reversed, that is the first occurrence
        first_row = first_row[:-1]  # slot -1 collected the unnamed rows
        named = np.flatnonzero(first_row >= 0)
        short = strings.lookup(short_ids.take(pa.array(first_row[named]))) if named.size else named
        self._short_names = {values[int(d)].as_py(): strings.values[int(s)].as_py()
                             for d, s in zip(named, short, strict=True) if s >= 0 and d != s}
        return _Part(t.num_rows, cols)

    def _memcpys(self, t: pa.Table, db: _Database) -> _Part:
        copy_names = _enum_names(db, "ENUM_CUDA_MEMCPY_OPER", _MEMCPY_KIND_BY_ID, "CUDA_MEMCPY_KIND_")
        copy_labels = {k: (_MEMCPY_LABEL.get(v, v) if v else None) for k, v in copy_names.items()}
        mem_labels = self._mem_labels(db)
        copy_kind = _coded_column(t.column("copyKind"), copy_labels)
        names = {k: f"[CUDA memcpy {v}]" for k, v in copy_labels.items() if v}
        cols = self._gpu_common(t)
        cols.update({
            "kind": _kind_const(t.num_rows, MEMCPY),
            "name": _coded_column(t.column("copyKind"), names, default="[CUDA memcpy]"),
            "bytes": t.column("bytes"),
            "copy_kind": copy_kind,
            "src_kind": _coded_column(t.column("srcKind"), mem_labels),
            "dst_kind": _coded_column(t.column("dstKind"), mem_labels),
        })
        return _Part(t.num_rows, cols)

    @staticmethod
    def _mem_labels(db: _Database) -> dict[int, str | None]:
        names = _enum_names(db, "ENUM_CUDA_MEM_KIND", _MEM_KIND_BY_ID, "CUDA_MEMOPR_MEMORY_KIND_")
        return {k: _MEM_KIND_LABEL.get(v) if v else None for k, v in names.items()}

    def _memsets(self, t: pa.Table, db: _Database) -> _Part:
        cols = self._gpu_common(t)
        cols.update({
            "kind": _kind_const(t.num_rows, MEMSET),
            "name": _const_dict(t.num_rows, "[CUDA memset]", pa.array(["[CUDA memset]"])),
            "bytes": t.column("bytes"),
            "dst_kind": _coded_column(t.column("memKind"), self._mem_labels(db)),
        })
        return _Part(t.num_rows, cols)

    def _syncs(self, t: pa.Table, db: _Database) -> _Part:
        names = _enum_names(db, "ENUM_CUPTI_SYNC_TYPE", _SYNC_KIND_BY_ID, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_")
        labels = {k: _SYNC_LABEL.get(v) if v else None for k, v in names.items()}
        sync_kind = _coded_column(t.column("syncType"), labels)
        cols = self._gpu_common(t)
        cols.update({
            "kind": _kind_const(t.num_rows, GPU_SYNC),
            "name": _coded_column(t.column("syncType"), {k: f"[CUDA sync {v}]" for k, v in labels.items() if v},
                                  default="[CUDA sync]"),
            "sync_kind": sync_kind,
        })
        return _Part(t.num_rows, cols)

    def _runtime(self, t: pa.Table, strings: _Strings) -> _Part:
        event_class = _numpy(t.column("eventClass"), fill=-1)
        backtrace = np.isin(event_class, _BACKTRACE_CLASSES)
        if backtrace.any():
            # A backtrace row repeats a call already recorded under its own class: drop it unless it is
            # the only row for that (thread, correlation id).
            tid = _numpy(t.column("globalTid"), fill=-1)
            corr = _numpy(t.column("correlationId"), fill=-1)
            # Sort by (thread, correlation id) with non-backtrace rows first in each group: a backtrace row
            # is a repeat when it is not the first row of its group.
            order = np.lexsort((backtrace, corr, tid))
            t_sorted, c_sorted = tid[order], corr[order]
            first = np.ones(order.size, bool)
            first[1:] = (t_sorted[1:] != t_sorted[:-1]) | (c_sorted[1:] != c_sorted[:-1])
            keep = np.ones(order.size, bool)
            keep[order] = ~(backtrace[order] & ~first)
            if not keep.all():
                t = t.filter(pa.array(keep))
                event_class = event_class[keep]
        kinds = np.where(np.isin(event_class, _DRIVER_CLASSES), _KIND_INDEX[DRIVER], _KIND_INDEX[RUNTIME])
        gtid = t.column("globalTid")
        cols = {
            "kind": _kind_column(kinds),
            "name": strings.api_names(t.column("nameId")),
            "start_ns": _detach(t.column("start")),
            "end_ns": _detach(t.column("end")),
            "pid": _decode_pid(gtid),
            "tid": _decode_tid(gtid),
            "correlation_id": _detach(t.column("correlationId")),
        }
        return _Part(t.num_rows, cols)

    def _nvtx(self, box: list[pa.Table], strings: _Strings) -> _Part | None:
        # NVTX_EVENTS is most of a training export's rows: it arrives compacted chunk by chunk
        # (_nvtx_compact), and each column is let go as soon as it has been used.
        t = box.pop()
        columns = {name: t.column(name) for name in t.column_names}
        n_all = t.num_rows
        del t
        event_type = _numpy(columns.pop("eventType"), fill=-1)
        keep = np.isin(event_type, _NVTX_RANGE_TYPES)
        created = event_type == _NVTX_DOMAIN_CREATE
        del event_type
        text = columns.pop("text").combine_chunks() if n_all else pa.array([], pa.dictionary(pa.int32(), pa.string()))
        text_idx = text.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
        text_values = text.dictionary
        del text
        text_ids = columns.pop("textId")
        id_idx = strings.lookup(text_ids)
        # One dictionary for inline text and StringIds text: inline entries first, then StringIds shifted.
        values = pa.concat_arrays([text_values, strings.values])
        name_idx = np.where(text_idx >= 0, text_idx,
                            np.where(id_idx >= 0, id_idx + len(text_values), id_idx)).astype(np.int32)
        del text_idx, id_idx
        if (name_idx == _MISSING).any():  # a textId StringIds lacks, and no inline text
            name_idx, values = strings.placeholders(name_idx, _id_numpy(text_ids), values)
        else:
            name_idx, values = _dedupe(name_idx, values)
        del text_ids

        domain_ids = _numpy(columns.pop("domainId"), fill=-1)
        payload = columns.pop("payload", None)
        domain_names = {int(d): values[int(i)].as_py() for d, i in zip(domain_ids[created], name_idx[created], strict=True)
                        if i >= 0 and d > 0}
        self._nvtx_domains = domain_names
        if not keep.any():
            return None
        if not keep.all():
            rows = pa.array(keep)
            columns = {name: column.filter(rows) for name, column in columns.items()}
            name_idx = name_idx[keep]
            domain_ids = domain_ids[keep]
            payload = payload.filter(rows) if payload is not None else None
        del keep, created
        n = int(name_idx.size)
        start, end = columns.pop("start").combine_chunks(), columns.pop("end").combine_chunks()
        pid, tid = columns.pop("pid").combine_chunks(), columns.pop("tid").combine_chunks()
        # Steps: tracelens/step#N ranges become kind "step" with step = N.
        value_list = values.to_pylist()
        step_of_value = np.array([int(m.group(1)) if (m := _STEP_NAME.match(v or "")) else -1 for v in value_list]
                                 + [-1], np.int64)
        step = step_of_value[name_idx]  # index -1 reads the trailing -1
        is_step = step >= 0
        kinds = np.where(is_step, _KIND_INDEX[STEP], _KIND_INDEX[ANNOTATION])
        self._nvtx_names = values

        domain_values = sorted(set(domain_names.values()))
        dom_table = _dense_lookup({d: domain_values.index(n) for d, n in domain_names.items()}, -1)
        ok = (domain_ids >= 0) & (domain_ids < dom_table.size)
        dom_idx = np.where(ok, dom_table[np.where(ok, domain_ids, 0)], -1).astype(np.int32)

        # NCCL's payloads: the message and group sizes of its API ranges.
        nccl_ids = [d for d, name in domain_names.items() if name == nvtx_payload.NCCL_DOMAIN]
        entries: dict[str, list[tuple[int, int | None, int]]] = {}
        for domain, schema, field_name, kind, offset in self._payload_entries:
            if domain in nccl_ids:
                entries.setdefault(field_name, []).append((schema, offset, kind))
        messages = (nvtx_payload.nccl_messages(name_idx, value_list, np.isin(domain_ids, nccl_ids),
                                               payload.combine_chunks(), entries)
                    if payload is not None and entries else None)
        cols = {
            "kind": _kind_column(kinds),
            "name": _dict_array(name_idx, values),
            "start_ns": start,
            "end_ns": end,  # null for ranges left open at the end of capture: closed later
            "pid": pid,
            "tid": tid,
            # All-null columns stay None: the assembly gives them one shared null buffer.
            "domain": _dict_array(dom_idx, pa.array(domain_values, pa.string())) if domain_values else None,
            "step": pa.array(step, pa.int64(), mask=~is_step) if is_step.any() else None,
            **(messages or {}),
        }
        return _Part(n, cols, owned=("start_ns", "end_ns", "pid", "tid"))

    def _host_named(self, t: pa.Table, strings: _Strings, kind: str) -> _Part:
        gtid = t.column("globalTid")
        cols = {
            "kind": _kind_const(t.num_rows, kind),
            "name": strings.names(t.column("nameId")),
            "start_ns": _detach(t.column("start")),
            "end_ns": _detach(t.column("end")),
            "pid": _decode_pid(gtid),
            "tid": _decode_tid(gtid),
        }
        return _Part(t.num_rows, cols)

    # -- assembly -------------------------------------------------------------------------------------

    def _assemble(self, parts: list[_Part]) -> tuple[int, EventStore]:
        """Concatenate the parts, shift times to the earliest start, sort once, and store the columns."""
        if not parts:
            return 0, build_store({"kind": [], "start_ns": [], "end_ns": []})
        start = np.concatenate([_numpy(p.columns.pop("start_ns")) for p in parts])
        origin = int(start.min())
        start -= origin
        order = np.argsort(start, kind="stable")  # each table is nearly sorted: timsort merges its runs
        total = start.size
        columns: dict[str, Any] = {"start_ns": pa.array(start[order])}
        missing = np.iinfo(np.int64).min
        end = np.concatenate([_numpy(p.columns.pop("end_ns"), fill=missing) for p in parts])
        # An end missing (a range still open when capture stopped) runs to the end of the trace.
        open_ended = end == missing
        if open_ended.any():
            end[open_ended] = end.max()
        del open_ended
        end -= origin
        np.maximum(end, start, out=end)
        del start
        columns["end_ns"] = pa.array(end[order])
        del end
        # rank: the table row of each part row (parts concatenated), where a sparse column's values go
        rank = np.empty(total, np.int32 if total < 2**31 else np.int64)
        rank[order] = np.arange(total, dtype=rank.dtype)
        take = pa.array(order)
        del order
        self._gather_columns(parts, columns, take, rank, total)
        del take, rank
        sentinel = set()
        for name in ("pid", "tid"):  # read by every analysis: -1 in their null slots spares a filled copy
            if isinstance(columns.get(name), pa.Array) and (marked := with_sentinel_nulls(columns[name])) is not None:
                columns[name] = marked
                sentinel.add(name)
        return origin, EventStore(total, {f.name: columns[f.name] for f in EVENT_SCHEMA if f.name in columns},
                                  frozenset(sentinel))

    @staticmethod
    def _gather_columns(parts: list[_Part], columns: dict[str, Any], take: pa.Array, rank: np.ndarray,
                        total: int) -> None:
        """Fill ``columns`` with every event column some part has, in table order.

        A column most rows have is gathered whole (``take``); one that only the parts of fewer than half the
        rows have (kernel geometry, copy bytes, ...) is stored sparse, at the table rows of those parts
        (``rank``). Two gathers run at once (Arrow's take releases the GIL); at most one more column waits
        prepared, so the parts' columns are still released about as fast as the gathered ones appear.
        """
        shared_null = _SharedNulls(total)
        in_flight: deque[tuple[str, Future[Any]]] = deque()
        offsets = np.cumsum([0] + [p.n for p in parts])

        def gather(column: pa.ChunkedArray) -> pa.Array:
            return column.take(take).combine_chunks()

        with ThreadPoolExecutor(max_workers=2) as pool:
            for fld in EVENT_SCHEMA:
                if fld.name in columns:
                    continue
                having = [i for i, p in enumerate(parts) if p.columns.get(fld.name) is not None]
                if not having:
                    continue
                if 2 * sum(parts[i].n for i in having) < total:
                    positions = np.concatenate([rank[offsets[i]: offsets[i + 1]] for i in having])
                    values = NsysReader._merged_column([parts[i] for i in having], fld, shared_null)
                    in_flight.append((fld.name, pool.submit(_sparse, positions, values)))
                else:
                    column = NsysReader._merged_column(parts, fld, shared_null)
                    in_flight.append((fld.name, pool.submit(gather, column)))
                    del column
                while len(in_flight) > 1:
                    name, future = in_flight.popleft()
                    columns[name] = future.result()
            for name, future in in_flight:
                columns[name] = future.result()

    @staticmethod
    def _merged_column(parts: list[_Part], fld: pa.Field, shared_null: _SharedNulls) -> pa.ChunkedArray | None:
        """One column over all parts (in part order), or None when no part has it."""
        if not any(p.columns.get(fld.name) is not None for p in parts):
            return None
        chunks = []
        for p in parts:
            # pop: each part's column is released as soon as it is merged, keeping the peak low
            typ = _storage_type(fld.name) if fld.name != "depth" else fld.type
            values = p.columns.pop(fld.name, None)
            if values is None:
                chunks.append(shared_null.array(typ, p.n))
                continue
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            chunks.append(values if values.type == typ else values.cast(typ))
        if pa.types.is_dictionary(typ):
            merged = pa.Table.from_arrays([pa.chunked_array(chunks, typ)], names=["x"])
            return merged.unify_dictionaries().column(0)
        return pa.chunked_array(chunks, typ)

    # -- devices, framework, extra --------------------------------------------------------------------

    def _devices(self, db: _Database, events: EventStore) -> pa.Table:
        rows: dict[int, dict[str, Any]] = {}
        if "TARGET_INFO_GPU" in db.tables:
            have = set(db.columns("TARGET_INFO_GPU"))
            wanted = ["id", "name", "smCount", "computeMajor", "computeMinor", "threadsPerWarp", "maxWarpsPerSm",
                      "maxThreadsPerBlock", "maxBlocksPerSm", "maxRegistersPerSm", "maxRegistersPerBlock",
                      "maxShmemPerSm", "maxShmemPerBlock", "maxShmemPerBlockOptin", "totalMemory",
                      "memoryBandwidth", "clockRate"]
            if "id" in have:
                sql = ", ".join(f'"{c}"' if c in have else "NULL" for c in wanted)
                for values in db.small(f"SELECT {sql} FROM TARGET_INFO_GPU"):
                    # Cells of another type than nsys writes (a damaged export) are left out.
                    g = {k: v if (isinstance(v, str) if k == "name" else _is_number(v)) else None
                         for k, v in zip(wanted, values, strict=True)}
                    if g["id"] is None:
                        continue
                    warps, warp = g["maxWarpsPerSm"], g["threadsPerWarp"]
                    rows[int(g["id"])] = {
                        "id": int(g["id"]), "name": g["name"], "vendor": "nvidia", "sm_count": g["smCount"],
                        "compute_major": g["computeMajor"], "compute_minor": g["computeMinor"], "warp_size": warp,
                        "max_threads_per_sm": warps * warp if warps and warp else None,
                        "max_threads_per_block": g["maxThreadsPerBlock"], "max_blocks_per_sm": g["maxBlocksPerSm"],
                        "regs_per_sm": g["maxRegistersPerSm"], "regs_per_block": g["maxRegistersPerBlock"],
                        "shared_mem_per_sm": g["maxShmemPerSm"], "shared_mem_per_block": g["maxShmemPerBlock"],
                        "shared_mem_per_block_optin": g["maxShmemPerBlockOptin"],
                        "total_memory_bytes": g["totalMemory"],
                        "memory_bandwidth_bytes_per_s": float(g["memoryBandwidth"]) if g["memoryBandwidth"] else None,
                        "clock_rate_khz": int(g["clockRate"]) // 1000 if g["clockRate"] else None,
                    }
        if "TARGET_INFO_CUDA_DEVICE" in db.tables and {"cudaId", "numMultiprocessors"} <= set(
                db.columns("TARGET_INFO_CUDA_DEVICE")):
            for cuda_id, sms in db.small("SELECT DISTINCT cudaId, numMultiprocessors FROM TARGET_INFO_CUDA_DEVICE"):
                if not isinstance(cuda_id, int):
                    continue
                sms = sms if _is_number(sms) else None
                row = rows.setdefault(int(cuda_id), {"id": int(cuda_id), "vendor": "nvidia"})
                if row.get("sm_count") is None:
                    row["sm_count"] = sms
        for dev in events.unique("device"):
            rows.setdefault(int(dev), {"id": int(dev), "vendor": "nvidia"})
        return build_devices([rows[k] for k in sorted(rows)])

    def _framework(self, db: _Database, strings: _Strings, row_counts: dict[str, int]) -> str:
        nvtx_names = getattr(self, "_nvtx_names", None)
        if nvtx_names is not None and len(nvtx_names):
            if pc.any(pc.starts_with(nvtx_names, "aten::")).as_py():
                return "pytorch"
        kernel_names = list(getattr(self, "_short_names", {}))
        if row_counts.get(TABLE_KERNEL) and len(strings.values):
            if pc.any(pc.match_substring(strings.values, "at::native::")).as_py() or any(
                    "at::native::" in k for k in kernel_names):
                return "pytorch"
        for name in self._thread_names(db, strings).values():
            if name.startswith("pt_") or "torch" in name.lower():
                return "pytorch"
        return "cuda"

    def _thread_names(self, db: _Database, strings: _Strings) -> dict[str, str]:
        if not hasattr(self, "_threads"):
            threads: dict[str, str] = {}
            if "ThreadNames" in db.tables and {"nameId", "globalTid"} <= set(db.columns("ThreadNames")):
                for name_id, gtid in db.small("SELECT nameId, globalTid FROM ThreadNames"):
                    name = strings.get(name_id)
                    if isinstance(gtid, int) and name:
                        threads[f"{(gtid >> 24) & _MASK24}:{gtid & _MASK24}"] = name
            self._threads = threads
        return self._threads

    def _extra(self, db: _Database, strings: _Strings, meta: dict[str, str],
               row_counts: dict[str, int], events: EventStore) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "nsys_export": {k: v for k, v in meta.items() if k.startswith("EXPORT_") and "PATH" not in k
                            and k not in ("EXPORT_USER", "EXPORT_HOST")},
            "thread_names": self._thread_names(db, strings),
            "nvtx_domains": {str(k): v for k, v in getattr(self, "_nvtx_domains", {}).items()},
            "kernel_short_names": getattr(self, "_short_names", {}),
            "tables_read": {name: n for name, n in sorted(row_counts.items())},
        }
        if "PROCESSES" in db.tables and {"globalPid", "pid", "name"} <= set(db.columns("PROCESSES")):
            pids = set(events.unique("pid"))
            extra["process_names"] = {str(pid): name for _, pid, name in db.small(
                "SELECT globalPid, pid, name FROM PROCESSES") if pid in pids and name}
        if "TARGET_INFO_SESSION_START_TIME" in db.tables and "utcEpochNs" in db.columns(
                "TARGET_INFO_SESSION_START_TIME"):
            row = db.small("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
            if row and isinstance(row[0][0], int):
                extra["session_start_utc_epoch_ns"] = row[0][0]
        if "DIAGNOSTIC_EVENT" in db.tables and "text" in db.columns("DIAGNOSTIC_EVENT"):
            # nsys's own diagnostics (tens of rows): what it says it dropped or lost.
            drops = profiler_drops(text for (text,) in db.small("SELECT text FROM DIAGNOSTIC_EVENT"))
            if drops:
                extra["profiler_drops"] = drops
        return extra


# NVTX_EVENTS rows fetched per query: the fetched batch (NVTX text included) lives only while its chunk is
# compacted, instead of the whole table's batch living through the reading of the names.
NVTX_CHUNK_ROWS = 1 << 22


def _nvtx_compact(db: _Database, sql: str, names: list[str]) -> pa.Table:
    """NVTX_EVENTS fetched a rowid range at a time, each chunk kept as the columns ``_nvtx`` reads: times,
    event type, pid and tid (int32, from globalTid), the inline text as a dictionary, textId and domainId."""
    bounds = db.small(f'SELECT min(rowid), max(rowid) FROM "{TABLE_NVTX}"')
    lo, hi = bounds[0] if bounds else (None, None)
    if not isinstance(lo, int) or not isinstance(hi, int):
        return _compact_nvtx_chunk(db.arrow(sql, names).combine_chunks())
    where = "AND" if " WHERE " in sql else "WHERE"
    pieces = []
    for first in range(lo, hi + 1, NVTX_CHUNK_ROWS):  # a loop over chunks of millions of rows
        chunk = db.arrow(f"{sql} {where} rowid >= {first} AND rowid < {first + NVTX_CHUNK_ROWS}", names)
        pieces.append(_compact_nvtx_chunk(chunk.combine_chunks()))
        del chunk
    table = pa.concat_tables(pieces)
    del pieces
    return table.unify_dictionaries()


_NVTX_COMPACT_SCHEMA = pa.schema([
    ("start", pa.int64()), ("end", pa.int64()), ("eventType", pa.int64()), ("pid", pa.int32()),
    ("tid", pa.int32()), ("text", pa.dictionary(pa.int32(), pa.string())), ("textId", pa.int64()),
    ("domainId", pa.int64()),
])


def _compact_nvtx_chunk(t: pa.Table) -> pa.Table:
    """One fetched chunk as our own copies (a column left in the fetched batch pins all of it); with
    binaryData, a ``payload`` column holding only the blobs long enough for a payload header (else null)."""
    text_idx, text_values = _decode_dictionary(t.column("text"))
    gtid = t.column("globalTid")
    arrays = [
        _detach(_as_int64(t.column("start"))), _detach(_as_int64(t.column("end"))),
        _detach(_as_int64(t.column("eventType"))), _decode_pid(gtid), _decode_tid(gtid),
        _dict_array(text_idx, text_values),
        _detach(_as_int64(t.column("textId"))), _detach(_as_int64(t.column("domainId"))),
    ]
    if "binaryData" not in t.column_names:
        return pa.Table.from_arrays(arrays, schema=_NVTX_COMPACT_SCHEMA)
    blobs = t.column("binaryData").combine_chunks().cast(pa.binary())
    payload = pc.if_else(pc.greater_equal(pc.binary_length(blobs), nvtx_payload.HEADER_BYTES), blobs,
                         pa.nulls(len(blobs), pa.binary()))
    return pa.Table.from_arrays(arrays + [_detach(payload)],
                                schema=_NVTX_COMPACT_SCHEMA.append(pa.field("payload", pa.binary())))


def _as_int64(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """An integer column as int64 (a chunk where every value is null may come back typed null); a value of
    another type raises ArrowInvalid, reported by the reader as a damaged export."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array if array.type == pa.int64() else array.cast(pa.int64())


def _int32_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.int32()).fill_null(-1).to_numpy()


def _host_depth(parts: list[_Part]) -> list[pa.Array]:
    """Nesting depth of every row of the host parts (runtime, NVTX, OSRT, overhead) on its thread.

    The parts are nested together: a runtime call inside an NVTX range is one level deeper than the range.
    Times are the export's own (depth does not depend on the origin); an open range (null end) contains
    everything after its start.
    """
    start = np.concatenate([_numpy(p.columns["start_ns"]) for p in parts])
    end = np.concatenate([_numpy(p.columns["end_ns"], fill=np.iinfo(np.int64).max) for p in parts])
    # pid and tid stay int32 (their storage type): only their distinct values matter here
    pid = np.concatenate([_int32_numpy(p.columns["pid"]) for p in parts])
    tid = np.concatenate([_int32_numpy(p.columns["tid"]) for p in parts])
    np.maximum(end, start, out=end)
    depth = nesting_depth(pid, tid, start, end)
    del start, end, pid, tid
    out, at = [], 0
    for part in parts:
        out.append(pa.array(depth[at:at + part.n], pa.int16()))
        at += part.n
    return out


def _sparse(positions: np.ndarray, values: pa.ChunkedArray) -> SparseColumn:
    """A column's non-null values at their table rows (``positions``, one per value), in row order."""
    values = values.combine_chunks()
    if values.null_count:
        valid = values.is_valid()
        positions = positions[valid.to_numpy(zero_copy_only=False)]
        values = values.filter(valid)
    order = np.argsort(positions)
    return SparseColumn(positions[order], values.take(pa.array(order)))


class _SharedNulls:
    """All-null columns that share one zeroed buffer, so a wide mostly-null table costs memory once."""

    def __init__(self, n: int) -> None:
        self.n = n
        # bytearray memory comes zeroed from calloc: untouched pages cost no resident memory at all.
        self._data = pa.py_buffer(bytearray(max(8 * n, 8)))
        self._validity = pa.py_buffer(bytearray(max((n + 7) // 8, 1)))

    def array(self, typ: pa.DataType, n: int | None = None) -> pa.Array:
        n = self.n if n is None else n
        if pa.types.is_dictionary(typ):
            indices = pa.Array.from_buffers(typ.index_type, n, [self._validity, self._data], null_count=n)
            return pa.DictionaryArray.from_arrays(indices, pa.array([], typ.value_type))
        return pa.Array.from_buffers(typ, n, [self._validity, self._data], null_count=n)
