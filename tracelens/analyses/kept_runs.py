"""The host rows of :func:`.attribution.host_rows` (event rows with a host category, the one-time rows as
`startup`), their categories and where their runs of one thread begin, in one compiled pass over the event rows
(``_merge_search.kept_thread_runs``).

The numpy path finds the rows by a flatnonzero of the categories, then gathers pid and tid at every row found (1.3M
of the 406 MB Kineto tile's 1.5M rows, which come in 2,243 runs of one thread) to compare neighbours; the pass reads
each event row's category, pid and tid where they stand, once, and writes the rows, their categories and the runs'
first positions. Where the pass is absent or the columns are not plain arrays of 4 or 8 bytes (the thread codes of
an Nsight export), the caller's numpy path runs.
"""

from __future__ import annotations

import numpy as np

from ..values import plain_ints

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# Runs are kept up to one per this many rows; past it the pass reports none (the threads are hashed row by row).
RUNS_PER_ROWS = 4


def kept_thread_runs(
    category: np.ndarray,
    startup_rows: np.ndarray,
    startup: int,
    pid: object,
    tid: object,
    row_type: type,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(the event rows whose category is >= 0, ``category`` being the host categories with ``startup`` at the
    ascending ``startup_rows``, as ``row_type``; their categories (int8); the positions among them where a run of
    one (pid, tid) begins, int64, or None where there are more than one per RUNS_PER_ROWS rows); None where the
    pass is absent or the categories, pid or tid are not plain arrays it reads."""
    if _compiled is None or not hasattr(_compiled, "kept_thread_runs"):
        return None
    if not (plain_ints(category, (1,)) and plain_ints(pid, (4, 8)) and plain_ints(tid, (4, 8))):
        return None
    if np.dtype(row_type) not in (np.dtype(np.int32), np.dtype(np.int64)):
        return None
    startup_rows = np.ascontiguousarray(startup_rows, np.int64)
    kept, _ = _compiled.kept_thread_runs(category, startup_rows, startup, pid, tid, None, None, None)
    rows = np.empty(kept, row_type)
    categories = np.empty(kept, np.int8)
    runs = np.empty(kept // RUNS_PER_ROWS + 1, np.int64)
    _, count = _compiled.kept_thread_runs(category, startup_rows, startup, pid, tid, rows, categories, runs)
    return rows, categories, (runs[:count].copy() if count >= 0 else None)
