"""The host names the GPUs' feeding threads spent their time in (:func:`feeding_name_sums`), summed by the
attribution section while it holds the host rows, for the diagnosis's launch-overhead evidence."""

from __future__ import annotations

import numpy as np

from ..trace import Trace
from .attribution import feeding_threads, host_rows
from .columns import device_busy, memo
from .names import CPU, HOST_CATEGORY_PRIORITY, LAUNCH

# Up to this many host rows the feeding threads' names are summed (a pass over the host rows); beyond (an Nsight
# export's tens of millions of NVTX and API rows), the diagnosis's trace-wide top names stand.
FEEDING_TOP_ROWS = 1 << 22


def feeding_name_sums(trace: Trace) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
    """Per host category (cpu, launch): each name's row count and summed time on the GPUs' feeding threads only
    (index = name code + 1; 0: rows without a name), where some host thread feeds no GPU (a serving trace's API
    server, a tqdm monitor); None where every host thread feeds one, none does, or beyond FEEDING_TOP_ROWS host rows.
    Memoized by the attribution section, which holds the host rows: the diagnosis reads it (host_launch_overhead's
    top names) without the host rows, which it would compute again (analyses.RECOMPUTED)."""

    def compute() -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        rows = host_rows(trace)
        if rows.row.size > FEEDING_TOP_ROWS:
            return None
        chosen = np.zeros(len(rows.threads), bool)
        for busy in device_busy(trace).values():  # a loop over devices
            chosen[feeding_threads(trace, busy.device)[0]] = True
        if chosen.all() or not chosen.any():
            return None
        on_feeding = chosen[rows.thread]
        size = len(rows.cols.names) + 1
        sums = {}
        for category in (CPU, LAUNCH):
            mine = on_feeding & (rows.category == HOST_CATEGORY_PRIORITY.index(category))
            slot = rows.names(mine).astype(np.intp) + 1
            duration = rows.ends(mine) - rows.starts(mine)
            sums[category] = (
                np.bincount(slot, minlength=size),
                np.bincount(slot, weights=duration, minlength=size),
            )
        return sums

    found: dict[str, tuple[np.ndarray, np.ndarray]] | None = memo(trace, "feeding_name_sums", compute)
    return found
