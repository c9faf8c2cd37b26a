"""The API calls' columns for sync.py (event rows, names, starts, thread codes) by one compiled walk over the kind
column (``_op_tree.call_columns``) where it applies; sync.py keeps the numpy path (a kind mask, gathers and
``row_thread_codes``) as the fallback and the reference."""

from __future__ import annotations

from typing import Any

import numpy as np

try:  # optional: built at install time where a C compiler is there
    from . import _op_tree as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# Threads the compiled codes take at most (its codes are bytes): as sync.COMPILED_THREADS.
COMPILED_THREADS = 126


def call_columns(
    kind: np.ndarray, codes: tuple[int, int], name: Any, start: Any, pid: Any, tid: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(rows int32, name, start, thread codes int8, sorted thread keys) of the rows of ``kind`` whose code is one of
    ``codes``: ``rows = flatnonzero(isin(kind, codes))``, ``name[rows]``, ``start[rows]`` and
    ``dense_codes(thread_key(pid[rows], tid[rows]))`` with its keys, in one walk; None where it does not apply (no
    such build, other column types, thread codes, 2^31 rows or more, more than COMPILED_THREADS threads)."""
    if not (
        _compiled is not None
        and hasattr(_compiled, "call_columns")
        and all(isinstance(a, np.ndarray) and a.flags.c_contiguous for a in (kind, name, start, pid, tid))
        and kind.dtype == np.int8
        and name.dtype == np.int32
        and start.dtype == np.int64
        and pid.dtype in (np.int32, np.int64)
        and tid.dtype in (np.int32, np.int64)
        and kind.size < 2**31
        and name.size == start.size == pid.size == tid.size == kind.size
    ):
        return None
    m = _compiled.call_columns(kind, codes[0], codes[1])
    rows, names, starts = np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int64)
    thread, keys, found = np.empty(m, np.int8), np.empty(COMPILED_THREADS, np.int64), np.zeros(1, np.int64)
    if m == 0 or _compiled.call_columns(
        kind, codes[0], codes[1], name, start, pid, tid, rows, names, starts, thread, keys, found
    ):
        return None  # no call (the numpy path's empty arrays), or more threads
    return rows, names, starts, thread, keys[: int(found[0])].copy()
