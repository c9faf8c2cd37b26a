"""The Kineto table's row order by start, and its starts in that order less the first, from the host rows' and
the GPU rows' (start, row) keys sorted apart and merged (``ingest/_start_merge.c``): each kind is nearly in start
order in the file (a few hundred runs), but they interleave, so numpy's stable sort of all the starts finds no
runs (14 ms at the 406 MB tile's 1.5M rows, the head of Columns.finish, then a gather of the starts); the kinds'
keys sort in a few ms, and their merge writes the order and the relative starts, in the two output arrays only
(no other array: fresh pages cost more than the sort there), and where each GPU row lands (the GPU rows placed,
with no pass over the table's kinds). Exactly the stable order: the keys order rows by
(start, row). Without the extension, or where the GPU rows
are not ascending rows of the table: numpy's stable sort of all the starts."""

from __future__ import annotations

import numpy as np

try:
    from .. import _start_merge as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


# (the rows in stable start order; the starts in that order less the first; the first; where the merge placed the
# GPU rows: (the index of each into the GPU rows, in table order; its table row, ascending) as
# placing.in_table_order gives them, or None where numpy sorted)
StartOrder = tuple[np.ndarray, np.ndarray, int, tuple[np.ndarray, np.ndarray] | None]


def merged_start_order(
    start: np.ndarray, gpu_rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int, tuple[np.ndarray, np.ndarray]] | None:
    """(the rows in stable start order, as ``np.argsort(start, kind="stable")``; the starts in that order less
    the first; the first; the GPU rows placed: ``placing.in_table_order(gpu_rows, order, n)``), or None where the
    merge does not apply: no extension, not int64, no GPU or no host row, GPU rows that are not strictly
    ascending rows of ``start``, or a (start, row) key past 63 bits (the starts' span times the rows: 73
    minutes at 2M rows)."""
    merge = _compiled
    n, g = start.size, gpu_rows.size
    if merge is None or start.dtype != np.int64 or gpu_rows.dtype != np.int64 or not 0 < g < n:
        return None
    shift = max(1, (n - 1).bit_length())
    if shift > 62:
        return None
    gpu_rows = np.ascontiguousarray(gpu_rows)
    order = np.empty(n, np.int64)
    relative = np.empty(n, np.int64)
    origin = merge.pack(np.ascontiguousarray(start), gpu_rows, order, relative, shift)
    if origin is None:
        return None
    # each kind's keys sorted in place (unique keys: any sort gives one order; timsort finds the kinds' runs)
    order[g:].sort(kind="stable")
    relative[n - g :].sort(kind="stable")
    kept, at = np.empty(g, np.int64), np.empty(g, np.int64)
    merge.merge(order, relative, shift, gpu_rows, kept, at)
    return order, relative, int(origin), (kept, at)


def start_order(start: list[np.ndarray], gpu_rows: np.ndarray) -> StartOrder:
    """(the rows in stable start order; the starts in that order less the first; the first; the GPU rows placed
    where the merge placed them, else None) of the starts ``start[0]``, taken out of the list (the caller holds
    no other reference: the starts' pages go as soon as they are read)."""
    starts = start.pop()
    merged = merged_start_order(starts, gpu_rows)
    if merged is not None:
        return merged
    order = np.argsort(starts, kind="stable")
    origin = int(starts[order[0]])
    relative = np.take(starts, order)
    del starts
    relative -= origin
    return order, relative, origin, None
