"""The msgspec engine, the reference reader: typed structs holding only the fields tracelens reads; any block
that does not fit them is decoded loosely. Also decodes the document's other members and what the scanner
declines."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ...errors import InputError
from ...trace import GPU_ANNOTATION
from .blocks import (
    DEVICE_SIDE,
    KIND_CODE,
    PHASE_COUNTER,
    SKIP,
    kinds,
    op_columns,
    placeable,
    to_number,
    untimed,
)
from .fields import (
    ARG_FIELDS,
    DEVICE_FIELDS,
    EVENT_FIELDS,
    JSON,
    NUMBER,
    NUMBER_OR_TEXT,
    OP_FIELDS,
    OP_JSON,
    OP_NUMBERS,
    PHASE,
    TEXT,
    TRIPLE,
    Field,
    canonical_json,
)

# --- typed decoding: only the fields of fields.py; unknown fields are skipped by msgspec -------------

# The typed decoder's type for each kind of field. Numbers are float with a NaN default: msgspec reads JSON
# integers into floats (ids, pids and byte counts stay exact below 2**53), every value is then a float, and
# numpy takes the column in one pass. A JSON field is kept as its raw text (msgspec.Raw, empty when missing),
# the bytes the scanner locates too; canonical_json decodes it once per distinct text.
TYPED: dict[str, Any] = {
    PHASE: str,
    TEXT: str | None,
    NUMBER: float,
    NUMBER_OR_TEXT: float | str,
    TRIPLE: list[int] | None,
    JSON: msgspec.Raw,
}


def _members(fields: tuple[Field, ...], loose: bool) -> list[tuple[str, Any, Any]]:
    """``fields`` as struct members under their JSON keys: typed with the declared defaults, or (``loose``)
    any JSON type with None defaults (an empty phase)."""
    return [
        (
            f.name,
            Any if loose else TYPED[f.type],
            msgspec.field(
                default=("" if f.type == PHASE else None)
                if loose
                else (msgspec.Raw() if f.type == JSON else f.missing),
                name=None if f.key == f.name else f.key,
            ),
        )
        for f in fields
    ]


_Args = msgspec.defstruct("_Args", _members(ARG_FIELDS, loose=False), module=__name__, frozen=True, gc=False)
_NO_ARGS = _Args()
_Event = msgspec.defstruct(
    "_Event", [*_members(EVENT_FIELDS, loose=False), ("args", _Args, _NO_ARGS)], module=__name__, gc=False
)
# The same fields, any JSON type: used only when a block does not fit the typed decoder.
_AnyArgs = msgspec.defstruct(
    "_AnyArgs", _members(ARG_FIELDS, loose=True), module=__name__, frozen=True, gc=False
)
_AnyEvent = msgspec.defstruct(
    "_AnyEvent", [*_members(EVENT_FIELDS, loose=True), ("args", Any, None)], module=__name__, gc=False
)


# The profiler's own log, written at the document's top level (libkineto LoggerCollector): completeness reads
# what it says was dropped (tracelens/ingest/profiler_log.py).
LOG_LEVELS = ("INFO", "WARNING", "ERROR")
# What ``tracelens annotate`` writes of the trace it annotated (its format, framework and producer): a Chrome trace
# it wrote from an XSpace or an Nsight export is read back as that producer's, not as PyTorch's.
SOURCE_MEMBER = "tracelensSource"
# The document's other members, read as they come; the typed and the loose document differ only in the events.
_DOCUMENT_MEMBERS = [
    (name, Any, None)
    for name in (
        "deviceProperties",
        "distributedInfo",
        "baseTimeNanoseconds",
        "schemaVersion",
        "displayTimeUnit",
        "traceName",
        SOURCE_MEMBER,
        *LOG_LEVELS,
    )
]
_Document = msgspec.defstruct(
    "_Document", [("traceEvents", list[_Event] | None, None), *_DOCUMENT_MEMBERS], module=__name__, gc=False
)
_LooseDocument = msgspec.defstruct(
    "_LooseDocument", [("traceEvents", Any, None), *_DOCUMENT_MEMBERS], module=__name__, gc=False
)


EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
_ANY_EVENTS_DECODER = msgspec.json.Decoder(list[_AnyEvent])
_DOCUMENT_DECODER = msgspec.json.Decoder(_Document | list[_Event])
LOOSE_DOCUMENT_DECODER = msgspec.json.Decoder(_LooseDocument | list[_AnyEvent])


_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")


# msgspec raises UnicodeDecodeError, not DecodeError, for a string that is not valid UTF-8.
DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError)


def _json_error(err: Exception, path: Path, shift: int = 0) -> InputError:
    if isinstance(err, UnicodeDecodeError):
        return InputError(f"invalid JSON (a string is not valid UTF-8: {err.reason})", path=path)
    text = str(err)
    if "truncated" in text.lower():
        return InputError("truncated JSON (the file ends in the middle of the trace)", path=path)
    # msgspec counts bytes from the start of the piece it was given: say where that is in the file's JSON
    text = _ERROR_BYTE.sub(lambda m: f"(at byte {max(0, int(m.group(1)) + shift):,} of the JSON text)", text)
    return InputError(f"invalid JSON ({text})", path=path)


class LooseEvents(list):
    """Events decoded loosely because a field had an unexpected type; ``problem`` says which field, in which
    event (the first the typed decoder met), for the reader's warning. Also events (``problem`` None) decoded
    after ``surrogates`` unpaired surrogate escapes were replaced (:func:`paired_surrogates`), for its warning."""

    problem: str | None = None
    surrogates = 0


_VALIDATION_AT = re.compile(
    r"^(?P<what>.*?) - at `\$(?:\.traceEvents)?\[(?P<index>\d+)\]\.?(?P<field>[^`]*)`$"
)


def loose_events(events: list[Any], error: msgspec.ValidationError) -> LooseEvents:
    """``events`` (decoded loosely) tagged with the typed decoder's complaint: the field, the example event."""
    out = LooseEvents(events)
    match = _VALIDATION_AT.match(str(error))
    if not match:
        out.problem = str(error)
        return out
    index, field = int(match["index"]), match["field"] or "(the event itself)"
    event = events[index] if index < len(events) else None
    value: Any = event
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
    shown = msgspec.json.encode(value).decode(errors="replace")
    shown = shown if len(shown) <= 40 else shown[:39] + "…"
    name = getattr(event, "name", None)
    example = (
        f"in event {msgspec.json.encode(name).decode() if isinstance(name, str) else '(no name)'} "
        f"at ts {getattr(event, 'ts', None)}"
    )
    out.problem = f"field {field} = {shown} ({match['what'].lower()}) {example}"
    return out


# A \uXXXX escape of a UTF-16 surrogate that is not one half of a pair (a high one not followed by a low one, a
# low one alone): valid JSON syntax (RFC 8259 section 8.2 leaves it to the reader; Python's json keeps it as a lone
# surrogate), but no Unicode text, and msgspec refuses it (as "invalid utf-16 surrogate pair", or as "truncated"
# where it ends a string). Matched from the start of a run of backslashes, so that an escaped backslash before
# "u" (``\\ud800``, the text "\ud800") is no escape; a pair (group "low") is left as it is.
_SURROGATE_ESCAPE = re.compile(
    rb"(?<!\\)(?P<run>(?:\\\\)*)\\u(?:[dD][89abAB][0-9a-fA-F]{2}(?P<low>\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|[dD][c-fC-F][0-9a-fA-F]{2})"
)
# What replaces an unpaired one: the escape of U+FFFD REPLACEMENT CHARACTER, as long as the escape it replaces (so
# msgspec's byte positions in an error message stay those of the file).
_REPLACEMENT_ESCAPE = rb"\ufffd"


def paired_surrogates(payload: bytes | memoryview) -> tuple[bytes, int] | None:
    """``payload`` with each unpaired surrogate escape replaced by ``\\ufffd``, and how many there were; None
    where it holds none (a decode error there is another problem). Only called where msgspec refused a piece."""
    count = 0

    def replace(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match["low"] is not None:
            return match[0]
        count += 1
        return match["run"] + _REPLACEMENT_ESCAPE

    fixed = _SURROGATE_ESCAPE.sub(replace, bytes(payload))
    return (fixed, count) if count else None


def _decoded(decoder: msgspec.json.Decoder, payload: bytes) -> tuple[Any, bytes, int]:
    """``decoder``'s value of ``payload``, the payload decoded (unpaired surrogate escapes replaced, see
    :func:`paired_surrogates`) and how many were replaced. msgspec's error where the payload is broken otherwise
    (raised for the payload as given when it holds no unpaired surrogate)."""
    try:
        return decoder.decode(payload), payload, 0
    except msgspec.ValidationError:
        raise  # (a DecodeError too: a field's type, the caller's business)
    except msgspec.DecodeError:
        fixed = paired_surrogates(payload)
        if fixed is None:
            raise
    return decoder.decode(fixed[0]), fixed[0], fixed[1]


def _with_surrogates(events: list[Any], count: int) -> list[Any]:
    if not count:
        return events
    tagged = events if isinstance(events, LooseEvents) else LooseEvents(events)
    tagged.surrogates = count
    return tagged


def decode_events(payload: bytes, path: Path, shift: int = 0) -> list[Any]:
    surrogates = 0
    try:
        events, payload, surrogates = _decoded(EVENTS_DECODER, payload)
        return _with_surrogates(events, surrogates)
    except msgspec.ValidationError as err:
        typed_error = err  # a field of an unexpected type: decode this piece loosely, coerce below
    except DECODE_ERRORS as err:
        raise _json_error(err, path, shift) from None
    try:
        events, payload, surrogates = _decoded(_ANY_EVENTS_DECODER, payload)
        return _with_surrogates(loose_events(events, typed_error), surrogates)
    except msgspec.ValidationError as err:
        raise InputError(
            f"not a PyTorch profiler trace: traceEvents holds non-objects ({err})", path=path
        ) from None
    except DECODE_ERRORS as err:
        raise _json_error(err, path, shift) from None


def decode_header(payload: bytes, path: Path, shift: int = 0) -> dict[str, Any]:
    try:
        doc = _decoded(LOOSE_DOCUMENT_DECODER, payload)[0]
    except (*DECODE_ERRORS, msgspec.ValidationError) as err:
        raise _json_error(err, path, shift) from None
    return document_fields(doc) if isinstance(doc, _LooseDocument) else {}


def decode_rest(payload: bytes, path: Path, shift: int = 0) -> tuple[list[Any], dict[str, Any]]:
    if not payload.strip():
        raise InputError("file holds only whitespace", path=path)
    surrogates = 0
    try:
        doc: Any
        doc, payload, surrogates = _decoded(_DOCUMENT_DECODER, payload)
    except msgspec.ValidationError as err:
        doc, typed_error = None, err  # some field of an unexpected type: decode loosely below
    except DECODE_ERRORS as err:
        raise _json_error(err, path, shift) from None
    if doc is None:
        try:
            doc, payload, surrogates = _decoded(LOOSE_DOCUMENT_DECODER, payload)
            if isinstance(doc, _LooseDocument) and isinstance(doc.traceEvents, list):
                doc.traceEvents = loose_events(msgspec.convert(doc.traceEvents, list[_AnyEvent]), typed_error)
            elif isinstance(doc, list):
                doc = loose_events(doc, typed_error)
        except msgspec.ValidationError as err:
            raise InputError(
                f"not a PyTorch profiler trace: events are not JSON objects ({err})", path=path
            ) from None
    if isinstance(doc, list):
        return _with_surrogates(doc, surrogates), {}
    if doc.traceEvents is None:
        raise InputError("not a PyTorch profiler trace: JSON object without a 'traceEvents' list", path=path)
    if not isinstance(doc.traceEvents, list):
        raise InputError("not a PyTorch profiler trace: 'traceEvents' is not a list", path=path)
    return _with_surrogates(doc.traceEvents, surrogates), document_fields(doc)


def document_fields(doc: Any) -> dict[str, Any]:
    names = (
        "deviceProperties",
        "distributedInfo",
        "baseTimeNanoseconds",
        "schemaVersion",
        "displayTimeUnit",
        "traceName",
        SOURCE_MEMBER,
        *LOG_LEVELS,
    )
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
    import pandas as pd  # here: a native load never comes here and leaves pandas unimported

    values = [v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None for v in values]
    series = pd.Series(values, dtype=object)
    numbers = np.array(pd.to_numeric(series, errors="coerce"), dtype=np.float64)
    # What to_numeric cannot read ("stream 7", "0x0") is parsed once per distinct string.
    odd = np.flatnonzero(np.isnan(numbers) & series.map(type).eq(str).to_numpy())
    if odd.size:
        texts = series.iloc[odd]
        parsed = {t: to_number(t) for t in texts.unique()}
        numbers[odd] = texts.map(parsed).to_numpy(np.float64)
    return numbers


def _triples(values: list[Any]) -> np.ndarray:
    """(n, 3) float64 array from [x, y, z] lists (anything else -> NaN row)."""
    rows = [v if isinstance(v, list) and len(v) == 3 else (None, None, None) for v in values]
    try:
        return np.array(rows, dtype=np.float64).reshape(len(rows), 3)
    except (TypeError, ValueError):
        return np.array([[to_number(x) for x in r] for r in rows], dtype=np.float64).reshape(len(rows), 3)


def _factorize(values: list[Any]) -> tuple[np.ndarray, list[str]]:
    """Codes (int32, -1 for missing) and the distinct strings of one block (numbers as their text; lists
    and objects, only in loosely decoded blocks, as missing)."""
    import pandas as pd  # here: a native load never comes here and leaves pandas unimported

    values = [None if isinstance(v, (list, dict)) else v for v in values]
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    return codes.astype(np.int32), [u if isinstance(u, str) else str(u) for u in uniques]


def block_columns(events: list[Any]) -> dict[str, Any]:
    """One block's events as numpy columns with block-local string codes."""
    counts = {
        "events": len(events),
        "flow": 0,
        "instant": 0,
        "metadata": 0,
        "other_phase": 0,
        "lenient_blocks": 0,
        "untimed": 0,
    }
    # A phase that is not a string (loosely decoded blocks only) counts as another phase.
    for phase, count in Counter(p if isinstance(p, str) else None for p in map(_PHASE, events)).items():
        key = PHASE_COUNTER.get(phase, "other_phase")
        if key:
            counts[key] += int(count)
    if getattr(events, "surrogates", 0):  # (only then: a block's counts are the scanner's where it read it)
        counts["surrogates"] = events.surrogates
    block: dict[str, Any] = {"counts": counts}
    if getattr(events, "problem", None):
        block["problem"] = events.problem
    complete = [e for e in events if e.ph == "X"]
    del events
    if not complete:
        return block
    category, categories = _factorize(list(map(_CATEGORY, complete)))
    kind = kinds(category, categories)
    ts = _column(complete, "ts")
    keep = (kind != SKIP) & placeable(ts)
    if not keep.all():
        counts["untimed"] = untimed(kind, ts)
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
    block.update(
        {
            "kind": kind,
            "name": _factorize(list(map(_NAME, complete))),
            "ts": ts,
            "dur": _column(complete, "dur"),
            "pid": _column(complete, "pid"),
            "tid": _column(complete, "tid"),
            "correlation": _column(args, "correlation"),
            "external_id": external,
        }
    )
    # Device-side fields only for GPU rows: most rows are host rows without them.
    gpu_rows = np.flatnonzero(DEVICE_SIDE[kind] | (kind == KIND_CODE[GPU_ANNOTATION]))
    gpu_args = [args[i] for i in gpu_rows]
    block["gpu_rows"] = gpu_rows
    for field in DEVICE_FIELDS:
        block[field] = _column(gpu_args, field)
    block["grid"] = _triples(list(map(_GRID, gpu_args)))
    block["block"] = _triples(list(map(_BLOCK, gpu_args)))
    block["sync_kind"] = _factorize(list(map(_SYNC_KIND, gpu_args)))
    block.update(_op_columns(args))
    return block


def _op_columns(args: list[Any]) -> dict[str, Any]:
    """The op fields (fields.OP_FIELDS) of the rows holding at least one (blocks.op_columns)."""
    numbers = {name: _column(args, name) for name in OP_NUMBERS}
    texts = {f.name: list(map(attrgetter(f.name), args)) for f in OP_FIELDS if f.name not in numbers}
    candidate = np.zeros(len(args), dtype=bool)
    for column in numbers.values():
        candidate |= ~np.isnan(column)
    for name, values in texts.items():
        # A typed block's missing JSON field is an empty Raw (len 0); any other missing field is None.
        if name in OP_JSON and values and isinstance(values[0], msgspec.Raw):
            candidate |= np.fromiter(map(len, values), dtype=np.int64, count=len(values)) > 0
        else:
            candidate |= np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=len(values))
    rows = np.flatnonzero(candidate)
    import pandas as pd  # here: a native load never comes here and leaves pandas unimported

    coded: dict[str, tuple[np.ndarray, Sequence[str | None]]] = {}
    for name, values in texts.items():
        at_rows = [values[i] for i in rows]
        if name in OP_JSON:  # the raw text (a loose block holds the decoded value: its JSON again)
            raw = [
                bytes(v) if isinstance(v, msgspec.Raw) else None if v is None else msgspec.json.encode(v)
                for v in at_rows
            ]
            codes, uniques = pd.factorize(
                pd.Series([v or None for v in raw], dtype=object), use_na_sentinel=True
            )
            coded[name] = codes.astype(np.int32), [canonical_json(u) for u in uniques]
        else:
            coded[name] = _factorize(at_rows)
    return op_columns(rows, {name: values[rows] for name, values in numbers.items()}, coded)


_NO_ANY_ARGS = _AnyArgs()


def _loose_args(args: Any) -> _AnyArgs:
    if not isinstance(args, dict):
        return _NO_ANY_ARGS
    try:
        return msgspec.convert(args, _AnyArgs)
    except msgspec.ValidationError:
        return _NO_ANY_ARGS


# the frameworks TraceMetadata names (a file's own value outside them is not taken)
_FRAMEWORKS = frozenset({"pytorch", "tensorflow", "jax", "cuda", "unknown"})


def annotated_source(source: Any, extra: dict[str, Any]) -> tuple[str, str, str]:
    """(producer, producer version, framework) of a Kineto-format file: PyTorch's, unless ``tracelens annotate``
    wrote it from another producer's trace (its ``tracelensSource`` member, which ``extra`` then records). Read as
    PyTorch's, an annotated JAX or TensorFlow profile was called a PyTorch one (and told PyTorch's remedies)."""
    if isinstance(source, dict) and source.get("framework") in _FRAMEWORKS:
        producer, version = source.get("producer"), source.get("producer_version")
        if isinstance(producer, str) and producer:
            extra["annotated_from"] = {
                "format": str(source.get("format") or ""),
                "producer": producer,
                "framework": source["framework"],
            }
            return producer, version if isinstance(version, str) else "", str(source["framework"])
    return "PyTorch Profiler (Kineto)", "", "pytorch"


def decoding_warnings(counts: dict[str, int], problem: str | None) -> list[str]:
    """The read's warnings about how its events were decoded: fields of unexpected types (``problem``: the first,
    with an example event) and unpaired surrogate escapes replaced (:func:`paired_surrogates`)."""
    warnings = []
    if counts["lenient_blocks"]:
        warnings.append(
            "some events had fields of unexpected types; numbers written as strings were read, other such "
            "values left empty" + (f" (first: {problem})" if problem else "")
        )
    if counts.get("untimed"):
        warnings.append(
            f'{counts["untimed"]:,} complete event(s) ("ph": "X") without a usable timestamp ("ts" missing, '
            "not a number, or off the timeline) were dropped: they are in no figure"
        )
    if counts["surrogates"]:
        warnings.append(
            f"{counts['surrogates']:,} unpaired UTF-16 surrogate escape(s) (\\uD800-\\uDFFF without "
            "their other half) in event strings: read as U+FFFD (the replacement character)"
        )
    return warnings
