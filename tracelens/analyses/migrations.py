"""Unified-memory migrations: the copies the CUDA driver makes on demand when a GPU or the host touches managed
memory that is elsewhere (page faults; prefetches). Nsight Systems writes them as copies of the kinds "Unified
Host-to-Device" etc. (``copy_kind`` ``UVM HtoD``, ``UVM DtoH``, ``UVM DtoD``), and no API call launches them: their
correlation id is no call's. The launch checks (completeness, the replay's unlaunched ops) count the ops a call
should have launched; a migration is none of them.

The migrations' rows are a shared value (``migration_rows``, memoized): the memcpy section computes it while it
reads the copy kinds, so that the diagnosis (the completeness judge) and the replay read it after the column is
released."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import arrow_calls
from ..trace import MEMCPY, Trace
from .columns import event_columns
from .derived import memo

MIGRATION_PREFIX = "UVM "  # the copy kinds of unified-memory migrations (ingest/nsys/enums.py)


def is_migration_kind(copy_kind: object) -> bool:
    return isinstance(copy_kind, str) and copy_kind.startswith(MIGRATION_PREFIX)


def migration_rows(trace: Trace) -> np.ndarray:
    """The event rows (ascending) of the unified-memory migrations; empty where the trace has none (its distinct
    copy kinds say so: no row read)."""

    def compute() -> np.ndarray:
        store = trace.store
        if not store.has("copy_kind") or not any(is_migration_kind(k) for k in store.unique("copy_kind")):
            return np.zeros(0, np.int64)
        copies = np.flatnonzero(event_columns(trace).of_kind(MEMCPY))
        kinds = trace.take("copy_kind", copies)
        kinds = kinds.cast(pa.string()) if pa.types.is_dictionary(kinds.type) else kinds
        # (arrow_calls: no pyarrow.compute import in a Kineto analyze, test_lean_load; a null kind is no migration)
        starts = arrow_calls.call(
            "coalesce", arrow_calls.starts_with(kinds, MIGRATION_PREFIX), pa.scalar(False)
        )
        return copies[np.asarray(starts.to_numpy(zero_copy_only=False), bool)]

    return memo(trace, "migration_rows", compute)


def has_migrations(trace: Trace) -> bool:
    return bool(migration_rows(trace).size)


def migration_mask(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows`` (event row positions), whether it is a unified-memory migration."""
    migrations = migration_rows(trace)
    if rows.size == 0 or migrations.size == 0:
        return np.zeros(rows.size, bool)
    at = np.minimum(np.searchsorted(migrations, rows), migrations.size - 1)
    return migrations[at] == rows
