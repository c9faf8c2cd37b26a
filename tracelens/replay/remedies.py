"""Each cause's remedy as a change to the dependency graph; the replay then says what the change gives.

Models (docs/analyses.md, "whatif"): each function takes the :class:`Context` of a trace and returns the changed
graph (None when the trace has nothing the remedy would change) and the assumptions it makes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..analyses.columns import event_columns
from ..analyses.names import (
    HOST_CATEGORY_PRIORITY,
    INPUT,
    SYNC,
    code_mask,
    is_collective_kernel,
    is_graph_launch,
    is_input,
)
from ..analyses.startup import FIRST_API, LONG_LAUNCH, host_categories, one_time_work
from ..analyses.step_arrays import step_window_arrays
from ..trace import ANNOTATION, CPU_OP, DRIVER, PYTHON, RUNTIME, STEP, Trace
from .call_names import text_mask
from .collectives import overlap_collectives
from .engine import Plan, plan, plan_without_edges, running_at, solve_with_span
from .graph import HOST_END, HOST_START, Graph, build
from .host_overlap import host_overlaps
from .launch_regions import MAX_UNRECORDED_GAP_NS, region_heads, region_spans, removed_by_graphs
from .name_tests import names_mask
from .occupancy_model import kernel_model
from .pinned import pinned_bandwidth
from .steps import worked_step_span, write_launched_steps

ITEM_MAX_BYTES = 64 * 1024  # a device-to-host read-back this small is a value read (sync.py's item pattern)
# Where the trace has no graph launch to measure: the host cost of one (median cudaGraphLaunch in
# fixtures/gpu/cuda_graph_cuda, H100 under torch.profiler: 43 µs) and the gap between consecutive graph ops (median
# there 0.42 µs; 0.26 µs in the H200 launch pair's after-trace).
DEFAULT_GRAPH_LAUNCH_NS = 40_000
DEFAULT_GRAPH_GAP_NS = 400
MIN_GRAPH_OPS = 10  # graph ops needed to measure their gaps
# pinned copies reach this share of the link's theoretical bandwidth (no pinned copy to measure)
_INPUT_KINDS = (RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION, STEP)


@dataclass
class Outcome:
    """A replay's times and what they say: span, and mean step time where the trace has steps."""

    times: np.ndarray
    span_ns: int
    step_ns: float | None
    step_count: int


class Context:
    """A trace, its graph and the step each point belongs to (shared by the remedies)."""

    def __init__(self, trace: Trace, rows: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.trace = trace
        self.graph = build(trace, rows)  # rows: the graph's point_rows where the caller found them
        g = self.graph
        self.is_host = g.kind <= max(HOST_START, HOST_END)  # the host kinds are the lowest (graph.py)
        self.windows = step_window_arrays(trace)
        # graphs made from this one by dropping edges (remedies that drop waits): their edge_src array's id ->
        # (that array, which of this graph's edges they keep), so their replay reuses this graph's order
        self._edge_subsets: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._plans_ahead: dict[int, Plan] = {}  # their plans found before their replay (plan_ahead)

    @property
    def has_steps(self) -> bool:
        """Whether the trace has step windows (else every point's step is -1)."""
        return bool(len(self.windows) and self.graph.size)

    @cached_property
    def step_of(self) -> np.ndarray:
        """The step each point belongs to (-1: none); computed on first use, so that in the what-if section the
        remedies' tasks find it on whichever thread first needs it, not before the first of them starts."""
        g, windows = self.graph, self.windows
        if not self.has_steps:  # -1 at every point: a read-only view of one value
            return np.broadcast_to(np.int64(-1), g.size)
        # host points by their own recorded time (written over the array's host part whole: no fill of it first);
        # GPU points by their launch call's start (its start point's step: searched once, not again per op),
        # unlaunched ones by their own time; a step runs until the next one starts (the last until its end),
        # that instant included
        host = 2 * g.call_start.size  # the host points come first
        step_of = np.empty(g.size, np.int64)
        step_of[host:] = -1
        # (np.asarray: the windows' columns read alike from a pandas frame or a table of arrays)
        starts = windows.start
        limit = np.append(starts[1:], windows.end[-1])
        running_at(starts, limit + 1, g.time[:host], out=step_of[:host])
        launched = write_launched_steps(step_of, g)
        alone = np.concatenate([g.op_start[~launched], g.op_end[~launched]])
        step_of[alone] = running_at(starts, limit + 1, g.time[alone])
        return step_of

    def release_step_of(self) -> None:
        """Let :attr:`step_of` (8 bytes a point) go once its last reader is done (the replays read the steps through
        :attr:`_step_reading`, found before); a later read computes it again."""
        self._step_reading  # noqa: B018 - found (and kept) before the steps go
        self.__dict__.pop("step_of", None)

    def without_edges(self, keep: np.ndarray, **arrays: np.ndarray) -> Graph:
        """The graph with only the edges ``keep`` (bool per edge) and ``arrays`` replaced: its replay reuses this
        graph's plan where it can (:func:`engine.plan_without_edges`)."""
        g = self.graph
        changed = g.with_changes(
            edge_src=g.edge_src[keep],
            edge_dst=g.edge_dst[keep],
            edge_lag=g.edge_lag[keep],
            edge_is_wait=g.edge_is_wait[keep],
            edge_is_wake=g.edge_is_wake[keep],
            edge_is_collective=g.edge_is_collective[keep],
            edge_typical=g.edge_typical[keep],
            **arrays,
        )
        self._edge_subsets[id(changed.edge_src)] = (changed.edge_src, keep)
        return changed

    def _plan_for(self, graph: Graph) -> Plan | None:
        """The plan to solve ``graph`` with: this graph's where it fits, one derived from it for a graph of
        :meth:`without_edges`, else None (the solve makes one)."""
        if self.plan.fits(graph):
            return self.plan
        subset = self._edge_subsets.get(id(graph.edge_src))
        if subset is not None and subset[0] is graph.edge_src:
            ahead = self._plans_ahead.pop(id(graph.edge_src), None)  # (used once)
            if ahead is not None and ahead.fits(graph):
                return ahead
            return plan_without_edges(self.plan, graph, subset[1])
        return None

    def plan_ahead(self, graph: Graph, scratch: np.ndarray | None = None) -> None:
        """Finds now the plan of ``graph`` (of :meth:`without_edges`) that its replay takes, its keys written into
        ``scratch`` (a remedy's lag copy to be: the two take the same memory)."""
        subset = self._edge_subsets.get(id(graph.edge_src))
        if subset is not None and subset[0] is graph.edge_src:
            self._plans_ahead[id(graph.edge_src)] = plan_without_edges(self.plan, graph, subset[1], scratch)

    def outcome(
        self, graph: Graph | None = None, times: np.ndarray | None = None, consume: bool = False
    ) -> Outcome:
        """The replay of ``graph`` (default: the unchanged one), or the ``times`` given. ``consume``: nothing reads
        ``graph`` after (a remedy's): its times are written over its own lag copy (solve_with_span's over_lag)."""
        g = graph or self.graph
        if times is None:
            own_lag = consume and g.lag is not self.graph.lag and g.lag.base is None
            t, span = solve_with_span(g, self._plan_for(g), over_lag=own_lag)
        else:
            t, span = times, int(times.max() - times.min()) if times.size else 0
        return Outcome(t, span, *self._step_ns(t))

    def _step_ns(self, t: np.ndarray) -> tuple[float | None, int]:
        """Mean step time, read where each step's work ends (its host points and the GPU ops they launched):
        with two or more steps, (end of the last step's work - end of the first's) / (steps - 1), the steady
        period, free of whatever the first step carries (the profiler's own start, a cold first batch); with one
        step, from its start (its marker's point, else its first host point keeping its recorded lead) to its
        work's end."""
        reading = self._step_reading
        if reading is None:
            return None, 0
        first, last, first_points, last_points, p, lead = reading
        end_last = t[last_points].max()
        if last > first:
            end_first = t[first_points].max()
            return float(end_last - end_first) / (last - first), last - first + 1
        if p < 0:
            return None, 0
        return float(end_last - (t[p] - lead)), 1

    @cached_property
    def _step_reading(self) -> tuple[int, int, np.ndarray, np.ndarray, int, int] | None:
        """What :meth:`_step_ns` reads, the same for every replay of the graph: (first and last step with work, the
        points of each, the point a single step's start is read at (-1: none) and its recorded lead); None
        without a step holding work. Found once, not once per remedy (a pass over every point each)."""
        g = self.graph
        if not self.has_steps:  # no step holds work (worked_step_span's answer, no pass over the points)
            return None
        # a step holding nothing but its marker (the profiler stopped as it began) has no work to end: its
        # marker's time would read the host gap after the previous step's work as a period
        markers = np.concatenate([g.call_start[g.call_is_marker], g.call_end[g.call_is_marker]])
        first, last = worked_step_span(self.step_of, markers)
        if last < 0:
            return None
        last_points = np.flatnonzero(self.step_of == last)
        if last > first:
            return first, last, np.flatnonzero(self.step_of == first), last_points, -1, 0
        host_first = np.flatnonzero(self.is_host & (self.step_of == first))
        if host_first.size == 0:
            return first, last, last_points, last_points, -1, 0
        markers = g.call_start[g.call_is_marker]
        markers = markers[self.step_of[markers] == first]
        p = markers[np.argmin(g.time[markers])] if markers.size else host_first[np.argmin(g.time[host_first])]
        lead = g.time[p] - int(self.windows.start[first])
        return first, last, last_points, last_points, int(p), int(lead)

    @cached_property
    def plan(self) -> Plan:
        """The unchanged graph's batches: every remedy that changes only lags replays with them."""
        return plan(self.graph)

    @cached_property
    def base(self) -> Outcome:
        return self.outcome()

    def release_base_times(self) -> None:
        """Keep of the unchanged replay only what the remedies' entries read (span, mean step): its times (8 bytes a
        point) go once their last reader is done (the what-if section's critical path), so that the remedies'
        replays take their pages instead of fresh ones the kernel must fault in."""
        base = self.base
        self.__dict__["base"] = Outcome(np.empty(0, np.int64), base.span_ns, base.step_ns, base.step_count)

    @cached_property
    def recorded(self) -> Outcome:
        """The recording itself, read as a replay's outcome (what the replays are measured against)."""
        return self.outcome(times=self.graph.time)

    def host_overlap(
        self, rows: np.ndarray, spans: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    ) -> np.ndarray:
        """Per point, how much of the interval its lag covers (previous point on the chain -> it) lies inside
        the union of the event ``rows`` on the same host thread (0 for GPU points and chain heads); ``spans``:
        more intervals in that union, as (thread keys, starts, ends)."""
        return self.host_overlaps(rows, spans)[0]

    def host_overlaps(
        self,
        rows: np.ndarray,
        spans: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        rows_alone_above: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`host_overlap`, and the overlap with the ``rows``' union alone where asked (host_overlap.py)."""
        return host_overlaps(self.graph, self.is_host, self.trace, rows, spans, rows_alone_above)

    @cached_property
    def input_overlap(self) -> np.ndarray:
        """``host_overlap(input_rows)``: the input waits' share of each host point's lag, which two remedies read
        (computed once; read only)."""
        out = self.host_overlap(self.input_rows)
        out.flags.writeable = False
        return out

    def one_time_lag(self, also: np.ndarray | None = None) -> np.ndarray:
        """Per host point, the one-time work in its lag (the startup section's rows; of a first API call holding
        one-time work, its excess over its name's later median, at the call's end), counted with the rows
        ``also`` (ascending) as one union on each thread: a first input wait that is one-time counts once."""
        g = self.graph
        one_time = one_time_work(self.trace)
        # a first API call holding one-time work (first_api) loses only its excess over the name's later median
        rows = one_time.rows[one_time.reasons != FIRST_API]  # ascending, as the flagged rows are
        out = self.host_overlap(rows if also is None else np.union1d(rows, also))
        out[g.call_end] += np.maximum(one_time.excess_ns(g.call_row), 0)
        return out

    def kept_by_graphs(self) -> np.ndarray:
        """Per host point, the lag a CUDA graph capture keeps: input waits (a graph does not load data) and
        one-time work (autotuning, module loads, first allocations: a graph is captured after the warm-up, which
        it does not shorten), as one union."""
        return self.one_time_lag(self.input_rows if self.has_input_waits else None)

    # the synchronization and memcpy remedies' calls (:func:`_blocking_calls`), found once for both
    blocking_calls = cached_property(lambda self: _blocking_calls(self))

    @cached_property
    def has_input_waits(self) -> bool:
        """Whether an input row lies on a known host thread (else :attr:`input_overlap` is 0 at every point)."""
        return bool((event_columns(self.trace).tid[self.input_rows] >= 0).any())

    @cached_property
    def input_rows(self) -> np.ndarray:
        cols = event_columns(self.trace)
        # the rows of input names among _INPUT_KINDS: those the host categories (computed once per trace) call
        # input, and the syncs (which rank before input there) whose name is an input name too
        base = host_categories(self.trace)
        syncs = np.flatnonzero(base == HOST_CATEGORY_PRIORITY.index(SYNC))
        rows = np.concatenate(
            [
                np.flatnonzero(base == HOST_CATEGORY_PRIORITY.index(INPUT)),
                syncs[code_mask(cols.name[syncs], cols.names, is_input)],
            ]
        )
        rows.sort()
        return rows


Remedy = Callable[[Context], tuple[Graph | None, str]]


def input_pipeline(ctx: Context) -> tuple[Graph | None, str]:
    if not ctx.has_input_waits:  # input_overlap is 0 everywhere: nothing removed
        return None, ""
    removed = ctx.input_overlap
    if removed.sum() <= 0:
        return None, ""
    return ctx.graph.with_changes(lag=np.maximum(ctx.graph.lag - removed, 0)), (
        "The input waits on the host threads (DataLoader next, tf.data iterator, tracelens/data ranges) take no "
        "time: batches are ready when the step asks (prefetching workers that keep up, whose own work on other "
        "threads or processes does not slow this one; the dequeue cost is taken as 0). Everything else keeps its "
        "recorded cost."
    )


def _graph_costs(ctx: Context) -> tuple[int, str, int | None]:
    """(host cost of one graph launch, where it comes from, gap between queued graph ops or None)."""
    g, cols = ctx.graph, event_columns(ctx.trace)
    launches = names_mask(lambda: g.call_name, g.call_name.size, cols.names, is_graph_launch)
    if launches.any():
        cost = int(np.median(g.time[g.call_end[launches]] - g.time[g.call_start[launches]]))
        how = f"{cost / 1e3:.1f} µs, the median of this trace's {int(launches.sum())} graph launches"
    else:
        cost = DEFAULT_GRAPH_LAUNCH_NS
        how = f"{cost / 1e3:.0f} µs (default: the trace has no graph launch to measure)"
    graph_ops = np.flatnonzero(g.op_graph)
    gap = None
    if graph_ops.size >= MIN_GRAPH_OPS:
        gap = int(np.median(g.lag[g.op_start[graph_ops]]))
    return cost, how, gap


def host_launch_overhead(ctx: Context) -> tuple[Graph | None, str]:
    g = ctx.graph
    launched = g.op_launch_call >= 0
    if not launched.any():
        return None, ""
    # the launch and framework work and the regions' host code, less input waits and one-time work (the rest stays)
    removed, long_gaps = removed_by_graphs(ctx, region_spans(g, ctx.step_of, launched))
    lag = g.lag.copy()
    # the host points but chain heads and the ends of calls an explicit wait set (a launch blocked on a full command
    # buffer is launch work: captured too, its queue wait kept)
    collapse = ctx.is_host & ~g.chain_first
    collapse[g.call_end[g.call_waited & g.call_waits]] = False
    np.subtract(lag, removed, out=lag, where=collapse)  # in place at those points: no masked copies
    # one graph launch per captured region: the launches of a step (or of the whole window) on one host thread
    # between two blocking calls (a graph cannot hold a host wait); its cost at the region's first launching call
    cost, how, gap = _graph_costs(ctx)
    head_points = region_heads(g, ctx.step_of, launched)
    lag[head_points] += cost
    # queued ops run back to back, at the gap measured between graph ops (else a measured default)
    starts = g.op_start[launched]
    lag[starts] = np.minimum(lag[starts], gap if gap is not None else DEFAULT_GRAPH_GAP_NS)
    gap_how = (
        f"{gap / 1e3:.2f} µs, the median gap between this trace's graph ops"
        if gap is not None
        else f"{DEFAULT_GRAPH_GAP_NS / 1e3:.2f} µs (default: the trace has no graph ops to measure)"
    )
    # a thread woken by another (the autograd thread by the main thread) is woken at once: no host work between
    edge_lag = g.edge_lag.copy()
    edge_lag[g.edge_is_wake] = 0
    region_text = "step" if int(ctx.step_of.max(initial=-1)) >= 0 else "trace window (no steps)"
    queued = int(g.call_queued.sum())
    queue_text = (
        f" The {queued:,} launches the trace shows blocked on a full command buffer still wait for the GPU to take "
        "queued work (a graph's work goes through the same queue)."
        if queued
        else ""
    )
    long_text = (
        f" Not modelled: {long_gaps.points.size:,} host gaps inside regions with more than "
        f"{MAX_UNRECORDED_GAP_NS / 1e6:.0f} ms with nothing recorded ({long_gaps.ns.sum() / 1e6:,.1f} ms in all, "
        f"the longest {long_gaps.ns.max() / 1e6:,.1f} ms) stay: the trace cannot tell them from a host wait, which a "
        "graph does not remove (the measured graph pairs show it removing such gaps up to 4 ms)."
        if long_gaps.points.size
        else ""
    )
    return g.with_changes(lag=lag, edge_lag=edge_lag), (
        f"The launches of each {region_text} between two blocking calls (a graph cannot hold a host wait) are "
        f"captured in one CUDA graph ({head_points.size:,} graphs): the recorded framework and launch work "
        f"(framework ops, Python frames and CUDA API calls, less input waits, blocking waits and one-time work) and "
        f"the host time between a region's launches with nothing recorded (up to {MAX_UNRECORDED_GAP_NS / 1e6:.0f} ms "
        f"a gap) are replaced by one graph launch each, "
        f"costing {how}; host time outside the regions with nothing recorded (or only annotations, OS-runtime or "
        f"MPI calls) is the program's own and stays; the GPU runs the same ops with the same durations, back "
        f"to back with {gap_how}; a thread woken by another (the autograd thread) is woken at once. Syncs, input "
        f"waits and one-time work (a graph is captured after the warm-up) stay.{queue_text}{long_text}"
    )


def _blocking_calls(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """(explicit syncs and small read-backs: the synchronization remedy's calls; other blocking copies: the
    memcpy remedy's), as bool masks over calls (read only: :attr:`Context.blocking_calls`, found once). Calls with
    an explicit wait only (``call_waits``): a launch blocked on a full command buffer is neither remedy's."""
    g = ctx.graph
    n = g.call_row.size
    readback = np.zeros(n, bool)
    big_copy = np.zeros(n, bool)
    waits_on_copy = g.op_is_copy & (g.op_launch_call >= 0)
    # (a blocking-kind copy call that returned before its copy began holds no wait edge, and is the memcpy
    # remedy's all the same: its copy becomes pinned)
    is_blocking = g.call_waits if g.call_copy_ahead is None else g.call_waits | g.call_copy_ahead
    if waits_on_copy.any():
        cols = event_columns(ctx.trace)
        rows = g.op_row[waits_on_copy]
        dtoh = cols.at("is_dtoh", rows)
        small = (g.op_bytes[waits_on_copy] >= 0) & (g.op_bytes[waits_on_copy] < ITEM_MAX_BYTES)
        calls = g.op_launch_call[waits_on_copy]
        readback[calls[dtoh & small]] = True
        big_copy[calls[~(dtoh & small)]] = True
    sync_side = is_blocking & (g.call_is_sync | readback)
    copy_side = is_blocking & big_copy & ~sync_side
    sync_side.flags.writeable = copy_side.flags.writeable = False
    return sync_side, copy_side


def _drop_waits(
    ctx: Context, calls: np.ndarray, write_lag: Callable[[np.ndarray], None] | None = None
) -> Graph:
    """The graph with the explicit wait edges of ``calls`` (bool mask) removed and their ends at their own cost (a
    queue wait stays); ``write_lag``: writes the remedy's lags before that (default: the graph's) into the array
    that the kept edges' plan (:meth:`Context.plan_ahead`) used for its keys first: one array of the points' size."""
    g = ctx.graph
    dst_call = np.where(g.edge_is_wait, (g.edge_dst - 1) // 2, 0)
    drop = g.edge_is_wait & calls[dst_call] & ~g.queue_wait_edges()
    keep = ~drop
    changed = ctx.without_edges(keep)
    lag = np.empty(g.size, np.int64)
    ctx.plan_ahead(changed, lag)  # (its keys written into ``lag``, overwritten below)
    np.copyto(lag, g.lag) if write_lag is None else write_lag(lag)
    own = g.typical["sync_own"][-1]
    ends = g.call_end[calls]
    lag[ends] = np.minimum(lag[ends], own)
    return changed.with_changes(lag=lag)


def synchronization(ctx: Context) -> tuple[Graph | None, str]:
    sync_side, _ = ctx.blocking_calls
    if not (sync_side & ctx.graph.call_waited).any():
        return None, ""
    g = ctx.graph
    own = g.typical["sync_own"][-1]
    measured = (g.call_waits & ~g.call_waited).any()
    own_how = "the median of this trace's syncs that found nothing to wait for" if measured else "default"
    return _drop_waits(ctx, sync_side), (
        "The host no longer waits: explicit synchronizations and small device-to-host read-backs (.item(), "
        f"< {ITEM_MAX_BYTES // 1024} KiB) return at the cost of a call that finds nothing to wait for "
        f"({own / 1e3:.1f} µs, {own_how}); the copies still run on the GPU, and the host's later work does not need "
        "the value read back (it is read later, or asynchronously). Nothing limits how far the host runs ahead."
    )


def memcpy(ctx: Context) -> tuple[Graph | None, str]:
    g = ctx.graph
    _, copy_side = ctx.blocking_calls
    if not copy_side.any():
        return None, ""
    bandwidth, how = pinned_bandwidth(ctx.graph, ctx.trace)

    def pinned_lag(lag: np.ndarray) -> None:
        np.copyto(lag, g.lag)
        ops = np.flatnonzero(g.op_is_copy & (g.op_launch_call >= 0))
        ops = ops[copy_side[g.op_launch_call[ops]]]
        if ops.size:
            kind = ctx.trace.take("copy_kind", g.op_row[ops])
            for direction, bps in bandwidth.items():
                sel = ops[text_mask(kind, direction.__eq__) & (g.op_bytes[ops] > 0)]
                ends = g.op_end[sel]
                lag[ends] = np.minimum(lag[ends], np.ceil(g.op_bytes[sel] / bps * 1e9).astype(np.int64))

    return _drop_waits(ctx, copy_side, pinned_lag), (
        "Copies from or to pageable memory, and synchronous copy calls, become pinned asynchronous copies: the "
        f"host continues after the call (its later work does not wait for the copied data), and each host<->device "
        f"copy moves at the pinned bandwidth, never slower than recorded ({how or 'unknown: durations kept'}). "
        "Device-to-device copies keep their time."
    )


def low_occupancy(ctx: Context) -> tuple[Graph | None, str]:
    g = ctx.graph
    if g.op_row.size == 0:
        return None, ""
    fill, floor, how = kernel_model(ctx.trace, g)
    under = fill < 1.0
    if not under.any():
        return None, ""
    lag = g.lag.copy()
    ends = g.op_end[under]
    lag[ends] = np.minimum(
        lag[ends], np.maximum(np.ceil(np.round(lag[ends] * fill[under], 6)).astype(np.int64), floor[under])
    )
    return g.with_changes(lag=lag), (
        "Kernels whose grid (or block shape) leaves block slots empty run at full fill, the same work spread over "
        "every block slot (SMs x the blocks per SM the occupancy calculator allows) at the same per-block speed: "
        "time x grid / (waves x slots), waves = ceil(grid / slots) "
        f"({how.get('wave_quantized', 0):,} launches; {how.get('sm_fill_only', 0):,} without the calculator's "
        "blocks per SM scale by grid / SMs instead), never below the time to read the op's inputs once at the "
        f"device's peak memory bandwidth ({how.get('floored', 0):,} launches held there; only for a kernel that "
        "is its op's only GPU op, and only where that floor is below its recorded time). More blocks per SM may "
        "not speed work up in proportion: an upper bound on the gain. Vendor-library and collective kernels keep "
        "their time."
    )


def communication(ctx: Context) -> tuple[Graph | None, str]:
    g = ctx.graph
    cols = event_columns(ctx.trace)
    is_collective = g.op_is_kernel & names_mask(
        lambda: cols.name[g.op_row], g.op_row.size, cols.names, is_collective_kernel
    )
    if not is_collective.any():
        return None, ""
    changed, placeholders, events = overlap_collectives(g, is_collective)
    if changed is None:
        return None, ""
    matched = int((g.op_collective >= 0).sum())
    return changed, (
        f"Exposed collectives overlap the computation after them, as if that computation did not need their result "
        f"(issued early enough, or on a side stream): {placeholders:,} collectives on a stream that also runs "
        f"computation no longer hold the ops after them (they still start after the ops before them), and "
        f"{events:,} waits of other streams on a collective's event go. Host waits still wait for each collective's "
        f"end, which keeps its own transfer time and, for the {matched:,} collective kernels matched across the "
        "trace's devices, the last participant's start (collectives are not slowed by the computation beside them, "
        "and collectives moved off one stream do not queue behind each other: an upper bound). A single rank's trace "
        "cannot see the other ranks: its collectives' waiting for them is kept as recorded."
    )


def startup(ctx: Context) -> tuple[Graph | None, str]:
    g = ctx.graph
    one_time = one_time_work(ctx.trace)
    if not one_time.rows.size and not one_time.first_api_rows.size:
        return None, ""
    # made for each remedy that reads it, not held by the context: a point-sized int64 (160 MiB at the x1000 export's
    # 20M points) kept beside the other remedies' replays
    removed = ctx.one_time_lag()
    lag = np.maximum(g.lag - removed, 0)
    # a launching call's one-time time (a module load before the enqueue) delayed its ops by as much
    edge_lag = g.edge_lag
    is_launch = ~(g.edge_is_wait | g.edge_is_wake | g.edge_is_collective) & ctx.is_host[g.edge_src]
    if is_launch.any():
        edge_lag = edge_lag.copy()
        calls = g.edge_src[is_launch] // 2  # host points: a call's start is 2c
        edge_lag[is_launch] = np.maximum(edge_lag[is_launch] - removed[g.call_end[calls]], 0)
    # GPU work launched from inside one-time host work (first-use module loads, autotuning runs) goes too; a
    # launch call that is one-time itself (a module-loading first launch) still runs the work it launches
    launched = np.flatnonzero(g.op_launch_call >= 0)
    starts = g.call_start[g.op_launch_call[launched]]
    inside = removed[starts] > 0
    if launched.size:
        call_rows = g.call_row[g.op_launch_call[launched]]
        reason = one_time.reason[call_rows]
        inside |= (reason >= 0) & ~np.isin(reason, (LONG_LAUNCH, FIRST_API))
    gone = launched[inside]
    lag[g.op_end[gone]] = 0
    lag[g.op_start[gone]] = 0
    if removed.sum() <= 0 and gone.size == 0:
        return None, ""
    return g.with_changes(lag=lag, edge_lag=edge_lag), (
        "One-time work (the startup section's rows: context and module set-up, compilation, autotuning, first "
        "calls, warm-up allocations) takes no time, and GPU ops launched from inside it do not run. A first API "
        "call with one-time work inside (startup rule first_api: far longer than the later calls of its name) "
        "keeps the median cost of those calls and loses the rest; a launch call's one-time time (a module loaded "
        "on first use) no longer delays the ops it launches, which still run. The steady state after it keeps its "
        "recorded cost."
    )


# cause (diagnosis.CAUSE_NAMES) -> (remedy name, model)
REMEDIES: dict[str, tuple[str, Remedy]] = {
    "startup": ("remove one-time start-up work", startup),
    "input_pipeline": ("input ready when the step asks for it", input_pipeline),
    "host_launch_overhead": ("launches captured in CUDA graphs", host_launch_overhead),
    "synchronization": ("no host waits on the GPU", synchronization),
    "memcpy": ("pinned, asynchronous copies", memcpy),
    "low_occupancy": ("kernels at full SM fill", low_occupancy),
    "communication": ("collectives overlapped with the next computation", communication),
}
# causes without a model, and why (whatif.not_modeled_reasons)
NOT_MODELED_REASONS = {
    "multi_gpu_imbalance": "the trace does not say which work could move between devices (how the batch or the "
    "model is split), so there is no graph change that balances it; the collective edges "
    "replay what a straggler costs the others, not how to remove it",
    "queued_gaps": "the replay keeps the GPU's gaps between ops it already had queued (at the device's median): "
    "no graph change removes them",
    "unexplained_idle": "no recorded cause: nothing in the graph to change",
}
NOT_MODELED = tuple(NOT_MODELED_REASONS)
