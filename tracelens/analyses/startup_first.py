"""The first rows of groups (a name's first call on a thread, an API's first call in a process) that last long,
with the median of their group's later rows: the first_call and first_api rules of :mod:`.startup`.

The rows of names without a long row are dropped before any grouping (a first row that long is a long row of its
name), and where the rows asked about are most of the table, the long ones are found from every row's duration a
chunk at a time, without gathering the rows' times first.
"""

from __future__ import annotations

import numpy as np

from .columns import EventColumns
from .grouping import group_codes, group_firsts, group_medians, medians_of
from .names import rows_named


def long_first_rows(
    outer: np.ndarray, inner: np.ndarray, start: np.ndarray, duration: np.ndarray, min_first: int
) -> tuple[np.ndarray, np.ndarray]:
    """(positions ascending, medians): the rows that are the first of their (outer, inner) group (in start order,
    ties in row order), last >= ``min_first`` and have later rows, with the median of the later rows' durations.

    A group whose first row lasts ``min_first`` has a row that long, so only the rows of the inner codes (names)
    with such a row are grouped (often none, or a few names): the same groups, their rows in the same order."""
    long = duration >= min_first
    if not long.any():
        return np.empty(0, np.int64), np.empty(0)
    if inner.dtype.kind in "iu" and int(inner.min()) >= 0 and int(inner.max()) < 4 * inner.size + 1024:
        table = np.zeros(int(inner.max()) + 2, bool)  # the last slot (never an inner code here) stays clear
        table[inner[long]] = True
        del long
        picked = rows_named(inner, table)
        assert picked is not None  # some code has a long row
        if not picked.all():
            at = np.flatnonzero(picked)
            del picked
            firsts, medians = grouped_first_rows(outer[at], inner[at], start[at], duration[at], min_first)
            return at[firsts], medians
    return grouped_first_rows(outer, inner, start, duration, min_first)


def grouped_first_rows(
    outer: np.ndarray, inner: np.ndarray, start: np.ndarray, duration: np.ndarray, min_first: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`long_first_rows` of every row given, grouped.

    On rows in start order (API calls and ops are), each group's first row is found by one scatter over dense
    group numbers (no sort of all the rows by group), and only the groups whose first row is long enough (few)
    have their later rows' median taken."""
    if start.size > 1 and bool((start[1:] >= start[:-1]).all()):
        code, groups = group_codes(outer, inner)
        first_at = np.empty(groups, np.int64)
        first_at[code[::-1]] = np.arange(code.size)[::-1]  # the last write, the smallest position, stays
        firsts = np.sort(first_at[duration[first_at] >= min_first])
        if firsts.size == 0:
            return firsts, np.empty(0)
        # each candidate group's number among the candidates (-1: not one), as narrow as they fit: one gather
        # gives every row's, read for both the later rows and their groups
        wanted = np.full(groups, -1, np.int8 if firsts.size < 2**7 else np.int64)
        wanted[code[firsts]] = np.arange(firsts.size)
        member = wanted[code]
        del code
        is_later = member >= 0
        is_later[firsts] = False
        later = np.flatnonzero(is_later)
        del is_later
        medians, counts = medians_of(member[later], duration[later], firsts.size)
        has_later = counts > 0  # a name seen once has no baseline
        return firsts[has_later], medians[has_later]
    order, first, group = group_firsts(outer, inner, start)
    ordered = duration[order]
    at = np.flatnonzero(first & (ordered >= min_first))
    wanted_group = np.zeros(int(group[-1]) + 1, bool)
    wanted_group[group[at]] = True
    later = ~first & wanted_group[group]
    medians, counts = group_medians(group[later], ordered[later], wanted_group.size)
    at = at[counts[group[at]] > 0]
    firsts, median = order[at], medians[group[at]]
    by_position = np.argsort(firsts)
    return firsts[by_position], median[by_position]


# names_lasting reads the durations of every row of the table, a chunk at a time, where the rows asked about are
# at least this share of them; else it gathers theirs.
_WHOLE_TABLE_SHARE = 0.25
_CHUNK_ROWS = 1 << 22


def names_lasting(cols: EventColumns, mask: np.ndarray, rows: np.ndarray, min_ns: int) -> np.ndarray:
    """A bool per name code (and a last slot for code -1, clear): some row of ``mask`` (``rows``: its rows,
    ascending) with that name lasts ``min_ns`` or more."""
    table_rows = cols.start.size
    if rows.size >= _WHOLE_TABLE_SHARE * table_rows:
        # most of the table: every row's duration, a chunk at a time (no gather of the rows' times)
        long = [np.zeros(0, np.int64)]
        for lo in range(0, table_rows, _CHUNK_ROWS):  # a loop over chunks of rows
            hi = lo + _CHUNK_ROWS
            lasts = cols.end[lo:hi] - cols.start[lo:hi] >= min_ns
            lasts &= mask[lo:hi]
            long.append(lo + np.flatnonzero(lasts))
        found = np.concatenate(long)
    else:
        found = rows[cols.end[rows] - cols.start[rows] >= min_ns]
    lasting = np.zeros(len(cols.names) + 1, bool)
    name = cols.name[found]
    lasting[name[name >= 0]] = True
    return lasting
