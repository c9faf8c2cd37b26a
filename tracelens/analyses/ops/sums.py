"""Sums by op-name code (each name's count and int64 column sums) for the ops section's tables, and the GPU ops'
durations they add."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

# sums_by_code adds an int64 column by a float64 bincount where every partial sum stays within float64's 53-bit
# integers (|values| x rows < 2**53: durations in ns, up to ~10^9 rows of 100 days each); else in two parts, the
# low EXACT_BITS bits and the rest, each part's sums exact in that way (checked; otherwise pandas adds them)
EXACT_BITS = 24
FLOAT_EXACT = 2**53


def _largest(values: np.ndarray) -> int:
    return max(abs(int(values.min())), abs(int(values.max()))) if values.size else 0


def sums_by_code(code: np.ndarray, **columns: np.ndarray) -> pd.DataFrame:
    """``pd.DataFrame({"name": code, **columns}).groupby("name")`` with each group's ``size`` and each int64
    column's ``sum`` (the columns in that order, indexed by ``name``, ascending), for codes of at least -1 (op-name
    codes, -1: no name): bincounts over the codes (no factorizing, no sort). Sums are int64 with its wrap-around,
    as pandas adds them."""
    import pandas as pd

    code = np.asarray(code, np.int64)
    values = {name: np.asarray(v, np.int64) for name, v in columns.items()}
    n = code.size
    split = {name for name, v in values.items() if _largest(v) * n >= FLOAT_EXACT}
    exact = n < FLOAT_EXACT >> EXACT_BITS and all(
        _largest(values[k] >> EXACT_BITS) * n < FLOAT_EXACT for k in split
    )
    if n == 0 or int(code.min()) < -1 or not exact:
        frame = pd.DataFrame({"name": code, **values}).groupby("name")
        return frame.size().rename("size").to_frame().join(frame[list(values)].sum())
    slot = code + 1  # code -1 (no name) in slot 0
    counts = np.bincount(slot)
    present = np.flatnonzero(counts)
    out: dict[str, np.ndarray] = {"size": counts[present].astype(np.int64)}

    def total(weights: np.ndarray) -> np.ndarray:
        return np.bincount(slot, weights=weights, minlength=counts.size)[present].astype(np.int64)

    for name, v in values.items():
        if name not in split:
            out[name] = total(v)
            continue
        high, low = total(v >> EXACT_BITS), total(v & ((1 << EXACT_BITS) - 1))
        with np.errstate(over="ignore"):
            out[name] = (high << EXACT_BITS) + low  # int64 arithmetic: wraps as pandas' sum does
    return pd.DataFrame(out, index=pd.Index(present - 1, name="name"))


# GPU ops (or ops) whose columns :func:`sums_by_code_in_blocks` has at once.
SUM_BLOCK = 1 << 20


def sums_by_code_in_blocks(
    size: int, block: Callable[[int, int], tuple[np.ndarray, dict[str, np.ndarray]]]
) -> pd.DataFrame:
    """:func:`sums_by_code` of ``size`` rows given a block at a time: ``block(lo, hi)`` gives the codes and columns
    of rows [lo, hi), so that no column of every row is held at once. The same frame: each block's int64 sums are
    exact modulo 2**64 (as pandas adds them), and so are their int64 totals."""
    import pandas as pd

    parts = []
    for lo in range(0, max(size, 1), SUM_BLOCK):  # a loop over blocks of rows
        code, columns = block(lo, min(lo + SUM_BLOCK, size))
        parts.append(sums_by_code(code, **columns))
        del code, columns
    if len(parts) == 1:
        return parts[0]
    index = np.unique(np.concatenate([part.index.to_numpy(np.int64) for part in parts]))
    out: dict[str, np.ndarray] = {}
    for name in parts[0].columns:  # a loop over the few columns, then the blocks
        total = np.zeros(index.size, np.int64)
        for part in parts:
            np.add.at(
                total, np.searchsorted(index, part.index.to_numpy(np.int64)), part[name].to_numpy(np.int64)
            )
        out[name] = total
    return pd.DataFrame(out, index=pd.Index(index, name="name"))


def gpu_durations(pairs: Any, at: np.ndarray) -> np.ndarray:
    """``(pairs["end"] - pairs["start"]).astype(np.int64)[at]``, gathered at the GPU ops ``at`` only."""
    picked = pairs[at]
    duration: np.ndarray = (picked["end"] - picked["start"]).astype(np.int64)
    return duration
