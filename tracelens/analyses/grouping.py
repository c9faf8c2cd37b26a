"""Rows grouped by host thread, integer sums per slot, and per-group firsts and medians: the grouping steps of
the range summary (:mod:`.ranges`) and of the one-time work (:mod:`.startup`), kept apart from what they measure.

Grouping by thread takes one comparison pass per thread where the threads are few (a sample of the rows names
them all, checked by the count), and a sort of per-row thread codes otherwise; both give the stable order by
thread key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from ..values import dense_codes, distinct, first_seen_codes
from .columns import EventColumns, thread_key

# Up to this many threads, ranges are put in thread order by one comparison pass per thread instead of a code
# per range (a binary search) and a sort of the codes: 6.7M ranges on 2 threads, ~0.04 s against ~0.25 s.
FEW_THREADS = 16
THREAD_SAMPLE = 4096


def thread_order(keys: np.ndarray) -> np.ndarray:
    """The stable order of ``keys`` by thread key (ascending), ties in their order."""
    return thread_runs(keys)[0]


def thread_runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the stable order of ``keys`` by thread key, the distinct keys ascending, how many of each): in that
    order each thread's keys form one run."""
    # The threads of an evenly spaced sample of the keys, when they are few and their runs hold every key, are
    # all the threads: no hash of every key.
    sample = np.unique(keys[:: max(1, keys.size // THREAD_SAMPLE)])
    if 0 < sample.size <= FEW_THREADS:
        parts = [np.flatnonzero(keys == key) for key in sample]
        if sum(p.size for p in parts) == keys.size:
            return np.concatenate(parts), sample, np.array([p.size for p in parts], np.int64)
    threads = np.sort(distinct(keys))
    if 0 < threads.size <= FEW_THREADS:
        parts = [np.flatnonzero(keys == key) for key in threads]
        return np.concatenate(parts), threads, np.array([p.size for p in parts], np.int64)
    code = np.searchsorted(threads, keys)
    order = np.argsort(code.astype(np.int16) if threads.size < 2**15 else code, kind="stable")
    return order, threads, np.bincount(code, minlength=threads.size)


# Up to this many threads, the ranges of each are found by comparing the whole table's pid and tid columns to
# the thread's (three passes over the table's bytes per thread), not by a thread key gathered for every range,
# a pass over those keys per thread and a gather of the rows in that order: 6.7M ranges of 11M rows on 2 threads,
# ~0.04 s against ~0.12 s.
SCAN_THREADS = 4


def rows_by_thread(cols: EventColumns, is_row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(``np.flatnonzero(is_row)`` in stable thread-key order, the distinct thread keys ascending, how many rows
    each holds), as ``thread_runs`` of their thread keys gives them; the positions as int32 where the table has
    fewer than 2^31 rows and at most SCAN_THREADS threads."""
    count = int(np.count_nonzero(is_row))
    # the rows among an evenly spaced sample of the table (no position array of every row: 25M NVTX ranges)
    sample = np.arange(0, is_row.size, max(1, is_row.size // (4 * THREAD_SAMPLE)))
    sample = sample[is_row[sample]]
    threads, first = np.unique(thread_key(cols.pid[sample], cols.tid[sample]), return_index=True)
    if threads.size <= SCAN_THREADS:
        # The threads of an evenly spaced sample, when their rows hold every row, are all the threads. Each
        # thread's rows are written into place one thread at a time (one thread's positions held at once).
        # int32 positions where the table allows (half the memory, held through every chunk)
        out = np.empty(count, np.int32 if is_row.size < 2**31 else np.int64)
        lengths = []
        filled = 0
        for pid, tid in zip(cols.pid[sample[first]], cols.tid[sample[first]], strict=True):  # a few threads
            mine = cols.pid == pid
            mine &= cols.tid == tid
            mine &= is_row
            part = np.flatnonzero(mine)
            del mine
            if filled + part.size > count:
                break
            out[filled : filled + part.size] = part
            filled += part.size
            lengths.append(part.size)
            del part
        else:
            if filled == count:
                return out, threads, np.array(lengths, np.int64)
        del out
    rows = np.flatnonzero(is_row)
    order, run_keys, run_lengths = thread_runs(thread_key(cols.pid[rows], cols.tid[rows]))
    return rows[order], run_keys, run_lengths


# Rows of the table compared at once by :func:`thread_chunks` (a few masks of a byte per row).
SCAN_BLOCK_ROWS = 1 << 20


def thread_chunks(
    cols: EventColumns, code: int, count: int, chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, slice | None]]:
    """The ``count`` rows of kind ``code`` in :func:`rows_by_thread`'s order, cut into chunks of about ``chunk``
    rows: (the rows (int64), the thread keys ascending, how many of the rows each holds, None).

    Where a sample names at most SCAN_THREADS threads, each thread's rows are found by comparing the table's
    kind, pid and tid a block of rows at a time, and handed on a chunk at a time: neither a mask of the whole
    table nor the position of every row is held (25M NVTX ranges: 41 MB and 100-200 MB). Rows of threads the
    sample missed come after, in their own thread order (chunks of several threads); with more threads, the rows
    of :func:`rows_by_thread` cut in chunks, the slice of them each chunk is given instead of None."""
    kind, n = cols.kind, cols.kind.size
    sample = np.arange(0, n, max(1, n // (4 * THREAD_SAMPLE)))
    sample = sample[kind[sample] == code]
    threads, first = np.unique(thread_key(cols.pid[sample], cols.tid[sample]), return_index=True)
    if threads.size > SCAN_THREADS:
        rows, run_keys, run_lengths = rows_by_thread(cols, kind == code)
        yield from cut_in_chunks(rows, run_keys, run_lengths, chunk)
        return
    pids, tids = cols.pid[sample[first]], cols.tid[sample[first]]
    if count < min(chunk, FEW_SCAN_ROWS):
        # few rows of the kind (the 2,210 ranges of the 406 MB Kineto tile): found once, each thread's picked among
        # them, not one scan of the table's kind, pid and tid per thread. The same chunks: each thread's rows in one
        # (fewer than ``chunk``), then the rows of the threads the sample missed
        yield from _few_thread_chunks(cols, code, chunk, threads, pids, tids)
        return
    found = 0
    for i, (pid, tid) in enumerate(zip(pids, tids, strict=True)):  # a few threads
        parts: list[np.ndarray] = []
        held = 0
        for lo in range(0, n, SCAN_BLOCK_ROWS):  # a loop over blocks of rows
            at = slice(lo, lo + SCAN_BLOCK_ROWS)
            mine = kind[at] == code
            mine &= cols.pid[at] == pid
            mine &= cols.tid[at] == tid
            part = np.flatnonzero(mine)
            del mine
            if part.size:
                part += lo
                parts.append(part)
                held += part.size
            if held >= chunk or (held and lo + SCAN_BLOCK_ROWS >= n):
                found += held
                yield np.concatenate(parts), threads[i : i + 1], np.array([held]), None
                parts, held = [], 0
    if found == count:
        return
    # The threads the sample missed: their rows (none of the sampled threads'), in thread order.
    rest = []
    for lo in range(0, n, SCAN_BLOCK_ROWS):  # a loop over blocks of rows
        at = slice(lo, lo + SCAN_BLOCK_ROWS)
        other = kind[at] == code
        for pid, tid in zip(pids, tids, strict=True):  # a few threads
            other &= (cols.pid[at] != pid) | (cols.tid[at] != tid)
        rest.append(np.flatnonzero(other) + lo)
    rows = np.concatenate(rest)
    del rest
    yield from _missed_thread_chunks(cols, rows, chunk)


def _missed_thread_chunks(
    cols: EventColumns, rows: np.ndarray, chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, slice | None]]:
    """:func:`thread_chunks`' chunks of the rows (ascending) of the threads its sample missed, in thread order."""
    order, run_keys, run_lengths = thread_runs(thread_key(cols.pid[rows], cols.tid[rows]))
    for part, keys, lengths, _ in cut_in_chunks(rows[order], run_keys, run_lengths, chunk):
        yield part, keys, lengths, None


# thread_chunks finds the rows of a kind first where it has fewer than this many.
FEW_SCAN_ROWS = 1 << 17


def _few_thread_chunks(
    cols: EventColumns, code: int, chunk: int, threads: np.ndarray, pids: np.ndarray, tids: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, slice | None]]:
    """:func:`thread_chunks` where the kind has fewer than ``chunk`` rows: its rows found a block at a time, then
    each sampled thread's (``threads``: their keys, ``pids``/``tids``: their ids) picked by its pid and tid read at
    those rows only; one chunk per thread that has rows, then the rows no sampled thread holds."""
    kind = cols.kind
    rows = np.concatenate(
        [np.zeros(0, np.int64)]
        + [
            np.flatnonzero(kind[lo : lo + SCAN_BLOCK_ROWS] == code) + lo
            for lo in range(0, kind.size, SCAN_BLOCK_ROWS)  # a loop over blocks of rows
        ]
    )
    pid_at, tid_at = cols.pid[rows], cols.tid[rows]
    taken = np.zeros(rows.size, bool)
    for i, (pid, tid) in enumerate(zip(pids, tids, strict=True)):  # a few threads
        mine = (pid_at == pid) & (tid_at == tid)
        taken |= mine
        part = rows[mine]
        if part.size:
            yield part, threads[i : i + 1], np.array([part.size]), None
    if not taken.all():
        yield from _missed_thread_chunks(cols, rows[~taken], chunk)


def cut_in_chunks(
    rows: np.ndarray, run_keys: np.ndarray, run_lengths: np.ndarray, chunk: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, slice | None]]:
    """Rows in thread runs cut into chunks of ``chunk``: (the chunk's rows (intp), the thread keys, how many of
    the chunk's rows each holds, the chunk's slice of ``rows``)."""
    run_edges = np.concatenate([[0], np.cumsum(run_lengths)])
    for lo in range(0, rows.size, chunk):  # a loop over chunks of rows
        hi = min(lo + chunk, rows.size)
        in_chunk = np.clip(run_edges[1:], lo, hi) - np.clip(run_edges[:-1], lo, hi)
        yield rows[lo:hi].astype(np.intp, copy=False), run_keys, in_chunk, slice(lo, hi)


# Summed as float64 below this bound (2^53): every partial sum of integers is then exact.
_EXACT_FLOAT = 2**53


def sum_per_slot(slot: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """``np.add.at(np.zeros(size, np.int64), slot, values)`` for integer values: one ``np.bincount`` where its
    float64 sums are exact (the values' largest magnitude times their count below 2^53, so that every partial
    sum is an integer float64 holds), ``np.add.at`` otherwise."""
    out = np.zeros(size, np.int64)
    if values.size == 0:
        return out
    if max(int(values.max()), -int(values.min())) * values.size < _EXACT_FLOAT:
        return np.bincount(slot, weights=values, minlength=size).astype(np.int64)
    np.add.at(out, slot, values)
    return out


def group_firsts(
    outer: np.ndarray, inner: np.ndarray, start: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by (outer, inner), each group in start order (ties in row order): (the order, whether each
    ordered row is its group's first, each ordered row's group number). Groups come in no particular order."""
    if start.size > 1 and bool((start[1:] >= start[:-1]).all()):
        # rows in start order already (host rows are): a stable sort by group alone keeps that order within each
        # group; groups numbered by hashing (few: names x threads), sorted by radix where they fit 16 bits
        outer_code = first_seen_codes(outer)[0].astype(np.int64)
        code, uniques = first_seen_codes(outer_code * (int(inner.max()) + 1) + inner)
        order = np.argsort(code.astype(np.uint16) if uniques.size < 2**16 else code, kind="stable")
        ordered = code[order]
    else:
        order = np.lexsort((start, inner, outer))  # stable: ties keep row order
        ordered = None
    first = np.ones(order.size, bool)
    if ordered is not None:
        first[1:] = ordered[1:] != ordered[:-1]
    else:
        o, i = outer[order], inner[order]
        first[1:] = (o[1:] != o[:-1]) | (i[1:] != i[:-1])
    return order, first, np.cumsum(first) - 1


def group_medians(group: np.ndarray, values: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(per group: its median as float64 (NaN without values), its value count). The median of an even count is
    the mean of the middle two, as pandas' groupby median computes it: (a + b) / 2 in float64."""
    counts = np.bincount(group, minlength=groups)
    medians = np.full(groups, np.nan)
    if values.size:
        low = int(values.min())
        width = int(values.max()) - low + 1
        if groups * width < 2**62:  # (group, value) packed into one int64: one sort of plain integers
            packed = np.sort(group.astype(np.int64) * width + (values - low))
            ordered = (packed % width + low).astype(np.float64)
        else:
            ordered = values[np.lexsort((values, group))].astype(np.float64)
        starts = np.cumsum(counts) - counts
        has = np.flatnonzero(counts)
        lo = starts[has] + (counts[has] - 1) // 2
        hi = starts[has] + counts[has] // 2
        medians[has] = (ordered[lo] + ordered[hi]) / 2
    return medians, counts


def group_codes(outer: np.ndarray, inner: np.ndarray) -> tuple[np.ndarray, int]:
    """(dense group number of each row's (outer, inner) pair, number of groups); numbers in no particular order.
    Pairs of ints in a small range (names x processes) are numbered through a table of the range, others by
    hashing."""
    limit = max(4 * outer.size, 1 << 16)
    inner_lo, inner_span = int(inner.min()), int(inner.max()) - int(inner.min()) + 1
    outer_lo, outer_span = int(outer.min()), int(outer.max()) - int(outer.min()) + 1
    if outer_span * inner_span < limit:
        key = outer.astype(np.int64)
        key -= outer_lo
    else:
        key = first_seen_codes(outer)[0].astype(np.int64)
    key *= inner_span
    key += inner
    key -= inner_lo
    if int(key.max()) < limit:
        present = np.zeros(int(key.max()) + 1, bool)
        present[key] = True
        number = np.cumsum(present) - 1
        if number[-1] < 2**31:  # int32 numbers: the rows' codes half as wide (8.8M API calls)
            number = number.astype(np.int32)
        return number[key], int(number[-1]) + 1
    code, uniques = first_seen_codes(key)
    return code.astype(np.int64), int(uniques.size)


def medians_of(group: np.ndarray, values: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """``group_medians`` for a few groups: each group's middle values found by a partition of its values (no
    sort of them all), giving the same (a + b) / 2."""
    if groups > 8:
        return group_medians(group, values, groups)
    counts = np.bincount(group, minlength=groups)
    medians = np.full(groups, np.nan)
    for g in np.flatnonzero(counts):  # a loop over the few groups
        # np.compress, not values[mask]: 3x faster where the groups interleave
        middle = np.compress(group == g, values) if groups > 1 else values.copy()
        lo, hi = (middle.size - 1) // 2, middle.size // 2
        # one selection, not two (5x cheaper): the element at hi in place, and everything before it no larger, so
        # the one at lo (hi - 1 where the count is even) is the largest of those; in place in the group's own copy
        # (np.partition's copy of it: another array of its size)
        middle.partition(hi)
        low = middle[hi] if lo == hi else middle[:hi].max()
        medians[g] = (float(low) + float(middle[hi])) / 2
    return medians, counts


# Rows whose starts :func:`tied_positions` gathers at once (8 MiB of int64).
TIE_BLOCK = 1 << 20


def tied_positions(start: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(start[rows][1:] == start[rows][:-1])``: the positions i (ascending, int64) where ``rows[i]``
    starts when ``rows[i + 1]`` does, the start column read a block of rows at a time (no gathered copy of the
    starts of tens of millions of op ranges)."""
    parts = [np.zeros(0, np.int64)]
    for lo in range(0, rows.size - 1, TIE_BLOCK):  # a loop over blocks of rows
        block = start[rows[lo : lo + TIE_BLOCK + 1]]
        found = np.flatnonzero(block[1:] == block[:-1])
        found += lo
        parts.append(found)
        del block
    return np.concatenate(parts)


def runs_on_threads(
    pid: np.ndarray, tid: np.ndarray, rows: np.ndarray, most: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(the thread key of each run of rows on one thread, in order; where each run begins, and the last ends) of
    ``rows`` (non-empty) as ``thread_key(pid[rows], tid[rows])`` changes along them, found a block of rows at a
    time (no thread key of every row at once); None where the key changes ``most`` times or more."""
    change: list[int] = []
    previous = None
    for lo in range(0, rows.size, TIE_BLOCK):  # a loop over blocks of rows
        block = rows[lo : lo + TIE_BLOCK]
        key = thread_key(pid[block], tid[block])
        if previous is not None and key[0] != previous:
            change.append(lo)
        found = np.flatnonzero(key[1:] != key[:-1])
        found += lo + 1
        change.extend(found[:most].tolist())
        if len(change) >= most:
            return None
        previous = key[-1]
        del block, key
    first = rows[np.r_[0, change].astype(np.int64)]
    return thread_key(pid[first], tid[first]), np.r_[0, change, rows.size].astype(np.int64)


# Up to this many distinct keys, :func:`grouped` finds each key's positions by a comparison; above, by a sort.
FEW_GROUPS = 8
KEY_SAMPLE = 1 << 16  # about this many keys, evenly spaced, name the candidate keys


def grouped(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, bounds): the positions of ``key`` (non-empty) ordered by key, stably (``np.argsort(key,
    kind="stable")``), and where each key's run begins and the last ends (``order[bounds[i]:bounds[i + 1]]``
    holds one key's positions, ascending).

    Op ranges lie on a handful of threads: evenly spaced keys name the candidates, each one's positions are
    found by one comparison, in ascending key order, and where they account for every position that is the
    order (a few passes per thread instead of factorizing and sorting tens of millions of keys). Beyond
    :data:`FEW_GROUPS` candidates, or where some key was not sampled: codes and one stable sort."""
    candidates = np.unique(key[:: max(1, key.size // KEY_SAMPLE)])
    if candidates.size <= FEW_GROUPS:
        # each key's positions written in place, not concatenated: one order array at a time
        order = np.empty(key.size, np.intp)
        bounds = [0]
        for k in candidates:  # a loop over a few keys (distinct: their positions never exceed the keys')
            part = np.flatnonzero(key == k)
            order[bounds[-1] : bounds[-1] + part.size] = part
            bounds.append(bounds[-1] + part.size)
            del part
        if bounds[-1] == key.size:
            return order, np.array(bounds, np.int64)
        del order
    code = dense_codes(key)[0]
    code = code.astype(np.int16) if code.max() < np.iinfo(np.int16).max else code
    order = np.argsort(code, kind="stable")
    code = code[order]
    return order, np.r_[0, np.flatnonzero(code[1:] != code[:-1]) + 1, code.size].astype(np.int64)


# Up to one time asked about per this many ranges, :func:`few_times_range_at` searches the ranges where they lie
# instead of gathering every range's thread, start and end (12k blocking calls among 6.6M outermost ops at x1512).
FEW_TIMES_PER_RANGE = 64


def few_times_range_at(cols: EventColumns, ranges: np.ndarray, keys: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each (thread key, time), the index into ``ranges`` (event rows sorted by thread key, then start) of the
    last range of that thread starting at or before the time, where it still runs then (start <= t < end); -1
    where none: a binary search of the ranges' thread keys, then of each time's thread's starts, each step reading
    the columns at the few positions it probes (about 2 x 23 gathers of ``t.size`` values, no column of every
    range gathered)."""
    t = np.asarray(t, dtype=np.int64)
    out = np.full(t.size, -1, np.int64)
    if ranges.size == 0 or t.size == 0:
        return out
    wanted, which = np.unique(np.asarray(keys, np.int64), return_inverse=True)  # the few threads asked about
    none, every = np.zeros(wanted.size, np.int64), np.full(wanted.size, ranges.size, np.int64)

    def key_at(at: np.ndarray) -> np.ndarray:
        return thread_key(cols.pid[ranges[at]], cols.tid[ranges[at]])

    lo = _first_position(lambda at: key_at(at) >= wanted, none, every, ranges.size)[which]
    hi = _first_position(lambda at: key_at(at) > wanted, none, every, ranges.size)[which]
    # each time's thread's ranges are [lo, hi): the first of them starting after the time, less one
    at = _first_position(lambda at: cols.start[ranges[at]] > t, lo, hi, ranges.size) - 1
    found = np.flatnonzero(at >= lo)
    found = found[t[found] < cols.end[ranges[at[found]]]]
    out[found] = at[found]
    return out


def _first_position(
    past: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray, size: int
) -> np.ndarray:
    """Per item, the first position p in [lo, hi) where ``past(positions)[item]`` holds (hi where none), ``past``
    false then true along each span: a vectorized binary search, ``past`` given one position in [0, size) per item
    at each step (an item already found probes its own lo again, its answer unused)."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = np.where(open_, (lo + hi) // 2, np.minimum(lo, size - 1))
        yes = past(mid)
        hi = np.where(open_ & yes, mid, hi)
        lo = np.where(open_ & ~yes, mid + 1, lo)
