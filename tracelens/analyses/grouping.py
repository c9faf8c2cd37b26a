"""Rows grouped by host thread, and integer sums per slot: the grouping steps of the range summary
(:mod:`.ranges`), kept apart from what it measures.

Grouping by thread takes one comparison pass per thread where the threads are few (a sample of the rows names
them all, checked by the count), and a sort of per-row thread codes otherwise; both give the stable order by
thread key.
"""

from __future__ import annotations

import numpy as np

from ..values import distinct
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
    rows = np.flatnonzero(is_row)
    count = rows.size
    sample = rows[:: max(1, count // THREAD_SAMPLE)].copy()
    threads, first = np.unique(thread_key(cols.pid[sample], cols.tid[sample]), return_index=True)
    if threads.size <= SCAN_THREADS:
        # The threads of an evenly spaced sample, when their rows hold every row, are all the threads. Each
        # thread's rows are written into place one thread at a time (one thread's positions held at once).
        del rows
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
