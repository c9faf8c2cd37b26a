"""The startup rule long_launch's rows (:mod:`.startup`): kernel-launch calls lasting long while their GPU was idle.

Read at the matched calls' event rows, not through ``launch_pairs``' lean launch columns: a read of those gathers
every GPU op's value (207K on the 406 MB Kineto tile, each column kept once read), and this rule, run early on the
sections' critical thread (the attribution's), needs the few long calls' only; the columns' first gather is left to
their next reader.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace
from .columns import device_busy, event_columns
from .few_overlaps import overlap_of_few
from .launch import launch_pairs
from .names import code_mask, is_graph_launch, is_kernel_launch

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


def long_launches(trace: Trace, min_ns: int) -> np.ndarray:
    """Event rows (ascending, distinct) of the kernel-launch calls (not graph launches) of matched GPU ops lasting
    ``min_ns`` or more during which their GPU was idle at least half the time."""
    pairs = launch_pairs(trace)
    cols = event_columns(trace)
    # the long matched calls first (few), then their names
    at = long_matched(pairs["matched"], pairs["launch_row"], cols.start, cols.end, min_ns)
    launch_row = pairs["launch_row"]
    at = at[
        code_mask(
            cols.name[launch_row[at]], cols.names, lambda n: is_kernel_launch(n) and not is_graph_launch(n)
        )
    ]
    device, rows = pairs["device"][at], launch_row[at]
    launch_start, launch_end = cols.start[rows], cols.end[rows]
    found = []
    for device_id, busy in device_busy(trace).items():  # a loop over devices
        on = device == device_id
        start, end = launch_start[on], launch_end[on]
        idle = overlap_of_few(start, end, busy.gap_starts, busy.gap_ends)  # few long calls, many gaps
        # before its first op the GPU is idle too (the first launch of a program, loading its module)
        idle = idle + np.clip(np.minimum(end, busy.first_start_ns) - start, 0, None)
        found.append(rows[on][2 * idle >= end - start])
    # (sorted distinct by the unique that counts: numpy's plain unique imports numpy.ma on its first call, ~8 ms
    # of CPU on the sections' critical thread)
    return np.unique(np.concatenate(found), return_counts=True)[0] if found else np.empty(0, np.int64)


def long_matched(
    matched: np.ndarray, launch_row: np.ndarray, start: np.ndarray, end: np.ndarray, min_ns: int
) -> np.ndarray:
    """Positions (int64, ascending) of the ops ``matched`` whose launch call (its event row ``launch_row``, any row
    where not matched) lasts ``min_ns`` or more: by one compiled pass reading the times at the matched rows only,
    where built and the arrays are plain (int64 times, int32/int64 rows); else by numpy gathers at every op."""
    plain = (
        _compiled is not None
        and type(start) is np.ndarray
        and type(end) is np.ndarray
        and start.dtype == np.int64
        and end.dtype == np.int64
        and launch_row.dtype in (np.int32, np.int64)
        and matched.dtype == np.bool_
    )
    if not plain:
        # (an unmatched op's row, 0 or -1, is any row: dropped by `matched`)
        return np.flatnonzero(matched & (end[launch_row] - start[launch_row] >= min_ns))
    out = np.empty(launch_row.size, np.int64)  # (only the few pages written are touched)
    count = _compiled.long_matched(
        np.ascontiguousarray(launch_row),
        np.ascontiguousarray(matched),
        np.ascontiguousarray(start),
        np.ascontiguousarray(end),
        int(min_ns),
        out,
    )
    return out[:count].copy()
