"""Grouped sums of a few hundred to a few thousand rows in numpy, in place of pandas' ``groupby``, ``concat`` and
``sort_values``, whose fixed cost (~8-10 ms a chain) is most of the time on so few rows: the ranges section's name
slots by template label, and the unexplained-idle evidence's top host rows by (name, kind, thread), summed per chunk
(on the critical path of analyze's last section)."""

from __future__ import annotations

import numpy as np

from ..values import first_seen_codes


def sums_by_label(
    labels: list[str], columns: dict[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(the distinct labels in order of first appearance, each int64 column's sum per label plus ``texts``: the
    rows per label): ``pd.DataFrame({**columns, "label": labels}).groupby("label", sort=False)`` with ``sum`` of
    each column and ``size``. The sums are int64 and wrap as pandas' do."""
    code, uniques = first_seen_codes(np.asarray(labels, dtype=object))
    out: dict[str, np.ndarray] = {}
    for name, values in columns.items():  # a loop over the few columns
        total = np.zeros(len(uniques), np.int64)
        np.add.at(total, code, np.asarray(values, np.int64))
        out[name] = total
    out["texts"] = np.bincount(code, minlength=len(uniques)).astype(np.int64)
    return np.asarray(uniques, dtype=object), out


def largest_first(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Positions by ``values`` descending, then ``labels`` ascending (distinct strings): the order of
    ``sort_values([values, labels], ascending=[False, True])``."""
    rank = np.empty(labels.size, np.int64)
    rank[sorted(range(labels.size), key=labels.__getitem__)] = np.arange(labels.size)
    # ~v = -v - 1: descending without the overflow of -v at the smallest int64
    return np.lexsort((rank, ~np.asarray(values, np.int64)))


# (name, kind, tid, summed overlap) arrays, a group per (name, kind, tid)
Summed = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def summed_by_row_key(name: np.ndarray, kind: np.ndarray, tid: np.ndarray, overlap: np.ndarray) -> Summed:
    """``pd.DataFrame(...).groupby(["name", "kind", "tid"], sort=False)["overlap"].sum()`` as arrays: the groups
    in order of first appearance, numbered by one int64 key of the three columns' factorized codes; int64 sums
    wrap as pandas' do."""
    if name.size == 0:
        return name, kind, tid, overlap.astype(np.int64)
    codes = [first_seen_codes(column)[0] for column in (name, kind, tid)]
    sizes = [int(code.max()) + 1 for code in codes]  # each at most the rows: the key packs below 2**63
    key = (codes[0] * sizes[1] + codes[1]) * sizes[2] + codes[2]
    group, _ = first_seen_codes(key)
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
