"""A document saved as JSON: :func:`dumps` writes it as ``tracelens analyze --format json`` does,
:func:`load_document` reads one back (detected by content: :func:`looks_like_document`)."""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import InputError, not_found, shown
from .summary import is_current_summary, summarize

if TYPE_CHECKING:  # types only: tracelens.document imports without its TypedDicts (kimp17)
    from .types import Document


def _finite(value: Any) -> Any:
    # JSON has no NaN/inf: an undefined ratio is null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _numpy(value: Any) -> Any:
    # numpy scalars and arrays (np.float64 is a float already): their Python equivalents.
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise NotImplementedError(f"cannot write {type(value).__name__} as JSON")


@functools.cache
def _encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder(enc_hook=_numpy)


def dumps(doc: Document | dict[str, Any]) -> str:
    """The document as stable JSON (what ``--format json`` writes): integers raw (ns, bytes), keys in
    document order, NaN and infinities as null, indented by 2. :func:`load_document` reads it back."""
    import msgspec

    finite = _finite(doc)
    try:
        encoded = _encoder().encode(finite)
    except UnicodeEncodeError:  # a path named with bytes that are not UTF-8: each such byte as \xNN
        encoded = _encoder().encode(_shown_strings(finite))
    return msgspec.json.format(encoded, indent=2).decode() + "\n"


def _shown_strings(value: Any) -> Any:
    """``value`` with every string (keys too) as :func:`errors.shown` writes it."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {_shown_strings(k): _shown_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown_strings(v) for v in value]
    return value


def is_document(value: Any) -> bool:
    """A saved analysis document: a JSON object with ``schema_version`` and ``source`` and no
    ``traceEvents`` (which would make it a Chrome/PyTorch trace)."""
    return (
        isinstance(value, dict)
        and "schema_version" in value
        and isinstance(value.get("source"), dict)
        and "traceEvents" not in value
    )


def looks_like_document(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file holding an analysis document, by content whatever its name (``analyze
    --format json > doc`` too): its first 4 KiB open a JSON object naming ``schema_version`` and no
    ``traceEvents``. Trace files never pass (gzip, SQLite, Parquet and protobuf do not start with ``{``;
    a Chrome/Kineto trace has ``traceEvents`` and ``schemaVersion``). :func:`load_document` checks fully."""
    p = Path(path)
    if not p.is_file():
        return False
    try:
        with p.open("rb") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and b'"schema_version"' in head and b'"traceEvents"' not in head


# What rendering, comparing or summarizing a saved document raises where it was damaged or edited into something
# its readers cannot take (a key missing, a value that passed the types but not the reader): bad input there, not an
# internal error (load_document, cli's guard).
DAMAGED_DOCUMENT_ERRORS = (KeyError, TypeError, ValueError, IndexError, AttributeError)


def is_current_version(value: dict[str, Any]) -> bool:
    """Whether a decoded document has this version's schema (the one tracelens/document/types.py declares); an
    older one is read as it is, its summary recomputed (:func:`load_document`)."""
    from .types import SCHEMA_VERSION

    return bool(value.get("schema_version") == SCHEMA_VERSION)


def version_problem(version: object) -> str | None:
    """Why a saved document's ``schema_version`` cannot be read, or None: one newer than this tracelens's (written
    by a newer tracelens: its keys may mean something else, as 1.1's summary does against 1.0's), or no "M.m"
    version at all. Older versions are read (their summary recomputed)."""
    from .types import SCHEMA_VERSION

    current = tuple(int(part) for part in SCHEMA_VERSION.split("."))
    parts = version.split(".") if isinstance(version, str) else []
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return (
            f"a saved analysis document with schema version {version!r}, not a version this tracelens knows "
            f"(it reads up to {SCHEMA_VERSION})"
        )
    if tuple(int(part) for part in parts) > current:
        return (
            f"a saved analysis document of schema version {version}, written by a newer tracelens (this one reads "
            f"up to {SCHEMA_VERSION}): analyze the trace again with this tracelens, or update it"
        )
    return None


@functools.cache
def _document_type(missing_keys_allowed: bool) -> Any:
    # imported when a saved document is read, not with this module (kimp17). RunDocument: a document plus the
    # optional keys of a multi-rank run, so one type checks both.
    from .types import RunDocument

    return _every_key_optional(RunDocument, {}) if missing_keys_allowed else RunDocument


def _every_key_optional(declared: Any, made: dict[Any, Any]) -> Any:
    """``declared`` with every TypedDict in it (nested, in lists, maps and unions) made ``total=False``: the same
    types for the keys that are there, no key required."""
    import types
    import typing

    if typing.is_typeddict(declared):
        if declared not in made:
            made[declared] = Any  # (a type that holds itself, if one ever does: not checked below itself)
            fields = {k: _every_key_optional(v, made) for k, v in typing.get_type_hints(declared).items()}
            made[declared] = typing.TypedDict(declared.__name__, fields, total=False)  # type: ignore[operator]
        return made[declared]
    origin, args = typing.get_origin(declared), typing.get_args(declared)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_every_key_optional(a, made) for a in args)]  # noqa: UP007 (built from a tuple)
    if origin in (list, dict, tuple):
        return origin[tuple(_every_key_optional(a, made) for a in args)]
    return declared


def type_error(value: Any, missing_keys_allowed: bool = False) -> str | None:
    """Where a decoded document of this schema version departs from its declared types (types.py,
    docs/json.md): msgspec's message with the key's path, e.g. ``Expected `int`, got `str` - at
    `$.kernels.total_ns```; None where it conforms. Keys the types do not declare are allowed (TypedDicts do not
    forbid them; nothing reads them). An integer passes where a float is declared (a whole ratio may be written
    as one). ``missing_keys_allowed``: only the keys that are there are checked (what a reader checks: a
    document saved by an earlier tracelens of the same schema version lacks the keys added since, e.g.
    ``diagnosis.completeness``, and the renderers read such documents); else every required key must be there
    (what tracelens writes)."""
    import msgspec

    try:
        # the converted copy is dropped: the document stays as read
        msgspec.convert(value, _document_type(missing_keys_allowed))
    except msgspec.ValidationError as err:
        return str(err).replace("\r", "\\r").replace("\n", "\\n")  # one line, whatever keys the path names
    return None


def load_document(path: str | os.PathLike[str]) -> Document:
    """Read an analysis document saved with ``tracelens analyze --format json``; its ``summary`` is computed
    when the file has none, or one with an older version's keys (figures the older sections lack are null). A
    document of this schema version is checked against its declared types first (:func:`type_error`). Raises
    :class:`~tracelens.errors.InputError` when the file is not one, or not one as declared."""
    import msgspec

    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise not_found(p) from None
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", path=p) from None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise InputError(f"not a valid JSON analysis document ({err})", path=p) from None
    if not is_document(value):
        raise InputError("not a tracelens analysis document (no schema_version and source)", path=p)
    problem = version_problem(value.get("schema_version"))
    if problem is not None:
        raise InputError(problem, path=p)
    if is_current_version(value):
        # Checked against its declared types before anything reads it: a field of another type is
        # bad input named by its path, not an error in whichever renderer reads it first.
        # Only the keys that are there: one saved by an earlier tracelens of this version lacks the keys added since.
        problem = type_error(value, missing_keys_allowed=True)
        if problem is not None:
            raise InputError(f"a saved analysis document damaged or edited: {problem}", path=p)
    if not is_current_summary(value.get("summary")):
        try:
            value["summary"] = summarize(value)
        except DAMAGED_DOCUMENT_ERRORS as err:
            # an older version's document is read unchecked (the types describe this version's), and one of this
            # version may lack a key: a section damaged or edited since it was saved is bad input, not an error
            raise InputError(
                f"a saved analysis document whose summary cannot be computed: damaged or edited "
                f"({type(err).__name__}: {err})",
                path=p,
            ) from None
    return cast("Document", value)
