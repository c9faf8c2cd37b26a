"""The queued part of a device's idle gaps: the part after the GPU had its next op (docs/analyses.md, "attribution",
**Queued**).

Definitions:
    queued part of a gap = [max(gap start, L + QUEUED_AFTER_NS), gap end), where the earliest GPU op starting at the
                           gap's end has a matched launch call that returned at L at or before the gap began (not a
                           late launch); empty for every other gap
    from a graph         = that op's launch call is a CUDA/HIP graph launch (``names.is_graph_launch``): its queued
                           part is ``queued`` (the GPU's own, inside a replay the host handed over whole); the queued
                           part before an op launched one by one is launch overhead's (``launch``): the GPU had the op
                           and the host's categories do not explain the gap, but per-kernel launches leave it and the
                           launch remedy (CUDA graphs, fusion) shortens it
"""

from __future__ import annotations

import numpy as np

from .. import intervals
from ..trace import Trace
from .columns import DeviceBusy, event_columns
from .graph_launches import graph_launches
from .launch import launch_pairs

# A GPU starts an op it is handed within this long when it is free: the launch latencies (op start - call end) of
# the recordings in fixtures/gpu are 1.2-2.2 µs at the median. Gap time later than this after an op's launch call
# returned, in a gap that began with that op already handed over, is not the host's to explain.
QUEUED_AFTER_NS = 10_000


def host_part_ends(trace: Trace, busy: DeviceBusy, late: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per gap [start, end): where its part the host's categories split ends; per gap: its next op came from a graph
    launch). The part ends at the gap's end, unless the op starting there was launched by a call that returned at L
    before the gap began (not ``late``): then at L + QUEUED_AFTER_NS, clipped to the gap. The rest of such a gap the
    GPU had the op and did not run it: no host activity (a synchronize waiting for the queue) explains it. Where the
    op came from a graph launch that rest is ``queued``; where it was launched one by one, ``launch`` (the GPU's gaps
    between ops launched one by one are ~1.9 µs against ~0.26 µs inside a graph on the fixtures' H200 pairs: CUDA
    graphs shorten them)."""
    gs, ge = busy.gap_starts, busy.gap_ends
    no_graph = np.zeros(ge.size, bool)
    if gs.size == 0:
        return ge, no_graph
    pairs = launch_pairs(trace)
    on = np.flatnonzero(pairs["device"] == busy.device)
    if on.size == 0:
        return ge, no_graph
    op_start = pairs[on]["start"]
    if (op_start[1:] < op_start[:-1]).any():  # (most traces list a device's ops in time order: no sort)
        # (ops that start together: in their given order, as late_flags)
        order = np.argsort(op_start, kind="stable")
        on, op_start = on[order], op_start[order]
        del order
    at = np.minimum(intervals.search_sorted(op_start, ge, side="left"), on.size - 1)
    # the op starting at the gap's end (none: the gap ends at an op that launch_pairs does not hold), launched before
    # the gap began
    ahead = (op_start[at] == ge) & ~late
    op = on[at[ahead]]
    del at
    picked = pairs[op]
    count, from_graph = graph_launches(event_columns(trace), pairs)
    graph = from_graph[op] if count else np.zeros(op.size, bool)
    taken = picked["matched"]
    ahead[ahead] = taken
    if not taken.any():
        return ge, no_graph
    returned = event_columns(trace).end[picked["launch_row"][taken]]
    out = ge.copy()
    out[ahead] = np.clip(returned + QUEUED_AFTER_NS, gs[ahead], ge[ahead])
    if not count:
        return out, no_graph
    from_graph_gap = np.zeros(ge.size, bool)
    from_graph_gap[ahead] = graph[taken]
    return out, from_graph_gap
