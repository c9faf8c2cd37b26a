"""Threads read from their codes: an Nsight export holds pid and tid as one array of thread codes
(:class:`.coded.CodedInts` sharing ``codes``: ``pid.table[code]``, ``tid.table[code]`` a thread's pair), so the
threads of some rows are found from the codes at those rows (a byte each) and a key per code, not from a pid, a
tid and an int64 key gathered or built per row."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..values import distinct
from .coded import CodedInts
from .columns import thread_key

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# launched_threads' pass gives up past this many distinct threads (then numpy reads every op's).
MANY_THREADS = 1024


def shared_thread_codes(pid: Any, tid: Any) -> np.ndarray | None:
    """The rows' thread codes where ``pid`` and ``tid`` are held as one array of them; None otherwise."""
    if isinstance(pid, CodedInts) and isinstance(tid, CodedInts) and pid.codes is tid.codes:
        return pid.codes
    return None


def codes_seen(codes: np.ndarray, rows: np.ndarray, size: int, seen: np.ndarray | None = None) -> np.ndarray:
    """Flags per thread code (``size`` of them): the codes of ``rows``, added to ``seen`` where given."""
    if seen is None:
        seen = np.zeros(size, bool)
    seen[codes[rows]] = True
    return seen


# Up to this many thread codes, the codes where a mask holds are found by a comparison per code not seen yet.
FEW_CODES = 16


def mark_codes_where(codes: np.ndarray, mask: np.ndarray, seen: np.ndarray) -> None:
    """Flag in ``seen`` (one flag per code) the codes where ``mask`` holds (``codes`` and ``mask`` of the same rows).
    A handful of codes (the threads of a training export): a comparison per code not yet flagged, a byte a row
    each and none once every code is flagged; otherwise the codes gathered where the mask holds."""
    if seen.size > FEW_CODES:
        seen[codes[mask]] = True
        return
    code = codes.dtype.type
    for c in np.flatnonzero(~seen):  # a loop over the few codes not seen yet
        hit = codes == code(c)
        hit &= mask
        seen[c] = bool(hit.any())


def dense_thread_codes(pid: Any, tid: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``values.dense_codes(thread_key(pid[rows], tid[rows]))`` (each row's position among the sorted distinct
    thread keys of the rows, and those keys) where pid and tid share thread codes, in the narrowest integer type
    that holds the positions; None otherwise (the caller builds the keys)."""
    codes = shared_thread_codes(pid, tid)
    if codes is None:
        return None
    keys = thread_key(pid.table, tid.table)  # one key per code
    present = codes_seen(codes, rows, keys.size)
    uniques = np.sort(distinct(keys[present]))
    position = np.searchsorted(uniques, keys)  # read only at the codes present: each finds its own key
    narrow = np.int8 if uniques.size <= 128 else np.int32 if uniques.size < 2**31 else np.int64
    return position.astype(narrow)[codes[rows]], uniques


# Rows in time order come in long runs on one thread (2,243 runs in the 1.3M host rows of the 406 MB Kineto tile):
# where the runs are at most this share of the rows, the threads' keys are built at each run's first row only.
THREAD_RUNS_SHARE = 0.25


def thread_run_heads(pid: np.ndarray, tid: np.ndarray, *also: np.ndarray) -> np.ndarray:
    """The first row of each run of rows on one (pid, tid), and of one value of each ``also`` array: int64
    positions, the first 0 (none without rows)."""
    if pid.size == 0:
        return np.zeros(0, np.int64)
    change = pid[1:] != pid[:-1]
    change |= tid[1:] != tid[:-1]
    for values in also:
        change |= values[1:] != values[:-1]
    at = np.flatnonzero(change)
    del change
    heads = np.empty(at.size + 1, np.int64)
    heads[0] = 0
    np.add(at, 1, out=heads[1:])
    return heads


def launched_threads(
    ops: np.ndarray, rows: np.ndarray, pid: Any, tid: Any
) -> tuple[np.ndarray, np.ndarray] | None:
    """(pids, tids): each distinct (pid, tid) pair at the event rows ``rows[ops]`` once, in order of first appearance,
    in pid's and tid's types, by one compiled pass (the threads that launched a device's ops: consecutive ops come
    mostly from one thread); None where the pass is not built, pid or tid is not a plain integer array, or more than
    MANY_THREADS pairs."""
    plain = (
        _compiled is not None
        and type(pid) is np.ndarray
        and type(tid) is np.ndarray
        and pid.dtype.kind == "i"
        and tid.dtype.kind == "i"
        and pid.itemsize in (4, 8)
        and tid.itemsize in (4, 8)
        and rows.dtype in (np.int32, np.int64)
        and ops.dtype == np.bool_
    )
    if not plain:
        return None
    out_pid, out_tid = np.empty(MANY_THREADS, np.int64), np.empty(MANY_THREADS, np.int64)
    count = _compiled.launch_threads(
        np.ascontiguousarray(ops),
        np.ascontiguousarray(rows),
        np.ascontiguousarray(pid),
        np.ascontiguousarray(tid),
        out_pid,
        out_tid,
    )
    if count < 0:
        return None
    return out_pid[:count].astype(pid.dtype), out_tid[:count].astype(tid.dtype)
