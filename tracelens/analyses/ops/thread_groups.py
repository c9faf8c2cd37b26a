"""The op rows grouped by thread by the compiled pass that also finds the threads and the tied rows
(``_op_tree.c`` ``group_rows_found``), for :mod:`.tree`'s ordering of the op ranges by (thread, start); the cpu ops
grouped so straight from the table (:func:`group_kind_rows`); the launches grouped by their call's thread
(:func:`launches_by_thread`); and the op tree's rows placed at the GPU ops (:func:`place_rows`).

Against ``group_rows`` (given candidate threads): no sample of the rows' thread keys gathered and sorted ahead of
the pass (~2 ms on the 813k op rows of the 406 MB Kineto tile), and the positions of the rows that start with
their thread's next row written by the pass, not found again by a pass over the grouped rows' starts (~3 ms there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...trace import ALL_KINDS, CPU_OP
from ..columns import thread_key
from ..grouping import grouped
from .kind_rows import launch_threads

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


# Threads the table-wide grouping (group_kind_rows) takes at most: its byte per row holds the thread's code and a tie
# bit, and a code for "not taken".
KIND_THREADS = 126


def group_kind_rows(
    compiled: Any, cols: Any, code: int = ALL_KINDS.index(CPU_OP)
) -> tuple[np.ndarray, np.ndarray, None, int, np.ndarray] | None:
    """:func:`group_rows_found`'s result (no starts) for the rows of kind ``code`` (the cpu ops: the framework op
    rows where no emit_nvtx op range is there) on a thread (tid >= 0), found in
    the same two compiled passes that group them (``_op_tree.c`` ``classify_kind_rows`` / ``place_kind_rows``):
    the table's kind, thread and start columns read in order, no positions of the kind's rows (813k int64 on the
    406 MB Kineto tile) gathered first and their columns read at them; the rows as :func:`.tree._narrow_rows`
    keeps them (int32 where the table allows). None where it does not apply (no such build, thread codes (an
    Nsight export's store) or other column types, more than KIND_THREADS threads, starts not ascending, no such row)."""
    kind, pid, tid, start = cols.kind, cols.pid, cols.tid, cols.start
    if (
        not hasattr(compiled, "classify_kind_rows")  # none built, or one built before it had this function
        or not all(isinstance(a, np.ndarray) and a.flags.c_contiguous for a in (kind, pid, tid, start))
        or kind.dtype != np.int8
        or pid.dtype not in (np.int32, np.int64)
        or tid.dtype not in (np.int32, np.int64)
        or start.dtype != np.int64
    ):
        return None
    row_code = np.empty(kind.size, np.uint8)
    keys, bounds = np.empty(KIND_THREADS, np.int64), np.empty(KIND_THREADS + 1, np.int64)
    next_at, found = np.zeros(KIND_THREADS, np.int64), np.zeros(3, np.int64)
    if compiled.classify_kind_rows(kind, code, pid, tid, start, row_code, keys, bounds, next_at, found):
        return None
    threads, ties, count = (int(x) for x in found)
    if count == 0:  # no op: the other path's empty rows (their type as framework_op_rows gives them)
        return None
    rows = np.empty(count, np.int32 if kind.size < 2**31 else np.int64)
    tie_at = np.empty(ties, np.int64)
    if compiled.place_kind_rows(row_code, next_at, rows, tie_at) != count:
        raise ValueError("place_kind_rows: the rows placed differ from the rows counted")
    # the tied positions in row order, the threads interleaved: sorted
    return rows, bounds[: threads + 1].copy(), None, ties, np.sort(tie_at)


def place_rows(compiled: Any, found: np.ndarray, rows: np.ndarray, at: np.ndarray, into: np.ndarray) -> None:
    """``into[at[j]] = rows[found[j]]`` where ``found[j] >= 0`` (the op tree pass's op of each launch, positions into
    ``rows``, written at the launch's GPU op as its event row), by the compiled loop where built (no mask,
    compressions and gathers of the launches); IndexError where a position is outside ``rows`` or ``into``."""
    if (
        hasattr(compiled, "place_rows")
        and found.dtype == at.dtype == np.int64
        and rows.dtype in (np.int32, np.int64)
        and into.dtype in (np.int32, np.int64)
        and all(a.flags.c_contiguous for a in (found, rows, at, into))
    ):
        if not compiled.place_rows(found, rows, at, into):
            raise IndexError("place_rows: a position outside the rows or the output")
        return
    hit = found >= 0
    into[at[hit]] = rows[found[hit]]


def launches_by_thread(
    compiled: Any, cols: Any, threads: np.ndarray, pairs: Any, matched: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The launches (``pairs[matched]``) whose call runs on one of ``threads`` (thread keys, ascending), for the op
    tree's pass: (their positions into ``matched``, grouped by thread, in launch order within each; their launch
    times, int64; where each thread's launches begin, from 0, and the last end). By the compiled pass where built
    and the threads are ids (``_op_tree.c`` ``launch_groups``: each launch's thread found and counted, then its
    position and time written: no thread key, search and mask per launch, no stable sort of the codes and no
    gathers by it); else each launch's thread (:func:`.kind_rows.launch_threads`) grouped by numpy."""
    launched = pairs[matched]  # the launch columns gathered at the matched ops only (launch_pairs: held lean)
    if (
        hasattr(compiled, "launch_groups")
        and isinstance(cols.pid, np.ndarray)
        and isinstance(cols.tid, np.ndarray)
        and threads.size <= np.iinfo(np.int16).max
    ):
        pid, tid, t = launched["pid"], launched["tid"], launched["launch_start"]
        if (
            pid.dtype in (np.int32, np.int64)
            and tid.dtype in (np.int32, np.int64)
            and t.dtype == np.int64
            and all(a.flags.c_contiguous for a in (pid, tid, t))
        ):
            at, t_out = np.empty(matched.size, np.int64), np.empty(matched.size, np.int64)
            edges = np.empty(threads.size + 1, np.int64)
            kept = compiled.launch_groups(threads.astype(np.int64), pid, tid, t, at, t_out, edges)
            return at[:kept], t_out[:kept], edges
    code = launch_threads(cols, threads, pairs, matched, launched)
    by_thread = grouped(code)[0] if code.size else np.zeros(0, np.int64)  # launches on a few threads
    edges = np.searchsorted(code[by_thread], np.arange(-1, threads.size) + 0.5)
    launches = by_thread[edges[0] : edges[-1]]  # the launches of threads with ops, by thread
    return launches, launched["launch_start"][launches].astype(np.int64, copy=False), edges - edges[0]
