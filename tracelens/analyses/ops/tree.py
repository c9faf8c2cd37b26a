"""The op tree: framework op names and rows, each GPU op's outermost and innermost op on its launching thread,
and which op runs on a thread at a time (definitions: :mod:`tracelens.analyses.ops`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import intervals
from ...trace import ALL_KINDS, ANNOTATION, GPU_ACTIVITY_KINDS, Trace
from ...values import is_missing
from ..blocks import BLOCK_ROWS
from ..coded import CodedInts
from ..columns import dictionary_codes, event_columns, memo, range_running_at, thread_key
from ..grouping import (
    FEW_TIMES_PER_RANGE,
    KEY_SAMPLE,
    few_times_range_at,
    grouped,
    runs_on_threads,
    tied_positions,
)
from ..launch import launch_pairs
from ..names import EMIT_NVTX_PATTERN
from .kind_rows import cpu_op_rows, kind_rows, op_codes_at
from .thread_groups import (
    group_kind_rows,
    group_rows_found,
    launches_by_thread,
    place_rows,
    thread_order_key,
)

try:  # the per-thread pass in C (optional: built at install time where a C compiler is there)
    from .. import _op_tree as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# The rows a table of op names, or of modules, keeps (most GPU time first).
TOP_OPS = 50


# PyTorch's emit_nvtx() op ranges (names.EMIT_NVTX_PATTERN): the op name is the text before the first ", ".
_EMIT_NVTX = EMIT_NVTX_PATTERN


@dataclass(frozen=True)
class OpNames:
    """Op names over the trace's name dictionary: ``code[cols.name[row]]`` is a framework op row's op-name code
    (the name itself, or for an emit_nvtx range the text before the first ", "), ``names[code]`` its text;
    ``nvtx[cols.name[row]]`` whether an annotation of that name is an emit_nvtx op range. Both lookups have a
    last slot for the null name (code -1)."""

    code: np.ndarray
    names: np.ndarray
    nvtx: np.ndarray
    # per GPU op (the rows of ``launch_pairs``, in its order): the code in ``names`` of the op recorded on it
    # (the ``op`` column), -1 where none
    recorded: np.ndarray | None = None
    # every name an annotation row has is an emit_nvtx op range's (an emit_nvtx export): the annotations are the
    # op ranges
    all_annotations_nvtx: bool = False


def op_names(trace: Trace) -> OpNames:
    """The op-name lookups (cached); each distinct annotation name is matched once, not each row."""
    return memo(trace, "op_names", lambda: _op_names(trace))


def _op_names(trace: Trace) -> OpNames:
    cols = event_columns(trace)
    size = len(cols.names)
    code = np.r_[np.arange(size, dtype=np.int64), -1]
    names = np.asarray(cols.names, dtype=object)
    nvtx = np.zeros(size + 1, bool)
    used, unnamed = _annotation_names(cols, size)
    found = [(c, m.group(1)) for c in used if (m := _EMIT_NVTX.match(str(names[c])))]  # a loop over names
    if found:
        ranges = np.array([c for c, _ in found], np.int64)
        target, names = _codes_of(names, [t for _, t in found])
        code[ranges] = target
        nvtx[ranges] = True
    recorded = None
    gpu_codes, texts = _recorded_ops(trace)
    if texts:
        target, names = _codes_of(names, texts)
        recorded = np.where(gpu_codes >= 0, np.r_[target, -1][gpu_codes], -1)
    # (an annotation without a name is no op range)
    every = bool(found) and len(found) == used.size and not unnamed
    return OpNames(code, names, nvtx, recorded, every)


def _annotation_names(cols: Any, size: int) -> tuple[np.ndarray, bool]:
    """(the dictionary positions the annotation rows' names take, ascending; whether an annotation has no name):
    one pass over the kind and name columns in C where built (_op_tree.c ``names_of_kind``), else the annotations'
    names compressed out and marked."""
    seen = np.zeros(size + 1, bool)  # the last slot: no name (-1)
    kind, name = cols.kind, cols.name
    compiled = (
        hasattr(_compiled, "names_of_kind")  # none built, or one built before it had this function
        and kind.dtype == np.int8
        and name.dtype in (np.int32, np.int64)
        and kind.flags.c_contiguous
        and name.flags.c_contiguous
    )
    if not compiled or not _compiled.names_of_kind(kind, name, ALL_KINDS.index(ANNOTATION), seen):
        seen[:] = False
        seen[np.compress(cols.of_kind(ANNOTATION), name)] = True  # as name[mask], in half the time
    return np.flatnonzero(seen[:size]), bool(seen[size])


def _codes_of(names: np.ndarray, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each text's code among ``names`` where it is there already, else a new code after them; and the names
    with the new texts appended (``pd.Index(names).get_indexer(texts)`` by a dict)."""
    listed = names.tolist()
    position = dict(zip(listed, range(len(listed)), strict=True))
    if (
        len(position) < len(listed) or int(is_missing(names).sum()) > 1
    ):  # not unique: no text is there already
        position = {}
    new = {text: None for text in texts if text not in position}  # first appearance order
    new_at = {text: len(listed) + at for at, text in enumerate(new)}
    target = np.array([position[t] if t in position else new_at[t] for t in texts], np.int64)
    return target, np.r_[names, np.array([*new, None], dtype=object)[:-1]]


def gpu_rows(trace: Trace) -> np.ndarray:
    """Event rows of the GPU ops, in the order of ``launch_pairs``' rows (the same selection)."""
    cols = event_columns(trace)
    return np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))


def _recorded_ops(trace: Trace) -> tuple[np.ndarray, list[str]]:
    """Per GPU op (``launch_pairs`` order), the code into the returned texts of the op its producer recorded on
    it (the ``op`` column; -1 where none), and those texts; empty when no GPU op has one."""
    if trace.store.columns.get("op") is None:
        return np.zeros(0, np.int64), []
    codes, texts = dictionary_codes(trace.take("op", gpu_rows(trace)))
    if not (codes >= 0).any():
        return np.zeros(0, np.int64), []
    return codes, [str(t) for t in texts]


def recorded_op_codes(trace: Trace) -> np.ndarray:
    """Per row of ``launch_pairs(trace)``, the op-name code (into ``op_names(trace).names``) of the op recorded
    on the GPU op itself; -1 where none."""
    recorded = op_names(trace).recorded
    return np.full(len(launch_pairs(trace)), -1, np.int64) if recorded is None else recorded


def gpu_op_name_codes(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``launch_pairs(trace)``: whether it is attributed to an op and that op's name code (the op
    recorded on it, else its outermost op's), -1 where unattributed (or the op has no name)."""
    return memo(trace, "gpu_op_name_codes", lambda: with_recorded_ops(trace, op_of_gpu_ops(trace)))


def with_recorded_ops(trace: Trace, op_row: np.ndarray, lo: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``launch_pairs`` (its rows [lo, lo + op_row.size)), given the op row the host join found for it
    (-1: none): whether it has an op, and the name code of the op recorded on it if any, else of the joined op's
    (-1: none, or no name)."""
    recorded = op_names(trace).recorded
    joined = op_row >= 0
    if joined.all():  # (every GPU op joined: no compressed rows and masked writes)
        code = op_name_codes(trace, op_row)
    else:
        code = np.full(op_row.size, -1, np.int64)
        code[joined] = op_name_codes(trace, op_row[joined])
    if recorded is None:  # no op recorded on a GPU op (no column of -1 to test)
        return joined, code
    recorded = recorded[lo : lo + op_row.size]
    code = np.where(recorded >= 0, recorded, code)
    return joined | (recorded >= 0), code


def emit_nvtx_rows(trace: Trace) -> np.ndarray:
    """Event rows of the emit_nvtx op ranges on threads (annotations whose name has the emit_nvtx form)."""

    def compute() -> np.ndarray:
        cols = event_columns(trace)
        names = op_names(trace)
        code, size = ALL_KINDS.index(ANNOTATION), cols.start.size
        kind, tid, name = cols.kind, cols.tid, cols.name
        if not names.all_annotations_nvtx and not names.nvtx.any():
            # no name of the dictionary has the emit_nvtx form (a Kineto trace's annotations): no such row, and
            # no pass over the table's kinds, names and threads to find none
            return _narrow_rows(np.zeros(0, np.int64), size)
        found = kind_rows(cols, code, None if names.all_annotations_nvtx else names.nvtx)
        if found is not None:
            return found
        # A block of the table at a time, each block's rows narrowed as found: no mask of the whole table and no
        # int64 positions of the tens of millions of op ranges of an emit_nvtx export.
        parts = []
        for lo in range(0, size, BLOCK_ROWS):  # a loop over blocks of rows
            hi = lo + BLOCK_ROWS
            mask = kind[lo:hi] == code
            # (where every annotation is an op range: no gather of the names)
            if not names.all_annotations_nvtx:
                mask &= names.nvtx[name[lo:hi]]
            mask &= tid[lo:hi] >= 0
            found = np.flatnonzero(mask)
            found += lo
            parts.append(_narrow_rows(found, size))
            del mask, found
        return np.concatenate(parts) if parts else _narrow_rows(np.zeros(0, np.int64), size)

    return memo(trace, "emit_nvtx_rows", compute)


def _narrow_rows(rows: np.ndarray, table_rows: int) -> np.ndarray:
    """Event rows (or -1) kept for the whole analysis as int32 where the table allows: half the memory of the
    tens of millions of op ranges of an emit_nvtx export."""
    return rows.astype(np.int32, copy=False) if table_rows < 2**31 else rows


def _no_rows(count: int, table_rows: int) -> np.ndarray:
    """``count`` event rows of -1, in the type :func:`_narrow_rows` gives rows of a table of ``table_rows``."""
    return np.full(count, -1, np.int32 if table_rows < 2**31 else np.int64)


def framework_op_rows(trace: Trace) -> np.ndarray:
    """Event rows of the framework ops on threads: ``cpu_op`` rows and emit_nvtx op ranges, sorted."""

    def compute() -> np.ndarray:
        cols = event_columns(trace)
        cpu, nvtx = cpu_op_rows(cols), emit_nvtx_rows(trace)
        return np.union1d(cpu, nvtx) if cpu.size and nvtx.size else (nvtx if nvtx.size else cpu)

    return memo(trace, "framework_op_rows", compute)


def emit_nvtx_sizes(name: str) -> str | None:
    """The ``sizes = [...]`` list of an emit_nvtx range's text (the op's input shapes, as Kineto's
    ``Input Dims``), or None."""
    at = name.find(", sizes = ")
    if at < 0 or not _EMIT_NVTX.match(name):
        return None
    text = name[at + len(", sizes = ") :]
    end = text.find(", input_op_ids = ")
    return text if end < 0 else text[:end]


def op_name_codes(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The op-name code (into ``op_names(trace).names``) of each framework op row."""
    return op_codes_at((names := op_names(trace)).code, names.nvtx, event_columns(trace).name, rows)


def outermost_ops(trace: Trace) -> np.ndarray:
    """Event rows of the outermost framework ops, sorted by (thread, start); computed once per trace (the ops
    section and three diagnosis evidence builders read it; an emit_nvtx export has millions of op ranges)."""
    return _op_tree(trace)[0]


def _op_tree(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(outermost ops; per GPU op, its outermost op and its innermost op): all from one ordering of the op
    ranges by thread, once per trace."""
    return memo(trace, "op_tree", lambda: _compute_op_tree(trace))


def _compute_op_tree(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols = event_columns(trace)
    pairs = launch_pairs(trace)
    size = cols.start.size
    # (each GPU op's outermost and innermost op are made after the pass; it reads starts at rows where it can)
    by_row = _ends_by_row(cols, _no_rows(0, size), "OP_TREE_START_ROWS")
    # (no emit_nvtx op range, a Kineto trace: the op rows, the cpu ops on threads, grouped straight from the table)
    found = group_kind_rows(_compiled, cols) if by_row and not emit_nvtx_rows(trace).size else None
    rows, bounds, start = _by_thread(cols, found[0] if found else framework_op_rows(trace), not by_row, found)
    if rows.size == 0:
        return rows, _no_rows(len(pairs), size), _no_rows(len(pairs), size)
    # The launches by thread, each thread's against that thread's ops.
    matched = np.flatnonzero(pairs["matched"])
    threads = thread_key(cols.pid[rows[bounds[:-1]]], cols.tid[rows[bounds[:-1]]])  # ascending
    launches, t, edges = launches_by_thread(_compiled, cols, threads, pairs, matched)
    if _compiled is not None:
        outer = np.zeros(rows.size, np.uint8)
        out, inn = np.empty(launches.size, np.int64), np.empty(launches.size, np.int64)
        tail = (bounds.astype(np.int64), t, edges, outer, out, inn)
        end = cols.end
        if start is None:  # (OP_TREE_START_ROWS) both read at the rows
            done = _compiled.op_tree(cols.start, end, *tail, rows, True)
        elif _ends_by_row(cols, rows):  # a build from before it read starts through rows
            done = _compiled.op_tree(start.astype(np.int64, copy=False), end, *tail, rows)
        else:  # a build from before it read ends through rows
            done = _compiled.op_tree(
                start.astype(np.int64, copy=False), end[rows].astype(np.int64, copy=False), *tail
            )
        del tail
        if done:
            del start, end, t
            at = matched[launches]
            del matched, launches  # (each let go once read: the pass's arrays are launch-sized)
            outermost, innermost = _no_rows(len(pairs), size), _no_rows(len(pairs), size)
            place_rows(_compiled, out, rows, at, outermost)  # (the others stay -1)
            place_rows(_compiled, inn, rows, at, innermost)
            del out, inn, at
            return _narrow_rows(np.compress(outer.view(bool), rows), size), outermost, innermost
    outermost, innermost = _no_rows(len(pairs), size), _no_rows(len(pairs), size)
    keep = np.zeros(rows.size, bool)
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):  # a loop over threads
        thread_rows = rows[lo:hi]
        start, end = cols.start[thread_rows], cols.end[thread_rows]
        outer = keep[lo:hi]
        if edges[i + 1] > edges[i]:
            # The outermost ops are the nesting level 0 (no earlier op still running at their start), whose
            # search the innermost op's finds too.
            level = _sorted_depth(start, end)
            np.equal(level, 0, out=outer)
            at = matched[launches[edges[i] : edges[i + 1]]]
            outermost[at], innermost[at] = _outermost_innermost_at(
                thread_rows, start, end, level, t[edges[i] : edges[i + 1]]
            )
            del level, at
        else:
            # Outermost: each op against the largest end seen before it on its thread (starting before it
            # means enclosed).
            outer[0] = True
            outer[1:] = start[1:] >= np.maximum.accumulate(end)[:-1]
    return _narrow_rows(rows[keep], size), outermost, innermost


def _ends_by_row(cols: Any, rows: np.ndarray, flag: str = "OP_TREE_ROWS") -> bool:
    """Whether the compiled pass can read the ops' ends at their rows in the end column (OP_TREE_ROWS); with
    ``flag`` OP_TREE_START_ROWS, their starts too (the start column int64 and contiguous as well)."""
    end, start = cols.end, cols.start if flag == "OP_TREE_START_ROWS" else cols.end
    return bool(
        getattr(_compiled, flag, 0)
        and end.dtype == start.dtype == np.int64
        and rows.dtype in (np.int32, np.int64)
        and end.flags.c_contiguous
        and start.flags.c_contiguous
        and rows.flags.c_contiguous
    )


def _running(
    rows: np.ndarray, start: np.ndarray, end: np.ndarray, among: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """For each time, the row of the range of ``among`` (positions into one thread's ``rows``/``start``/``end``,
    ascending, in start order) that started last at or before it, where it still runs then (-1: none)."""
    found = np.full(t.size, -1, np.int64)
    hit = intervals.running_at(start[among], end[among], t)
    found[hit >= 0] = rows[among[hit[hit >= 0]]]
    return found


def _outermost_innermost_at(
    rows: np.ndarray, start: np.ndarray, end: np.ndarray, level: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each time, (the outermost, the deepest) of one thread's op ranges (``rows``, ordered by start, longest
    first; ``level``: their ``_sorted_depth``) whose interval holds it (-1: none): each nesting level's ranges are
    disjoint, so a binary search per level finds the one running then, and deeper levels overwrite; level 0
    holds the outermost ranges (those that start once every earlier one has ended)."""
    outermost = _running(rows, start, end, np.flatnonzero(level == 0), t)
    found = outermost.copy()
    for lvl in range(1, int(level.max()) + 1):  # a loop over nesting levels
        hit = _running(rows, start, end, np.flatnonzero(level == lvl), t)
        found[hit >= 0] = hit[hit >= 0]
    return outermost, found


def ops_by_thread(cols: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` (ascending) ordered by (thread key, start, longest first, row), as ``np.lexsort`` on those
    keys orders them, and where each thread's run begins: ``rows[bounds[i]:bounds[i + 1]]`` is one thread's.

    The event table is in start order, so this is a stable grouping by thread (:func:`grouped`) plus a sort of
    the rows that tie on (thread, start), not a three-key sort of an export's tens of millions of op ranges."""
    return _by_thread(cols, rows, with_starts=False)[:2]


def _by_thread(
    cols: Any, rows: np.ndarray, with_starts: bool = True, fused: tuple[Any, ...] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`ops_by_thread` and the ordered rows' starts (the op tree's pass reads them); without
    ``with_starts``, None for the starts (none gathered: the compiled pass reads them at the rows). ``fused``: the
    rows grouped already (by thread_groups.group_kind_rows, as :func:`_grouped_compiled` gives them), or None."""
    if fused is None and rows.size == 0:
        return rows, np.zeros(1, np.int64), cols.start[rows] if with_starts else None
    fused = fused or _grouped_compiled(cols, rows, with_starts)
    start: np.ndarray | None
    ties: int | None = None  # how many rows start with the previous one of their thread (None: not counted)
    tie_at: np.ndarray | None = None  # the tied positions (where the compiled grouping found them)
    if fused is not None:
        rows, bounds, start, ties, *found = fused  # (a test's stand-in for an older build: four)
        tie_at = found[0] if found else None
    else:
        start = cols.start[rows]
        if (start[1:] < start[:-1]).any():  # a table not in start order: by start first (stable)
            order = np.argsort(start, kind="stable")
            rows, start = rows[order], start[order]
        pid, tid = cols.pid, cols.tid
        # held as thread codes (an Nsight export's store): the codes, which follow thread_key's order
        coded = isinstance(pid, CodedInts) and isinstance(tid, CodedInts) and pid.codes is tid.codes
        order, bounds = grouped(pid.codes[rows] if coded else thread_order_key(pid[rows], tid[rows]))
        rows, start = rows[order], start[order]
        del order
    # Ops of a thread starting together: longest first, then in row order (none where the grouping counted none).
    if ties == 0:
        return rows, bounds, start if with_starts else None
    if (tie := tie_at) is None:  # (else the compiled grouping's: within threads)
        tie = (
            np.flatnonzero(start[1:] == start[:-1]) if start is not None else tied_positions(cols.start, rows)
        )
        tie = tie[np.isin(tie, bounds[1:-1] - 1, invert=True)]  # a thread's last op, the next's first: no tie
    if tie.size:
        at = np.union1d(tie, tie + 1)
        # consecutive tied rows share a (thread, start): at[k] ties with at[k] + 1, the next of ``at``
        group = np.cumsum(np.r_[True, ~np.isin(at[:-1], tie)])
        tied = rows[at]
        # reordered among rows of one start: ``start`` stays the rows' starts
        rows[at] = tied[np.lexsort((tied, cols.start[tied] - cols.end[tied], group))]
    return rows, bounds, start if with_starts else None


def _grouped_compiled(
    cols: Any, rows: np.ndarray, with_starts: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int | None, np.ndarray | None] | None:
    """(``rows`` grouped by thread as :func:`grouped` orders their ``thread_key``, the bounds, their starts) by the
    compiled counting sort (_op_tree.c ``group_rows``: two passes over the rows, each row's pid, tid and start read
    there, no gathered column and no comparison and gather per thread), where the rows are in start order; None
    where it does not apply (no compiled helper, other column types, more than 255 threads, a thread the sampled
    candidates miss, rows not in start order: then :func:`_by_thread` sorts). Without ``with_starts``, where the
    build can (OP_TREE_START_ROWS), no starts are written (None for them). Last, how many rows start when the
    previous row of their thread does (GROUP_ROWS_TIES: counted in its first pass; None from a build without it),
    and where those rows are (:func:`.thread_groups.group_rows_found`; None from a build without it)."""
    pid, tid, start = cols.pid, cols.tid, cols.start
    if isinstance(pid, CodedInts) and isinstance(tid, CodedInts) and pid.codes is tid.codes:
        # thread codes (an Nsight export's store), in the threads' key order: rows grouped by code are grouped by key
        pid = tid = pid.codes
    if (
        not hasattr(_compiled, "group_rows")  # none built, or one built before it had this function
        or pid.dtype not in (np.int8, np.int16, np.int32, np.int64)
        or tid.dtype not in (np.int8, np.int16, np.int32, np.int64)
        or start.dtype != np.int64
        or rows.dtype not in (np.int32, np.int64)
        or not all(isinstance(a, np.ndarray) and a.flags.c_contiguous for a in (pid, tid, start, rows))
    ):
        return None
    starts = with_starts or not getattr(_compiled, "OP_TREE_START_ROWS", 0)  # (an older build writes them)
    if hasattr(_compiled, "group_rows_found"):  # the pass finds the threads and the ties itself
        return group_rows_found(_compiled, pid, tid, start, rows, starts)
    rows_out, start_out = np.empty_like(rows), np.empty(rows.size if starts else 0, np.int64)
    sample = rows[:: max(1, rows.size // KEY_SAMPLE)]
    candidates = np.unique(thread_key(pid[sample], tid[sample]))
    if candidates.size > 255:
        return None
    bounds = np.empty(candidates.size + 1, np.int64)
    ties = np.full(1, -1, np.int64)
    counted = getattr(_compiled, "GROUP_ROWS_TIES", 0)
    try:
        if _compiled.group_rows(
            pid, tid, start, rows, candidates, rows_out, start_out, bounds, *[ties][:counted]
        ):
            return None
    except TypeError:  # a build from before group_rows took 1- and 2-byte thread codes: numpy groups them
        return None
    return rows_out, bounds, start_out if starts else None, int(ties[0]) if counted else None, None


def op_of_gpu_ops(trace: Trace) -> np.ndarray:
    """For each row of ``launch_pairs(trace)``, the event row of its outermost op (-1 when none); once per trace."""
    return _op_tree(trace)[1]


def outermost_op_at(trace: Trace, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each (pid, tid, time), the event row of the outermost op running on that thread then (-1: none)."""
    ops = outermost_ops(trace)
    out = np.full(len(t), -1, np.int64)
    at = thread_range_at(event_columns(trace), ops, pid, tid, t)
    found = at >= 0
    out[found] = ops[at[found]]
    return out


def innermost_op_of_gpu_ops(trace: Trace) -> np.ndarray:
    """For each row of ``launch_pairs(trace)``, the event row of the innermost framework op on the launching
    thread whose interval holds the launch call's start (-1 when none): the deepest of the ops around it."""
    return _op_tree(trace)[2]


def _sorted_depth(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """:func:`tracelens.trace.nesting_depth` of one thread's intervals already ordered by (start, longest
    first): the intervals before each in that order minus those of them ended at its start."""
    # the ends nearly sorted already: timsort
    ended = intervals.search_sorted(np.sort(end, kind="stable"), start, side="right")
    # A zero-length interval at exactly s counts as "ended" before anything starting at s, including itself
    # and later-ordered ones: remove those not ordered before this interval.
    zero = end == start
    if zero.any():
        cz = np.cumsum(zero)
        last_same_start = np.searchsorted(start, start, side="right") - 1
        ended -= cz[last_same_start] - cz + zero
    np.subtract(np.arange(start.size, dtype=ended.dtype), ended, out=ended)
    np.clip(ended, 0, np.iinfo(np.int16).max, out=ended)
    return ended.astype(np.int16)


def thread_range_at(
    cols: Any, ranges: np.ndarray, pid: np.ndarray, tid: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """For each (thread, time), the index into ``ranges`` (sorted by thread and start, disjoint on a thread) of
    the range running then (start <= t < end); -1 when none. Where the ranges lie on a few threads, as
    :func:`running_on_thread_at` searches them, each thread's starts and ends gathered only for a thread asked
    about (no thread key, start and end of every range at once: the outermost ops of an emit_nvtx export)."""
    if len(t) * FEW_TIMES_PER_RANGE <= ranges.size:  # a few times: searched where the ranges lie
        return few_times_range_at(cols, ranges, thread_key(pid, tid), t)
    runs = runs_on_threads(cols.pid, cols.tid, ranges, FEW_THREADS) if ranges.size and len(t) else None
    if runs is not None and bool((runs[0][1:] > runs[0][:-1]).all()):
        keys, t = thread_key(pid, tid), np.asarray(t, dtype=np.int64)
        out = np.full(t.size, -1, np.int64)
        for i, key in enumerate(runs[0]):  # a loop over the few threads
            mine = np.flatnonzero(keys == key)
            if mine.size:
                lo, rows = int(runs[1][i]), ranges[runs[1][i] : runs[1][i + 1]]
                start, end = cols.start[rows].astype(np.int64), cols.end[rows].astype(np.int64)
                at = intervals.running_at(start, end, t[mine])
                found = at >= 0
                out[mine[found]] = at[found] + lo
        return out
    return running_on_thread_at(
        thread_key(cols.pid[ranges], cols.tid[ranges]),
        cols.start[ranges],
        cols.end[ranges],
        thread_key(pid, tid),
        t,
    )


# Ranges on at most this many threads are searched thread by thread (running_on_thread_at).
FEW_THREADS = 64


def running_on_thread_at(
    range_keys: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """:func:`~tracelens.analyses.columns.range_running_at` (ranges sorted by thread key, then start; not
    overlapping on a thread), searched thread by thread where the ranges lie on a few threads: each thread's
    times in its own ranges, without packing every range's (thread, time) into one number (factorizing the keys
    of millions of op ranges first). Same result: a time's thread holds the only ranges that can hold it."""
    t = np.asarray(t, dtype=np.int64)
    range_keys = np.asarray(range_keys)
    if range_keys.size == 0 or t.size == 0:
        return range_running_at(range_keys, starts, ends, keys, t)
    change = np.flatnonzero(range_keys[1:] != range_keys[:-1]) + 1
    run_keys = range_keys[np.r_[0, change]]
    if change.size >= FEW_THREADS or not bool((run_keys[1:] > run_keys[:-1]).all()):
        return range_running_at(range_keys, starts, ends, keys, t)
    bounds = np.r_[0, change, range_keys.size]
    starts, ends, keys = np.asarray(starts, np.int64), np.asarray(ends, np.int64), np.asarray(keys)
    out = np.full(t.size, -1, np.int64)
    for i, key in enumerate(run_keys):  # a loop over the few threads
        mine = np.flatnonzero(keys == key)
        if mine.size:
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            at = intervals.running_at(starts[lo:hi], ends[lo:hi], t[mine])
            found = at >= 0
            out[mine[found]] = at[found] + lo
    return out


def enclosing_outermost(trace: Trace, ops: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each op row in ``rows``, the outermost op (of ``ops``, sorted by thread and start) it lies in; -1
    when none (an op is its own outermost op when it is one)."""
    out = np.full(rows.size, -1, np.int64)
    if ops.size == 0 or rows.size == 0:
        return out
    cols = event_columns(trace)
    # A zero-length op holds the op starting with it (its end taken one past its start).
    at = running_on_thread_at(
        thread_key(cols.pid[ops], cols.tid[ops]),
        cols.start[ops],
        np.maximum(cols.end[ops], cols.start[ops] + 1),
        thread_key(cols.pid[rows], cols.tid[rows]),
        cols.start[rows],
    )
    out[at >= 0] = ops[at[at >= 0]]
    return out


# An op-name code for "in no op" (op-name codes are >= -1).
UNATTRIBUTED = -2


def recorded_launches_of(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(the op-name codes recorded on GPU ops, ascending; the launches of each one's GPU ops: distinct (device,
    correlation id), a GPU op without a correlation id counting as one launch)."""
    pairs = launch_pairs(trace)
    recorded = recorded_op_codes(trace)
    rec = np.flatnonzero(recorded >= 0)
    corr = pairs["correlation_id"][rec].astype(np.int64)
    launch = np.where(corr >= 0, corr, -1 - rec)
    keys = np.stack(
        [recorded[rec].astype(np.int64), np.asarray(pairs["device"][rec], np.int64), launch], axis=1
    )
    distinct = np.unique(keys, axis=0) if rec.size else keys  # drop_duplicates
    codes, launches = np.unique(distinct[:, 0], return_counts=True)  # groupby("name").size()
    return codes, launches.astype(np.int64)
