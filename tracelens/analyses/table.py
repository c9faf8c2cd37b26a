"""A shared value's table: equal-length named numpy columns, some of them not held but read from elsewhere on
each read (:class:`LazyColumn`), with lazy row selections. Sections import both from ``analyses.columns``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


class LazyColumn:
    """A :class:`Table` column not held but gathered on each read: ``read(rows)`` gives its values at the table's
    rows ``rows`` (int64 positions, in any order, repeats allowed; None: every row, in order), read from arrays
    held elsewhere (the event columns) by way of the small ones it keeps, ``held`` (named for the memory
    benchmarks' count of what a shared value holds)."""

    def __init__(
        self, size: int, read: Callable[[np.ndarray | None], np.ndarray], held: tuple[Any, ...] = ()
    ) -> None:
        self.size = size
        self.read = read
        self.held = held

    def __len__(self) -> int:
        return self.size


class Table:
    """Equal-length named numpy columns. ``t["col"]`` is a column; ``t[mask]`` / ``t[indices]`` select rows.

    Row selections are lazy: a column is gathered when first read, so selecting rows of a wide table to
    read two of its columns costs two gathers, not one per column. A column may be a :class:`LazyColumn`,
    gathered from its sources on every read of the whole table (a new array each time: read it once), and once per
    row selection, straight at the selected rows.
    """

    def __init__(
        self, columns: Mapping[str, np.ndarray | LazyColumn], rows: np.ndarray | None = None
    ) -> None:
        self._columns = columns
        self._rows = rows  # int64 row indices into the columns, or None for all rows
        self._gathered: dict[str, np.ndarray] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            column = self._columns[key]
            if self._rows is None:
                return column.read(None) if isinstance(column, LazyColumn) else column
            if key not in self._gathered:
                self._gathered[key] = (
                    column.read(self._rows) if isinstance(column, LazyColumn) else column[self._rows]
                )
            return self._gathered[key]
        key = np.asarray(key)
        picked = np.flatnonzero(key) if key.dtype == bool else key.astype(np.int64)
        return Table(self._columns, picked if self._rows is None else self._rows[picked])

    def __len__(self) -> int:
        if self._rows is not None:
            return int(self._rows.size)
        return len(next(iter(self._columns.values()))) if self._columns else 0

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def held_bytes(self) -> int:
        """Bytes of the arrays the whole table holds (its columns, and what its lazy columns keep; each array once,
        views of one value none)."""
        arrays = {}
        for column in self._columns.values():
            for array in column.held if isinstance(column, LazyColumn) else (column,):
                if isinstance(array, np.ndarray) and array.strides != (0,):
                    arrays[id(array)] = array.nbytes
        return sum(arrays.values())
