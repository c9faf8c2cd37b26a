"""Sums of a few hundred name slots grouped by a label (the ranges section's templates): numpy over the slots in
place of a pandas ``groupby(...).agg(...)`` and ``sort_values``, whose fixed cost (~10 ms) is most of the time on
so few rows."""

from __future__ import annotations

import numpy as np
import pandas as pd


def sums_by_label(
    labels: list[str], columns: dict[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(the distinct labels in order of first appearance, each int64 column's sum per label plus ``texts``: the
    rows per label): ``pd.DataFrame({**columns, "label": labels}).groupby("label", sort=False)`` with ``sum`` of
    each column and ``size``. The sums are int64 and wrap as pandas' do."""
    code, uniques = pd.factorize(np.asarray(labels, dtype=object))
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
