"""The launch regions of the CUDA-graph remedy (remedies.host_launch_overhead): the launching calls of one host
thread, in one step, between two blocking calls, are captured in one graph; the region's first launching call
pays its launch, and the host time the capture removes is the regions' and the recorded launch and framework work
(:func:`removed_by_graphs`).

:func:`region_heads` finds each region's first call by one compiled pass over the calls (_replay_solve.c
``launch_regions``) where it was built and the calls' (thread, step, blocking calls before) ascend in call order
(the usual case: calls are stored by thread, then time); else :func:`region_heads_by_numpy`, the reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..analyses.names import CPU, HOST_CATEGORY_PRIORITY, LAUNCH
from ..analyses.startup import FIRST_API, host_categories, one_time_work
from ..values import sorted_distinct
from .engine import native_solver
from .graph import Graph

if TYPE_CHECKING:  # (remedies imports this module)
    from .remedies import Context


def region_heads(g: Graph, step_of: np.ndarray, launched: np.ndarray) -> np.ndarray:
    """The start point of the first launching call of each (thread, step, blocking calls before) region
    (``launched``: per op, op_launch_call >= 0; ``step_of``: the step of each point): the points of
    :func:`region_heads_by_numpy`, found in one pass over the calls (no sort of the callers, no gathers of their
    thread, step and time, no packed keys) where the compiled helper was built and the regions ascend in call order."""
    solver = native_solver()
    n_calls = g.call_start.size
    if solver is not None and step_of.dtype == np.int64 and n_calls:
        out = np.empty(n_calls, np.int64)
        bounds = np.zeros(5, np.int64)
        # (only the calls' starts are read, the host points, which come first: their chains and steps, so a trace
        # without steps, whose steps are a view of one value, has a copy of the host points' steps made only)
        host = 2 * n_calls
        written = solver.launch_regions(  # type: ignore[attr-defined]
            np.ascontiguousarray(g.op_launch_call, np.int64),
            np.ascontiguousarray(g.call_start),
            np.ascontiguousarray(g.chain[:host]),
            np.ascontiguousarray(step_of[:host]),
            np.ascontiguousarray(g.call_waits, dtype=bool).view(np.uint8),
            np.zeros(n_calls, np.uint8),
            out,
            bounds,
        )
        lo_thread, hi_thread, lo_step, hi_step, hi_blocks = bounds.tolist()
        # the numpy path's packed-key test: where it holds, its stable sort of ascending keys keeps call order, so
        # the first call of each region is the first in call order, as the pass found it
        if written >= 0 and (written == 0 or _packs(lo_thread, hi_thread, lo_step, hi_step, hi_blocks)):
            return out[:written].copy()
    return region_heads_by_numpy(g, step_of, launched)


def _packs(lo_thread: int, hi_thread: int, lo_step: int, hi_step: int, hi_blocks: int) -> bool:
    return lo_thread >= 0 and lo_step >= -1 and (hi_thread + 1) * (hi_step + 2) * (hi_blocks + 1) < 2**62


def region_heads_by_numpy(g: Graph, step_of: np.ndarray, launched: np.ndarray) -> np.ndarray:
    """:func:`region_heads` with numpy: the path without the compiled helper, and its reference."""
    callers = sorted_distinct(g.op_launch_call[launched])
    first_points = g.call_start[callers]
    # calls are in (thread, time) order: the blocking calls before each caller (a search among the few of them)
    blocking_before = np.searchsorted(np.flatnonzero(g.call_waits), callers, side="left")
    step, thread = step_of[first_points], g.chain[first_points]
    return heads_of_regions(first_points, g.time[first_points], thread, step, blocking_before)


def heads_of_regions(
    points: np.ndarray, time: np.ndarray, thread: np.ndarray, step: np.ndarray, blocking_before: np.ndarray
) -> np.ndarray:
    """The first of ``points`` (by time, then position) of each (thread, step, blocking calls before) region.
    ``points`` are calls' starts in (thread, time) order, so within a region their order is already the time
    order: one stable sort by the three packed into an int64 where they fit (an almost sorted array), else the
    lexsort by the four."""
    if points.size == 0:
        return points
    steps = int(step.max()) + 2  # step -1 (none) packed as 0
    blocks = int(blocking_before.max()) + 1
    threads = int(thread.max()) + 1
    if (
        int(thread.min()) >= 0
        and int(blocking_before.min()) >= 0
        and int(step.min()) >= -1
        and (threads * steps * blocks < 2**62)
    ):
        key = (thread.astype(np.int64) * steps + (step + 1)) * blocks + blocking_before
        if bool((key[1:] >= key[:-1]).all()):  # (keys mostly sorted already: the stable sort's identity)
            head = np.ones(points.size, bool)
            np.not_equal(key[1:], key[:-1], out=head[1:])
            return points[head]  # (no order, and no gather of the keys and points by it)
        order = np.argsort(key, kind="stable")
        key = key[order]
    else:
        order = np.lexsort((time, blocking_before, step, thread))
        key = np.stack([thread[order], step[order], blocking_before[order]])
    head = np.ones(points.size, bool)
    if key.ndim == 1:
        head[1:] = key[1:] != key[:-1]
    else:
        head[1:] = (key[:, 1:] != key[:, :-1]).any(axis=0)
    return points[order[head]]


def region_spans(
    g: Graph, step_of: np.ndarray, launched: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each region's host time, from its first launching call's start to its last one's end: (the region's host
    thread, as ``g.thread_keys``, start, end), one entry per region. What a capture replaces is the host code that
    issued the region's launches (between them, recorded or not: the Python between two PyTorch ops); the host time
    outside every region (before a thread's first launch after a blocking call, after its last) is the program's
    own (MPI waits, start-up, computing on the host), which a graph does not run for it."""
    callers = sorted_distinct(g.op_launch_call[launched])
    if callers.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    first_points = g.call_start[callers]
    blocking_before = np.searchsorted(np.flatnonzero(g.call_waits), callers, side="left")
    thread, step = g.chain[first_points].astype(np.int64), step_of[first_points].astype(np.int64)
    starts, ends = g.time[first_points], g.time[g.call_end[callers]]
    # callers are in (thread, time) order: a region's calls are consecutive where (thread, step, blocking calls
    # before) ascend in that order (the usual case); else ordered by them first
    keys = np.stack([thread, step, blocking_before])
    if callers.size > 1 and not bool((np.diff(keys, axis=1) >= 0).all(axis=0).all()):
        order = np.lexsort((starts, blocking_before, step, thread))
        keys, starts, ends = keys[:, order], starts[order], ends[order]
    head = np.ones(callers.size, bool)
    head[1:] = (keys[:, 1:] != keys[:, :-1]).any(axis=0)
    at = np.flatnonzero(head)
    return (
        g.thread_keys[keys[0, at]],
        np.minimum.reduceat(starts, at),
        np.maximum.reduceat(ends, at),
    )


# The longest host lag inside a launch region with nothing recorded that a CUDA graph is measured to remove: the
# before/after launch pairs (fixtures/gpu/pairs*, tests/test_pairs.py) lose such gaps of 3 µs to 4.04 ms (the
# H200 VM's longest). A longer one is kept whole: the trace cannot tell it from a host wait (a data copy being
# prepared, a lock, a sleep), which a graph does not remove; on tf/v100x8_tf2.4_bert_multiworker one 368 ms gap
# removed made the remedy "save 97.7%" of the span.
MAX_UNRECORDED_GAP_NS = 5_000_000


@dataclass(frozen=True)
class LongGaps:
    """The host points whose lag holds more than :data:`MAX_UNRECORDED_GAP_NS` inside a launch region with nothing
    recorded (``points``), and that unrecorded time each (``ns``): the graph remedy keeps it (not modelled)."""

    points: np.ndarray
    ns: np.ndarray


def long_unrecorded_gaps(ctx: Context, removed: np.ndarray, recorded: np.ndarray | None) -> LongGaps:
    """:class:`LongGaps` of the remedy's ``removed`` (the cover of the framework rows and the regions, per point):
    a point's unrecorded in-region time is ``removed`` less the rows' cover alone (``recorded``: None where no lag
    holds more than the bound, Context.host_overlaps), and never at a call's end (the call itself is recorded)."""
    if recorded is None:
        empty = np.zeros(0, np.int64)
        return LongGaps(empty, empty)
    unrecorded = removed - recorded
    del recorded
    # a call's end point: its lag is the call's own time, an API row (recorded launch or wait work, not a gap;
    # the a100 MPI saxpy's 15 long "gaps" were its calls)
    unrecorded[ctx.graph.call_end] = 0
    points = np.flatnonzero(unrecorded > MAX_UNRECORDED_GAP_NS)
    return LongGaps(points, unrecorded[points])


def removed_by_graphs(
    ctx: Context, spans: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, LongGaps]:
    """Per host point, the lag a CUDA graph capture removes: the part covered by recorded launch work (host
    category launch) or framework work (category cpu), or inside a launch region's span (``spans``: region_spans),
    less what ``Context.kept_by_graphs`` keeps (input waits, one-time work). Host time outside every region with
    nothing (or only annotations, MPI ranges) recorded is the program's own and stays: removing it too, the a100
    MPI saxpy's span went from 1.71 s to 0.68 s (MPI_Init, MPI waits). Inside a region, a lag's unrecorded time
    above :data:`MAX_UNRECORDED_GAP_NS` stays too (:func:`long_unrecorded_gaps`, returned beside)."""
    g = ctx.graph
    categories = host_categories(ctx.trace)
    one_time = one_time_work(ctx.trace)
    kept_rows = one_time.rows[one_time.reasons != FIRST_API]
    if ctx.has_input_waits:
        kept_rows = np.union1d(kept_rows, ctx.input_rows)  # (few rows)
    # the framework rows and the kept ones as one mask (np.union1d of ~1M rows took 0.27 s at x100: a hash unique)
    either = categories == HOST_CATEGORY_PRIORITY.index(CPU)
    either[kept_rows] = True
    # the union's cover less the kept rows' own. (Inside a region all of it: the measured graph pairs lose the
    # Python between their ops, 3 µs to 4 ms gaps; capped at the median gap the H100 pair read 0.52 ms, not 0.33.)
    framework = np.flatnonzero(either)
    del either
    removed, recorded = ctx.host_overlaps(framework, spans, rows_alone_above=MAX_UNRECORDED_GAP_NS)
    del framework
    long_gaps = long_unrecorded_gaps(ctx, removed, recorded)
    del recorded
    removed[long_gaps.points] -= long_gaps.ns
    kept = ctx.host_overlap(kept_rows)
    removed -= kept
    # a launch call's own time, its end's lag (from its start), is launch work whole: the API rows lie in the calls
    # (the host points), none in the gaps between them, so they need no pass of their own
    ends = g.call_end[categories[g.call_row] == HOST_CATEGORY_PRIORITY.index(LAUNCH)]
    removed[ends] = g.lag[ends] - kept[ends]
    # a first API call's one-time excess over its name's later median (kept): off its own end's lag
    removed[g.call_end] -= np.minimum(np.maximum(one_time.excess_ns(g.call_row), 0), removed[g.call_end])
    np.clip(
        removed, 0, g.lag, out=removed
    )  # (a lag is less than its interval where a queue wait was taken out)
    return removed, long_gaps
