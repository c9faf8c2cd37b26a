"""The joined blocks' rows put in table order (the order of their start times): row columns joined and
gathered, and the records that only some rows have (GPU, op and launch fields) placed at their table rows."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import numpy as np


def joined_in_order(parts: list[dict[str, Any]], order: np.ndarray, key: str) -> np.ndarray:
    """Column ``key`` of all blocks, joined (each block's array dropped) and taken in ``order``."""
    return np.take(np.concatenate([p.pop(key) for p in parts]), order)


def launch_index(
    parts: list[dict[str, Any]], rows: np.ndarray, ordering: Future[np.ndarray], m: int
) -> tuple[np.ndarray, np.ndarray]:
    """The launches (joined-block ``rows`` with their launch_correlation and launch_pid) in table order once
    ``ordering`` is done, then sorted by correlation id (stable: the first in table order comes first among
    equal ids): the correlation ids and pids :func:`launch_pid` looks up."""
    _, launches = records_in_table_order(parts, rows, ordering, m, ("launch_correlation", "launch_pid"))
    by_id = np.argsort(launches["launch_correlation"], kind="stable")
    return launches["launch_correlation"][by_id], launches["launch_pid"][by_id]


def launch_pid(index: tuple[np.ndarray, np.ndarray], correlation: np.ndarray) -> np.ndarray:
    """For each ``correlation`` id, the pid of the launch (runtime or driver call) with that id in ``index``
    (:func:`launch_index`): the first in table order where several have it; NaN where none has it or the id
    is NaN."""
    corr, pids = index
    out = np.full(correlation.size, np.nan)
    if corr.size == 0:
        return out
    rows = np.flatnonzero(~np.isnan(correlation))
    pos = np.searchsorted(corr, correlation[rows])
    pos_clipped = np.minimum(pos, corr.size - 1)
    hit = corr[pos_clipped] == correlation[rows]
    out[rows[hit]] = pids[pos_clipped[hit]]
    return out


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


def records_in_table_order(
    parts: list[dict[str, Any]], rows: np.ndarray, ordering: Future[np.ndarray], m: int, keys: tuple[str, ...]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The records of joined-block ``rows`` (the blocks' arrays ``keys``, a value per listed row, each dropped
    from its block) in table order once ``ordering`` is done, and where each lands in the table: the joins and
    marks made while the order is being computed."""
    slot = record_slots(rows, m)
    records = {k: np.concatenate([p.pop(k) for p in parts]) for k in keys}
    kept, at = placed(slot, ordering.result())
    del slot
    return at, {k: np.take(v, kept, axis=0) for k, v in records.items()}


def joined_floats(parts: list[dict[str, Any]], order: np.ndarray, key: str) -> np.ndarray:
    """A pid or tid column as float64 (NaN: missing), in table order: from the blocks' floats where they kept
    them (ids the int64 column cannot hold), else from the int64 data (which then holds them exactly)."""
    floats = []
    for p in parts:
        kept = p.get(f"{key}_float")
        if kept is None:
            kept = np.where(p[f"{key}_valid"], p[key].astype(np.float64), np.nan)
        floats.append(kept)
    return np.take(np.concatenate(floats), order)
