"""The attribution's late launches (docs/analyses.md, "attribution": HTA's "host wait"): per idle gap of a device,
whether the earliest op starting at the gap's end was launched (its launch call ended) after the gap began.

By one compiled walk over the gaps and the device's ops where built (``_kernel_stats.late_launch``): the numpy
path searches every gap's end among the ops' starts, clips, then gathers the ops found, their `matched` flags,
launch rows and the calls' ends (five arrays as long as the gaps, ~200K on the 406 MB Kineto tile, each into fresh
pages). The walk writes one byte per gap. The numpy path is kept (no build, gap ends not ascending).
"""

from __future__ import annotations

import numpy as np

from .. import intervals

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


def late_flags(
    op_start: np.ndarray,
    op_pos: np.ndarray | None,
    matched: np.ndarray,
    launch_row: np.ndarray,
    end: np.ndarray,
    gap_starts: np.ndarray,
    gap_ends: np.ndarray,
) -> np.ndarray:
    """Per gap [gap_starts, gap_ends) (ends ascending): whether the earliest op (starts ``op_start``, at least one
    op; positions ``op_pos`` in ``matched`` / ``launch_row``, None: every op, in order) starting at or after the
    gap's end, or the last op where none does, is matched and its launch call (event row ``launch_row``) ends
    (``end``, per event row) after the gap begins. Ops that start together are taken in their given order."""
    found = _compiled_flags(op_start, op_pos, matched, launch_row, end, gap_starts, gap_ends)
    return (
        late_flags_numpy(op_start, op_pos, matched, launch_row, end, gap_starts, gap_ends)
        if found is None
        else found
    )


def late_flags_numpy(
    op_start: np.ndarray,
    op_pos: np.ndarray | None,
    matched: np.ndarray,
    launch_row: np.ndarray,
    end: np.ndarray,
    gap_starts: np.ndarray,
    gap_ends: np.ndarray,
) -> np.ndarray:
    """:func:`late_flags` by numpy (the reference of the compiled walk)."""
    if op_pos is None:
        op_pos = np.arange(op_start.size)
    if (op_start[1:] < op_start[:-1]).any():
        order = np.argsort(op_start, kind="stable")
        op_start = op_start[order]
        op_pos = op_pos[order]
        del order
    # the gap ends ascend: searched block by block; the launch columns read at the ops found only
    idx = intervals.search_sorted(op_start, gap_ends, side="left")
    np.minimum(idx, op_start.size - 1, out=idx)
    op = op_pos[idx]
    del idx
    # the calls' ends read straight at their event rows (launch_row): no fill of the unmatched ops' ends (their
    # row is 0 or -1, any end, and `matched` is False there)
    late = matched[op]
    late &= end[launch_row[op]] > gap_starts
    return late


def _compiled_flags(
    op_start: np.ndarray,
    op_pos: np.ndarray | None,
    matched: np.ndarray,
    launch_row: np.ndarray,
    end: np.ndarray,
    gap_starts: np.ndarray,
    gap_ends: np.ndarray,
) -> np.ndarray | None:
    """:func:`late_flags` by the compiled walk; None where it is absent, an array is not plain, or the ops' starts
    or the gap ends descend somewhere."""
    if _compiled is None or not hasattr(_compiled, "late_launch"):
        return None
    int64s = (op_start, end, gap_starts, gap_ends) + (() if op_pos is None else (op_pos,))
    if not (
        all(type(a) is np.ndarray and a.dtype == np.int64 for a in int64s)
        and type(matched) is np.ndarray
        and matched.dtype == np.bool_
        and type(launch_row) is np.ndarray
        and launch_row.dtype in (np.int32, np.int64)
    ):
        return None
    out = np.empty(gap_ends.size, bool)
    done = _compiled.late_launch(
        np.ascontiguousarray(op_start),
        None if op_pos is None else np.ascontiguousarray(op_pos),
        np.ascontiguousarray(matched),
        np.ascontiguousarray(launch_row),
        np.ascontiguousarray(end),
        np.ascontiguousarray(gap_starts),
        np.ascontiguousarray(gap_ends),
        out,
    )
    return out if done else None
