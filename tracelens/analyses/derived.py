"""The derived values the analysis sections share (joins, unions, the event columns), per trace: computed once by
:func:`memo`, dropped by :func:`forget` once no section still to run reads them (``analyze``, by the table
``analyses.MEMO_READERS``), and the log of who reads what (:func:`recording_reads`) that checks that table.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections.abc import Callable, Collection, Iterator
from typing import Any, TypeVar, cast

import numpy as np

from ..reads import COMPUTING, READER
from ..trace import Trace

T = TypeVar("T")


# Derived values the sections share (joins, unions), per trace: kept beside the trace, keyed by its identity and
# dropped when it is collected, so analyses stay functions of the trace and never write to it. ``analyze`` also
# drops each one after the last section that reads it (:func:`forget`); a value read again after that is simply
# computed again.
_DERIVED: dict[int, _Derived] = {}
_DERIVED_LOCK = threading.Lock()  # guards _DERIVED and each entry's locks

# The section whose work asks for derived values on this thread (set by ``analyze`` around each section), and
# while :func:`recording_reads` runs, a log of (section, key, computed) per ask: how the table of each value's
# readers (``analyses.MEMO_READERS``) is checked.
_READER: contextvars.ContextVar[str | None] = READER  # shared with the event columns' reads (tracelens.reads)
_READ_LOGS: list[list[tuple[str | None, str, bool]]] = []


class _Derived:
    """One trace's derived values, and a lock per key (sections run on two threads: :mod:`.schedule`)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.locks: dict[str, threading.Lock] = {}


def memo(trace: Trace, key: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per trace and key: a derived value the sections share (the trace is not touched).

    Thread-safe: a second thread asking for a key being computed waits for that value. One lock per key, not
    one for all, so that threads computing different keys do not wait for each other; no two threads can wait
    for each other, because a key's computation only asks for keys it derives from, never the reverse.
    A key dropped by :func:`forget` is computed again on the next ask."""
    derived = _DERIVED.get(id(trace))
    if derived is not None and key in derived.values:
        value = derived.values.get(key, _MISSING)  # dropped by another thread since the test: computed below
        if value is not _MISSING:
            _log_read(key, False)
            return cast(T, value)
    with _DERIVED_LOCK:
        derived = _DERIVED.get(id(trace))
        if derived is None:
            derived = _DERIVED[id(trace)] = _Derived()
            weakref.finalize(trace, _DERIVED.pop, id(trace), None)
        lock = derived.locks.setdefault(key, threading.Lock())
    with lock:
        value = derived.values.get(key, _MISSING)
        computed = value is _MISSING
        if computed:
            token = COMPUTING.set(key)
            try:
                derived.values[key] = value = compute()
            finally:
                COMPUTING.reset(token)
    _log_read(key, computed)
    return cast(T, value)


_MISSING = object()

# Rows compared per chunk where the start order is checked: a table-long comparison held 41 MB on the x1512 export.
_ORDER_CHUNK = 1 << 22


def starts_ascending(trace: Trace, start: np.ndarray) -> bool:
    """Whether the trace's event rows are in start order (``start``: its event columns' start), checked once per
    trace: ``build_store`` sorts them, a table built otherwise may not be; the diagnosis's readers that search by
    start (the completeness judge, unexplained_idle) ask it."""

    def compute() -> bool:
        for lo in range(0, start.size - 1, _ORDER_CHUNK):  # a loop over chunks of rows
            chunk = start[lo : lo + _ORDER_CHUNK + 1]
            if not bool((chunk[1:] >= chunk[:-1]).all()):
                return False
        return True

    return memo(trace, "starts_ascending", compute)


def _log_read(key: str, computed: bool) -> None:
    if _READ_LOGS:
        entry = (_READER.get(), key, computed)
        for log in _READ_LOGS:
            log.append(entry)


def memo_family(key: str) -> str:
    """The name a key's readers are declared under: the key up to its first "/" (``unexplained_intervals/0`` ->
    ``unexplained_intervals``, one value per device)."""
    return key.split("/", 1)[0]


def forget(trace: Trace, families: Collection[str]) -> None:
    """Drop the trace's derived values of the given families (:func:`memo_family`), so that their memory goes
    when no running section holds them; an ask after this computes the value again. A value being computed
    now is not dropped (it is stored when done, and kept)."""
    derived = _DERIVED.get(id(trace))
    if derived is None or not families:
        return
    # One pop per key, no lock: an ask that finds the key gone computes it again (under the key's lock).
    for key in [k for k in list(derived.values) if memo_family(k) in families]:
        derived.values.pop(key, None)


def held(trace: Trace, key: str) -> Any:
    """The trace's derived value ``key`` if held now, else None (never computes it)."""
    derived = _DERIVED.get(id(trace))
    return None if derived is None else derived.values.get(key)


def memo_keys(trace: Trace) -> list[str]:
    """The keys of the trace's derived values held now."""
    derived = _DERIVED.get(id(trace))
    return [] if derived is None else list(derived.values)


@contextlib.contextmanager
def reading_as(section: str) -> Iterator[None]:
    """Within: derived values asked for on this thread are read by ``section`` (for :func:`recording_reads`)."""
    token = _READER.set(section)
    try:
        yield
    finally:
        _READER.reset(token)


@contextlib.contextmanager
def recording_reads() -> Iterator[list[tuple[str | None, str, bool]]]:
    """Within: every ask of :func:`memo` appends (section reading, key, whether it computed the value) to the
    list yielded (the section as :func:`reading_as` set it, None outside a section)."""
    log: list[tuple[str | None, str, bool]] = []
    _READ_LOGS.append(log)
    try:
        yield log
    finally:
        _READ_LOGS.remove(log)
