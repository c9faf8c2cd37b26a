"""The joined blocks' rows put in table order (the order of their start times): row columns joined and
gathered, and the records that only some rows have (GPU, op and launch fields) placed at their table rows."""

from __future__ import annotations

import numpy as np

from ...intervals import search_sorted
from .appended import Appended

try:  # exact_int64, pid_lookup, id_keys and split_keys (ingest/_start_merge.c): the launch index in one pass each
    from .. import _start_merge as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# A launch index (:func:`sorted_launches`, :func:`launches_by_id`): the launches' correlation ids ascending, their
# pids, and the ids as int64 where they are all integers that int64 holds exactly (else None), made once where the
# index is built (in the background) instead of at the lookup.
LaunchIndex = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def joined_in_order(parts: Appended, order: np.ndarray, key: str) -> np.ndarray:
    """Column ``key`` of all blocks (dropped from ``parts``) taken in ``order`` (int32 ids as int64)."""
    return parts.pop_taken(key, order)


def launch_pid(index: LaunchIndex | tuple[np.ndarray, np.ndarray], correlation: np.ndarray) -> np.ndarray:
    """For each ``correlation`` id, the pid of the launch (runtime or driver call) with that id in ``index``
    (:func:`sorted_launches` or :func:`launches_by_id`): the first in table order where several have it; NaN where none has it or the id
    is NaN."""
    corr, pids = index[0], index[1]
    ints = index[2] if len(index) == 3 else integer_ids(corr)
    if corr.size == 0:
        return np.full(correlation.size, np.nan)
    lookups = _compiled
    if (
        lookups is not None
        and ints is not None
        and pids.dtype == np.float64
        and correlation.dtype == np.float64
    ):
        # one walk: each id searched near the last one's place, tested and its pid gathered (no temporaries)
        out = np.empty(correlation.size)
        lookups.pid_lookup(ints, np.ascontiguousarray(pids), np.ascontiguousarray(correlation), out)
        return out
    # the ids to look up: all of them where none is NaN (device rows carry one: no row list, no selection)
    rows = None if not np.isnan(correlation).any() else np.flatnonzero(~np.isnan(correlation))
    needles = correlation if rows is None else correlation[rows]
    pos = _search_left(corr, ints, needles)
    pos_clipped = np.minimum(pos, corr.size - 1)
    hit = corr[pos_clipped] == needles
    if rows is None and bool(hit.all()):  # every id has its launch: each row's pid gathered, nothing to place
        return np.take(pids, pos_clipped)
    out = np.full(correlation.size, np.nan)
    rows = np.arange(correlation.size) if rows is None else rows
    out[rows[hit]] = pids[pos_clipped[hit]]
    return out


def integer_ids(ids: np.ndarray) -> np.ndarray | None:
    """``ids`` (floats) as int64 where each is an integer that int64 holds exactly, else None. One cast and one
    comparison: NaN, fractions and values beyond int64 (whatever the cast makes of them) compare unequal (the
    compiled pass tests each value the same way)."""
    lookups = _compiled
    if lookups is not None and ids.dtype == np.float64:  # the cast and the test in one pass, no temporaries
        exact = np.empty(ids.size, np.int64)
        return exact if lookups.exact_int64(np.ascontiguousarray(ids), exact) else None
    with np.errstate(invalid="ignore"):
        ints = ids.astype(np.int64)
    return ints if np.array_equal(ints, ids) else None


def _search_left(haystack: np.ndarray, ints: np.ndarray | None, needles: np.ndarray) -> np.ndarray:
    """Where each needle would go in the sorted ``haystack`` (np.searchsorted, side left) as far as the lookup
    in :func:`launch_pid` needs it: exactly for the needles that equal some haystack value. Correlation ids are
    integers: then both are searched as int64 (intervals.search_sorted walks through ascending needles, as the
    device rows' ids come in table order); a needle that is not an integer (or beyond int64) equals no value,
    so its position, from its truncated value, only has to lie in the haystack's range. ``ints``: the haystack
    as int64 (:func:`integer_ids`), None where it is not all integers."""
    if ints is None:
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


def records_taken(parts: Appended, kept: np.ndarray, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The blocks' record arrays ``keys`` (each dropped from ``parts``) taken at ``kept``."""
    return {k: np.take(parts.pop(k), kept, axis=0) for k in keys}


def launches_by_id(correlation: np.ndarray, pid: np.ndarray) -> LaunchIndex | None:
    """:func:`sorted_launches` of the launches in file order where no two share a correlation id: the table
    order only decides the order among equal ids, so it is not waited for (and the launches are not placed);
    None where some share one. Where the ids are all integers that int64 holds, the index's ids are those
    int64s (:func:`launch_pid` compares them to float ids as it compares the floats)."""
    indexed = _keyed_launches(correlation, pid)
    if indexed is not None:
        return indexed or None
    ints = integer_ids(correlation)
    if ints is not None:
        # Integer ids (correlation ids are): sorted as int64, the int64 ids standing for the floats too (each is
        # its float exactly, so they compare equal where the floats do): one 8-byte array a launch fewer, and
        # the int64 sort is the faster. (The ids' copy freed before the pids' gather, which may take its memory.)
        by_id = np.argsort(ints, kind="stable")
        ids = np.take(ints, by_id)
        del ints
        if ids.size > 1 and bool(np.any(ids[1:] == ids[:-1])):
            return None
        return ids, np.take(pid, by_id), ids
    by_id = np.argsort(correlation, kind="stable")
    ids = correlation[by_id]
    if ids.size > 1 and bool(np.any(ids[1:] == ids[:-1])):
        return None
    return ids, pid[by_id], None


def _keyed_launches(correlation: np.ndarray, pid: np.ndarray) -> LaunchIndex | tuple[()] | None:
    """:func:`launches_by_id`'s int64 index by the compiled pass (each id and its file position in one int64 key,
    the keys sorted in place, split into the ids and the pids gathered): () where two launches share an id, None
    where it does not apply (no extension, not float64, an id not an integer or too large for the key)."""
    lookups, n = _compiled, correlation.size
    if lookups is None or correlation.dtype != np.float64 or pid.dtype != np.float64 or n == 0:
        return None
    shift = max(1, (n - 1).bit_length())
    if shift > 40:
        return None
    keys = np.empty(n, np.int64)
    if not lookups.id_keys(np.ascontiguousarray(correlation), keys, shift):
        return None
    keys.sort(kind="stable")  # (distinct keys; the ids come nearly sorted: timsort finds their runs)
    pids = np.empty(n)
    if not lookups.split_keys(keys, np.ascontiguousarray(pid), pids, shift):
        return ()
    return keys, pids, keys


def sorted_launches(records: dict[str, np.ndarray]) -> LaunchIndex:
    """The launches' records (``launch_correlation`` and ``launch_pid``, in table order) sorted by correlation
    id (stable: the first in table order comes first among equal ids): the correlation ids and pids
    :func:`launch_pid` looks up."""
    by_id = np.argsort(records["launch_correlation"], kind="stable")
    ids = records["launch_correlation"][by_id]
    return ids, records["launch_pid"][by_id], integer_ids(ids)


def joined_floats(
    parts: Appended, floats: list[tuple[int, np.ndarray]], order: np.ndarray, key: str, valid: np.ndarray
) -> np.ndarray:
    """A pid or tid column as float64 (NaN: missing), in table order: the blocks' floats where they kept them
    (``floats``: each such block's first joined row and floats: ids the int64 column cannot hold), else from the
    int64 data (which then holds them exactly) where ``valid`` (joined-block rows)."""
    joined = np.where(valid, parts.joined(key).astype(np.float64), np.nan)
    for first, kept in floats:  # a loop over the blocks that kept floats
        joined[first : first + kept.size] = kept
    return np.take(joined, order)


def rows_of_kinds_placed(
    at: np.ndarray, order: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`in_table_order` of ``rows`` (ascending joined-block rows) where they are the rows of some kinds
    (GPU rows) and ``at`` the table rows of those kinds (ascending): each table row's index into ``rows`` is
    found by a search of its joined-block row (``order[at]``, ascending but where the order goes back), with no
    table-long mark array or gather. None where the two sets are not the same rows (then place ``rows`` by
    :func:`in_table_order`)."""
    if at.size != rows.size:
        return None
    joined_rows = np.take(order, at)
    kept = search_sorted(rows, joined_rows)
    if kept.size and (int(kept.max()) >= rows.size or not np.array_equal(np.take(rows, kept), joined_rows)):
        return None
    return kept, at


def table_rows(rows: np.ndarray, keys: np.ndarray, sorted_keys: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Where each of ``rows`` (joined-block rows, their sort keys ``keys``) lands in the table sorted stably by
    key (``sorted_keys``: the keys in table order, ``order``: the joined-block row of each table row), without
    the inverse permutation: among the table rows of an equal key, which the stable sort keeps in joined-block
    order, the row is found by bisection (a step for each halving of the longest run of equal keys; for the few
    op rows)."""
    lo = np.searchsorted(sorted_keys, keys, side="left")
    hi = np.searchsorted(sorted_keys, keys, side="right")
    while True:  # a loop over halvings, each over all rows
        open_ = np.flatnonzero(lo < hi)
        if open_.size == 0:
            return lo
        mid = (lo[open_] + hi[open_]) // 2
        before = np.take(order, mid) < rows[open_]
        lo[open_[before]] = mid[before] + 1
        hi[open_[~before]] = mid[~before]


def placed_rows(
    rows: np.ndarray, keys: np.ndarray, sorted_keys: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`in_table_order` of a few ``rows`` by :func:`table_rows`."""
    at = table_rows(rows, keys, sorted_keys, order)
    kept = np.argsort(at, kind="stable")
    return kept, at[kept]
