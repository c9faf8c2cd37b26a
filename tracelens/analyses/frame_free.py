"""pandas' grouping, sorting and number-parsing steps the analyze path needs, on numpy arrays: ``analyze`` on a
Kineto trace runs without importing pandas (~0.165 s of CPU and 38 MiB a process). Each helper names the pandas
call it equals; tests/test_kpdb13_frame_free.py checks them against pandas on generated data."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..values import first_seen_codes, is_missing


def _codes_with_missing(values: np.ndarray) -> np.ndarray:
    """first_seen_codes with the missing values (NaN, None) as one more value (code 0), the others from 1."""
    return first_seen_codes(values)[0].astype(np.int64) + 1


def group_numbers(columns: Sequence[np.ndarray]) -> np.ndarray:
    """``pd.DataFrame(dict(enumerate(columns))).groupby(list(...), sort=False, dropna=False).ngroup()``: each
    row's group of equal values in every column (missing values equal each other), groups numbered in order of
    first appearance (int64)."""
    if not columns or columns[0].size == 0:
        return np.zeros(0 if not columns else columns[0].size, np.int64)
    key = _codes_with_missing(columns[0])
    for column in columns[1:]:
        # (key, code) packed as key x (codes' size) + code, renumbered after each column: below rows^2
        code = _codes_with_missing(column)
        key = first_seen_codes(key * (int(code.max()) + 1) + code)[0].astype(np.int64)
    if len(columns) == 1:
        key = first_seen_codes(key)[0].astype(np.int64)
    return key


def text_rank(texts: np.ndarray) -> np.ndarray:
    """Each string's rank in ascending order (equal strings one rank): a sort key for ``sort_values`` on a
    column of strings (no missing values)."""
    if texts.size == 0:
        return np.zeros(0, np.int64)
    return np.unique(np.asarray(texts, dtype=object), return_inverse=True)[1].reshape(-1).astype(np.int64)


def sort_order(keys: Sequence[np.ndarray], ascending: Sequence[bool]) -> np.ndarray:
    """The row order of ``frame.sort_values([k0, k1, ...], ascending=[...])`` for numeric keys of two or more
    columns (pandas sorts them stably, missing values last whatever the direction): ``keys`` first key first."""
    columns = []
    for key, up in zip(keys[::-1], ascending[::-1], strict=True):
        key = np.asarray(key)
        if key.dtype.kind == "f":
            missing = np.isnan(key)
            rank = np.where(missing, 0.0, key if up else -key)
            columns += [rank, missing]
        else:
            columns.append(key if up else -key.astype(np.int64))
    return np.lexsort(columns)


def sort_values_order(values: np.ndarray, ascending: bool = True) -> np.ndarray:
    """The row order of ``pd.Series(values).sort_values(ascending=...)`` (and of a frame's ``sort_values`` by one
    column): pandas' ``nargsort`` step by step, quicksort included, so that ties come out in the same order;
    missing values last."""
    values = np.asarray(values)
    missing = is_missing(values)
    index = np.arange(values.size)
    present, present_index = values[~missing], index[~missing]
    if not ascending:
        present, present_index = present[::-1], present_index[::-1]
    order = present_index[present.argsort(kind="quicksort")]
    if not ascending:
        order = order[::-1]
    return np.concatenate([order, np.flatnonzero(missing)])


def text_groups(codes: np.ndarray, texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each row's group, the groups' texts ascending) for rows naming ``texts[codes]``: ``groupby`` on those
    texts with sort=True; rows whose text is missing get group -1 (dropped, as groupby drops them). The texts
    are read once per distinct code."""
    if codes.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, object)
    used, at = np.unique(codes, return_inverse=True)
    labels = np.asarray(texts, dtype=object)[used]
    missing = is_missing(labels)
    group_of = np.full(used.size, -1, np.int64)
    names, inverse = np.unique(labels[~missing], return_inverse=True)
    group_of[~missing] = inverse.reshape(-1)
    return group_of[at.reshape(-1)], names
