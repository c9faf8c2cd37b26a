"""The unexplained-idle evidence's top host rows: the overlaps of a few thousand host rows summed by (name, kind,
thread) and the largest kept, in numpy (pandas' groupby, concat, reset_index and sort_values on so few rows cost
~8 ms of fixed overhead, on the critical path of analyze's last section)."""

from __future__ import annotations

import numpy as np
import pandas as pd

# (name, kind, tid, summed overlap) arrays, a group per (name, kind, tid)
Summed = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def summed_by_row_key(name: np.ndarray, kind: np.ndarray, tid: np.ndarray, overlap: np.ndarray) -> Summed:
    """``pd.DataFrame(...).groupby(["name", "kind", "tid"], sort=False)["overlap"].sum()`` as arrays: the groups
    in order of first appearance, numbered by one int64 key of the three columns' factorized codes; int64 sums
    wrap as pandas' do."""
    if name.size == 0:
        return name, kind, tid, overlap.astype(np.int64)
    codes = [pd.factorize(column)[0] for column in (name, kind, tid)]
    sizes = [int(code.max()) + 1 for code in codes]  # each at most the rows: the key packs below 2**63
    key = (codes[0] * sizes[1] + codes[1]) * sizes[2] + codes[2]
    group, _ = pd.factorize(key)
    groups = int(group.max()) + 1
    first = np.full(groups, group.size, np.int64)
    np.minimum.at(first, group, np.arange(group.size))
    total = np.zeros(groups, np.int64)
    np.add.at(total, group, overlap.astype(np.int64, copy=False))
    return name[first], kind[first], tid[first], total


def top_by_row_key(parts: list[Summed], limit: int) -> tuple[tuple[int, int, int, int], ...]:
    """(name, kind, tid, overlap) as Python ints of the ``limit`` groups with the most overlap, ties by name then
    first appearance, from the chunks' sums ``parts`` (each :func:`summed_by_row_key`, in row order): as
    ``pd.concat(parts).groupby(level=[0, 1, 2], sort=False).sum().reset_index()
    .sort_values(["overlap", "name"], ascending=[False, True]).head(limit).itertuples()``."""
    if not parts:
        return ()
    name, kind, tid, total = summed_by_row_key(*(np.concatenate([p[k] for p in parts]) for k in range(4)))
    # most overlap first (~v: descending without overflow), then name ascending; lexsort is stable: first
    # appearance breaks the remaining ties
    order = np.lexsort((name.astype(np.int64), ~total))[:limit]
    return tuple((int(name[g]), int(kind[g]), int(tid[g]), int(total[g])) for g in order)
