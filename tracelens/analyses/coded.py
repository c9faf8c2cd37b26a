"""An integer event column of a few distinct values, read by the sections as a numpy array but held as the store's
codes (:class:`~tracelens.trace.CodedColumn`): an Nsight export's pid and tid, a byte a row for both instead of
four bytes a row each (280 MiB less through the whole analysis at 41M rows).

:class:`CodedInts` answers what the sections ask of such a column (``cols.pid[rows]``, ``cols.tid >= 0``,
``cols.pid == p``, ``.size``, ``.dtype``, ``np.asarray(cols.pid)``) with the values the plain array would give:
a gather reads the codes at the rows and then their values (a slice is a CodedInts view of the codes, as numpy's
is a view); an elementwise operation with scalars runs on the few values and is read at every row's code; anything
else reads the whole column into a plain array first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace import code_lookup


class CodedInts(np.lib.mixins.NDArrayOperatorsMixin):
    """``table[codes]`` (one value per row), without holding it: ``codes`` int8/int16 positions in ``table``, each
    position occurring in some row (as a CodedColumn's do: ``table`` is the column's distinct values)."""

    def __init__(self, codes: np.ndarray, table: np.ndarray, complete: bool = True) -> None:
        self.codes = codes
        self.table = table
        self.complete = complete  # every position in ``table`` occurs in ``codes`` (a slice: maybe not)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.table.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    @property
    def size(self) -> int:
        return int(self.codes.size)

    @property
    def ndim(self) -> int:
        return 1

    @property
    def nbytes(self) -> int:
        """The bytes the plain array would take (what a reader of ``nbytes`` sizes)."""
        return self.size * self.table.itemsize

    def __len__(self) -> int:
        return self.size

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        values = code_lookup(self.table, self.codes)
        return values if dtype is None else values.astype(dtype, copy=False)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):  # a view, as numpy's slice is (a block of rows compared to a thread's pid)
            return CodedInts(self.codes[key], self.table, complete=False)
        picked = self.codes[key]
        if np.ndim(picked) == 0:
            return self.table[picked]
        return code_lookup(self.table, picked)

    def min(self) -> Any:
        return self.table.min() if self.size and self.complete else np.asarray(self).min()

    def max(self) -> Any:
        return self.table.max() if self.size and self.complete else np.asarray(self).max()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if (
            method == "__call__"
            and not kwargs
            and ufunc.nout == 1
            and all(x is self or (np.ndim(x) == 0 and not isinstance(x, CodedInts)) for x in inputs)
        ):
            # elementwise with scalars: on each distinct value, then read at every row's code
            result = ufunc(*(self.table if x is self else x for x in inputs))
            return coded_lookup(result, self.codes)
        plain = [np.asarray(x) if isinstance(x, CodedInts) else x for x in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)


# Up to this many codes a boolean table is read by comparisons (at most half of them), not by a gather.
_FEW_CODES = 8


def coded_lookup(table: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``table[codes]``; for a boolean table by a comparison of the codes per code on the rarer side (one pass
    over a byte a row each for the usual two or three threads, faster than a gather)."""
    if table.dtype != np.bool_ or table.size > _FEW_CODES:
        return code_lookup(table, codes)
    code = codes.dtype.type  # compared in the codes' own type: no widened copy of them
    true = np.flatnonzero(table)
    if true.size == 0:
        return np.zeros(codes.shape, bool)
    if true.size == table.size:
        return np.ones(codes.shape, bool)
    if 2 * true.size <= table.size:
        out = codes == code(true[0])
        for c in true[1:]:  # a few codes
            out |= codes == code(c)
        return out
    false = np.flatnonzero(~table)
    out = codes != code(false[0])
    for c in false[1:]:  # a few codes
        out &= codes != code(c)
    return out
