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


def merged_busy(
    kind: object, device: object, start: object, end: object
) -> list[tuple[int, np.ndarray, np.ndarray, int, int]] | None:
    """Per device in ascending order: (device, merged busy starts, ends, the least start, the largest end) of the
    GPU ops (GPU activity kinds with a device >= 0), as ``intervals.merge`` of each device's ops gives them; None
    where the pass does not apply."""
    if _compiled is None or not hasattr(_compiled, "busy_intervals"):
        return None
    if not (
        plain_ints(kind, (1,))
        and plain_ints(device, (1, 2, 4, 8))
        and plain_ints(start, (8,))
        and plain_ints(end, (8,))
    ):
        return None
    scanned = _compiled.busy_intervals(kind, device, start, end, _GPU_KINDS)
    if scanned is None:
        return None
    held, devices = scanned
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
    return sorted(found, key=lambda item: item[0])
