"""The first rows of groups (a name's first call on a thread, an API's first call in a process) that last long,
with the median of their group's later rows: the first_call and first_api rules of :mod:`.startup`.

The first calls' candidates are narrowed to the rows of names with a long row before any of their columns is
read (a first row that long is a long row of its name: :func:`names_lasting`); where the candidates are most of
the table, their long rows are found from every row's duration a chunk at a time, without gathering their times.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .columns import EventColumns
from .first_scan import long_group_firsts, plain_rule_columns
from .grouping import group_codes, group_firsts, group_medians, medians_of
from .names import HOST_CATEGORY_PRIORITY

try:  # the compiled walk of both rules (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# A test of first rows by their positions (a bool each), made before their groups' medians are taken.
FirstRowTest = Callable[[np.ndarray], np.ndarray]

# A rule's scan: (the long first rows, whether a row looked at ends before it starts: first_scan.long_group_firsts'
# least duration below 0), or None (no answer).
Scan = tuple[np.ndarray, bool] | None


def first_rule_scans(
    cols: EventColumns,
    category: np.ndarray,
    call_table: np.ndarray,
    api_table: np.ndarray,
    min_call: int,
    min_api: int,
    api_rows: Callable[[], np.ndarray],
) -> tuple[Scan, Scan]:
    """(the :data:`Scan` of the first_call rule: ``long_group_firsts`` of every event row, ``call_table``, by
    thread, ``min_call``; of the first_api rule: of the API calls ``api_rows()``, ``api_table``, by process,
    ``min_api``), where ``api_rows()`` gives every row of the kinds ``api_table`` allows (so that the second is the
    same over every event row; asked for only where the compiled walk does not answer).

    Where built, by one compiled walk for both (``_kernel_stats.first_rule_scans``: on a table in start order, a
    walk over the times alone notes the rows lasting the lesser minimum, only those are looked up in the rules'
    table; ~9.5-13 -> ~3 ms on the 406 MB Kineto tile's 1.5M rows); else (absent, or the columns not plain arrays)
    by long_group_firsts twice, as before."""
    both = _compiled_scans(cols, category, call_table, api_table, min_call, min_api)
    if both is not None:
        return both
    return (
        _as_scan(long_group_firsts(cols, category, call_table, True, min_call)),
        _as_scan(long_group_firsts(cols, category, api_table, False, min_api, api_rows())),
    )


def _compiled_scans(
    cols: EventColumns,
    category: np.ndarray,
    call_table: np.ndarray,
    api_table: np.ndarray,
    min_call: int,
    min_api: int,
) -> tuple[Scan, Scan] | None:
    """:func:`first_rule_scans` by the compiled walk; None where it is absent or the columns are not plain arrays."""
    if _compiled is None or not hasattr(_compiled, "first_rule_scans"):
        return None
    if not plain_rule_columns(cols, category) or call_table.shape != api_table.shape:
        return None
    allowed = (call_table != 0).astype(np.uint8) | ((api_table != 0).astype(np.uint8) << 1)
    call, api = _compiled.first_rule_scans(
        cols.kind,
        category,
        cols.name,
        cols.pid,
        cols.tid,
        cols.start,
        cols.end,
        allowed,
        len(HOST_CATEGORY_PRIORITY),
        min_call,
        min_api,
    )
    return (
        None if call[0] is None else (np.array(call[0], np.int64), bool(call[1])),
        None if api[0] is None else (np.array(api[0], np.int64), bool(api[1])),
    )


def _as_scan(answer: tuple[np.ndarray, int] | None) -> Scan:
    """long_group_firsts' answer as a :data:`Scan`."""
    return None if answer is None else (answer[0], answer[1] < 0)


def long_first_rows(
    outer: np.ndarray,
    inner: np.ndarray,
    start: np.ndarray,
    duration: np.ndarray,
    min_first: int,
    keep: FirstRowTest | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(positions ascending, medians): the rows that are the first of their (outer, inner) group (in start order,
    ties in row order), last >= ``min_first``, pass ``keep`` (given) and have later rows, with the median of the
    later rows' durations. ``keep``: a test of the first rows that does not read the medians (the first_api rule's
    idle GPU), made before the medians are taken, so that the groups it drops (often all) take none: their later
    rows are most of the 8.8M API calls of the x1512 export.

    None lasts ``min_first`` when no row does (often, for the first calls of names): then nothing is grouped. The
    rows are not narrowed to the names with a long row here: on the 8.8M API calls of the x1512 export the copies
    of most of them took the attribution's peak up by ~150 MiB (:func:`names_lasting` narrows the first calls'
    candidates before their columns are read, where that copies nothing)."""
    if not bool((duration >= min_first).any()):
        return np.empty(0, np.int64), np.empty(0)
    return grouped_first_rows(outer, inner, start, duration, min_first, keep)


def grouped_first_rows(
    outer: np.ndarray,
    inner: np.ndarray,
    start: np.ndarray,
    duration: np.ndarray,
    min_first: int,
    keep: FirstRowTest | None = None,
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
        if keep is not None and firsts.size:
            firsts = firsts[keep(firsts)]
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
    if keep is not None and at.size:
        at = at[keep(order[at])]
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


def first_of_each(keys: np.ndarray, name: np.ndarray) -> np.ndarray:
    """Positions ascending of the first row of each (key, name) pair (``~duplicated()`` of the pairs): the
    allocation rule's first call of each allocation API on a thread."""
    if keys.size == 0:
        return np.empty(0, np.int64)
    order = np.lexsort((name, keys))  # stable: a pair's rows keep their order
    k, n = keys[order], name[order]
    first = np.ones(order.size, bool)
    first[1:] = (k[1:] != k[:-1]) | (n[1:] != n[:-1])
    return np.sort(order[first])
