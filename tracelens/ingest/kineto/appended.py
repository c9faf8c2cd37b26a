"""The blocks' arrays appended, one array per key, as each block comes (:class:`.table.Columns`): the table build
after the last block reads them joined, without joining them then.

Why: joining (np.concatenate) after the last block copied ~120 MB of block arrays at the 406 MB benchmark tile
into fresh arrays (pages the kernel faults in and zeroes) on the part of the load nothing overlaps, while the
blocks themselves stayed allocated until then. Appended as they come, each block's arrays are copied while they
are still in cache and freed at once (the next blocks reuse their memory). Each joined array is allocated with
room for millions of rows at once: address space only, as the kernel maps a page when it is first written (the
rows past the last block's are never touched).
"""

from __future__ import annotations

import numpy as np

# An array's first room (rows): untouched address space beyond the rows written. Past it, an array is copied into
# one twice as large (a trace of more rows copies each row about once more).
ROOM_ROWS = 1 << 22


class Appended:
    """Arrays of the same key from successive blocks, appended into one array per key (numpy's promotion of
    their dtypes, as np.concatenate makes it). :meth:`joined` gives a key's rows so far."""

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}
        self._rows: dict[str, int] = {}

    def add(self, key: str, values: np.ndarray, shift: int = 0) -> None:
        """Append ``values`` (plus ``shift``: a block's row numbers made joined-block rows) to ``key``'s rows."""
        values = np.asarray(values)
        rows = self._rows.get(key, 0)
        end = rows + len(values)
        array = self._arrays.get(key)
        if array is None:
            array = np.empty((max(end, ROOM_ROWS), *values.shape[1:]), values.dtype)
        else:
            # a block of a wider dtype (np.concatenate's promotion), or more rows than room: copied over
            dtype = array.dtype if values.dtype == array.dtype else np.result_type(array.dtype, values.dtype)
            if end > len(array) or dtype != array.dtype:
                grown = np.empty((max(end, 2 * len(array)), *array.shape[1:]), dtype)
                grown[:rows] = array[:rows]
                array = grown
        if shift:
            np.add(values, shift, out=array[rows:end])
        else:
            array[rows:end] = values
        self._arrays[key] = array
        self._rows[key] = end

    def joined(self, key: str) -> np.ndarray:
        """``key``'s rows from every block, in block order (a view: np.concatenate of the blocks' arrays)."""
        return self._arrays[key][: self._rows[key]]

    def pop(self, key: str) -> np.ndarray:
        """:meth:`joined`, no longer held here."""
        joined = self.joined(key)
        del self._arrays[key], self._rows[key]
        return joined
