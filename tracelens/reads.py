"""Who reads what while ``analyze`` runs: the section whose work runs on this thread (:data:`READER`), the shared
value being computed for it (:data:`COMPUTING`), and logs of the event columns read (:func:`recording_column_reads`)
that check the tables of readers in ``tracelens.analyses`` (``MEMO_READERS``, ``COLUMN_READERS``).

An event column released after its last declared reader (``EventStore.release``) raises
:class:`ColumnReleasedError` on any later read: a reader missing from the table is an internal error naming the
column and the reader, never a silently wrong number.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

# The section whose work runs on this thread (set by ``analyze`` around each section; None outside one).
READER: contextvars.ContextVar[str | None] = contextvars.ContextVar("tracelens_reader", default=None)
# The shared derived value (its key) being computed on this thread, innermost; None outside such a computation.
COMPUTING: contextvars.ContextVar[str | None] = contextvars.ContextVar("tracelens_computing", default=None)
# True while the event columns' shared numpy view (``columns.event_columns``) is built: its reads of the store are
# not reads by a section (the sections' reads of that view are logged where they read it).
_UNTRACKED: contextvars.ContextVar[bool] = contextvars.ContextVar("tracelens_untracked", default=False)

# While recording_column_reads runs: per read of an event column, (section, shared value computing, column).
_COLUMN_LOGS: list[list[tuple[str | None, str | None, str]]] = []


class ColumnReleasedError(RuntimeError):
    """A read of an event column that ``analyze`` released after its last declared reader: the table of readers
    (``analyses.COLUMN_READERS``) misses this reader (an internal error, exit 3)."""


def released_error(column: str, released_after: str) -> ColumnReleasedError:
    """The error of a read of ``column``, released after section ``released_after``, by this thread's reader."""
    computing = COMPUTING.get()
    through = f" (computing the shared value {computing!r})" if computing else ""
    return ColumnReleasedError(
        f"section {READER.get()!r}{through} read the event column {column!r}, released after its last declared "
        f"reader ({released_after!r}): analyses.column_release.COLUMN_READERS misses this reader"
    )


def log_column_read(column: str) -> None:
    """Note a read of the event column ``column`` by this thread's section (only while a log records)."""
    if _COLUMN_LOGS and not _UNTRACKED.get():
        entry = (READER.get(), COMPUTING.get(), column)
        for log in _COLUMN_LOGS:
            log.append(entry)


@contextlib.contextmanager
def untracked() -> Iterator[None]:
    """Within: reads of event columns on this thread are not logged (building a shared view of them)."""
    token = _UNTRACKED.set(True)
    try:
        yield
    finally:
        _UNTRACKED.reset(token)


@contextlib.contextmanager
def recording_column_reads() -> Iterator[list[tuple[str | None, str | None, str]]]:
    """Within: every read of an event column appends (section reading, key of the shared value being computed or
    None, column) to the list yielded."""
    log: list[tuple[str | None, str | None, str]] = []
    _COLUMN_LOGS.append(log)
    try:
        yield log
    finally:
        _COLUMN_LOGS.remove(log)
