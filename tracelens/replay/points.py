"""What the replay graph's parts share (graph.py and the modules that build its edges and host points): the time
that means "no constraint", the point kinds, the integer type point indices are held in, an event kind's code, and
the distinct values of small integer codes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace import ALL_KINDS

NONE = -(2**62)  # "no constraint" for a time (below every real time, safe to add lags to)

# Point kinds.
HOST_START, HOST_END, GPU_START, GPU_END = range(4)


def point_index_type(n: int) -> type[np.signedinteger]:
    """The integer type point indices of a graph of ``n`` points (or event rows of a table of ``n``) are held in:
    int32 where they fit (half the bytes each pass reads), else int64."""
    return np.int32 if n < 2**31 else np.int64


def unique_ints(values: np.ndarray, return_inverse: bool = False) -> Any:
    """``np.unique(values)`` (and, with ``return_inverse``, each value's index into it) of integers spanning at most
    a few times their count (devices, streams, steps, name codes): the values in use marked in a table and ranked,
    no sort; else ``np.unique`` itself."""
    values = np.asarray(values)
    if values.size and values.dtype.kind == "i":
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * values.size + 1024:
            used = np.zeros(high - low + 1, bool)
            # as int64: no overflow of a narrow type's values shifted
            offset = values.astype(np.int64, copy=False) - low if low else values
            used[offset] = True
            distinct = (np.flatnonzero(used) + low).astype(values.dtype, copy=False)
            if not return_inverse:
                return distinct
            rank = np.cumsum(used) - 1
            return distinct, rank[offset]
    return np.unique(values, return_inverse=True) if return_inverse else np.unique(values)


def kind_code(kind: str) -> int:
    return ALL_KINDS.index(kind)
