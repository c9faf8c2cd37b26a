"""Reader for PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped, every generation since 2021.

Field-by-field mapping, generations handled and the time rounding rule: ``docs/formats/kineto.md``.

Speed and memory: the file is decompressed in blocks; Kineto writes one event per ``{...}`` block at a fixed
indentation, so complete events can be cut out of each block and turned into numpy columns before the next
block is read: by DuckDB's JSON reader (C++, all cores) for big blocks when duckdb is installed, else by a
typed ``msgspec`` decoder that keeps only the fields tracelens needs. Both give the same columns (tested).
Peak memory is the column data plus one block. A file written in another layout (minified, re-indented)
is decoded in one piece by msgspec.
"""

from __future__ import annotations

import gzip
import math
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import InputError
from ..progress import progress_bar
from ..trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    EVENT_SCHEMA,
    GPU_ANNOTATION,
    GPU_SYNC,
    KERNEL,
    MEMCPY,
    MEMSET,
    OTHER,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    STEP,
    Trace,
    TraceMetadata,
    build_devices,
    build_events,
)

BLOCK_BYTES = 16 * 2**20
# Kineto's writer puts each event at two spaces of indentation: "  {", ..., "  },". A newline cannot
# occur inside a JSON string, so this byte sequence only ever sits between two top-level events.
_EVENT_SEPARATOR = b"\n  },\n  {"
_SEPARATOR_KEEP = len(b"\n  }")  # bytes of the separator that end the previous event
_SEPARATOR_SKIP = len(b"\n  },")  # where the next event's text begins

# Kineto category (lower-cased) -> kind. Categories not listed become OTHER; None means "not an event".
_KIND_OF_CATEGORY: dict[str, str | None] = {
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY,
    "memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "memset": MEMSET,
    "cuda_sync": GPU_SYNC,
    "cuda_runtime": RUNTIME,
    "runtime": RUNTIME,
    "cuda_driver": DRIVER,
    "cpu_op": CPU_OP,
    "operator": CPU_OP,
    "user_annotation": ANNOTATION,
    "gpu_user_annotation": GPU_ANNOTATION,
    "python_function": PYTHON,
    "overhead": OVERHEAD,
    "trace": None,  # the profiler's own "PyTorch Profiler (0)" span
}
_KINDS = [KERNEL, MEMCPY, MEMSET, GPU_SYNC, RUNTIME, DRIVER, CPU_OP, ANNOTATION, GPU_ANNOTATION, PYTHON,
          STEP, OVERHEAD, OTHER]
_KIND_CODE = {kind: code for code, kind in enumerate(_KINDS)}
_SKIP = -1
_DEVICE_SIDE = np.array([k in (KERNEL, MEMCPY, MEMSET, GPU_SYNC) for k in _KINDS])
_LAUNCH_SIDE = np.array([k in (RUNTIME, DRIVER) for k in _KINDS])

_STEP_NAME = re.compile(r"^(?:ProfilerStep|tracelens/step)#(-?\d+)$")
# Only API names (camelCase, no underscore before the suffix): kernels such as "cudnn_..._v1" keep theirs.
_API_VERSION_SUFFIX = re.compile(r"^((?:cuda|cu|hip)[A-Za-z0-9]*)_v\d+$")
_DRIVER_NAME = re.compile(r"^cu[A-Z]")
_MEMCPY_NAME = re.compile(r"^Memcpy (\w+) \((\w+) -> (\w+)\)")
_SYNC_KINDS = {
    "stream sync": "stream_sync",
    "event sync": "event_sync",
    "stream wait event": "stream_wait_event",
    "context sync": "context_sync",
}
_MEMORY_KINDS = {"pageable": "pageable", "pinned": "pinned", "device": "device", "managed": "managed",
                 "array": "array", "host": "host"}


# --- typed decoding: only the fields read below; unknown fields are skipped by msgspec ---------------

# Numbers are declared float with a NaN default: msgspec reads JSON integers into floats (ids, pids and
# byte counts stay exact below 2**53), every value is then a float, and numpy takes the column in one pass.
class _Args(msgspec.Struct, frozen=True, gc=False):
    correlation: float = math.nan
    external_id: float = msgspec.field(default=math.nan, name="External id")
    external_id_old: float = msgspec.field(default=math.nan, name="external id")  # 2021 format
    device: float = math.nan
    stream: float | str = math.nan  # ROCm runtime rows write "0x0"
    bytes: float = math.nan
    grid: list[int] | None = None
    block: list[int] | None = None
    registers: float = msgspec.field(default=math.nan, name="registers per thread")
    shared_memory: float = msgspec.field(default=math.nan, name="shared memory")
    occupancy_pct: float = msgspec.field(default=math.nan, name="est. achieved occupancy %")
    sync_kind: str | None = msgspec.field(default=None, name="cuda_sync_kind")


_NO_ARGS = _Args()


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str | None = None
    name: str | None = None
    pid: float | str = math.nan  # "Spans", "Traces" on the profiler's own rows
    tid: float | str = math.nan  # "stream 7", "2248185664" in 2021 traces
    ts: float = math.nan
    dur: float = 0.0
    args: _Args = _NO_ARGS


class _AnyArgs(msgspec.Struct, frozen=True, gc=False):
    """Same fields, any JSON type: used only when a block does not fit the typed decoder."""

    correlation: Any = None
    external_id: Any = msgspec.field(default=None, name="External id")
    external_id_old: Any = msgspec.field(default=None, name="external id")
    device: Any = None
    stream: Any = None
    bytes: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    occupancy_pct: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    sync_kind: Any = msgspec.field(default=None, name="cuda_sync_kind")


class _AnyEvent(msgspec.Struct, gc=False):
    ph: Any = ""
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Any = None


class _Document(msgspec.Struct, gc=False):
    traceEvents: list[_Event] | None = None  # noqa: N815 (the file's own keys)
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: Any = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    displayTimeUnit: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


class _LooseDocument(msgspec.Struct, gc=False):
    traceEvents: Any = None  # noqa: N815
    deviceProperties: Any = None  # noqa: N815
    distributedInfo: Any = None  # noqa: N815
    baseTimeNanoseconds: Any = None  # noqa: N815
    schemaVersion: Any = None  # noqa: N815
    displayTimeUnit: Any = None  # noqa: N815
    traceName: Any = None  # noqa: N815


_EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
_ANY_EVENTS_DECODER = msgspec.json.Decoder(list[_AnyEvent])
_DOCUMENT_DECODER = msgspec.json.Decoder(_Document | list[_Event])
_LOOSE_DOCUMENT_DECODER = msgspec.json.Decoder(_LooseDocument | list[_AnyEvent])


DUCKDB_FROM_BLOCK = 2  # DuckDB's fixed cost (import, connection, query) pays off from a trace's 2nd block on


def read(path: Path, **options: Any) -> Trace:
    """Read a Kineto trace (``.json`` or ``.json.gz``; a ``{"traceEvents": [...]}`` object or a bare list).

    ``engine``: "auto" (DuckDB's JSON reader from the second 16 MiB block on when duckdb is installed,
    msgspec otherwise), "msgspec" or "duckdb". Every engine gives the same table.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path=path)
    if path.stat().st_size == 0:
        raise InputError("file is empty", path=path)
    columns = _Columns(path)
    document: dict[str, Any] = {}
    engine = options.get("engine", "auto")
    if engine not in ("auto", "msgspec", "duckdb"):
        raise ValueError(f"unknown Kineto engine {engine!r} (auto, msgspec or duckdb)")
    fast: _DuckDBBlocks | None = None
    blocks_seen = 0
    with progress_bar(f"reading {path.name}", total=path.stat().st_size) as progress:
        for kind, payload in _split(path, progress):
            if kind == "events":
                blocks_seen += 1
                if fast is None and (engine == "duckdb" or (engine == "auto" and blocks_seen >= DUCKDB_FROM_BLOCK)):
                    fast = _DuckDBBlocks.open()
                block = fast.columns(payload) if fast is not None and engine != "msgspec" else None
                if block is None:  # no DuckDB, or a block it cannot type: the msgspec path reads anything
                    block = _block_columns(_decode_events(payload, path))
                    columns.counts["msgspec_blocks"] += 1
                columns.add(block)
            elif kind == "header":
                document.update(_decode_header(payload, path))
            else:  # the rest: last events and any keys after them, or a whole document
                events, meta = _decode_rest(payload, path)
                columns.add(_block_columns(events))
                del events
                document.update(meta)
    return columns.finish(document)


# --- splitting the byte stream into decodable pieces -------------------------------------------------

def _blocks(path: Path, progress: Any) -> Iterator[bytes]:
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw
        done = 0
        while True:
            try:
                block = stream.read(BLOCK_BYTES)
            except (EOFError, OSError, zlib.error) as err:
                raise InputError(f"truncated or corrupt gzip data ({err})", path=path) from None
            if not block:
                return
            position = raw.tell()
            progress.advance(position - done)
            done = position
            yield block


def _events_array_start(buf: bytes, path: Path) -> tuple[str, int] | None:
    """Where the event list begins: ("list", offset after '['), ("object", offset of the traceEvents key),
    ("whole", 0) when the document must be decoded in one piece, None when more bytes are needed."""
    head = buf.lstrip()
    if not head:
        return None
    if head[:1] == b"[":
        return "list", len(buf) - len(head) + 1
    if head[:1] != b"{":
        raise InputError("not JSON (does not start with '{' or '[')", path=path)
    key = buf.find(b'"traceEvents"')
    if key < 0:
        return None
    i = key + len(b'"traceEvents"')
    rest = buf[i:i + 64].lstrip()
    if not rest or (rest[:1] == b":" and not rest[1:].strip()):
        return None  # the block ends inside `"traceEvents": [`: wait for the next
    if rest[:1] != b":" or rest[1:].lstrip()[:1] != b"[":
        return "whole", 0
    return "object", key


_HEADER_LIMIT = 256 * 2**20  # no "traceEvents": [ in this many bytes: decode the document in one piece


def _split(path: Path, progress: Any) -> Iterator[tuple[str, bytes]]:
    """Yield ("header", bytes), ("events", bytes of a JSON list) ..., then ("rest", bytes).

    Each block is copied once, into the JSON list handed out; only the unfinished last event of a block
    (``tail``) is carried over to the next.
    """
    tail = b""
    mode: str | None = None  # None until the start of the event list is found
    held: list[bytes] = []  # "whole" mode: the document in blocks, joined once at the end
    for block in _blocks(path, progress):
        if mode == "whole":
            held.append(block)
            continue
        if mode is None:
            tail += block
            found = _events_array_start(tail, path)
            if found is None:
                if len(tail) > _HEADER_LIMIT:
                    mode, held, tail = "whole", [tail], b""
                continue
            mode, offset = found
            if mode == "whole":
                held, tail = [tail], b""
                continue
            if mode == "object":
                yield "header", tail[:offset] + b'"traceEvents": []}'
                block, tail = tail[tail.index(b"[", offset) + 1:], b""
            else:
                block, tail = tail[offset:], b""
        cut = block.rfind(_EVENT_SEPARATOR)
        if cut < 0 or (cut == 0 and not tail):
            tail += block
            continue
        yield "events", b"".join((b"[", tail, memoryview(block)[:cut + _SEPARATOR_KEEP], b"]"))
        tail = block[cut + _SEPARATOR_SKIP:]
    if mode == "object":
        yield "rest", b'{"traceEvents": [' + tail
    elif mode == "list":
        yield "rest", b"[" + tail
    else:
        held.append(tail)
        yield "rest", b"".join(held)


def _json_error(err: Exception, path: Path) -> InputError:
    text = str(err)
    if "truncated" in text.lower():
        return InputError("truncated JSON (the file ends in the middle of the trace)", path=path)
    return InputError(f"invalid JSON ({text})", path=path)


def _decode_events(payload: bytes, path: Path) -> list[Any]:
    try:
        return _EVENTS_DECODER.decode(payload)
    except msgspec.ValidationError:
        pass  # a field of an unexpected type: decode this piece loosely, coerce below
    except msgspec.DecodeError as err:
        raise _json_error(err, path) from None
    try:
        return _ANY_EVENTS_DECODER.decode(payload)
    except msgspec.ValidationError as err:
        raise InputError(f"not a PyTorch profiler trace: traceEvents holds non-objects ({err})",
                         path=path) from None
    except msgspec.DecodeError as err:
        raise _json_error(err, path) from None


def _decode_header(payload: bytes, path: Path) -> dict[str, Any]:
    try:
        doc = _LOOSE_DOCUMENT_DECODER.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise _json_error(err, path) from None
    return _document_fields(doc) if isinstance(doc, _LooseDocument) else {}


def _decode_rest(payload: bytes, path: Path) -> tuple[list[Any], dict[str, Any]]:
    if not payload.strip():
        raise InputError("file holds only whitespace", path=path)
    try:
        doc: Any = _DOCUMENT_DECODER.decode(payload)
    except msgspec.ValidationError:
        doc = None  # some field of an unexpected type: decode loosely below
    except msgspec.DecodeError as err:
        raise _json_error(err, path) from None
    if doc is None:
        try:
            doc = _LOOSE_DOCUMENT_DECODER.decode(payload)
            if isinstance(doc, _LooseDocument) and isinstance(doc.traceEvents, list):
                doc.traceEvents = msgspec.convert(doc.traceEvents, list[_AnyEvent])
        except msgspec.ValidationError as err:
            raise InputError(f"not a PyTorch profiler trace: events are not JSON objects ({err})",
                             path=path) from None
    if isinstance(doc, list):
        return doc, {}
    if doc.traceEvents is None:
        raise InputError("not a PyTorch profiler trace: JSON object without a 'traceEvents' list", path=path)
    if not isinstance(doc.traceEvents, list):
        raise InputError("not a PyTorch profiler trace: 'traceEvents' is not a list", path=path)
    return doc.traceEvents, _document_fields(doc)


def _document_fields(doc: Any) -> dict[str, Any]:
    names = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "schemaVersion", "displayTimeUnit",
             "traceName")
    return {n: getattr(doc, n) for n in names if getattr(doc, n) is not None}


# --- columns ----------------------------------------------------------------------------------------

_PHASE = attrgetter("ph")
_CATEGORY = attrgetter("cat")
_NAME = attrgetter("name")
_ARGS = attrgetter("args")
_GRID = attrgetter("grid")
_BLOCK = attrgetter("block")
_SYNC_KIND = attrgetter("sync_kind")


def _column(items: list[Any], field: str) -> np.ndarray:
    """``field`` of every item as float64 (NaN where missing): one C-level pass when all values are floats."""
    try:
        return np.fromiter(map(attrgetter(field), items), dtype=np.float64, count=len(items))
    except (TypeError, ValueError):
        return _numbers(list(map(attrgetter(field), items)))


def _numbers(values: list[Any]) -> np.ndarray:
    """float64 array of numbers (None -> NaN); numeric strings, "0x1f" and "stream 7" are parsed too."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    series = pd.Series(values, dtype=object)
    numbers = np.array(pd.to_numeric(series, errors="coerce"), dtype=np.float64)
    # What to_numeric cannot read ("stream 7", "0x0") is parsed once per distinct string.
    odd = np.flatnonzero(np.isnan(numbers) & series.map(type).eq(str).to_numpy())
    if odd.size:
        texts = series.iloc[odd]
        parsed = {t: _to_number(t) for t in texts.unique()}
        numbers[odd] = texts.map(parsed).to_numpy(np.float64)
    return numbers


def _to_number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(int(text, 0)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            match = re.search(r"(-?\d+)\s*$", text)  # "stream 7"
            return float(match.group(1)) if match else math.nan
    return math.nan


def _triples(values: list[Any]) -> np.ndarray:
    """(n, 3) float64 array from [x, y, z] lists (anything else -> NaN row)."""
    rows = [v if isinstance(v, list) and len(v) == 3 else (None, None, None) for v in values]
    try:
        return np.array(rows, dtype=np.float64).reshape(len(rows), 3)
    except (TypeError, ValueError):
        return np.array([[_to_number(x) for x in r] for r in rows], dtype=np.float64).reshape(len(rows), 3)


def _factorize(values: list[Any]) -> tuple[np.ndarray, list[str]]:
    """Codes (int32, -1 for missing) and the distinct strings of one block."""
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    return codes.astype(np.int32), [u if isinstance(u, str) else str(u) for u in uniques]


class _Interner:
    """Strings -> stable small ints across blocks (names, sync kinds)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []

    def merge(self, codes: np.ndarray, uniques: list[str]) -> np.ndarray:
        """A block's local codes as global codes."""
        mapping = np.array([self._code(u) for u in uniques] + [-1], dtype=np.int32)
        return mapping[codes]  # -1 (missing) indexes the trailing -1

    def _code(self, value: str) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code


_DEVICE_FIELDS = ("device", "stream", "bytes", "registers", "shared_memory", "occupancy_pct")
_PHASE_COUNTER = {"s": "flow", "f": "flow", "t": "flow", "i": "instant", "I": "instant", "M": "metadata", "X": None}


class _DuckDBBlocks:
    """The fast path for Kineto-layout blocks: DuckDB's JSON reader (C++, multithreaded) types the fields
    into Arrow columns, which are turned into the same block columns as :func:`_block_columns` makes.

    Used when ``duckdb`` is importable. A block it cannot read as declared (a field of another JSON type,
    2021's lowercase "external id" which DuckDB would not tell from "External id") returns None and goes
    through msgspec instead, so both paths give the same table.
    """

    _COLUMNS = {
        "ph": "VARCHAR", "cat": "VARCHAR", "name": "VARCHAR", "pid": "VARCHAR", "tid": "VARCHAR",
        "ts": "DOUBLE", "dur": "DOUBLE",
        "args": 'STRUCT("correlation" DOUBLE, "External id" DOUBLE, "device" DOUBLE, "stream" VARCHAR, '
                '"bytes" DOUBLE, "grid" DOUBLE[], "block" DOUBLE[], "registers per thread" DOUBLE, '
                '"shared memory" DOUBLE, "est. achieved occupancy %" DOUBLE, "cuda_sync_kind" VARCHAR)',
    }
    def __init__(self, connection: Any, error: type[Exception]) -> None:
        self.connection = connection
        self.error = error

    @classmethod
    def open(cls) -> _DuckDBBlocks | None:
        try:
            import duckdb
        except ImportError:
            return None
        return cls(duckdb.connect(), duckdb.Error)

    def columns(self, payload: bytes) -> dict[str, Any] | None:
        import io

        if b'"external id"' in payload:
            return None
        # The block is a JSON list as cut out by _split: DuckDB reads it as an array in place (no copy of
        # the block, no rewriting of the separators).
        try:
            table = self.connection.read_json(io.BytesIO(payload), format="array", columns=self._COLUMNS,
                                              maximum_object_size=len(payload) + 1)
            table = table.project(", ".join(_DUCKDB_SELECT)).to_arrow_table()
        except (self.error, ValueError, TypeError, RuntimeError):
            return None
        return _arrow_block_columns(table)


_DUCKDB_SELECT = (
    "ph", "cat", "name", "pid", "tid", "ts", "dur", 'args."correlation" AS correlation',
    'args."External id" AS external_id', 'args."device" AS device', 'args."stream" AS stream',
    'args."bytes" AS bytes', 'args."grid" AS grid', 'args."block" AS block',
    'args."registers per thread" AS registers', 'args."shared memory" AS shared_memory',
    'args."est. achieved occupancy %" AS occupancy_pct', 'args."cuda_sync_kind" AS sync_kind',
)


def _floats(array: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric Arrow column as float64 with NaN for nulls."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return np.asarray(array.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _encoded(array: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, list[str]]:
    """A string Arrow column as (int32 codes with -1 for null, distinct values)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    encoded = array.dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, [str(v) for v in encoded.dictionary.to_pylist()]


def _parsed_numbers(array: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Numbers written as strings ("1102", "stream 7", "0x0"), parsed once per distinct value."""
    codes, values = _encoded(array)
    lookup = np.array([_to_number(v) for v in values] + [math.nan], dtype=np.float64)
    return lookup[codes]


def _arrow_triples(array: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    out = np.full((len(array), 3), np.nan)
    lengths = array.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(lengths == 3)
    if rows.size:
        flat = _floats(array.take(pa.array(rows)).flatten())
        out[rows] = flat.reshape(-1, 3)
    return out


def _arrow_block_columns(table: pa.Table) -> dict[str, Any]:
    """The columns :func:`_block_columns` makes, from DuckDB's Arrow table of one block.

    The table is never filtered as a whole: every column is turned into numpy once and indexed by the
    kept rows; only the GPU rows' list and string columns are taken on the Arrow side.
    """
    import pyarrow.compute as pc

    counts = {"events": table.num_rows, "flow": 0, "instant": 0, "metadata": 0, "other_phase": 0,
              "lenient_blocks": 0}
    phase = table.column("ph")
    for item in pc.value_counts(phase).to_pylist():
        key = _PHASE_COUNTER.get(item["values"], "other_phase")
        if key:
            counts[key] += int(item["counts"])
    block: dict[str, Any] = {"counts": counts}
    complete = pc.fill_null(pc.equal(phase, "X"), False).to_numpy(zero_copy_only=False)
    if not complete.any():
        return block
    category, categories = _encoded(table.column("cat"))
    kind_of_category = [_KIND_OF_CATEGORY.get(c.lower(), OTHER) for c in categories]
    kind = np.array([_SKIP if k is None else _KIND_CODE[k] for k in kind_of_category] + [_KIND_CODE[OTHER]],
                    dtype=np.int8)[category]
    ts = _floats(table.column("ts"))
    rows = np.flatnonzero(complete & (kind != _SKIP) & ~np.isnan(ts))
    if rows.size == 0:
        return block
    kind, ts = kind[rows], ts[rows]
    gpu_rows = np.flatnonzero(_DEVICE_SIDE[kind] | (kind == _KIND_CODE[GPU_ANNOTATION]))
    gpu = table.select(["stream", "grid", "block", "sync_kind"]).take(pa.array(rows[gpu_rows], pa.int64()))
    at_gpu = rows[gpu_rows]
    block.update({
        "kind": kind,
        "name": _used_codes(*_encoded(table.column("name")), rows),
        "ts": ts,
        "dur": np.nan_to_num(_floats(table.column("dur"))[rows], nan=0.0),
        "pid": _parsed_numbers(table.column("pid"))[rows],
        "tid": _parsed_numbers(table.column("tid"))[rows],
        "correlation": _floats(table.column("correlation"))[rows],
        "external_id": _floats(table.column("external_id"))[rows],
        "gpu_rows": gpu_rows,
        "device": _floats(table.column("device"))[at_gpu],
        "stream": _parsed_numbers(gpu.column("stream")),
        "bytes": _floats(table.column("bytes"))[at_gpu],
        "registers": _floats(table.column("registers"))[at_gpu],
        "shared_memory": _floats(table.column("shared_memory"))[at_gpu],
        "occupancy_pct": _floats(table.column("occupancy_pct"))[at_gpu],
        "grid": _arrow_triples(gpu.column("grid")),
        "block": _arrow_triples(gpu.column("block")),
        "sync_kind": _encoded(gpu.column("sync_kind")),
    })
    return block


def _used_codes(codes: np.ndarray, values: list[str], rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``codes[rows]`` re-coded to the values those rows use (the strings of the kept rows only)."""
    codes = codes[rows]
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(values)))
    if used.size == len(values):
        return codes, values
    recode = np.full(len(values) + 1, -1, dtype=np.int32)
    recode[used] = np.arange(used.size, dtype=np.int32)
    return recode[codes], [values[i] for i in used]


def _block_columns(events: list[Any]) -> dict[str, Any]:
    """One block's events as numpy columns with block-local string codes."""
    counts = {"events": len(events), "flow": 0, "instant": 0, "metadata": 0, "other_phase": 0,
              "lenient_blocks": 0}
    for phase, count in Counter(map(_PHASE, events)).items():
        key = _PHASE_COUNTER.get(phase, "other_phase")
        if key:
            counts[key] += int(count)
    block: dict[str, Any] = {"counts": counts}
    complete = [e for e in events if e.ph == "X"]
    del events
    if not complete:
        return block
    category, categories = _factorize(list(map(_CATEGORY, complete)))
    kind_of_category = [_KIND_OF_CATEGORY.get(c.lower(), OTHER) for c in categories]
    kind = np.array([_SKIP if k is None else _KIND_CODE[k] for k in kind_of_category] + [_KIND_CODE[OTHER]],
                    dtype=np.int8)[category]
    ts = _column(complete, "ts")
    keep = (kind != _SKIP) & ~np.isnan(ts)
    if not keep.all():
        rows = np.flatnonzero(keep)
        complete = [complete[i] for i in rows]
        kind, ts = kind[rows], ts[rows]
        if not complete:
            return block
    lenient = not isinstance(complete[0], _Event)
    counts["lenient_blocks"] = int(lenient)
    args = list(map(_ARGS, complete))
    if lenient:
        args = [_loose_args(a) for a in args]
    external = _column(args, "external_id")
    missing = np.isnan(external)
    if missing.any():
        external[missing] = _column(args, "external_id_old")[missing]
    block.update({
        "kind": kind,
        "name": _factorize(list(map(_NAME, complete))),
        "ts": ts,
        "dur": _column(complete, "dur"),
        "pid": _column(complete, "pid"),
        "tid": _column(complete, "tid"),
        "correlation": _column(args, "correlation"),
        "external_id": external,
    })
    # Device-side fields only for GPU rows: most rows are host rows without them.
    gpu_rows = np.flatnonzero(_DEVICE_SIDE[kind] | (kind == _KIND_CODE[GPU_ANNOTATION]))
    gpu_args = [args[i] for i in gpu_rows]
    block["gpu_rows"] = gpu_rows
    for field in _DEVICE_FIELDS:
        block[field] = _column(gpu_args, field)
    block["grid"] = _triples(list(map(_GRID, gpu_args)))
    block["block"] = _triples(list(map(_BLOCK, gpu_args)))
    block["sync_kind"] = _factorize(list(map(_SYNC_KIND, gpu_args)))
    return block


class _Columns:
    """Accumulates blocks' numpy columns; :meth:`finish` builds the Trace."""

    _DEVICE_FIELDS = _DEVICE_FIELDS

    def __init__(self, path: Path) -> None:
        self.path = path
        self.names = _Interner()
        self.sync_kinds = _Interner()
        self.parts: list[dict[str, np.ndarray]] = []
        self.counts = {"events": 0, "flow": 0, "instant": 0, "metadata": 0, "other_phase": 0,
                       "lenient_blocks": 0, "msgspec_blocks": 0}

    def add(self, block: dict[str, Any]) -> None:
        for key, value in block.pop("counts").items():
            self.counts[key] += value
        if "kind" not in block:
            return
        block["name"] = self.names.merge(*block["name"])
        block["sync_kind"] = self.sync_kinds.merge(*block["sync_kind"])
        self.parts.append(block)

    def _no_timed_events(self) -> InputError:
        return InputError(f"trace has no timed events: none of its {self.counts['events']:,} events is a complete "
                          "event (\"ph\": \"X\") with a timestamp", path=self.path)

    def finish(self, document: dict[str, Any]) -> Trace:
        if not self.parts:
            if self.counts["events"] == 0:
                raise InputError("trace has no events", path=self.path)
            raise self._no_timed_events()
        offsets = np.cumsum([0] + [len(p["kind"]) for p in self.parts[:-1]])
        gpu_rows = np.concatenate([p.pop("gpu_rows") + off for p, off in zip(self.parts, offsets, strict=True)])
        # Column by column, dropping the blocks' arrays as they are joined: one copy alive at a time.
        cols = {k: np.concatenate([p.pop(k) for p in self.parts]) for k in list(self.parts[0])}
        self.parts = []
        kind = cols["kind"]
        keep = (kind != _SKIP) & ~np.isnan(cols["ts"])
        # "cudaLaunchKernel_v7000" and "cudaLaunchKernel" are one name: merge codes after dropping suffixes.
        stripped = [_API_VERSION_SUFFIX.sub(r"\1", n) for n in self.names.values]
        names = sorted(set(stripped))
        index = {n: i for i, n in enumerate(names)}
        name_code = np.array([index[n] for n in stripped] + [-1], dtype=np.int32)[cols["name"]]

        # Names decide steps (host annotations), driver calls and memcpy kinds; evaluated once per name.
        step_of_name = np.array([_step_number(n) for n in names] + [math.nan], dtype=np.float64)
        is_driver_name = np.array([bool(_DRIVER_NAME.match(n)) for n in names] + [False])
        name_step = step_of_name[name_code]
        host_marker = (kind == _KIND_CODE[ANNOTATION]) | (kind == _KIND_CODE[CPU_OP])
        kind = np.where(host_marker & ~np.isnan(name_step), _KIND_CODE[STEP], kind).astype(np.int8)
        kind = np.where((kind == _KIND_CODE[RUNTIME]) & is_driver_name[name_code], _KIND_CODE[DRIVER], kind)
        kind = kind.astype(np.int8)

        # Time: exact integer arithmetic (see docs/formats/kineto.md, "Time").
        ts = cols["ts"]
        whole_us = np.floor(ts)
        start = np.zeros(len(ts), dtype=np.int64)
        finite = np.isfinite(ts)
        start[finite] = (whole_us[finite].astype(np.int64) * 1000
                         + np.rint((ts[finite] - whole_us[finite]) * 1000).astype(np.int64))
        dur = np.nan_to_num(cols["dur"], nan=0.0)
        duration = np.rint(dur * 1000).astype(np.int64)
        base = _int_or_none(document.get("baseTimeNanoseconds")) or 0

        order_keep = np.flatnonzero(keep)
        if order_keep.size == 0:
            raise self._no_timed_events()
        order_keep = order_keep[np.argsort(start[order_keep], kind="stable")]
        m = order_keep.size
        kind = kind[order_keep]
        start = start[order_keep]
        duration = duration[order_keep]
        name_code = name_code[order_keep]
        kineto_pid = cols.pop("pid")[order_keep]
        kineto_tid = cols.pop("tid")[order_keep]
        correlation_all = cols.pop("correlation")[order_keep]
        external_id = cols.pop("external_id")[order_keep]
        # Device-side fields stay compact (GPU rows only); `at` is where each lands in the sorted table.
        position = np.full(len(keep), -1, dtype=np.int64)
        position[order_keep] = np.arange(m)
        at = position[gpu_rows]
        kept_gpu = at >= 0
        at = at[kept_gpu]
        gpu = {k: cols.pop(k)[kept_gpu] for k in (*self._DEVICE_FIELDS, "grid", "block", "sync_kind")}
        del cols, position, keep

        device_side = _DEVICE_SIDE[kind]
        gpu_annotation = kind == _KIND_CODE[GPU_ANNOTATION]
        launch_side = _LAUNCH_SIDE[kind]
        gpu_kind = kind[at]
        gpu_is_kernel = gpu_kind == _KIND_CODE[KERNEL]
        origin = int(start.min())
        rel_start = start - origin
        del start

        def sparse(values: np.ndarray, field: str, rows: np.ndarray | None = None) -> pa.Array:
            """A column that is null except on GPU rows (``rows``: a mask over them)."""
            out = np.full(m, np.nan)
            if rows is None:
                out[at] = values
            else:
                out[at[rows]] = values[rows]
            return _to_arrow(out, field)

        # Kineto's GPU "pid" is the device index and its "tid" the stream: fallbacks when args lack them.
        device_values = np.where(np.isnan(gpu["device"]), kineto_pid[at], gpu["device"])
        stream_values = np.where(np.isnan(gpu["stream"]), kineto_tid[at], gpu["stream"])
        correlation = np.where(device_side | launch_side, correlation_all, np.nan)
        del correlation_all
        pid = np.where(device_side | gpu_annotation, np.nan, kineto_pid)
        pid = np.where(device_side, _launch_pid(correlation, launch_side, kineto_pid, device_side), pid)
        tid = np.where(device_side | gpu_annotation, np.nan, kineto_tid)
        del kineto_pid, kineto_tid

        is_memcpy = kind == _KIND_CODE[MEMCPY]
        copy_kind, src_kind, dst_kind = _memcpy_kinds(names, name_code, is_memcpy)
        # cuda_sync rows: cuda_sync_kind, or the event name when it is missing (both say the same thing).
        sync_labels = [_SYNC_KINDS.get(v.strip().lower(), v.strip().lower().replace(" ", "_"))
                       for v in self.sync_kinds.values]
        name_labels = [_SYNC_KINDS.get(n.lower(), n.lower().replace(" ", "_")) for n in names]
        sync_code = np.full(m, -1, dtype=np.int64)
        sync_code[at] = gpu["sync_kind"]
        sync_code = np.where(sync_code >= 0, sync_code, len(sync_labels) + name_code)
        sync_text = _dictionary(sync_code, sync_labels + name_labels, kind == _KIND_CODE[GPU_SYNC])
        del sync_code
        step = np.where(kind == _KIND_CODE[STEP], step_of_name[name_code], np.nan)
        domain = _dictionary(name_code, ["tracelens" if n.startswith("tracelens/") else None for n in names],
                             (kind == _KIND_CODE[ANNOTATION]) | (kind == _KIND_CODE[STEP]))
        shared_total = gpu["shared_memory"]
        device_full = np.full(m, np.nan)
        device_full[at] = device_values

        events = build_events(
            {
                "kind": pa.DictionaryArray.from_arrays(pa.array(kind.astype(np.int32)), pa.array(_KINDS)),
                "name": pa.DictionaryArray.from_arrays(
                    pa.array(name_code, mask=name_code < 0), pa.array(names, pa.string())),
                "start_ns": rel_start,
                "end_ns": rel_start + duration,
                "device": _to_arrow(device_full, "device"),
                "stream": sparse(stream_values, "stream"),
                "pid": _to_arrow(pid, "pid"),
                "tid": _to_arrow(tid, "tid"),
                "correlation_id": _to_arrow(correlation, "correlation_id"),
                "external_id": _to_arrow(external_id, "external_id"),
                "bytes": sparse(gpu["bytes"], "bytes", _DEVICE_SIDE[gpu_kind]),
                "copy_kind": copy_kind,
                "src_kind": src_kind,
                "dst_kind": dst_kind,
                "sync_kind": sync_text,
                "domain": domain,
                "grid_x": sparse(gpu["grid"][:, 0], "grid_x", gpu_is_kernel),
                "grid_y": sparse(gpu["grid"][:, 1], "grid_y", gpu_is_kernel),
                "grid_z": sparse(gpu["grid"][:, 2], "grid_z", gpu_is_kernel),
                "block_x": sparse(gpu["block"][:, 0], "block_x", gpu_is_kernel),
                "block_y": sparse(gpu["block"][:, 1], "block_y", gpu_is_kernel),
                "block_z": sparse(gpu["block"][:, 2], "block_z", gpu_is_kernel),
                "registers_per_thread": sparse(gpu["registers"], "registers_per_thread", gpu_is_kernel),
                # Kineto writes only static + dynamic shared memory; the sum is what occupancy needs.
                "static_shared_bytes": sparse(shared_total, "static_shared_bytes", gpu_is_kernel),
                "dynamic_shared_bytes": sparse(np.where(np.isnan(shared_total), np.nan, 0.0),
                                               "dynamic_shared_bytes", gpu_is_kernel),
                "step": _to_arrow(step, "step"),
                "reported_occupancy": sparse(gpu["occupancy_pct"] / 100.0, "reported_occupancy", gpu_is_kernel),
            },
            sort=False,
        )
        device = device_full
        devices = _device_rows(document.get("deviceProperties"), device, names, name_code, kind)
        distributed = document.get("distributedInfo") if isinstance(document.get("distributedInfo"), dict) else {}
        extra = {
            "counts": {**self.counts, "kept": int(len(kind))},
            "display_time_unit": document.get("displayTimeUnit"),
            "base_time_ns": _int_or_none(document.get("baseTimeNanoseconds")),
            "trace_name": document.get("traceName"),
            "device_properties": len(document.get("deviceProperties") or []),
        }
        warnings = []
        if self.counts["lenient_blocks"]:
            warnings.append("some events had fields of unexpected types; unreadable values were left empty")
        metadata = TraceMetadata(
            source_format="kineto",
            source_path=str(self.path),
            producer="PyTorch Profiler (Kineto)",
            format_version=str(document.get("schemaVersion", "")),
            framework="pytorch",
            time_origin_ns=origin + base,
            clock="unix",
            rank=_int_or_none(distributed.get("rank")),
            world_size=_int_or_none(distributed.get("world_size")),
            warnings=warnings,
            extra=extra,
        )
        return Trace(events=events, devices=devices, metadata=metadata)


_NO_ANY_ARGS = _AnyArgs()


def _loose_args(args: Any) -> _AnyArgs:
    if not isinstance(args, dict):
        return _NO_ANY_ARGS
    try:
        return msgspec.convert(args, _AnyArgs)
    except msgspec.ValidationError:
        return _NO_ANY_ARGS


def _step_number(name: str) -> float:
    match = _STEP_NAME.match(name)
    return float(match.group(1)) if match else math.nan


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _dictionary(codes: np.ndarray, values: list[str | None], where: np.ndarray) -> pa.Array:
    """Dictionary-encoded strings: ``values[codes]`` where ``where`` holds and the value exists, else null."""
    distinct = sorted({v for v in values if v is not None})
    index = {v: i for i, v in enumerate(distinct)}
    lookup = np.array([index[v] if v is not None else -1 for v in values] + [-1], dtype=np.int32)
    indices = np.where(where, lookup[codes], -1).astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(indices, mask=indices < 0), pa.array(distinct, pa.string()))


def _to_arrow(values: np.ndarray, column: str) -> pa.Array:
    """A float64 column (NaN = missing) as the Arrow type of ``column`` in the event schema."""
    typ = EVENT_SCHEMA.field(column).type
    missing = np.isnan(values)
    if not missing.any():  # no validity bitmap to build, nothing to zero
        return pa.array(values.astype(typ.to_pandas_dtype()), type=typ)
    if pa.types.is_floating(typ):
        return pa.array(values.astype(typ.to_pandas_dtype()), type=typ, mask=missing)
    return pa.array(np.where(missing, 0, values).astype(typ.to_pandas_dtype()), type=typ, mask=missing)


def _memcpy_kinds(names: list[str], name_code: np.ndarray, is_memcpy: np.ndarray) -> tuple[pa.Array, ...]:
    parsed = [_MEMCPY_NAME.match(n) for n in names]
    copy = [m.group(1) if m else None for m in parsed]
    src = [_MEMORY_KINDS.get(m.group(2).lower(), m.group(2).lower()) if m else None for m in parsed]
    dst = [_MEMORY_KINDS.get(m.group(3).lower(), m.group(3).lower()) if m else None for m in parsed]
    return tuple(_dictionary(name_code, v, is_memcpy) for v in (copy, src, dst))


def _launch_pid(correlation: np.ndarray, launch_side: np.ndarray, host_pid: np.ndarray,
                device_side: np.ndarray) -> np.ndarray:
    """For each row, the pid of the runtime/driver call with the same correlation id (NaN if none)."""
    launches = launch_side & ~np.isnan(correlation) & ~np.isnan(host_pid)
    corr = correlation[launches]
    pids = host_pid[launches]
    order = np.argsort(corr, kind="stable")
    corr, pids = corr[order], pids[order]
    out = np.full(len(correlation), np.nan)
    if corr.size == 0:
        return out
    rows = np.flatnonzero(device_side & ~np.isnan(correlation))
    pos = np.searchsorted(corr, correlation[rows])
    pos_clipped = np.minimum(pos, corr.size - 1)
    hit = corr[pos_clipped] == correlation[rows]
    out[rows[hit]] = pids[pos_clipped[hit]]
    return out


def _vendor(device_names: list[str], api_names: list[str]) -> str:
    text = " ".join(device_names).lower()
    if any(w in text for w in ("amd", "radeon", "instinct", "gfx")) or any(n.startswith("hip") for n in api_names):
        return "amd"
    return "nvidia"


def _device_rows(properties: Any, device: np.ndarray, names: list[str], name_code: np.ndarray,
                 kind: np.ndarray) -> pa.Table:
    """Devices seen in the event table, with deviceProperties where the trace has them."""
    seen = sorted({int(d) for d in np.unique(device[~np.isnan(device)])})
    props = {int(p["id"]): p for p in (properties or []) if isinstance(p, dict) and isinstance(p.get("id"), int)}
    api_codes = np.unique(name_code[_LAUNCH_SIDE[kind] & (name_code >= 0)])
    api_names = [names[c] for c in api_codes]
    vendor = _vendor([str(p.get("name", "")) for p in props.values()], api_names)
    rows = []
    for dev in seen:
        p = props.get(dev, {})
        rows.append({
            "id": dev,
            "name": p.get("name"),
            "vendor": vendor,
            "sm_count": p.get("numSms"),
            "compute_major": p.get("computeMajor"),
            "compute_minor": p.get("computeMinor"),
            "warp_size": p.get("warpSize"),
            "max_threads_per_sm": p.get("maxThreadsPerMultiprocessor"),
            "max_threads_per_block": p.get("maxThreadsPerBlock"),
            "max_blocks_per_sm": p.get("maxBlocksPerMultiprocessor"),
            "regs_per_sm": p.get("regsPerMultiprocessor"),
            "regs_per_block": p.get("regsPerBlock"),
            "shared_mem_per_sm": p.get("sharedMemPerMultiprocessor", p.get("maxSharedMemoryPerMultiProcessor")),
            "shared_mem_per_block": p.get("sharedMemPerBlock"),
            "shared_mem_per_block_optin": p.get("sharedMemPerBlockOptin"),
            "total_memory_bytes": p.get("totalGlobalMem"),
            "clock_rate_khz": p.get("clockRate"),
        })
    clean = [{k: (v if not isinstance(v, (dict, list)) else None) for k, v in r.items()} for r in rows]
    try:
        return build_devices(clean)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # odd property types: keep ids and names only
        return build_devices([{"id": r["id"], "name": str(r["name"]) if r["name"] else None,
                               "vendor": vendor} for r in rows])
