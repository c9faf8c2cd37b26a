"""Sums and counts over a boolean selection without the selection's compressed copy (the sections' tables add up
durations of a few selections of the same GPU ops, dozens of times)."""

from __future__ import annotations

from typing import Any

import numpy as np


def sum_where(values: np.ndarray, where: np.ndarray) -> Any:
    """``values[where].sum()`` for integer ``values``: the same adds in the values' type (int64 wrapping as the
    compressed sum's; integer adds do not depend on their order), with no compressed copy."""
    return np.add.reduce(values, where=where)


def count_where(where: np.ndarray) -> int:
    """``int(where.sum())`` of a boolean mask, counted without widening it to integers."""
    return int(np.count_nonzero(where))
