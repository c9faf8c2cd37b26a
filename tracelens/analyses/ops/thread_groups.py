"""The op rows grouped by thread by the compiled pass that also finds the threads and the tied rows
(``_op_tree.c`` ``group_rows_found``), for :mod:`.tree`'s ordering of the op ranges by (thread, start).

Against ``group_rows`` (given candidate threads): no sample of the rows' thread keys gathered and sorted ahead of
the pass (~2 ms on the 813k op rows of the 406 MB Kineto tile), and the positions of the rows that start with
their thread's next row written by the pass, not found again by a pass over the grouped rows' starts (~3 ms there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..columns import thread_key

# Threads the compiled pass groups the rows of at most (its codes are bytes).
MOST_THREADS = 255


def group_rows_found(
    compiled: Any, pid: np.ndarray, tid: np.ndarray, start: np.ndarray, rows: np.ndarray, with_starts: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int, np.ndarray] | None:
    """(``rows`` (ascending, in start order) grouped by thread key, stably; where each thread's rows begin and the
    last end; their starts (None without ``with_starts``); how many rows start when the previous row of their
    thread does; the positions i, ascending, where ``rows[i]`` starts when ``rows[i + 1]``, of its thread, does),
    or None where more than MOST_THREADS threads or starts not ascending (the caller sorts)."""
    rows_out, start_out = np.empty_like(rows), np.empty(rows.size if with_starts else 0, np.int64)
    keys, bounds = np.empty(MOST_THREADS, np.int64), np.empty(MOST_THREADS + 1, np.int64)
    found = np.zeros(2, np.int64)
    tie_at = np.empty(rows.size, np.int64)  # (pages touched only where written: a few thousand ties)
    if compiled.group_rows_found(pid, tid, start, rows, rows_out, start_out, keys, bounds, found, tie_at):
        return None
    threads, ties = int(found[0]), int(found[1])
    # ascending within each thread, the threads interleaved: sorted (a copy: the rest of the buffer let go)
    return (
        rows_out,
        bounds[: threads + 1].copy(),
        start_out if with_starts else None,
        ties,
        np.sort(tie_at[:ties]),
    )


def thread_order_key(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Keys ordered as ``thread_key(pid, tid)`` is: where every row has one pid (the usual case), the tids read as
    unsigned (as thread_key's low half), without building the int64 keys."""
    if tid.dtype == np.int32 and pid.size and pid.min() == pid.max():
        return tid.view(np.uint32)
    return thread_key(pid, tid)
