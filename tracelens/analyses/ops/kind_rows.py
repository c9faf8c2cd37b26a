"""Two steps of the op tree over the event columns, kept beside :mod:`.tree`: the event rows of one kind on a thread
whose name a table picks, by the compiled pass (_op_tree.c ``kind_rows``: the emit_nvtx op ranges of
:func:`.tree.emit_nvtx_rows`, tens of millions of an Nsight export's rows), and each launch's thread among the op
threads (:func:`launch_threads`), and the cpu ops' rows on a thread (:func:`cpu_op_rows`); and the op-name codes of
event rows (:func:`op_codes_at`, for :func:`.tree.op_name_codes`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...trace import CPU_OP
from ..coded import CodedInts
from ..columns import thread_key

try:  # optional: built at install time where a C compiler is there
    from .. import _op_tree as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# cpu_op_rows tests the thread in a table-long mask up to this many rows (beyond: a gather at the cpu ops, no
# second table-long temporary)
MASKED_TID_ROWS = 1 << 23


def kind_rows(cols: Any, code: int, nvtx: np.ndarray | None) -> np.ndarray | None:
    """The rows of kind ``code`` on a thread (tid >= 0) whose name ``nvtx`` takes (None: every name), int32 where
    the table allows (as ops.tree keeps event rows), by the compiled pass (_op_tree.c ``kind_rows``: a pass
    counting them, one writing them, the names and threads read at that kind's rows only, no mask of the whole
    table); None where it does not apply (no such build, other column types, a name or thread code outside its
    table: the caller's numpy blocks then)."""
    kind, name, tid = cols.kind, cols.name, cols.tid
    tid_ok = np.zeros(0, bool)
    if isinstance(tid, CodedInts):  # (an Nsight export's thread codes: whether each code's tid is >= 0)
        tid_ok = np.ascontiguousarray(tid.table >= 0)
        tid = tid.codes
        if tid.dtype not in (np.int8, np.int16) or tid_ok.size == 0:
            return None
    elif not isinstance(tid, np.ndarray) or tid.dtype not in (np.int32, np.int64):
        return None
    if (
        not hasattr(_compiled, "kind_rows")  # none built, or one built before it had this function
        or kind.dtype != np.int8
        or name.dtype not in (np.int32, np.int64)
        or not all(a.flags.c_contiguous for a in (kind, name, tid))
    ):
        return None
    table = np.zeros(0, bool) if nvtx is None else np.ascontiguousarray(nvtx, bool)
    count = _compiled.kind_rows(kind, name, tid, tid_ok, code, table, np.zeros(0, np.int32))
    if count < 0:
        return None
    out = np.empty(count, np.int32 if kind.size < 2**31 else np.int64)
    if count and _compiled.kind_rows(kind, name, tid, tid_ok, code, table, out) != count:
        return None
    return out


def cpu_op_rows(cols: Any) -> np.ndarray:
    """The rows of the cpu ops on a thread (tid >= 0), ascending (int64 positions)."""
    is_cpu = cols.of_kind(CPU_OP)
    if isinstance(cols.tid, np.ndarray) and cols.tid.shape == is_cpu.shape and is_cpu.size <= MASKED_TID_ROWS:
        # (a Kineto table, half of whose rows are cpu ops) the thread tested in the mask: a compare per row is
        # cheaper than a gather of the tid at each cpu op
        is_cpu &= cols.tid >= 0
        return np.flatnonzero(is_cpu)
    cpu = np.flatnonzero(is_cpu)
    del is_cpu
    return cpu[cols.tid[cpu] >= 0]  # the thread read at the cpu ops only (none, in an Nsight export)


def launch_threads(
    cols: Any, threads: np.ndarray, pairs: Any, matched: np.ndarray, launched: Any
) -> np.ndarray:
    """Per matched launch (``launched``: ``pairs[matched]``), the position of its call's thread among ``threads``
    (thread keys, ascending), -1 where none. Where the threads are held as codes (an Nsight export's store), each
    code's position is found once and read at the calls' codes: a byte gathered per launch, no thread key built and
    searched per launch."""
    pid, tid = cols.pid, cols.tid
    if isinstance(pid, CodedInts) and isinstance(tid, CodedInts) and pid.codes is tid.codes:
        keys = thread_key(pid.table, tid.table)  # each code's thread key
        at = np.minimum(np.searchsorted(threads, keys), threads.size - 1)
        at[threads[at] != keys] = -1
        return at[pid.codes[pairs["launch_row"][matched]]]
    key = thread_key(launched["pid"], launched["tid"])
    code = np.minimum(np.searchsorted(threads, key), threads.size - 1)
    code[threads[code] != key] = -1
    return code


def op_codes_at(code: np.ndarray, renamed: np.ndarray, name: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``code[name[rows]]`` (int64): ``code`` the op-name code per event-name code (and -1 in a last slot, for the
    null name), the identity except where ``renamed`` (an emit_nvtx op range's text names its op). Where nothing is
    renamed (a Kineto trace) the rows' name codes are the op-name codes: widened, not looked up (a second gather,
    with numpy's widened copy of the int32 index, at every op row)."""
    picked = name[rows]
    if not renamed.any():
        return picked.astype(np.int64)
    looked_up: np.ndarray = code[picked]
    return looked_up
