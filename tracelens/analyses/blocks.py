"""Rows of the event table found a block of rows at a time: the positions among the rows of some kinds, without a
mask or a position array of the whole table (41M rows of a training export: 41 MB a mask, 330 MB the positions).
"""

from __future__ import annotations

import numpy as np

# Rows of the table read at once (a mask of this many bytes, and positions of at most 8 bytes each).
BLOCK_ROWS = 1 << 21


def kind_mask(kind: np.ndarray, codes: tuple[int, ...]) -> np.ndarray:
    """Whether each of ``kind`` (a block of the kind column) is one of ``codes``."""
    mask = kind == codes[0]
    for code in codes[1:]:  # a few kinds
        mask |= kind == code
    return mask


def rows_of_kind_at(kind: np.ndarray, codes: tuple[int, ...], positions: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(np.isin(kind, codes))[positions]`` (int64) for ascending ``positions``, one block of rows
    at a time: the rows of the kinds are counted block by block, and only the blocks holding a position asked
    for list theirs."""
    out = np.empty(positions.size, np.int64)
    if not positions.size:
        return out
    seen = done = 0  # rows of the kinds before this block; positions answered
    for lo in range(0, kind.size, BLOCK_ROWS):  # a loop over blocks of rows
        mask = kind_mask(kind[lo : lo + BLOCK_ROWS], codes)
        count = int(np.count_nonzero(mask))
        upto = int(np.searchsorted(positions, seen + count, side="left"))
        if upto > done:
            mine = np.flatnonzero(mask)
            mine += lo
            out[done:upto] = mine[positions[done:upto] - seen]
            done = upto
            if done == positions.size:
                break
        seen += count
    if done < positions.size:
        raise IndexError("position past the rows of the kinds")
    return out


def count_of_kind(kind: np.ndarray, code: int) -> int:
    """``np.count_nonzero(kind == code)``, a block of rows at a time (no mask of the whole table)."""
    return sum(
        int(np.count_nonzero(kind[lo : lo + BLOCK_ROWS] == code)) for lo in range(0, kind.size, BLOCK_ROWS)
    )
