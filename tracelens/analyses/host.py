"""What the host side recorded: time per event kind and the busiest names (the ``host`` block).

Reported for every trace, and the whole story when a trace has no GPU activity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace import ALL_KINDS, GPU_ACTIVITY_KINDS, GPU_ANNOTATION, GPU_SYNC, PYTHON, Trace
from ..values import distinct, first_seen_codes, first_seen_sums
from .columns import event_columns, thread_key
from .kinds import kind_mask
from .names import NO_NAME, is_thread_bootstrap, name_template
from .thread_codes import THREAD_RUNS_SHARE, mark_codes_where, shared_thread_codes, thread_run_heads

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

TOP_N = 10


# The compiled pass keeps the first rows of at least this many runs of one thread among the host rows.
MIN_HEADS = 1024

# Event rows read this many at a time (memory: a training export holds tens of millions of host rows).
CHUNK_ROWS = 1 << 21


def host_summary(trace: Trace, top_n: int = TOP_N) -> dict[str, Any]:
    """Count and summed duration per host event kind, the host span, and the top names by summed time."""
    cols = event_columns(trace)
    # every known kind but the GPU's: two runs of kind codes, two passes
    not_host = (*GPU_ACTIVITY_KINDS, GPU_SYNC, GPU_ANNOTATION)
    host_kinds = [k for k in ALL_KINDS if k not in not_host]
    table_rows = cols.kind.size
    # chunk by chunk: no table-long masks (41M rows); the host rows counted first, as the slots' choice below
    # reads their number
    has_gpu, host_count = False, 0
    for lo in range(0, table_rows, CHUNK_ROWS):  # a loop over chunks of rows
        kind = cols.kind[lo : lo + CHUNK_ROWS]
        host_count += int(np.count_nonzero(kind_mask(kind, host_kinds)))
        if not has_gpu:
            has_gpu = bool(
                (kind_mask(kind, GPU_ACTIVITY_KINDS) & (cols.device[lo : lo + CHUNK_ROWS] >= 0)).any()
            )
    if host_count == 0:
        return {
            "span_ns": 0,
            "threads": 0,
            "by_kind": [],
            "top": [],
            "thread_bootstrap_rows": 0,
            "has_gpu_activity": has_gpu,
        }
    width = len(cols.names) + 1
    # (kind, name) pairs as one integer slot; names are dictionary codes (-1 for a null name). Few slots for the
    # rows: count into every slot; many (a dictionary of millions of NVTX texts): a hash groupby per chunk.
    dense = _count_every_slot(len(ALL_KINDS) * width, host_count)
    kind_count = np.zeros(len(ALL_KINDS), np.int64)
    kind_total = np.zeros(len(ALL_KINDS), np.int64)
    slot_count = np.zeros(len(ALL_KINDS) * width if dense else 0, np.int64)
    slot_total = np.zeros_like(slot_count)
    partials: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    threads: list[np.ndarray] = []
    # (kind, name) slot of a row: its kind's base slot read from a table by the int8 kind code, plus its name
    # code + 1 (no int64 copy of the kinds, no multiplication per row)
    kind_base = np.arange(len(ALL_KINDS), dtype=np.int64) * width
    # pid and tid held as one array of thread codes (an Nsight export's): the codes seen flagged, a thread key
    # built per code at the end (no pid, tid or key gathered per row)
    codes = shared_thread_codes(cols.pid, cols.tid)
    seen = np.zeros(0 if codes is None else cols.pid.table.size, bool)
    first, last = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    # The table a chunk of rows at a time, its host rows picked in each: no table-long mask or index array of the
    # host rows (263 MB for the 33M host rows of a training export). The integer sums add up exactly whatever
    # the chunks, and the pairs keep their order of first appearance.
    # dense: each chunk's rows slotted where they stand (no gather of the host rows' kinds, names and times), the
    # other rows (and unknown kinds, code -1: the last entry) in one block of slots past the kinds', dropped after
    slot_base = np.append(kind_base, len(ALL_KINDS) * width)
    slot_base[[k for k in range(len(ALL_KINDS)) if ALL_KINDS[k] not in host_kinds]] = len(ALL_KINDS) * width
    every_slot = (len(ALL_KINDS) + 1) * width
    summed = (
        _slots_compiled(cols, slot_base, slot_count, slot_total, host_count)
        if dense and codes is None
        else None
    )
    if summed is not None:
        first, last, threads = summed
    # (no chunk left where the compiled pass has summed them all)
    for lo in range(0, 0 if summed is not None else table_rows, CHUNK_ROWS):  # a loop over chunks of rows
        in_host = kind_mask(cols.kind[lo : lo + CHUNK_ROWS], host_kinds)
        if dense:
            if not in_host.any():
                continue
            start, end = cols.start[lo : lo + CHUNK_ROWS], cols.end[lo : lo + CHUNK_ROWS]
            first = min(first, int(start.min(where=in_host, initial=first)))
            last = max(last, int(end.max(where=in_host, initial=last)))
            duration = end - start
            # np.take, not an index: the int8 codes not converted to intp first (~1 ms less on the tile)
            key = np.take(slot_base, cols.kind[lo : lo + CHUNK_ROWS])
            key += cols.name[lo : lo + CHUNK_ROWS]
            key += 1
            slot_count += np.bincount(key, minlength=every_slot)[: slot_count.size]
            slot_total += _exact_sums(key, duration, every_slot)[: slot_count.size]
            del start, end, duration, key
            if codes is None:
                threads.append(
                    _host_threads(cols.pid[lo : lo + CHUNK_ROWS], cols.tid[lo : lo + CHUNK_ROWS], in_host)
                )
            else:
                mark_codes_where(codes[lo : lo + CHUNK_ROWS], in_host, seen)
            continue
        rows = np.flatnonzero(in_host)
        if rows.size == 0:
            continue
        rows += lo
        kind, start, end = cols.kind[rows], cols.start[rows], cols.end[rows]
        duration = end - start
        first, last = min(first, int(start.min())), max(last, int(end.max()))
        del start, end
        key = kind_base[kind]
        key += cols.name[rows]
        key += 1
        kind_count += np.bincount(kind, minlength=len(ALL_KINDS))
        kind_total += _exact_sums(kind, duration, len(ALL_KINDS))
        partials.append(first_seen_sums(key, duration))
        del key, kind, duration
        if codes is None:
            threads.append(_chunk_threads(cols.pid[rows], cols.tid[rows]))
        else:
            mark_codes_where(codes[lo : lo + CHUNK_ROWS], in_host, seen)
        del in_host
    if codes is not None:
        picked = np.flatnonzero(seen)
        threads.append(_chunk_threads(cols.pid.table[picked], cols.tid.table[picked]))
    if dense:
        # a kind's slots are one row of the (kind, name) table; their integer sums add up exactly
        kind_count = slot_count.reshape(len(ALL_KINDS), width).sum(axis=1)
        kind_total = slot_total.reshape(len(ALL_KINDS), width).sum(axis=1)
        pairs = np.flatnonzero(slot_count)
        totals, counts = slot_total[pairs], slot_count[pairs]
    else:
        # the chunks' pairs in their order (each chunk's in order of first appearance), summed again: the pairs in
        # order of first appearance over all rows, as pd.concat(...).groupby(level=0, sort=False).sum() gives them
        chunk_pairs = np.concatenate([pairs for pairs, _, _ in partials])
        pairs, totals, _ = first_seen_sums(chunk_pairs, np.concatenate([sums for _, sums, _ in partials]))
        _, counts, _ = first_seen_sums(chunk_pairs, np.concatenate([sizes for _, _, sizes in partials]))
    by_kind = [
        {"kind": ALL_KINDS[k], "count": int(kind_count[k]), "total_ns": int(kind_total[k])}
        for k in sorted(np.flatnonzero(kind_count), key=lambda k: ALL_KINDS[k])
    ]
    totals = totals - _nested_overlap(cols, pairs, width)
    pair_kind, pair_name = pairs // width, pairs % width - 1
    labels = _labels(cols.names, pair_name)
    top, folded = _top_by_template(pair_kind, labels, totals, counts, top_n)
    return {
        "span_ns": int(last - first),
        "threads": int(distinct(np.concatenate(threads)).size),
        "by_kind": by_kind,
        "top": top,
        "thread_bootstrap_rows": folded,
        "has_gpu_activity": has_gpu,
    }


# The kinds whose rows nest inside rows of their own name on one thread: Python frames (a recursive call; torch's
# module ``_call_impl`` inside ``_call_impl`` on every nested module, as with_stack=True records it).
RECURSIVE_KINDS = (PYTHON,)


def _nested_overlap(cols: Any, pairs: np.ndarray, width: int) -> np.ndarray:
    """Per (kind, name) slot of ``pairs``: the time its rows of RECURSIVE_KINDS cover more than once on a thread
    (Σ durations − the union of its rows' intervals per thread), so that the slot's total less this is the time the
    name held its threads, not its frames summed: _call_impl's rows summed to 21.8 ms in a 4.87 ms host span on two
    threads. Rows sorted by (thread, name, start); a row adds the part of it past the latest end of the rows of its
    group before it (nested rows add nothing)."""
    out = np.zeros(pairs.size, np.int64)
    codes = [ALL_KINDS.index(k) for k in RECURSIVE_KINDS]
    rows = np.flatnonzero(np.isin(cols.kind, codes))
    if rows.size < 2:
        return out
    name, start, end = cols.name[rows], cols.start[rows], cols.end[rows]
    end = np.maximum(end, start)
    thread = thread_key(cols.pid[rows], cols.tid[rows])
    order = np.lexsort((start, name, thread, cols.kind[rows]))
    kind, name, thread = cols.kind[rows][order], name[order], thread[order]
    start, end = start[order], end[order]
    del order, rows
    new_group = np.ones(start.size, bool)
    new_group[1:] = (kind[1:] != kind[:-1]) | (name[1:] != name[:-1]) | (thread[1:] != thread[:-1])
    group = np.cumsum(new_group) - 1
    # the running latest end within each group: ends shifted by the group so that one running maximum never carries
    # an end from one group into the next (groups x (span + 1) stays far below 2**63 for any real trace)
    low, span = int(start.min()), int(end.max() - start.min()) + 1
    if int(group[-1]) + 1 > (2**62) // span:  # pragma: no cover - beyond any trace: left as summed
        return out
    shift = group * span - low
    running = np.maximum.accumulate(end + shift) - shift
    before = np.empty_like(running)
    before[0] = np.iinfo(np.int64).min
    before[1:] = running[:-1]
    before[new_group] = np.iinfo(np.int64).min
    counted = end - np.maximum(start, np.minimum(before, end))
    repeated = (end - start) - counted
    at = np.flatnonzero(repeated)
    if at.size == 0:
        return out
    slot = kind[at].astype(np.int64) * width + name[at] + 1
    # each slot's position among the pairs (ascending in the dense path, in order of first appearance otherwise)
    ascending = np.argsort(pairs, kind="stable")
    position = ascending[np.searchsorted(pairs[ascending], slot)]
    np.add.at(out, position, repeated[at])
    return out


def _top_by_template(
    kind: np.ndarray, labels: np.ndarray, totals: np.ndarray, counts: np.ndarray, top_n: int
) -> tuple[list[dict[str, Any]], int]:
    """The top (kind, template name) pairs by summed time, each with the number of distinct names it groups
    (``ProfilerStep#0``, ``ProfilerStep#1`` -> ``ProfilerStep#N``; ``aten::mm, op_id = 5`` -> ``aten::mm``);
    Python thread-bootstrap frames are left out (they span their thread's life) and counted."""
    names = [str(label) for label in labels.tolist()]  # a loop over the few thousand pairs
    distinct_names = list(dict.fromkeys(names))
    # per name; a null or empty name is listed as NO_NAME
    template = dict(zip(distinct_names, (name_template(n) or NO_NAME for n in distinct_names), strict=True))
    is_bootstrap = {n: is_thread_bootstrap(n) for n in distinct_names}
    bootstrap = np.fromiter(map(is_bootstrap.__getitem__, names), bool, len(names))
    # grouped by (kind, template) in order of first appearance, then the largest totals first (ties by template,
    # then that order): numpy on the few thousand pairs, not a pandas groupby and sort (half the section's time)
    keep = ~bootstrap
    templates = np.empty(len(names), object)
    templates[:] = [template[n] for n in names]
    templates = templates[keep]
    kind, totals_kept, counts_kept = np.asarray(kind, np.int64)[keep], totals[keep], counts[keep]
    template_code, template_values = first_seen_codes(templates)
    group, group_keys = first_seen_codes(kind * max(len(template_values), 1) + template_code)
    groups = len(group_keys)
    group_total = np.zeros(groups, np.int64)
    np.add.at(group_total, group, totals_kept)
    group_count = np.zeros(groups, np.int64)
    np.add.at(group_count, group, counts_kept)
    group_names = np.bincount(group, minlength=groups)
    group_kind, group_template = np.divmod(group_keys, max(len(template_values), 1))
    template_rank = np.empty(len(template_values), np.int64)
    template_rank[sorted(range(len(template_values)), key=template_values.__getitem__)] = np.arange(
        len(template_values)
    )
    order = np.lexsort((np.arange(groups), template_rank[group_template], -group_total))[:top_n]
    top = [
        {
            "kind": ALL_KINDS[int(group_kind[g])],
            "name": str(template_values[group_template[g]]),
            "count": int(group_count[g]),
            "total_ns": int(group_total[g]),
            "names": int(group_names[g]),
        }
        for g in order
    ]
    return top, int(counts[bootstrap].sum())


def _labels(names: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Object array: the name of each code, "" for a null name (-1): one gather, not a Python step per pair
    (tens of thousands of pairs where every NVTX text is a name)."""
    labels = np.empty(codes.size, dtype=object)
    known = codes >= 0
    labels[known] = names[codes[known]]
    labels[~known] = ""
    return labels


def _chunk_threads(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """The distinct thread keys (``thread_key``) of the (pid, tid) pairs with both known. Where they are of one
    process (a PyTorch profile's host rows), the thread ids alone are hashed and the few distinct ones made keys:
    no thread key built for every row."""
    if pid.size > 1:
        # host rows in time order come in long runs on one thread: one row of each run kept (the same distinct keys)
        runs = thread_run_heads(pid, tid)
        if runs.size <= THREAD_RUNS_SHARE * pid.size:
            pid, tid = pid[runs], tid[runs]
        del runs
    known = (pid >= 0) & (tid >= 0)
    pid, tid = pid[known], tid[known]
    if pid.size and int(pid.min()) == int(pid.max()):
        ids = distinct(tid)
        return thread_key(np.full(ids.size, pid[0], pid.dtype), ids)
    return distinct(thread_key(pid, tid))


def _host_threads(pid: Any, tid: Any, in_host: np.ndarray) -> np.ndarray:
    """:func:`_chunk_threads` of the rows where ``in_host`` is set: from the first row of each run of rows of one
    (pid, tid, in_host), where pid and tid are arrays (no compress of every host row's pid and tid: 12 -> 5 ms
    for the 1.3M host rows of the 406 MB Kineto tile, on ~2K runs)."""
    if not (isinstance(pid, np.ndarray) and isinstance(tid, np.ndarray)) or pid.size < 2:
        return _chunk_threads(np.compress(in_host, pid), np.compress(in_host, tid))
    starts = thread_run_heads(pid, tid, in_host)
    starts = starts[in_host[starts]]
    return _chunk_threads(pid[starts], tid[starts])


def _slots_compiled(
    cols: Any, slot_base: np.ndarray, slot_count: np.ndarray, slot_total: np.ndarray, host_count: int
) -> tuple[int, int, list[np.ndarray]] | None:
    """The host rows' counts and summed durations added into ``slot_count`` and ``slot_total`` (each row's slot:
    ``slot_base`` at its kind plus its name code + 1; the host kinds' bases below ``slot_count.size``), their least
    start, largest end and distinct threads (:func:`_chunk_threads`), by one compiled pass over the event rows
    (``_merge_search.host_slots``): no kind mask, durations, slots, bincounts and run heads per chunk. None where
    the pass is not built or the columns are not plain arrays (an Nsight export's thread codes: the chunks then)."""
    kind, name, start, end, pid, tid = cols.kind, cols.name, cols.start, cols.end, cols.pid, cols.tid
    if (
        not hasattr(_compiled, "host_slots")
        or not all(
            isinstance(a, np.ndarray) and a.flags.c_contiguous for a in (kind, name, start, end, pid, tid)
        )
        or kind.dtype != np.int8
        or name.dtype not in (np.int32, np.int64)
        or start.dtype != np.int64
        or end.dtype != np.int64
        or pid.dtype not in (np.int32, np.int64)
        or tid.dtype not in (np.int32, np.int64)
    ):
        return None
    # the runs of one thread among the host rows (2,243 in the 1.3M host rows of the 406 MB Kineto tile): their
    # first rows, at most this many (more: the threads found from every host row's in numpy)
    heads = np.empty(max(MIN_HEADS, int(THREAD_RUNS_SHARE * host_count)), np.int64)
    first, last, found = _compiled.host_slots(
        kind, name, start, end, pid, tid, slot_base, slot_count.size, slot_count, slot_total, heads
    )
    if found >= 0:
        heads = heads[:found]
        threads = [_chunk_threads(pid[heads], tid[heads])]
    else:
        host = kind_mask(kind, [k for i, k in enumerate(ALL_KINDS) if slot_base[i] < slot_count.size])
        threads = [_host_threads(pid, tid, host)]
    return first, last, threads


def _count_every_slot(slots: int, rows: int) -> bool:
    return slots <= 4 * rows + 1024


def _exact_sums(slot: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Integer sums of ``values`` per slot (bincount sums in float64: exact while a chunk's sum per slot stays
    below 2^53 ns, 104 days)."""
    return np.rint(np.bincount(slot, weights=values, minlength=size)).astype(np.int64)


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return host_summary(trace)
