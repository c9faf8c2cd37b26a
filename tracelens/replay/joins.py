"""Joins of small integer key arrays with numpy, in the order pandas gives them (the replay's collectives were
matched and re-wired with pandas frames; the analyze path runs without pandas)."""

from __future__ import annotations

import numpy as np


def inner_join(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(left index, right index) of every pair of rows with equal keys: ``DataFrame.merge(how="inner")``'s rows,
    in its order (the left rows in their order, each one's right matches in theirs). Integer keys."""
    left, right = np.asarray(left), np.asarray(right)
    order = np.argsort(right, kind="stable")  # the right rows by key, each key's in their order
    ordered = right[order]
    lo = np.searchsorted(ordered, left, side="left")
    hi = np.searchsorted(ordered, left, side="right")
    count = hi - lo
    left_index = np.repeat(np.arange(left.size, dtype=np.int64), count)
    # within each left row's run of matches: lo + 0, 1, ...
    run_start = np.cumsum(count) - count
    within = np.arange(left_index.size, dtype=np.int64) - np.repeat(run_start, count)
    right_index = order[np.repeat(lo, count) + within].astype(np.int64, copy=False)
    return left_index, right_index


def run_heads(*sorted_keys: np.ndarray) -> np.ndarray:
    """Per row of rows sorted by the keys (lexicographically): whether it starts a run of equal key tuples."""
    n = sorted_keys[0].size
    head = np.zeros(n, bool)
    if n:
        head[0] = True
        for keys in sorted_keys:
            head[1:] |= keys[1:] != keys[:-1]
    return head


def cumcount(*sorted_keys: np.ndarray) -> np.ndarray:
    """Each row's position within its run of equal key tuples (``groupby(keys).cumcount()`` of rows sorted by
    the keys)."""
    head = run_heads(*sorted_keys)
    index = np.arange(head.size, dtype=np.int64)
    return index - np.maximum.accumulate(np.where(head, index, 0)) if head.size else index


def run_ids(*sorted_keys: np.ndarray) -> np.ndarray:
    """Per row of rows sorted by the keys, the rank of its key tuple among the distinct ones (0, 1, ...):
    ``groupby(keys).ngroup()`` of sorted rows."""
    return np.cumsum(run_heads(*sorted_keys), dtype=np.int64) - 1
