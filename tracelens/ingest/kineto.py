"""Reader for PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped, every generation since 2021.

Field-by-field mapping, generations handled and the time rounding rule: ``docs/formats/kineto.md``.

Speed and memory: the file is decompressed in blocks; Kineto writes one event per ``{...}`` block at a fixed
indentation, so complete events can be cut out of each block and turned into numpy columns before the next
block is read: by the native scanner (``_kineto_scan.c``, GIL released, several blocks at once in worker
threads) when the extension was built, else by a typed ``msgspec`` decoder that keeps only the fields
tracelens needs; a block the scanner declines goes to msgspec. Both engines give the same columns (tested).
Peak memory is the column data plus the few blocks in flight.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from functools import partial
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
    MAX_TIME_NS,
    MEMCPY,
    MEMSET,
    NOT_NESTED_KINDS,
    OTHER,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    STEP,
    Trace,
    TraceMetadata,
    build_devices,
    build_events,
    depth_column,
)
from .compression import GZIP_ERRORS, gzip_reader

try:  # built from _kineto_scan.c at install time when a C compiler is there
    from . import _kineto_scan
except ImportError:  # pragma: no cover - then msgspec reads every block
    _kineto_scan = None

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
_NESTED_KIND = np.array([k not in NOT_NESTED_KINDS for k in _KINDS])

_STEP_NAME = re.compile(r"^(?:ProfilerStep|tracelens/step)#(-?\d+)$")
# Only API names (camelCase, no underscore before the suffix): kernels such as "cudnn_..._v1" keep theirs.
_API_VERSION_SUFFIX = re.compile(r"^((?:cuda|cu|hip)[A-Za-z0-9]*)_v\d+$")
_DRIVER_NAME = re.compile(r"^cu[A-Z]")
_TRAILING_INTEGER = re.compile(r"(-?\d+)\s*$")
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


# Blocks are scanned by this many threads at once, and a trace smaller than workers x BLOCK_BYTES is cut in
# smaller blocks so that every worker has several.
MAX_WORKERS = 4
MIN_BLOCK_BYTES = 2 * 2**20
NATIVE_BLOCKS_PER_WORKER = 4


def read(path: Path, **options: Any) -> Trace:
    """Read a Kineto trace (``.json`` or ``.json.gz``; a ``{"traceEvents": [...]}`` object or a bare list).

    ``engine``: "auto" (the native scanner when it was built, else msgspec), "native" or "msgspec". Both
    give the same table.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path=path)
    size = path.stat().st_size
    if size == 0:
        raise InputError("file is empty", path=path)
    json_bytes = _json_size(path, size)
    engine = _engine(options.get("engine", "auto"))
    workers = min(MAX_WORKERS, _threads()) if engine == "native" else 1
    # Blocks small enough that every worker gets several: the first scan starts after a short inflate, and
    # the last block's scan (the part nothing overlaps) is short. Measured at 15 MiB on 2 cores, ~2 MiB
    # blocks were the fastest of 1, 2, 4 and 8 blocks.
    per_block = json_bytes // (NATIVE_BLOCKS_PER_WORKER * workers) + 1
    block_bytes = min(BLOCK_BYTES, max(MIN_BLOCK_BYTES, per_block)) if workers > 1 else BLOCK_BYTES
    columns = _Columns(path)
    document: dict[str, Any] = {}
    with progress_bar(f"reading {path.name}", total=size) as progress, \
            _BlockDecoder(path, engine, workers) as decoder:
        for kind, payload, shift in _split(path, progress, block_bytes):
            if kind == "events":
                for block in decoder.submit(payload, shift):
                    columns.add(block)
            elif kind == "header":
                document.update(_decode_header(payload, path, shift))
            else:  # the rest: last events and any keys after them, or a whole document
                for block in decoder.drain():
                    columns.add(block)
                native = _native_document(payload) if engine == "native" else None
                if native is None:
                    events, meta = _decode_rest(payload, path, shift)
                    block = _block_columns(events)
                    del events
                    if engine == "native":
                        block["counts"]["msgspec_blocks"] = 1
                else:
                    block, meta = native
                columns.add(block)
                document.update(meta)
    return columns.finish(document)


def _engine(requested: str) -> str:
    """The engine that reads the blocks: "native" or "msgspec"."""
    if requested not in ("auto", "native", "msgspec"):
        raise ValueError(f"unknown Kineto engine {requested!r} (auto, native or msgspec)")
    if requested == "native" and _kineto_scan is None:
        raise ValueError("the native Kineto scanner was not built (no C compiler at install time): "
                         "use engine='auto' or 'msgspec'")
    if requested == "auto":
        return "native" if _kineto_scan is not None else "msgspec"
    return requested


def _json_size(path: Path, size: int) -> int:
    """The trace's uncompressed size: the file's, or for gzip the trailer's ISIZE (the size modulo 2**32,
    so at least the compressed size). Only used to choose a block size."""
    with open(path, "rb") as raw:
        if raw.read(2) != b"\x1f\x8b" or size < 20:
            return size
        raw.seek(-4, os.SEEK_END)
        return max(size, int.from_bytes(raw.read(4), "little"))


class _BlockDecoder:
    """Turns the event blocks cut by :func:`_split` into block columns, in file order.

    With the native scanner, blocks are scanned by worker threads (it releases the GIL while it parses),
    with at most ``2 x workers`` blocks in flight, so memory stays a few blocks above the columns; with a
    budget of one thread they are scanned in this one. A block the scanner declines goes to msgspec, which
    reads anything. With the msgspec engine each block is decoded by msgspec as it comes.
    """

    def __init__(self, path: Path, engine: str, workers: int) -> None:
        self.path = path
        self.engine = engine
        self.workers = workers
        # Up to twice as many blocks queued as workers run: this thread keeps inflating the next blocks while
        # the workers scan instead of waiting on the oldest (measured at 15 MiB on 2 cores: ~5 ms of ~65).
        self.in_flight = 2 * workers
        self.pending: deque[Future[dict[str, Any]]] = deque()
        self.pool: Executor | None = None
        if engine != "msgspec":
            self.pool = _executor(workers)

    def __enter__(self) -> _BlockDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        for future in self.pending:
            future.cancel()
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def submit(self, payload: _EventsText, shift: int) -> Iterator[dict[str, Any]]:
        """Queue one block (``shift``: see :func:`_split`); yield the blocks that are done, oldest first."""
        if self.pool is None:
            yield self._msgspec(payload, shift)
            return
        self.pending.append(self.pool.submit(self._decode, payload, shift))
        while len(self.pending) > self.in_flight:
            yield self.pending.popleft().result()

    def drain(self) -> Iterator[dict[str, Any]]:
        while self.pending:
            yield self.pending.popleft().result()

    def _msgspec(self, payload: _EventsText, shift: int) -> dict[str, Any]:
        block = _block_columns(_decode_events(payload.joined(), self.path, shift))
        block["counts"]["msgspec_blocks"] = 1
        return block

    def _decode(self, payload: _EventsText, shift: int) -> dict[str, Any]:
        block = _native_block_columns(payload.pieces())
        # A block the scanner declines (invalid JSON, a field of another type) goes to msgspec, which
        # reads anything or says where the JSON is broken.
        return self._msgspec(payload, shift) if block is None else block


def _threads() -> int:
    """Threads this reader may use: the cores, or fewer when Arrow was told so (``pyarrow.set_cpu_count``,
    as the multi-rank workers do: one core each, already busy)."""
    return max(1, min(os.cpu_count() or 1, pa.cpu_count()))


class _Inline(Executor):
    """An executor that runs each task at once in the calling thread (when only one thread may be used)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:  # re-raised by future.result(), as a pool would
            future.set_exception(err)
        return future


def _executor(threads: int) -> Executor:
    return ThreadPoolExecutor(threads) if threads > 1 else _Inline()


# --- splitting the byte stream into decodable pieces -------------------------------------------------

def _blocks(path: Path, progress: Any, block_bytes: int) -> Iterator[bytes]:
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        stream = gzip_reader(raw) if gzipped else raw
        done = 0
        while True:
            try:
                block = stream.read(block_bytes)
            except GZIP_ERRORS as err:
                raise InputError(f"truncated or corrupt gzip data ({err})", path=path) from None
            if not block:
                return
            position = raw.tell()
            progress.advance(position - done)
            done = position
            yield block


_NOT_SPACE = re.compile(rb"[^ \t\r\n]")


def _events_array_start(buf: bytes, path: Path) -> tuple[str, int] | None:
    """Where the event list begins: ("list", offset after '['), ("object", offset of the traceEvents key),
    ("whole", 0) when the document must be decoded in one piece, None when more bytes are needed."""
    first = _NOT_SPACE.search(buf)  # not buf.lstrip(): that copies the whole block
    if first is None:
        return None
    head = buf[first.start():first.start() + 1]
    if head == b"[":
        return "list", first.start() + 1
    if head != b"{":
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


class _EventsText:
    """The complete events of one block, as the JSON list ``[`` + ``tail`` + ``block[start:stop]`` + ``]``,
    where ``tail`` is the unfinished last event of the previous block. Left unjoined: the native scanner
    reads the block in place, and only msgspec needs the list as one bytes object."""

    __slots__ = ("tail", "block", "start", "stop")

    def __init__(self, tail: bytes, block: bytes, start: int, stop: int) -> None:
        self.tail, self.block, self.start, self.stop = tail, block, start, stop

    def joined(self) -> bytes:
        return b"".join((b"[", self.tail, memoryview(self.block)[self.start:self.stop], b"]"))

    def pieces(self) -> tuple[bytes | memoryview, ...]:
        """Bare comma-separated event sequences, in order: the event the tail begins (the only bytes
        copied), then the rest of the block in place."""
        body = memoryview(self.block)[self.start:self.stop]
        if not self.tail:
            return (body,)
        end = self.block.find(_EVENT_SEPARATOR, self.start, self.stop)
        if end < 0:
            return (self.tail + body,)
        return (self.tail + body[:end - self.start + _SEPARATOR_KEEP], body[end - self.start + _SEPARATOR_SKIP:])


def _split(path: Path, progress: Any, block_bytes: int) -> Iterator[tuple[str, Any, int]]:
    """Yield ("header", bytes, shift), ("events", _EventsText, shift) ..., then ("rest", bytes, shift).

    Blocks in Kineto's layout are cut at its event separator and not copied here; only the unfinished last
    event of a block (``tail``) is carried over to the next. Blocks in any other layout (minified,
    re-indented, a bare list) are cut at the last top-level comma between two events, found by the native
    scanner's structural pass; there the tail and the block are joined first. ``shift`` maps a byte offset
    in the JSON list of a piece to one in the file's JSON text (offset + shift), so that a decoding error can
    say where in the file it is.
    """
    tail = b""
    mode: str | None = None  # None until the start of the event list is found
    # Other layouts are cut with the scanner (when built); an "event" longer than this is not one: the
    # rest is then kept whole and decoded in one piece (invalid JSON, reported there).
    cut_any_layout = _kineto_scan is not None
    kineto_layout = True  # until a block shows no Kineto separator
    tail_limit = 4 * block_bytes
    held: list[bytes] = []  # "whole" mode: the document in blocks, joined once at the end
    consumed = 0  # bytes of JSON text read before the current block
    for block in _blocks(path, progress, block_bytes):
        origin = consumed  # where block[0] lies in the JSON text
        consumed += len(block)
        start = 0  # where this block's events begin in it
        if mode == "whole":
            held.append(block)
            continue
        if mode is None:
            tail += block  # everything so far, from the first byte of the file
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
                yield "header", tail[:offset] + b'"traceEvents": []}', 0
                start = tail.index(b"[", offset) + 1
            else:
                start = offset
            block, origin, tail = tail, 0, b""  # the whole file so far; its events begin at `start`
        cut = block.rfind(_EVENT_SEPARATOR, start) if kineto_layout else -1
        if cut < 0 and cut_any_layout:
            data = tail + memoryview(block)[start:]
            comma = _kineto_scan.last_event_boundary(data)
            if comma > 0:
                kineto_layout = False
                yield "events", _EventsText(b"", data, 0, comma), origin + start - len(tail) - 1
                tail = data[comma + 1:]
                continue
            cut_any_layout = len(data) <= tail_limit
        if cut < 0 or (cut == start and not tail):
            tail += block[start:]
            continue
        # payload[1] is the tail's first byte, which lies len(tail) bytes before block[start]
        yield "events", _EventsText(tail, block, start, cut + _SEPARATOR_KEEP), origin + start - len(tail) - 1
        tail = block[cut + _SEPARATOR_SKIP:]
    tail_origin = consumed - len(tail)
    if mode == "object":
        prefix = b'{"traceEvents": ['
        yield "rest", prefix + tail, tail_origin - len(prefix)
    elif mode == "list":
        yield "rest", b"[" + tail, tail_origin - 1
    else:
        held.append(tail)
        yield "rest", b"".join(held), 0


_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")


# msgspec raises UnicodeDecodeError, not DecodeError, for a string that is not valid UTF-8.
_DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError)


def _json_error(err: Exception, path: Path, shift: int = 0) -> InputError:
    if isinstance(err, UnicodeDecodeError):
        return InputError(f"invalid JSON (a string is not valid UTF-8: {err.reason})", path=path)
    text = str(err)
    if "truncated" in text.lower():
        return InputError("truncated JSON (the file ends in the middle of the trace)", path=path)
    # msgspec counts bytes from the start of the piece it was given: say where that is in the file's JSON
    text = _ERROR_BYTE.sub(lambda m: f"(at byte {max(0, int(m.group(1)) + shift):,} of the JSON text)", text)
    return InputError(f"invalid JSON ({text})", path=path)


def _decode_events(payload: bytes, path: Path, shift: int = 0) -> list[Any]:
    try:
        return _EVENTS_DECODER.decode(payload)
    except msgspec.ValidationError:
        pass  # a field of an unexpected type: decode this piece loosely, coerce below
    except _DECODE_ERRORS as err:
        raise _json_error(err, path, shift) from None
    try:
        return _ANY_EVENTS_DECODER.decode(payload)
    except msgspec.ValidationError as err:
        raise InputError(f"not a PyTorch profiler trace: traceEvents holds non-objects ({err})",
                         path=path) from None
    except _DECODE_ERRORS as err:
        raise _json_error(err, path, shift) from None


def _decode_header(payload: bytes, path: Path, shift: int = 0) -> dict[str, Any]:
    try:
        doc = _LOOSE_DOCUMENT_DECODER.decode(payload)
    except (*_DECODE_ERRORS, msgspec.ValidationError) as err:
        raise _json_error(err, path, shift) from None
    return _document_fields(doc) if isinstance(doc, _LooseDocument) else {}


def _decode_rest(payload: bytes, path: Path, shift: int = 0) -> tuple[list[Any], dict[str, Any]]:
    if not payload.strip():
        raise InputError("file holds only whitespace", path=path)
    try:
        doc: Any = _DOCUMENT_DECODER.decode(payload)
    except msgspec.ValidationError:
        doc = None  # some field of an unexpected type: decode loosely below
    except _DECODE_ERRORS as err:
        raise _json_error(err, path, shift) from None
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
    """float64 array of numbers (None -> NaN); numeric strings, "0x1f" and "stream 7" are parsed too;
    anything else (lists, objects, booleans) is NaN."""
    try:
        numbers = np.array(values, dtype=np.float64)
        if numbers.ndim == 1:  # not when every value was a list of the same length
            return numbers
    except (TypeError, ValueError):
        pass
    values = [v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None for v in values]
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
            match = _TRAILING_INTEGER.search(text)  # "stream 7"
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
    """Codes (int32, -1 for missing) and the distinct strings of one block (numbers as their text; lists
    and objects, only in loosely decoded blocks, as missing)."""
    values = [None if isinstance(v, (list, dict)) else v for v in values]
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


def _kinds(category_codes: np.ndarray, categories: list[str]) -> np.ndarray:
    """Each row's kind code from its category's code (-1, no category: other; _SKIP: not a timeline event)."""
    kind_of_category = [_KIND_OF_CATEGORY.get(c.lower(), OTHER) for c in categories]
    return np.array([_SKIP if k is None else _KIND_CODE[k] for k in kind_of_category] + [_KIND_CODE[OTHER]],
                    dtype=np.int8)[category_codes]


def _used_codes(codes: np.ndarray, values: list[str], rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``codes[rows]`` re-coded to the values those rows use (the strings of the kept rows only)."""
    codes = codes[rows]
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(values)))
    if used.size == len(values):
        return codes, values
    recode = np.full(len(values) + 1, -1, dtype=np.int32)
    recode[used] = np.arange(used.size, dtype=np.int32)
    return recode[codes], [values[i] for i in used]


# The scanner's float columns, in the order of its C enum (checked against its N_FLOATS at import).
_NATIVE_FIELDS = ("ts", "dur", "pid", "tid", "correlation", "external_id", "external_id_old", "device", "stream",
                  "bytes", "registers", "shared_memory", "occupancy_pct", "grid_x", "grid_y", "grid_z", "block_x",
                  "block_y", "block_z")
_AT = {field: i for i, field in enumerate(_NATIVE_FIELDS)}
if _kineto_scan is not None and _kineto_scan.N_FLOATS != len(_NATIVE_FIELDS):  # pragma: no cover
    _kineto_scan = None  # a stale build of the scanner: do not trust its layout


def _native_block_columns(pieces: tuple[bytes | memoryview, ...]) -> dict[str, Any] | None:
    """The columns :func:`_block_columns` makes, from the native scanner (None: it declined the block)."""
    scanned = _kineto_scan.scan_events(pieces, _to_number, msgspec.json.decode)
    return None if scanned is None else _scanned_columns(scanned)


def _native_document(payload: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A whole document (or its last piece) in any layout, read by the native scanner: the block columns and
    the document's other fields; None when the scanner declines it (msgspec then reads it)."""
    scanned = _kineto_scan.scan_document(payload, _to_number, msgspec.json.decode)
    if scanned is None:
        return None
    found, start, end = scanned
    fields: dict[str, Any] = {}
    if start >= 0:  # an object: its other members, decoded without the (already read) event list
        try:
            doc = _LOOSE_DOCUMENT_DECODER.decode(b"".join((memoryview(payload)[:start], b"[]",
                                                            memoryview(payload)[end:])))
        except (*_DECODE_ERRORS, msgspec.ValidationError):
            return None
        fields = _document_fields(doc)
    return _scanned_columns(found), fields


def _scanned_columns(scanned: dict[str, Any]) -> dict[str, Any]:
    counts = {"events": sum(scanned[k] for k in ("complete", "flow", "instant", "metadata", "other_phase")),
              "flow": scanned["flow"], "instant": scanned["instant"], "metadata": scanned["metadata"],
              "other_phase": scanned["other_phase"], "lenient_blocks": 0}
    block: dict[str, Any] = {"counts": counts}
    n = scanned["rows"]
    if n == 0:
        return block
    floats = np.frombuffer(scanned["floats"], dtype=np.float64).reshape(n, len(_NATIVE_FIELDS))
    codes = np.frombuffer(scanned["codes"], dtype=np.int32).reshape(n, 3)  # category, name, sync kind
    kind = _kinds(codes[:, 0], scanned["categories"])
    ts = floats[:, _AT["ts"]]
    rows = np.flatnonzero((kind != _SKIP) & _placeable(ts))
    if rows.size == 0:
        return block
    kind = kind[rows]
    gpu_rows = np.flatnonzero(_DEVICE_SIDE[kind] | (kind == _KIND_CODE[GPU_ANNOTATION]))
    at_gpu = rows[gpu_rows]
    # Gathered column by column: each is a compact array of its own, and the scanner's rows are let go.
    block.update({field: floats[rows, _AT[field]] for field in ("ts", "dur", "pid", "tid", "correlation")})
    external = floats[rows, _AT["external_id"]]
    missing = np.isnan(external)
    if missing.any():
        external[missing] = floats[rows[missing], _AT["external_id_old"]]
    block.update({field: floats[at_gpu, _AT[field]] for field in _DEVICE_FIELDS})
    block.update({
        "kind": kind,
        "name": _used_codes(codes[:, 1], scanned["names"], rows),
        "external_id": external,
        "gpu_rows": gpu_rows,
        "grid": floats[at_gpu, _AT["grid_x"]:_AT["grid_x"] + 3],
        "block": floats[at_gpu, _AT["block_x"]:_AT["block_x"] + 3],
        "sync_kind": _used_codes(codes[:, 2], scanned["sync_kinds"], at_gpu),
    })
    return block


def _block_columns(events: list[Any]) -> dict[str, Any]:
    """One block's events as numpy columns with block-local string codes."""
    counts = {"events": len(events), "flow": 0, "instant": 0, "metadata": 0, "other_phase": 0,
              "lenient_blocks": 0}
    # A phase that is not a string (loosely decoded blocks only) counts as another phase.
    for phase, count in Counter(p if isinstance(p, str) else None for p in map(_PHASE, events)).items():
        key = _PHASE_COUNTER.get(phase, "other_phase")
        if key:
            counts[key] += int(count)
    block: dict[str, Any] = {"counts": counts}
    complete = [e for e in events if e.ph == "X"]
    del events
    if not complete:
        return block
    category, categories = _factorize(list(map(_CATEGORY, complete)))
    kind = _kinds(category, categories)
    ts = _column(complete, "ts")
    keep = (kind != _SKIP) & _placeable(ts)
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
        # kind, ts and name decide the row order; the other row columns are then joined and put in that
        # order in one step each (below).
        kind, ts, raw_name = (np.concatenate([p.pop(k) for p in self.parts]) for k in ("kind", "ts", "name"))
        keep = (kind != _SKIP) & _placeable(ts)
        # "cudaLaunchKernel_v7000" and "cudaLaunchKernel" are one name: merge codes after dropping suffixes.
        stripped = [_API_VERSION_SUFFIX.sub(r"\1", n) for n in self.names.values]
        names = sorted(set(stripped))
        index = {n: i for i, n in enumerate(names)}
        name_code = np.array([index[n] for n in stripped] + [-1], dtype=np.int32)[raw_name]
        del raw_name

        # Names decide steps (host annotations), driver calls and memcpy kinds; evaluated once per name.
        step_of_name = np.array([_step_number(n) for n in names] + [math.nan], dtype=np.float64)
        is_driver_name = np.array([bool(_DRIVER_NAME.match(n)) for n in names] + [False])
        host_marker = (kind == _KIND_CODE[ANNOTATION]) | (kind == _KIND_CODE[CPU_OP])
        kind = np.where(host_marker & ~np.isnan(step_of_name[name_code]), _KIND_CODE[STEP], kind).astype(np.int8)
        kind = np.where((kind == _KIND_CODE[RUNTIME]) & is_driver_name[name_code], _KIND_CODE[DRIVER], kind)
        kind = kind.astype(np.int8)
        del host_marker

        # Time: exact integer arithmetic (see docs/formats/kineto.md, "Time").
        start = _microseconds_to_ns(ts)
        del ts
        base = _int_or_none(document.get("baseTimeNanoseconds")) or 0

        if keep.all():  # the blocks drop what is not kept; only a lenient block may leave a row to drop
            order_keep = np.argsort(start, kind="stable")
        else:
            order_keep = np.flatnonzero(keep)
            if order_keep.size == 0:
                raise self._no_timed_events()
            order_keep = order_keep[np.argsort(start[order_keep], kind="stable")]
        m = order_keep.size
        kind = kind[order_keep]
        start = start[order_keep]
        name_code = name_code[order_keep]
        # Joined and ordered two columns at a time: numpy copies and gathers without holding the GIL.
        parts, self.parts = self.parts, []

        with _executor(min(2, _threads())) as pool:
            dur, kineto_pid, kineto_tid, correlation_all, external_id = pool.map(
                partial(_joined_in_order, parts, order_keep), ("dur", "pid", "tid", "correlation", "external_id"))
        duration = np.rint(np.where(_placeable(dur), dur, 0.0) * 1000).astype(np.int64)
        del dur
        # Device-side fields stay compact (GPU rows only); `at` is where each lands in the sorted table.
        position = np.full(len(keep), -1, dtype=np.int64)
        position[order_keep] = np.arange(m)
        at = position[gpu_rows]
        kept_gpu = at >= 0
        at = at[kept_gpu]
        gpu = {k: np.concatenate([p.pop(k) for p in parts])[kept_gpu]
               for k in (*self._DEVICE_FIELDS, "grid", "block", "sync_kind")}
        del parts, position, keep, order_keep

        device_side = _DEVICE_SIDE[kind]
        gpu_annotation = kind == _KIND_CODE[GPU_ANNOTATION]
        launch_side = _LAUNCH_SIDE[kind]
        gpu_kind = kind[at]
        gpu_is_kernel = gpu_kind == _KIND_CODE[KERNEL]
        origin = int(start.min())
        rel_start = start - origin
        del start

        def sparse(values: np.ndarray, field: str, rows: np.ndarray | None = None) -> Future[pa.Array]:
            """A column that is null except on GPU rows (``rows``: a mask over them), built in the background."""
            if rows is None:
                return background.submit(_sparse_to_arrow, values, at, m, field)
            return background.submit(_sparse_to_arrow, values[rows], at[rows], m, field)

        # Kineto's GPU "pid" is the device index and its "tid" the stream: fallbacks when args lack them.
        device_values = np.where(np.isnan(gpu["device"]), kineto_pid[at], gpu["device"])
        stream_values = np.where(np.isnan(gpu["stream"]), kineto_tid[at], gpu["stream"])
        correlation = np.where(device_side | launch_side, correlation_all, np.nan)
        del correlation_all
        pid = np.where(device_side | gpu_annotation, np.nan, kineto_pid)
        pid = np.where(device_side, _launch_pid(correlation, launch_side, kineto_pid, device_side), pid)
        tid = np.where(device_side | gpu_annotation, np.nan, kineto_tid)
        del kineto_pid, kineto_tid
        # The host rows' nesting depth and the GPU-only columns are built on two more threads while this one
        # builds the rest (numpy's sorts, casts and copies release the GIL).
        background = _executor(min(2, _threads()))
        depth = background.submit(depth_column, _NESTED_KIND[kind] & ~np.isnan(tid), pid, tid, rel_start,
                                  rel_start + np.maximum(duration, 0))

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

        columns: dict[str, Any] = {
            "kind": pa.DictionaryArray.from_arrays(_indices(kind), pa.array(_KINDS)),
            "name": pa.DictionaryArray.from_arrays(_indices(name_code), pa.array(names, pa.string())),
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
            "depth": depth,
            "reported_occupancy": sparse(gpu["occupancy_pct"] / 100.0, "reported_occupancy", gpu_is_kernel),
        }
        background.shutdown(wait=True)
        events = build_events({k: v.result() if isinstance(v, Future) else v for k, v in columns.items()},
                              sort=False)
        device = device_full
        devices = _device_rows(document.get("deviceProperties"), device, names, name_code, kind)
        distributed = document.get("distributedInfo") if isinstance(document.get("distributedInfo"), dict) else {}
        extra = {
            "counts": {**self.counts, "kept": int(len(kind))},
            "display_time_unit": document.get("displayTimeUnit"),
            "base_time_ns": _int_or_none(document.get("baseTimeNanoseconds")),
            "trace_name": document.get("traceName"),
            "device_properties": len(properties) if isinstance(properties := document.get("deviceProperties"),
                                                                  list) else 0,
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
    return pa.DictionaryArray.from_arrays(_indices(indices), pa.array(distinct, pa.string()))


def _indices(codes: np.ndarray) -> pa.Array:
    """int32 dictionary indices, null where ``codes`` < 0, built from buffers."""
    missing = codes < 0
    nulls = int(np.count_nonzero(missing))
    data = codes.astype(np.int32)
    if nulls:
        data[missing] = 0
    return _from_buffers(pa.int32(), data, ~missing, nulls)


# trace.MAX_TIME_NS in Kineto's microseconds (up to the year 2116 for absolute Unix µs). A ts beyond counts
# as missing (the row is dropped), a dur beyond as 0.
_MAX_TIME_US = MAX_TIME_NS / 1000


def _placeable(microseconds: np.ndarray) -> np.ndarray:
    """Finite times within :data:`_MAX_TIME_US` (NaN and infinities are not)."""
    return np.abs(microseconds) < _MAX_TIME_US


def _unrepresentable(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """NaN, infinite, or outside ``dtype``'s range: such values become nulls, never wrapped-around numbers."""
    bound = 2.0 ** (8 * dtype.itemsize - 1) if dtype.kind in "iu" else np.finfo(dtype).max
    return ~(np.abs(values) < bound)


def _to_arrow(values: np.ndarray, column: str) -> pa.Array:
    """A float64 column (NaN = missing) as the Arrow type of ``column`` in the event schema.

    Built from buffers: the values cast once (zero under nulls) and a validity bitmap packed from the mask
    of missing or unrepresentable values, both handed to Arrow without a further copy.
    """
    typ = EVENT_SCHEMA.field(column).type
    dtype = np.dtype(typ.to_pandas_dtype())
    missing = _unrepresentable(values, dtype)
    nulls = int(np.count_nonzero(missing))
    if nulls == 0:  # no validity bitmap to build, nothing to zero
        return pa.array(values.astype(dtype, copy=False), type=typ)
    with np.errstate(invalid="ignore"):
        data = values.astype(dtype)
    if dtype.kind != "f":
        data[missing] = 0
    return _from_buffers(typ, data, ~missing, nulls)


def _sparse_to_arrow(values: np.ndarray, rows: np.ndarray, n: int, column: str) -> pa.Array:
    """A column of ``n`` rows, null except ``values`` (NaN = missing) at ``rows``, as ``column``'s Arrow type."""
    typ = EVENT_SCHEMA.field(column).type
    dtype = np.dtype(typ.to_pandas_dtype())
    present = ~_unrepresentable(values, dtype)
    rows = rows[present]
    data = np.zeros(n, dtype=dtype)
    data[rows] = values[present]
    valid = np.zeros(n, dtype=bool)
    valid[rows] = True
    return _from_buffers(typ, data, valid, n - rows.size)


def _from_buffers(typ: pa.DataType, data: np.ndarray, valid: np.ndarray, nulls: int) -> pa.Array:
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(typ, data.size, [bitmap, pa.py_buffer(data)], null_count=nulls)


def _joined_in_order(parts: list[dict[str, Any]], order: np.ndarray, key: str) -> np.ndarray:
    """Column ``key`` of all blocks, joined (each block's array dropped) and taken in ``order``."""
    return np.concatenate([p.pop(key) for p in parts])[order]


def _microseconds_to_ns(ts: np.ndarray) -> np.ndarray:
    """Float microseconds -> int64 ns: whole microseconds times 1000 plus the rounded fraction (0 where
    the time is not finite), so that large absolute timestamps keep their exact ns digits."""
    finite = np.isfinite(ts)
    if finite.all():
        whole_us = np.floor(ts)
        return whole_us.astype(np.int64) * 1000 + np.rint((ts - whole_us) * 1000).astype(np.int64)
    start = np.zeros(len(ts), dtype=np.int64)
    start[finite] = _microseconds_to_ns(ts[finite])
    return start


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
    seen = sorted({int(d) for d in np.unique(device[~_unrepresentable(device, np.dtype(np.int32))])})
    listed = properties if isinstance(properties, list) else []
    props = {int(p["id"]): p for p in listed if isinstance(p, dict) and isinstance(p.get("id"), int)}
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
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):  # odd property types: ids and names
        return build_devices([{"id": r["id"], "name": str(r["name"]) if r["name"] else None,
                               "vendor": vendor} for r in rows])
