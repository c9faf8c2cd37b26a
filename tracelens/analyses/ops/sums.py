"""Sums by op-name code (each name's count and int64 column sums) for the ops section's tables, and the GPU ops'
durations they add."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..columns import memo
from ..launch import launch_pairs

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

    from ...trace import Trace

# sums_by_code adds an int64 column by a float64 bincount where every partial sum stays within float64's 53-bit
# integers (|values| x rows < 2**53: durations in ns, up to ~10^9 rows of 100 days each); else in two parts, the
# low EXACT_BITS bits and the rest, each part's sums exact in that way (checked; otherwise pandas adds them)
EXACT_BITS = 24
FLOAT_EXACT = 2**53


def _largest(values: np.ndarray) -> int:
    return max(abs(int(values.min())), abs(int(values.max()))) if values.size else 0


@dataclass
class CodeSums:
    """Sums by op-name code as arrays: ``index`` the codes (int64, ascending), ``columns`` each column's values
    per code (``size`` first, then the summed columns in their order). The frame of :func:`sums_by_code`
    without pandas."""

    index: np.ndarray
    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.index.size)

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.columns, index=pd.Index(self.index, name="name"))


def code_sums(code: np.ndarray, **columns: np.ndarray) -> CodeSums:
    """``pd.DataFrame({"name": code, **columns}).groupby("name")`` with each group's ``size`` and each int64
    column's ``sum`` (the columns in that order, indexed by ``name``, ascending), for codes of at least -1 (op-name
    codes, -1: no name): bincounts over the codes (no factorizing, no sort); other codes, or sums a float64
    bincount would round, by sorted codes and int64 adds. Sums are int64 with its wrap-around, as pandas adds
    them."""
    code = np.asarray(code, np.int64)
    values = {name: np.asarray(v, np.int64) for name, v in columns.items()}
    n = code.size
    split = {name for name, v in values.items() if _largest(v) * n >= FLOAT_EXACT}
    exact = n < FLOAT_EXACT >> EXACT_BITS and all(
        _largest(values[k] >> EXACT_BITS) * n < FLOAT_EXACT for k in split
    )
    if n == 0 or int(code.min()) < -1 or not exact:
        index, group = np.unique(code, return_inverse=True)
        group = group.reshape(-1)
        out = {"size": np.bincount(group, minlength=index.size).astype(np.int64)}
        for name, v in values.items():
            acc = np.zeros(index.size, np.int64)
            np.add.at(acc, group, v)  # int64 adds: wrap as pandas' sum does
            out[name] = acc
        return CodeSums(index.astype(np.int64), out)
    slot = code + 1  # code -1 (no name) in slot 0
    counts = np.bincount(slot)
    present = np.flatnonzero(counts)
    out = {"size": counts[present].astype(np.int64)}

    def total(weights: np.ndarray) -> np.ndarray:
        return np.bincount(slot, weights=weights, minlength=counts.size)[present].astype(np.int64)

    for name, v in values.items():
        if name not in split:
            out[name] = total(v)
            continue
        high, low = total(v >> EXACT_BITS), total(v & ((1 << EXACT_BITS) - 1))
        with np.errstate(over="ignore"):
            out[name] = (high << EXACT_BITS) + low  # int64 arithmetic: wraps as pandas' sum does
    return CodeSums((present - 1).astype(np.int64), out)


def sums_by_code(code: np.ndarray, **columns: np.ndarray) -> pd.DataFrame:
    """:func:`code_sums` as the frame ``pd.DataFrame({"name": code, **columns}).groupby("name")`` gives: each
    group's ``size`` and each int64 column's ``sum``, indexed by ``name``."""
    return code_sums(code, **columns).frame()


# GPU ops (or ops) whose columns :func:`sums_by_code_in_blocks` has at once.
SUM_BLOCK = 1 << 20


def kernel_copy_sums(
    code: np.ndarray, duration: np.ndarray, kernel: np.ndarray, kernels: bool = False
) -> CodeSums:
    """``code_sums(code, [kernels=kernel as int64,] gpu=where(kernel, duration, 0), copy=where(kernel, 0,
    duration))``: GPU ops' time by op-name code, kernels' and copies' apart. Where every partial sum is exact in
    float64 (code_sums' bincount path) by one bincount of the durations over (code, kernel) slots, with no
    selected-duration columns: each code's kernel (copy) sum adds the same values in the same order less the zeros
    (x + 0.0 == x), so the same sums; else code_sums itself."""
    code = np.asarray(code, np.int64)
    duration = np.asarray(duration, np.int64)
    n = code.size
    if (
        n == 0
        or n >= FLOAT_EXACT >> EXACT_BITS
        or int(code.min()) < -1
        or _largest(duration) * n >= FLOAT_EXACT
    ):
        columns = {"kernels": kernel.astype(np.int64)} if kernels else {}
        return code_sums(
            code, **columns, gpu=np.where(kernel, duration, 0), copy=np.where(kernel, 0, duration)
        )
    slot = code + 1  # code -1 (no name) in slot 0; slot x 2 + 1 its kernels, slot x 2 its copies
    slot *= 2
    slot += kernel
    counts = np.bincount(slot)
    if counts.size % 2:
        counts = np.append(counts, 0)
    by_code = counts[0::2] + counts[1::2]
    present = np.flatnonzero(by_code)
    sums = np.bincount(slot, weights=duration, minlength=counts.size)
    out = {"size": by_code[present].astype(np.int64)}
    if kernels:
        out["kernels"] = counts[1::2][present].astype(np.int64)
    out["gpu"] = sums[1::2][present].astype(np.int64)
    out["copy"] = sums[0::2][present].astype(np.int64)
    return CodeSums((present - 1).astype(np.int64), out)


def code_sums_in_blocks(
    size: int, block: Callable[[int, int], tuple[np.ndarray, dict[str, np.ndarray]] | CodeSums]
) -> CodeSums:
    """:func:`code_sums` of ``size`` rows given a block at a time: ``block(lo, hi)`` gives the codes and columns
    of rows [lo, hi) (or their sums, a :class:`CodeSums`), so that no column of every row is held at once. The same
    sums: each block's int64 sums are exact modulo 2**64 (as pandas adds them), and so are their int64 totals."""
    parts = []
    for lo in range(0, max(size, 1), SUM_BLOCK):  # a loop over blocks of rows
        found = block(lo, min(lo + SUM_BLOCK, size))
        parts.append(found if isinstance(found, CodeSums) else code_sums(found[0], **found[1]))
        del found
    if len(parts) == 1:
        return parts[0]
    index = np.unique(np.concatenate([part.index for part in parts]))
    out: dict[str, np.ndarray] = {}
    for name in parts[0].columns:  # a loop over the few columns, then the blocks
        total = np.zeros(index.size, np.int64)
        for part in parts:
            np.add.at(total, np.searchsorted(index, part.index), part.columns[name])
        out[name] = total
    return CodeSums(index, out)


def sums_by_code_in_blocks(
    size: int, block: Callable[[int, int], tuple[np.ndarray, dict[str, np.ndarray]]]
) -> pd.DataFrame:
    """:func:`code_sums_in_blocks` as the frame of :func:`sums_by_code`."""
    return code_sums_in_blocks(size, block).frame()


def gpu_durations(pairs: Any, at: np.ndarray) -> np.ndarray:
    """``(pairs["end"] - pairs["start"]).astype(np.int64)[at]``, gathered at the GPU ops ``at`` only."""
    picked = pairs[at]
    duration: np.ndarray = (picked["end"] - picked["start"]).astype(np.int64)
    return duration


def gpu_op_durations(trace: Trace, at: np.ndarray | slice) -> np.ndarray:
    """``gpu_durations(launch_pairs(trace), at)`` (``at``: positions, or a slice of them). Where the GPU ops fit one
    block (SUM_BLOCK) their durations are computed once per trace and read here (the report's table, its
    innermost-op table and the diagnosis's launching ops each read them: the same elementwise values); beyond,
    gathered at ``at`` on each call, so that no column of every GPU op is held."""
    pairs = launch_pairs(trace)
    if len(pairs) > SUM_BLOCK:
        return gpu_durations(pairs, np.arange(len(pairs))[at] if isinstance(at, slice) else at)
    whole = memo(
        trace, "gpu_op_name_codes/durations", lambda: _read_only(gpu_durations(pairs, np.arange(len(pairs))))
    )
    return whole[at]


def _read_only(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False  # shared by the readers: none may change it
    return values


@dataclass
class OpValues:
    """One value per op-name code: ``index`` the codes (ascending), ``values`` theirs. A ``pd.Series`` indexed
    by code without pandas."""

    index: np.ndarray
    values: np.ndarray

    def get(self, code: int) -> float | None:
        """``float(series[code])`` where the code is there, else None."""
        at = int(np.searchsorted(self.index, code))
        if at < self.index.size and self.index[at] == code:
            return float(self.values[at])
        return None

    def series(self) -> pd.Series:
        import pandas as pd

        return pd.Series(self.values, index=self.index)


def float_sums(code: np.ndarray, values: np.ndarray, all_known: bool = False) -> OpValues:
    """``pd.Series(values).groupby(code).sum()`` of float64 values (NaN adds nothing; codes ascending), and
    with ``all_known`` NaN for a code where some value is NaN (``sum().where(count() == size())``). pandas adds
    with Kahan's compensation: the bincount here gives its result where every partial sum is exact (integral
    values whose magnitudes add below 2**53, as FLOP and byte counts do); pandas adds them otherwise."""
    values = np.asarray(values, np.float64)
    missing = np.isnan(values)
    known = np.where(missing, 0.0, values)
    exact = (
        bool(np.isfinite(known).all())
        and bool(np.abs(known).sum() < FLOAT_EXACT)
        and bool((known == np.round(known)).all())
    )
    if not exact:
        import pandas as pd

        grouped = pd.Series(values).groupby(np.asarray(code))
        sums = grouped.sum()
        if all_known:
            sums = sums.where(grouped.count() == grouped.size())
        return OpValues(sums.index.to_numpy(np.int64), sums.to_numpy(np.float64))
    index, group = np.unique(np.asarray(code, np.int64), return_inverse=True)
    group = group.reshape(-1)
    out = np.bincount(group, weights=known, minlength=index.size).astype(np.float64)  # (an empty one is int)
    if all_known:
        out[np.bincount(group, weights=missing, minlength=index.size) > 0] = np.nan
    return OpValues(index, out)
