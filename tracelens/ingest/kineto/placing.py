"""The joined blocks' rows put in table order (the order of their start times): row columns joined and
gathered, and the records that only some rows have (GPU, op and launch fields) placed at their table rows."""

from __future__ import annotations

import numpy as np

from ...intervals import search_sorted
from .appended import Appended


def joined_in_order(parts: Appended, order: np.ndarray, key: str) -> np.ndarray:
    """Column ``key`` of all blocks (dropped from ``parts``) taken in ``order``."""
    return np.take(parts.pop(key), order)


def launch_pid(index: tuple[np.ndarray, np.ndarray], correlation: np.ndarray) -> np.ndarray:
    """For each ``correlation`` id, the pid of the launch (runtime or driver call) with that id in ``index``
    (:func:`sorted_launches` or :func:`launches_by_id`): the first in table order where several have it; NaN where none has it or the id
    is NaN."""
    corr, pids = index
    out = np.full(correlation.size, np.nan)
    if corr.size == 0:
        return out
    rows = np.flatnonzero(~np.isnan(correlation))
    pos = _search_left(corr, correlation[rows])
    pos_clipped = np.minimum(pos, corr.size - 1)
    hit = corr[pos_clipped] == correlation[rows]
    out[rows[hit]] = pids[pos_clipped[hit]]
    return out


def _search_left(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Where each needle would go in the sorted ``haystack`` (np.searchsorted, side left) as far as the lookup
    in :func:`launch_pid` needs it: exactly for the needles that equal some haystack value. Correlation ids are
    integers: then both are searched as int64 (intervals.search_sorted walks through ascending needles, as the
    device rows' ids come in table order); a needle that is not an integer (or beyond int64) equals no value,
    so its position, from its truncated value, only has to lie in the haystack's range."""
    ints = haystack.astype(np.int64) if haystack.size and np.abs(haystack).max() < 2.0**62 else None
    if ints is None or not np.array_equal(ints, haystack):
        return np.searchsorted(haystack, needles)
    with np.errstate(invalid="ignore"):  # NaN, infinite or beyond int64: some value, matched by no id
        keys = needles.astype(np.int64)
    return search_sorted(ints, keys)


def in_table_order(rows: np.ndarray, order: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Of joined-block rows ``rows`` (distinct), the indices into ``rows`` in table order and where each lands
    in the table (ascending): each row's index marked and taken in ``order``, not a full inverse permutation."""
    return placed(record_slots(rows, m), order)


def record_slots(rows: np.ndarray, m: int) -> np.ndarray:
    """Over the ``m`` joined-block rows: 1 + the index into ``rows`` (distinct) of each row listed, 0 elsewhere
    (made before the table order is known)."""
    slot = np.zeros(m, dtype=np.int32 if rows.size < 2**31 - 1 else np.int64)
    slot[rows] = np.arange(1, rows.size + 1)
    return slot


def placed(slot: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`in_table_order` from the rows' :func:`record_slots`."""
    taken = np.take(slot, order)
    at = np.flatnonzero(taken)
    return taken[at] - 1, at


def shared_slots(row_sets: list[np.ndarray], m: int) -> np.ndarray | None:
    """:func:`record_slots` of several sets of joined-block rows in one array (each set distinct, numbered after
    the sets before it), so that one gather in table order places them all (:func:`placed_sets`); None where
    two sets share a row (each set is then placed by itself)."""
    total = sum(rows.size for rows in row_sets)
    slot = np.zeros(m, dtype=np.int32 if total < 2**31 - 1 else np.int64)
    first = 1
    for rows in row_sets:
        if (
            first > 1 and slot[rows].any()
        ):  # a row listed before (the GPU and op rows are disjoint, as a rule)
            return None
        slot[rows] = np.arange(first, first + rows.size)
        first += rows.size
    return slot


def placed_sets(slot: np.ndarray, order: np.ndarray, sizes: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`placed` of each set in a :func:`shared_slots` array (``sizes``: the sets' sizes, in its order)."""
    kept, at = placed(slot, order)
    if len(sizes) == 1:
        return [(kept, at)]
    out = []
    first = 0
    for size in sizes:
        ours = np.flatnonzero((kept >= first) & (kept < first + size))  # over the listed rows only
        out.append((kept[ours] - first, at[ours]))
        first += size
    return out


def records_taken(parts: Appended, kept: np.ndarray, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The blocks' record arrays ``keys`` (each dropped from ``parts``) taken at ``kept``."""
    return {k: np.take(parts.pop(k), kept, axis=0) for k in keys}


def launches_by_id(correlation: np.ndarray, pid: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`sorted_launches` of the launches in file order where no two share a correlation id: the table
    order only decides the order among equal ids, so it is not waited for (and the launches are not placed);
    None where some share one."""
    by_id = np.argsort(correlation, kind="stable")
    ids = correlation[by_id]
    if ids.size > 1 and bool(np.any(ids[1:] == ids[:-1])):
        return None
    return ids, pid[by_id]


def sorted_launches(records: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The launches' records (``launch_correlation`` and ``launch_pid``, in table order) sorted by correlation
    id (stable: the first in table order comes first among equal ids): the correlation ids and pids
    :func:`launch_pid` looks up."""
    by_id = np.argsort(records["launch_correlation"], kind="stable")
    return records["launch_correlation"][by_id], records["launch_pid"][by_id]


def joined_floats(
    parts: Appended, floats: list[tuple[int, np.ndarray]], order: np.ndarray, key: str
) -> np.ndarray:
    """A pid or tid column as float64 (NaN: missing), in table order: the blocks' floats where they kept them
    (``floats``: each such block's first joined row and floats: ids the int64 column cannot hold), else from the
    int64 data (which then holds them exactly)."""
    joined = np.where(parts.joined(f"{key}_valid"), parts.joined(key).astype(np.float64), np.nan)
    for first, kept in floats:  # a loop over the blocks that kept floats
        joined[first : first + kept.size] = kept
    return np.take(joined, order)
