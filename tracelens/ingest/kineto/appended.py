"""The blocks' arrays held per key as they come (:class:`.table.Columns`), joined when the table build reads them.

Joined then, not as each block comes: copied into growing arrays on the inflating thread, the blocks cost that
thread as much as the join saved after the last block (the new arrays' pages faulted in there instead), and the
blocks phase is the longer part of a load (measured at the 406 MB tile: load CPU the same, finish 0.19 -> 0.16 s
CPU, add 0.03 -> 0.10 s on the main thread). Where a key's blocks are consecutive slices of one array (the reader
writes them so into row_chunks.py's chunks), the join is a view of it: no copy at all."""

from __future__ import annotations

import numpy as np

from .blocks import scanner


class Appended:
    """Arrays of the same key from successive blocks; :meth:`joined` gives a key's rows from every block (np.concatenate
    of them, made once)."""

    def __init__(self) -> None:
        self._blocks: dict[str, list[np.ndarray]] = {}

    def add(self, key: str, values: np.ndarray, shift: int = 0) -> None:
        """Add a block's ``values`` (plus ``shift``: a block's row numbers made joined-block rows) to ``key``'s."""
        self._blocks.setdefault(key, []).append(values + shift if shift else values)

    def joined(self, key: str) -> np.ndarray:
        """``key``'s rows from every block, in block order."""
        blocks = self._blocks[key]
        if len(blocks) != 1:
            run = _one_run(blocks)
            blocks[:] = [np.concatenate(blocks) if run is None else run]
        return blocks[0]

    def pop(self, key: str) -> np.ndarray:
        """:meth:`joined`, no longer held here."""
        joined = self.joined(key)
        del self._blocks[key]
        return joined

    def pop_taken(self, key: str, order: np.ndarray) -> np.ndarray:
        """:meth:`pop` taken in ``order`` (rows of all blocks), int32 values as int64: the ids the row chunks hold
        as int32 (row_chunks.NARROW_KEYS) become the table's int64 columns in the one pass that orders them."""
        values = self.pop(key)
        if values.dtype != np.int32:
            return np.take(values, order)
        widened = getattr(scanner(), "take_widened", None)
        if widened is None or order.dtype != np.int64 or not values.flags.c_contiguous:
            return np.take(values, order).astype(np.int64)
        out = np.empty(order.size, dtype=np.int64)
        widened(values, np.ascontiguousarray(order), out)
        return out

    def pop_blocks(self, key: str) -> list[np.ndarray]:
        """``key``'s arrays as added (not joined), no longer held here."""
        return self._blocks.pop(key)

    def discard(self, key: str) -> None:
        """Drop ``key``'s arrays unread (none held: nothing to do)."""
        self._blocks.pop(key, None)


def _one_run(blocks: list[np.ndarray]) -> np.ndarray | None:
    """The blocks' arrays joined as a view, where they are consecutive slices (of whole rows) of one array
    (row_chunks.py: a key's blocks written into one chunk in file order), else None (they are copied into a
    joined array)."""
    filled = [values for values in blocks if values.size]
    base = filled[0].base if filled else None
    if not isinstance(base, np.ndarray) or base.ndim == 0 or not base.flags.c_contiguous:
        return None
    if any(values.dtype != base.dtype or values.shape[1:] != base.shape[1:] for values in blocks):
        return None  # (np.concatenate would give another type or shape)
    step, origin = base.strides[0], base.__array_interface__["data"][0]
    begin = end = (filled[0].__array_interface__["data"][0] - origin) // step
    for values in filled:  # (an empty slice adds nothing, wherever it points)
        if (
            values.base is not base
            or not values.flags.c_contiguous
            or values.__array_interface__["data"][0] != origin + end * step
        ):
            return None
        end += values.shape[0]
    return base[begin:end]
