"""Small conversions of loosely typed values (JSON fields, protobuf stats, table cells) that the readers
and analyses share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import intervals


def int_or_none(value: Any) -> int | None:
    """``value`` as an int, or None where it holds no integer.

    Integers (Python or numpy) as they are; finite floats truncated toward zero; strings of an integer
    (``"42"``) parsed. None for None, booleans, NaN and infinities, other strings and every other type
    (``pd.NA``, bytes, lists, ...).
    """
    if value is None or isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def distinct(values: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """The distinct values, in order of first appearance, hashed a chunk at a time: pandas sizes its hash
    table by the input's length, ~1 GB for the 34M host rows of a training export with a handful of threads."""
    import pandas as pd  # here, not at module level: `import tracelens` and a load leave pandas unimported

    if values.size <= chunk:
        return pd.unique(values)
    return pd.unique(
        np.concatenate([pd.unique(values[lo : lo + chunk]) for lo in range(0, values.size, chunk)])
    )


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, sorted distinct values) with ``sorted[codes] == values``: pd.factorize(sort=True) without a hash
    table sized by the row count (a binary search in the few distinct values instead). NaN sorts last."""
    uniques = np.sort(distinct(values))
    if values.dtype.kind in "iu" and uniques.size <= FEW_CODES:
        # a handful of values (the threads of a process): a code is how many of the distinct values past the first
        # it reaches, one comparison pass each, not a binary search per value (8.8M calls on 2 threads: 2.5x faster)
        codes = np.zeros(values.shape, np.intp)
        for value in uniques[1:]:  # a loop over the few distinct values
            codes += values >= value
        return codes, uniques
    return np.searchsorted(uniques, values), uniques


# dense_codes compares each value with the distinct ones up to this many of them.
FEW_CODES = 4


def is_member(values: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """``np.isin(values, allowed)`` by binary search in the sorted distinct ``allowed``: no sort of the two
    arrays together (8.8M launch calls against 1.4M copy ids on a training export)."""
    allowed = sorted_distinct(allowed)
    if allowed.size == 0:
        return np.zeros(np.shape(values), bool)
    at = intervals.search_sorted(allowed, values)  # values in row order mostly ascend: a walk where built
    at[at == allowed.size] = 0
    return allowed[at] == values


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of an integer array by one sort: numpy 2's hash-based ``np.unique`` takes ~6 s for
    the 6.6M distinct correlation ids of a training export's GPU ops, a sort 0.3 s."""
    values = np.asarray(values)
    if values.dtype.kind not in "iub":
        return np.unique(values)
    out = np.sort(values, kind="stable")  # timsort: ids in time order are nearly sorted
    if out.size > 1:
        out = out[np.r_[True, out[1:] != out[:-1]]]
    return out
