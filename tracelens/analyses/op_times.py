"""The launch pairs' start and end columns from the GPU ops' times that ``columns.device_busy``'s compiled pass read
(``busy_scan.merged_busy_and_times``), where it holds them.

The pass reads every GPU op's start and end in row order to merge them; the launch pairs' rows are the same GPU ops
in the same order, so their start and end are those very values. Gathered from the event columns instead (what
``lean_columns.gathered`` does on the first read), they cost 1.5 + 1.9 ms of CPU on the 406 MB Kineto tile (207K
ops scattered over 1.5M rows: most of the columns' cache lines read again). Where the pass did not run, declined,
or the trace has more GPU ops than it keeps times for, the columns are gathered as before.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace
from .columns import GPU_OP_TIMES, EventColumns, LazyColumn
from .derived import held
from .lean_columns import gathered


def op_times(trace: Trace, cols: EventColumns, op_row: np.ndarray) -> tuple[LazyColumn, LazyColumn]:
    """The launch pairs' (start, end) lazy columns for the GPU ops at event rows ``op_row`` (ascending): the times
    device_busy's pass left (``columns.GPU_OP_TIMES``, never computed here) where held and as many as the ops,
    else gathered from the event columns."""
    times = held(trace, GPU_OP_TIMES)
    if times is None or times[0].size != op_row.size:
        return gathered(cols, "start", op_row), gathered(cols, "end", op_row)
    return kept_column(times[0]), kept_column(times[1])


def kept_column(values: np.ndarray) -> LazyColumn:
    """A lazy column of values held whole: a copy on each read of the whole table (as a gathered column kept once
    read gives it), else the values at the rows asked for."""

    def read(at: np.ndarray | None) -> np.ndarray:
        out: np.ndarray = values.copy() if at is None else values[at]
        return out

    return LazyColumn(values.size, read, (values,))
