"""Each GPU's merged busy intervals by one compiled pass over the event rows (``_merge_search.busy_intervals``), for
:func:`.columns.device_busy`.

The numpy path masks the GPU kinds over every event row, finds the GPU ops' rows, gathers their devices, starts and
ends, takes the distinct devices and per device selects its ops and merges them (``intervals.merge``): ~10 ms of the
attribution section on the 406 MB Kineto tile (1.5M rows, 207K GPU ops on one device). The pass reads each row's
kind where it stands and each GPU op's device and times once, merging each device's ops as they come: the same
intervals (``intervals.merge``'s steps on rows in start order). Where the pass is absent, the columns are not plain
arrays (an Nsight export's sparse devices), a device's ops are not in start order or there are more than 64
devices, the numpy path runs.
"""

from __future__ import annotations

import numpy as np

from ..trace import ALL_KINDS, GPU_ACTIVITY_KINDS
from ..values import plain_ints

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

_GPU_KINDS = np.zeros(len(ALL_KINDS), np.uint8)
_GPU_KINDS[[ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS]] = 1


# At most this many GPU ops have their times kept by the pass for the launch pairs (``merged_busy_and_times``):
# lean_columns.CACHED_ROWS, the pairs' size up to which they keep their gathered start and end anyway (a larger
# table gathers them on each read, so holding them would add 16 bytes per op for the whole analysis).
OP_TIMES_KEPT_ROWS = 1 << 19


def merged_busy(
    kind: object, device: object, start: object, end: object
) -> list[tuple[int, np.ndarray, np.ndarray, int, int]] | None:
    """Per device in ascending order: (device, merged busy starts, ends, the least start, the largest end) of the
    GPU ops (GPU activity kinds with a device >= 0), as ``intervals.merge`` of each device's ops gives them; None
    where the pass does not apply."""
    scanned = merged_busy_and_times(kind, device, start, end, 0)
    return None if scanned is None else scanned[0]


def merged_busy_and_times(
    kind: object, device: object, start: object, end: object, most_ops: int
) -> tuple[list[tuple[int, np.ndarray, np.ndarray, int, int]], tuple[np.ndarray, np.ndarray] | None] | None:
    """:func:`merged_busy`'s answer, and the GPU ops' own starts and ends in row order as the pass read them
    (``start[gpu]``, ``end[gpu]`` for the GPU ops' rows ``gpu``, ascending: launch_pairs' start and end columns)
    where there are at most ``most_ops`` of them (a bound the caller knows: the rows carrying a device) and at most
    OP_TIMES_KEPT_ROWS, else None; None where the pass does not apply."""
    if _compiled is None or not hasattr(_compiled, "busy_intervals"):
        return None
    if not (
        plain_ints(kind, (1,))
        and plain_ints(device, (1, 2, 4, 8))
        and plain_ints(start, (8,))
        and plain_ints(end, (8,))
    ):
        return None
    outs: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
    if (
        0 < most_ops <= OP_TIMES_KEPT_ROWS
    ):  # (numpy's arrays: pages the page cache reuses, not faulted in anew)
        outs = np.empty(most_ops, np.int64), np.empty(most_ops, np.int64)
    scanned = _compiled.busy_intervals(kind, device, start, end, _GPU_KINDS, *outs)
    if scanned is None:
        return None
    held, devices, times_kept = scanned
    found = []
    handover = hasattr(_compiled, "busy_handover")
    for q, (d, count, least, largest) in enumerate(devices):  # a loop over devices
        if handover:
            # the pass's own arrays, not copied into fresh pages
            starts, ends = (np.frombuffer(b, np.int64) for b in _compiled.busy_handover(held, q))
        else:
            starts, ends = np.empty(count, np.int64), np.empty(count, np.int64)
            _compiled.busy_take(held, q, starts, ends)
        found.append((d, starts, ends, least, largest))
    times = None
    if outs[0] is not None and outs[1] is not None and times_kept >= 0:
        times = outs[0][:times_kept], outs[1][:times_kept]
        for array in times:
            array.flags.writeable = False  # shared (columns.GPU_OP_TIMES): read only
    return sorted(found, key=lambda item: item[0]), times
