"""Small conversions of loosely typed values (JSON fields, protobuf stats, table cells) that the readers
and analyses share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import intervals

try:  # the hash pass of first_seen_codes (optional: built at install time where a C compiler is there)
    from . import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


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


def first_seen_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values)`` without pandas: each value's code (intp) in the order the distinct values first
    appear, and those values in that order; NaN and None code -1 and are not among them (a float array's -0.0
    and 0.0 are one value, the first seen kept). One-dimensional arrays; object arrays of hashable values."""
    values = np.asarray(values)
    if values.dtype == object:
        return _object_codes(values)
    if values.dtype.kind == "f":
        missing = np.isnan(values)
        if missing.any():
            codes = np.full(values.size, -1, np.intp)
            codes[~missing], uniques = first_seen_codes(values[~missing])
            return codes, uniques
    if values.size == 0:
        return np.zeros(0, np.intp), values.copy()
    keys = _hash_keys(values)
    if keys is not None and _compiled is not None:
        codes = np.empty(values.size, np.int64)
        first_rows = np.empty(values.size, np.int64)
        count = _compiled.first_seen(keys, codes, first_rows)
        return codes.view(np.intp), values[first_rows[:count]]
    order = np.argsort(values, kind="stable")  # stable: each run of equal values starts at its first row
    ordered = values[order]
    head = np.empty(ordered.size, bool)
    head[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=head[1:])
    first_rows = order[head]  # per distinct value (ascending), its first row
    by_first = np.argsort(first_rows)  # distinct values only
    rank = np.empty(by_first.size, np.intp)
    rank[by_first] = np.arange(by_first.size)
    codes = np.empty(values.size, np.intp)
    codes[order] = rank[np.cumsum(head) - 1]
    return codes, ordered[head][by_first]


def first_seen_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`first_seen_codes`' codes of a one-dimensional int32 or int64 array, and the row where each code first
    appears (ascending), from the compiled hash pass, which finds both in its one pass; None where it is not built."""
    if _compiled is None or values.dtype.kind not in "iu" or values.dtype.itemsize not in (4, 8):
        return None
    keys = _hash_keys(values)
    codes = np.empty(values.size, np.int64)
    first_rows = np.empty(values.size, np.int64)
    count = _compiled.first_seen(keys, codes, first_rows)
    return codes.view(np.intp), first_rows[:count]


def _hash_keys(values: np.ndarray) -> np.ndarray | None:
    """``values`` as the int32 or int64 keys of the compiled hash pass, equal exactly where the values are (a float
    by its bits, -0.0 made 0.0 first; NaN is not passed); None for other dtypes (strings, dates)."""
    kind, size = values.dtype.kind, values.dtype.itemsize
    if kind in "iu" and size in (4, 8):
        return np.ascontiguousarray(values).view(np.int32 if size == 4 else np.int64)
    if kind in "iub":
        return values.astype(np.int32)
    if kind == "f":
        return (values.astype(np.float64) + 0.0).view(np.int64)  # + 0.0: -0.0 becomes 0.0, the same key
    return None


def is_missing_value(value: object) -> bool:
    """``pd.isna`` of one value: None or a float NaN."""
    return value is None or (isinstance(value, float) and value != value)


def is_missing(values: np.ndarray) -> np.ndarray:
    """``pd.isna(values)`` of a one-dimensional array: None and NaN (float or in an object array)."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype != object:
        return np.zeros(values.size, bool)
    return np.fromiter(map(is_missing_value, values.tolist()), bool, values.size)


def _object_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """first_seen_codes of an object array: a dict keeps the first appearance order (the loops below run in C,
    over the values, and in Python over the distinct ones only)."""
    seen = dict.fromkeys(values.tolist())
    missing = [v for v in seen if is_missing_value(v)]
    for value in missing:
        del seen[value]
    code_of = {value: code for code, value in enumerate(seen)}
    code_of.update(dict.fromkeys(missing, -1))
    codes = np.fromiter(map(code_of.__getitem__, values.tolist()), np.intp, values.size)
    uniques = np.empty(len(seen), object)
    uniques[:] = list(seen)
    return codes, uniques


def distinct(values: np.ndarray) -> np.ndarray:
    """``pd.unique(values)`` without pandas: the distinct values in order of first appearance, a float array's NaN
    among them (once, where it first appears)."""
    values = np.asarray(values)
    if values.dtype == object:  # None and NaN kept, as pandas does
        seen = list(dict.fromkeys(values.tolist()))
        uniques = np.empty(len(seen), object)
        uniques[:] = seen
        return uniques
    codes, uniques = first_seen_codes(values)
    if values.dtype.kind != "f":
        return uniques
    missing = np.flatnonzero(codes < 0)
    if missing.size == 0:
        return uniques
    before = int(codes[: missing[0]].max()) + 1 if missing[0] else 0  # codes count up in appearance order
    return np.insert(uniques, before, np.nan)


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


def first_seen_sums(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``pd.Series(values).groupby(keys, sort=False).agg(["sum", "size"])`` of integers without pandas: the
    distinct keys in order of first appearance, each one's sum of ``values`` (int64, wrapping as pandas' does:
    no float64 weights, which lose integers past 2**53) and its number of rows. NaN keys are left out."""
    codes, uniques = first_seen_codes(keys)
    known = codes >= 0
    if not known.all():
        codes, values = codes[known], np.asarray(values)[known]
    sums = np.zeros(uniques.size, np.int64)
    np.add.at(sums, codes, np.asarray(values, np.int64))
    return uniques, sums, np.bincount(codes, minlength=uniques.size).astype(np.int64)


def plain_ints(a: object, sizes: tuple[int, ...]) -> bool:
    """Whether ``a`` is a one-dimensional, C-contiguous numpy array of signed integers of one of the byte widths
    ``sizes``: what the compiled passes read as they are (anything else goes to their numpy paths)."""
    return (
        isinstance(a, np.ndarray)
        and a.ndim == 1
        and a.dtype.kind == "i"
        and a.itemsize in sizes
        and a.flags.c_contiguous
    )
