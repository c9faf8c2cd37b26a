"""Replaying a dependency graph: every point at the earliest time its chain predecessor and its cross edges allow.

On one chain the times obey t_i = max(t_{i-1} + lag_i, b_i) (b_i: the latest of the point's cross edges and
anchor). Unrolled, t_i = c_i + max(carry, max_{j <= i}(b_j - c_j)) with c the running sum of the lags: a
cumulative sum and a cumulative max, so a whole stretch of a chain is solved by a few numpy calls.

Cross edges from host to GPU (launches) only go forward in the recording; edges from GPU to host (a blocking
call's end waiting for an op) and between host threads (wake-ups) are what couple the chains. The points are
ordered into batches cut at those edges' targets, in recorded order (:func:`schedule_keys`); within a segment the
host chains come first, then the GPU chains (their launches are known by then), then the cut point (what it waits
for is known by then). A collective participant's end is cut the same way.

:func:`solve` visits the points once in that order with the compiled helper ``_replay_solve`` (a few ns per point
and edge). Without it (no C compiler at install time), :func:`solve_by_batches` solves batch by batch with numpy
(three batches per cut, a dozen numpy calls each): the same integers, at a cost set by the number of cuts, which
numpy cannot avoid, since each cut depends on the batch before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace

import numpy as np

from .. import intervals
from ..values import sorted_distinct
from .graph import GPU_END, GPU_START, NONE, Graph, point_index_type

# The one-pass solver (_replay_solve.c), built at install time where a C compiler is there; None without it
# (then the numpy batches solve: the same integers, slower where batches are many). Tests swap it by this name.
try:
    from . import _replay_solve
except ImportError:  # pragma: no cover - no compiler at install time
    _replay_solve = None  # type: ignore[assignment]
# What the replay calls in it: a stale build (an older _replay_solve.c) lacking one is not used (numpy paths then).
NATIVE_FUNCTIONS = tuple(
    (
        "solve_sorted_edges schedule_keys order_by_chains order_by_key edges_by_position critical_walk "
        "running_at union_overlap host_calls thread_union_overlap launched_steps worked_step_span path_sums "
        "stretch_range thread_runs_at host_calls_by_runs launch_calls slot_sums reaching_rows launch_regions op_fill"
    ).split()
)
if _replay_solve is not None and not all(hasattr(_replay_solve, name) for name in NATIVE_FUNCTIONS):
    _replay_solve = None  # type: ignore[assignment]  # pragma: no cover - a stale build

HOST_PHASE, GPU_PHASE, WAIT_PHASE = 0, 1, 2
SMALL_BATCH = 32  # batches up to this many points are solved point by point (see solve)
# schedule_keys' rounds: at least MAX_KEY_ROUNDS, more while rounds x (points + edges) stays under MAX_KEY_WORK. An
# acyclic graph needs as many rounds as its longest run of edges against the recorded order (116 on a real trace
# once a remedy dropped its waits: 64 rounds left 4,651 edges read as recorded and the remedy gained nothing);
# only a cycle (inconsistent clocks) never settles, and then a source not yet solved reads as recorded.
MAX_KEY_ROUNDS = 64
MAX_KEY_WORK = 50_000_000
# Graphs with up to this many chains (host threads + streams) have their per-chain passes run one slice per chain
# (a loop over chains); more chains: one pass over packed (chain, value) keys.
FEW_CHAINS = 64


def _run_heads(flags: np.ndarray) -> np.ndarray:
    """For each element, the index of the first element of its run (``flags``: True where a run starts)."""
    return np.maximum.accumulate(np.where(flags, np.arange(flags.size), 0))


def _segmented_cummax(values: np.ndarray, run_start: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at each True of ``run_start`` (values below NONE/2 = none)."""
    real = values > NONE // 2
    if not real.any():
        return np.full(values.size, NONE, np.int64)
    floor = int(values[real].min()) - 1
    v = np.where(real, values, floor)
    run = np.cumsum(run_start) - 1
    width = int(v.max()) - floor + 1
    if width * (int(run[-1]) + 1) < 2**62:
        shifted = (v - floor) + run * width
        out = np.maximum.accumulate(shifted) - run * width + floor
    else:  # too wide to pack into one int64: a loop over runs (chains in this batch)
        out = v.copy()
        starts = np.flatnonzero(run_start)
        for a, b in zip(starts, np.append(starts[1:], v.size), strict=True):
            out[a:b] = np.maximum.accumulate(v[a:b])
    return np.where(out == floor, NONE, out)


def _segmented_cumsum(values: np.ndarray, run_start: np.ndarray) -> np.ndarray:
    total = np.cumsum(values)
    heads = _run_heads(run_start)
    return total - total[heads] + values[heads]


# The GPU point kinds are the two highest (graph.py), and HOST_PHASE, GPU_PHASE are 0, 1: schedule_keys adds a
# point's phase as one comparison (tests/test_whatif_fast_paths.py checks both).
FIRST_GPU_KIND = min(GPU_START, GPU_END)


def schedule_keys(graph: Graph) -> np.ndarray:
    """The batch each point is solved in: non-decreasing along every chain, and above the batch of every cross
    edge's source. Starts from 3 x segment + phase (segments cut at the blocking calls' ends in recorded order;
    phases host, GPU, the blocking call's end), then raises targets over their sources until stable (an op that
    ends after the call waiting for it returned, as pageable copies do, moves that call's end, and what follows
    it on its thread, to a later batch)."""
    coupling = graph.edge_is_wait | graph.edge_is_wake | graph.edge_is_collective
    boundaries = sorted_distinct(graph.edge_dst[coupling])
    order = np.lexsort((boundaries, graph.time[boundaries]))
    boundary_sorted = boundaries[order]
    seg = np.searchsorted(graph.time[boundary_sorted], graph.time, side="left").astype(np.int64, copy=False)
    seg *= 3  # in place from here (a few arrays of the points less at the plan's peak)
    # + the phase: GPU points (kinds GPU_START, GPU_END: the two highest) GPU_PHASE, the others HOST_PHASE, and
    # the boundaries WAIT_PHASE, each at its own rank among them
    seg += graph.kind >= FIRST_GPU_KIND
    seg[boundary_sorted] = 3 * np.arange(boundary_sorted.size) + WAIT_PHASE
    key = _chain_cummax(seg, graph.chain_first)
    del seg
    src, dst = graph.edge_src, graph.edge_dst
    rounds = max(MAX_KEY_ROUNDS, MAX_KEY_WORK // max(key.size + src.size, 1))
    # in an acyclic graph no key passes the highest start plus the number of points (one step per point of a
    # path): a key beyond that proves a cycle, which no number of rounds settles
    ceiling = (int(key.max()) if key.size else 0) + key.size
    for done in range(rounds):  # a handful of rounds: edges run forward in the recording but for skew
        needed = key[src] + 1
        late = needed > key[dst]
        if not late.any():
            break
        if done >= MAX_KEY_ROUNDS and int(needed[late].max()) > ceiling:
            break
        np.maximum.at(key, dst[late], needed[late])
        key = _chain_cummax(key, graph.chain_first)
    return key


def cut_count(graph: Graph) -> int:
    """The points the numpy batches cut the replay at (each starts a segment of three batches): the ends of the
    blocking calls, the starts of the calls a wake-up edge resumes, the ends of the collective participants."""
    coupling = graph.edge_is_wait | graph.edge_is_wake | graph.edge_is_collective
    return int(sorted_distinct(graph.edge_dst[coupling]).size)


def native_solver() -> object | None:
    """The compiled one-pass solver in use, or None (then the numpy batches solve)."""
    return _replay_solve


def running_at(
    starts: np.ndarray, ends: np.ndarray, t: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """:func:`tracelens.intervals.running_at` (the range [start, end) running at each time, ``starts`` ascending;
    -1: none) by the compiled helper where it was built: each time searched from the previous one's answer first,
    one step for times that mostly ascend (a thread's host points against the steps) instead of a binary search
    each; the same indices. ``out``: an int64 array of ``t``'s size to write them into (returned)."""
    if _replay_solve is None or t.size == 0 or (out is not None and not out.flags.c_contiguous):
        found = intervals.running_at(starts, ends, t)
        if out is None:
            return found
        out[...] = found
        return out
    if out is None:
        out = np.empty(t.size, np.int64)
    _replay_solve.running_at(
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        np.ascontiguousarray(t, np.int64),
        out,
    )
    return out


def _chain_heads(chain_first: np.ndarray) -> np.ndarray | None:
    """Positions where each chain starts (with the end appended), where the chains are few enough
    (FEW_CHAINS) to be handled one slice each; else None."""
    heads = np.flatnonzero(chain_first)
    if heads.size > FEW_CHAINS or (heads.size and heads[0] != 0):
        return None
    return np.append(heads, chain_first.size)


def _chain_cummax(key: np.ndarray, chain_first: np.ndarray) -> np.ndarray:
    if key.size == 0:
        return key
    heads = _chain_heads(chain_first)
    if heads is not None:  # few chains: one running max per chain's slice, no packed keys
        key = key.astype(np.int64, copy=False)  # the packed path's type
        out = np.empty_like(key)
        for a, b in zip(heads[:-1].tolist(), heads[1:].tolist(), strict=True):  # a loop over chains
            np.maximum.accumulate(key[a:b], out=out[a:b])
        return out
    run = np.cumsum(chain_first, dtype=np.int64)
    run -= 1
    run *= int(key.max()) + 1  # each chain shifted above the ones before it
    out = key + run
    np.maximum.accumulate(out, out=out)
    out -= run
    return out


_PLAN_SOURCES = (
    "time",
    "kind",
    "chain",
    "chain_first",
    "edge_src",
    "edge_dst",
    "edge_is_wait",
    "edge_is_wake",
    "edge_is_collective",
)


@dataclass(frozen=True)
class Plan:
    """What a solve needs that does not depend on the lags or anchors: the solving order (points by batch, see
    :func:`schedule_keys`), the edges into each point in that order, and which edges read their source as
    recorded (``e_stale``: the source is not scheduled before the target, a cycle from inconsistent clocks).
    Remedies that change only lags (most of them) share the arrays it was made from and reuse it (:meth:`fits`).
    The batches themselves (``group_lo`` ...) are derived on first use, by the numpy path only."""

    sources: tuple[np.ndarray, ...]
    key: np.ndarray | None  # each point's batch: kept only for the numpy batches (no compiled solver)
    order: np.ndarray
    e_order: np.ndarray
    e_pos: np.ndarray
    e_src: np.ndarray
    e_stale: np.ndarray

    def fits(self, graph: Graph) -> bool:
        return all(
            getattr(graph, name) is array for name, array in zip(_PLAN_SOURCES, self.sources, strict=True)
        )

    @cached_property
    def e_ptr(self) -> np.ndarray:
        """The edges into the point at position i of ``order``: e_ptr[i] .. e_ptr[i + 1] - 1 (tests read it; the
        solvers walk ``e_pos`` itself, no array of the points' size)."""
        e_ptr = np.zeros(self.order.size + 1, np.int64)
        np.cumsum(np.bincount(self.e_pos, minlength=self.order.size), out=e_ptr[1:])
        return e_ptr

    @cached_property
    def batches(self) -> _Batches:
        return _batches(self)

    # the batches' arrays by their former names (tests and the numpy path read them)
    group_lo = property(lambda self: self.batches.group_lo)
    group_hi = property(lambda self: self.batches.group_hi)
    run_start = property(lambda self: self.batches.run_start)
    carry_from = property(lambda self: self.batches.carry_from)
    e_lo = property(lambda self: self.batches.e_lo)
    e_hi = property(lambda self: self.batches.e_hi)
    runs_in_group = property(lambda self: self.batches.runs_in_group)


@dataclass(frozen=True)
class _Batches:
    """The batches of a plan (equal keys), the runs in each (a chain's stretch within a batch), the chain
    predecessor each run continues from, the edges into each batch."""

    group_lo: np.ndarray
    group_hi: np.ndarray
    run_start: np.ndarray
    carry_from: np.ndarray
    e_lo: np.ndarray
    e_hi: np.ndarray
    runs_in_group: np.ndarray


def plan(graph: Graph) -> Plan:
    """The solving order of ``graph`` (see :func:`schedule_keys`) and its edges, computed once per structure: by
    the compiled helper where it was built (:func:`plan_natively`), else with numpy (:func:`plan_by_numpy`); both
    give the same arrays."""
    if _replay_solve is None:
        return plan_by_numpy(graph)
    return plan_natively(graph)


def plan_by_numpy(graph: Graph) -> Plan:
    """:func:`plan` with numpy: the path without the compiled helper, and its reference."""
    n = graph.size
    key = schedule_keys(graph)
    # by batch, then by point (stable); point indices as int32 where they fit, as plan_natively holds them
    order = np.argsort(key, kind="stable").astype(point_index_type(n), copy=False)
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    e_pos = position[graph.edge_dst]
    e_order = np.argsort(e_pos, kind="stable")
    e_pos, e_src = e_pos[e_order], graph.edge_src[e_order].astype(np.int64, copy=False)
    return Plan(
        sources=tuple(getattr(graph, name) for name in _PLAN_SOURCES),
        key=key if _replay_solve is None else None,
        order=order,
        e_order=e_order,
        e_pos=e_pos,
        e_src=e_src,
        e_stale=key[e_src] >= key[graph.edge_dst[e_order]],
    )


# Keys spanning up to this many values per point are put in order by counting (one pass, no sort; the keys of an
# acyclic graph span at most 4 per point: 3 per boundary, + 1 per round); wider ones by numpy's stable sort.
COUNTING_SPAN_PER_POINT = 8
# Graphs of up to this many chains have their points put in key order by merging the chains (the keys ascend along
# each): a stretch of one chain at a time, each point read and written once (a scan of the chains per stretch).
MERGE_CHAINS = 16


def native_schedule_keys(graph: Graph) -> np.ndarray:
    """:func:`schedule_keys` by the compiled helper (_replay_solve.c): the same keys, the rounds' edge passes and
    running maxima in one loop each instead of a dozen numpy passes."""
    return native_keys_settled(graph)[0]


def native_keys_settled(graph: Graph, out: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """(:func:`native_schedule_keys`, whether they are known to leave no edge stale: the rounds stopped before
    MAX_KEY_ROUNDS, which only a round finding no late edge does (late is stale: key[src] + 1 > key[dst])).
    ``out``: an int64 array of the points' size to write the keys into (returned)."""
    assert _replay_solve is not None
    time = np.ascontiguousarray(graph.time, np.int64)
    coupling = graph.edge_is_wait | graph.edge_is_wake | graph.edge_is_collective
    boundaries = sorted_distinct(graph.edge_dst[coupling]).astype(np.int64, copy=False)
    boundary_sorted = boundaries[np.lexsort((boundaries, time[boundaries]))]
    rank = np.argsort(boundary_sorted)  # each boundary point (ascending) -> its rank by time
    src = np.ascontiguousarray(graph.edge_src, np.int64)
    dst = np.ascontiguousarray(graph.edge_dst, np.int64)
    key = np.empty(time.size, np.int64) if out is None else out
    rounds = max(MAX_KEY_ROUNDS, MAX_KEY_WORK // max(key.size + src.size, 1))
    done = _replay_solve.schedule_keys(
        time,
        np.ascontiguousarray(graph.kind >= FIRST_GPU_KIND).view(np.uint8),
        np.ascontiguousarray(graph.chain_first, dtype=bool).view(np.uint8),
        np.ascontiguousarray(time[boundary_sorted]),
        np.ascontiguousarray(boundary_sorted[rank]),
        np.ascontiguousarray(rank, np.int64),
        src,
        dst,
        key,
        MAX_KEY_ROUNDS,
        rounds,
    )
    return key, done < MAX_KEY_ROUNDS


def plan_natively(graph: Graph, key: np.ndarray | None = None) -> Plan:
    """:func:`plan` by the compiled helper: the keys (:func:`native_schedule_keys`, unless given), the points put
    in key order (the chains merged where they are few, else by counting) and the edges by target position by a
    radix sort (no comparison sorts)."""
    assert _replay_solve is not None
    n = graph.size
    if key is None:
        key = native_schedule_keys(graph)
    # the order (read by every solve) and the positions as int32 where the points fit: half the bytes
    order = np.empty(n, point_index_type(n))
    position = np.empty(n, point_index_type(n))
    heads = np.flatnonzero(graph.chain_first)
    merged = (
        0 < heads.size <= MERGE_CHAINS
        and heads[0] == 0
        and _replay_solve.order_by_chains(key, np.append(heads, n), order, position) == 0
    )
    low = int(key.min()) if n and not merged else 0
    span = (int(key.max()) - low + 1) if n and not merged else 1
    if merged or n == 0:
        pass
    elif span <= COUNTING_SPAN_PER_POINT * n + 1024:
        _replay_solve.order_by_key(key, low, span, order, position)
    else:  # keys spread wide (a cycle's rounds): a stable sort
        order = np.argsort(key, kind="stable").astype(point_index_type(n), copy=False)
        position[order] = np.arange(n)
    n_edges = graph.edge_src.size
    e_order, e_pos, e_src = (np.empty(n_edges, np.int64) for _ in range(3))
    e_stale = np.empty(n_edges, bool)
    _replay_solve.edges_by_position(
        position,
        key,
        np.ascontiguousarray(graph.edge_src, np.int64),
        np.ascontiguousarray(graph.edge_dst, np.int64),
        e_order,
        e_pos,
        e_src,
        e_stale.view(np.uint8),
    )
    return Plan(
        sources=tuple(getattr(graph, name) for name in _PLAN_SOURCES),
        key=None,
        order=order,
        e_order=e_order,
        e_pos=e_pos,
        e_src=e_src,
        e_stale=e_stale,
    )


def plan_without_edges(
    shared: Plan, graph: Graph, keep: np.ndarray, scratch: np.ndarray | None = None
) -> Plan:
    """The plan of ``graph``: the graph ``shared`` was made for with only its edges ``keep`` (bool per edge, in
    their order) left, as a remedy that drops waits makes it. Where neither plan reads an edge as recorded (no
    edge of ``shared`` that is kept is stale, and ``graph``'s own keys leave none stale), both orders are
    topological orders of ``graph`` and a solve with either gives the one solution of the recurrence: then
    ``shared``'s order is kept with the kept edges (no new order of the points, no point-sized array but the
    keys), else :func:`plan` (and always without the compiled helper, whose batches need the graph's own keys).
    ``scratch``: an int64 array of the points' size the keys are written into (the plan keeps nothing of it: the
    caller's array for later, e.g. a remedy's lag copy, so that the keys take no memory of their own)."""
    same_points = all(
        getattr(graph, name) is array
        for name, array in zip(_PLAN_SOURCES, shared.sources, strict=True)
        if not name.startswith("edge_")
    )
    if _replay_solve is None or shared.key is not None or not same_points:
        return plan(graph)
    if scratch is not None and not (
        scratch.dtype == np.int64 and scratch.size == graph.size and scratch.flags.c_contiguous
    ):
        scratch = None
    key, settled = native_keys_settled(
        graph, scratch
    )  # settled: no stale edge, no pass over the edges to test it
    kept_slots = keep[shared.e_order]  # per edge slot of ``shared`` (by target position): kept or not
    if shared.e_stale[kept_slots].any() or not (
        settled or bool((key[graph.edge_src] < key[graph.edge_dst]).all())
    ):
        return plan_natively(graph, key)
    del key
    renumber = (
        np.cumsum(keep, dtype=np.int64) - 1
    )  # an edge of ``shared``'s graph -> its index among the kept
    return Plan(
        sources=tuple(getattr(graph, name) for name in _PLAN_SOURCES),
        key=None,
        order=shared.order,
        e_order=renumber[shared.e_order[kept_slots]],
        e_pos=shared.e_pos[kept_slots],
        e_src=shared.e_src[kept_slots],
        e_stale=np.zeros(int(np.count_nonzero(kept_slots)), bool),
    )


def _batches(shared: Plan) -> _Batches:
    order, n = shared.order, shared.order.size
    key = shared.key
    if key is None:  # planned for the compiled solver, which does not need it: the same keys again
        key = schedule_keys(_structure(shared))
    key_sorted = key[order]
    cut = np.flatnonzero(np.diff(key_sorted)) + 1
    group_lo = np.concatenate([[0], cut]).astype(np.int64)
    group_hi = np.append(cut, n).astype(np.int64)
    chain_first, chain = shared.sources[3], shared.sources[2]
    chain = chain[order]
    run_start = np.zeros(n, bool)
    run_start[group_lo] = True
    run_start[1:] |= chain[1:] != chain[:-1]
    head = _run_heads(run_start)
    before = order[head] - 1  # the point before each run's first, on its chain (stored contiguously)
    return _Batches(
        group_lo=group_lo,
        group_hi=group_hi,
        run_start=run_start,
        carry_from=np.where(chain_first[order[head]], -1, before),
        e_lo=np.searchsorted(shared.e_pos, group_lo, side="left"),
        e_hi=np.searchsorted(shared.e_pos, group_hi, side="left"),
        runs_in_group=np.add.reduceat(run_start.astype(np.int64), group_lo),
    )


def _structure(shared: Plan) -> Graph:
    """The arrays the plan was made from, under their graph names (what :func:`schedule_keys` reads)."""
    return SimpleNamespace(**dict(zip(_PLAN_SOURCES, shared.sources, strict=True)))  # type: ignore[return-value]


def solve(graph: Graph, shared: Plan | None = None) -> np.ndarray:
    """Replayed time of every point (``shared``: a plan made for a graph of the same structure, reused when it
    fits): one pass in the plan's order by the compiled helper where it was built (_replay_solve.c), else the
    numpy batches (:func:`solve_by_batches`); both give the same integers."""
    return solve_with_span(graph, shared)[0]


def solve_with_span(
    graph: Graph, shared: Plan | None = None, over_lag: bool = False
) -> tuple[np.ndarray, int]:
    """:func:`solve`, and the replay's span (its latest time - its earliest; 0 without points): found by the
    compiled pass as it writes the times, no second and third pass over them.

    ``over_lag``: the graph's ``lag`` is this replay's own (a remedy's changed copy that nothing reads after the
    replay): the compiled pass writes the times over it and returns that array, no array of the points' size of
    their own. The pass reads a point's lag (and anchor) before it writes that point's time and never reads
    another point's lag after, so the times are the same integers (8 bytes a point less at the replay's peak)."""
    n = graph.size
    if n == 0:
        return graph.time.copy(), 0
    ordered = shared if shared is not None and shared.fits(graph) else plan(graph)
    if _replay_solve is None:
        t = solve_by_batches(graph, ordered)
        return t, int(t.max() - t.min())
    lag = graph.lag
    if over_lag and lag.dtype == np.int64 and lag.flags.c_contiguous and lag.flags.writeable:
        t = lag
    else:
        t = np.empty(n, np.int64)
    lowest, highest = _replay_solve.solve_sorted_edges(
        ordered.order,
        np.ascontiguousarray(graph.chain_first, dtype=bool).view(np.uint8),
        np.ascontiguousarray(graph.lag, np.int64),
        np.ascontiguousarray(graph.anchor, np.int64),
        np.ascontiguousarray(graph.time, np.int64),
        ordered.e_pos,
        ordered.e_src,
        np.ascontiguousarray(graph.edge_lag, np.int64),  # read at e_order: no gather into the plan's order
        np.ascontiguousarray(ordered.e_stale, dtype=bool).view(np.uint8),
        t,
        np.ascontiguousarray(ordered.e_order, np.int64),
    )
    return t, int(highest) - int(lowest)


def solve_by_batches(graph: Graph, shared: Plan | None = None) -> np.ndarray:
    """Replayed time of every point, batch by batch with numpy (a few numpy calls per batch; batches are as many
    as the blocking calls and wake-ups in sequence): the path without the compiled helper, and its reference."""
    n = graph.size
    t = graph.time.copy()  # a source solved later than its target (clock skew) is read as recorded
    if n == 0:
        return t
    ordered = shared if shared is not None and shared.fits(graph) else plan(graph)
    batches_of = ordered.batches
    order, group_lo, group_hi = ordered.order, batches_of.group_lo, batches_of.group_hi
    run_start, carry_from, e_pos, e_src = (
        batches_of.run_start,
        batches_of.carry_from,
        ordered.e_pos,
        ordered.e_src,
    )
    e_lo, e_hi, runs_in_group = batches_of.e_lo, batches_of.e_hi, batches_of.runs_in_group
    # what depends on the lags and anchors: the running lag sums along each run, the edges' lags
    c = _segmented_cumsum(graph.lag[order], run_start)
    anchor = graph.anchor[order]
    e_lag = graph.edge_lag[ordered.e_order]
    # Small batches (most of them: a blocking call's end, a few host calls between two cuts) are solved point
    # by point in plain Python, through memoryviews (no copies): below SMALL_BATCH points that is cheaper than
    # the dozen numpy calls of a batch, and gives the same integers (t_i = max(t_{i-1} + lag_i, b_i) unrolled).
    t_v, anchor_v, c_v, carry_v = t.data, anchor.data, c.data, carry_from.data
    head_v, order_v = run_start.data, order.data
    e_pos_v, e_src_v, e_lag_v = e_pos.data, e_src.data, e_lag.data
    batches = zip(
        group_lo.tolist(),
        group_hi.tolist(),
        e_lo.tolist(),
        e_hi.tolist(),
        runs_in_group.tolist(),
        strict=True,
    )
    for lo, hi, elo, ehi, runs in batches:  # a loop over batches (3 per blocking call), not events
        if hi - lo == 1:  # one point (a blocking call's end): plain arithmetic
            best = anchor_v[lo]
            for k in range(elo, ehi):
                ready = t_v[e_src_v[k]] + e_lag_v[k]
                if ready > best:
                    best = ready
            src = carry_v[lo]
            via_chain = t_v[src] + c_v[lo] if src >= 0 else NONE
            t_v[order_v[lo]] = via_chain if via_chain > best else best
            continue
        if hi - lo <= SMALL_BATCH:
            # every bound from the times before this batch (as the numpy path reads them), then the chains
            bounds = anchor_v[lo:hi].tolist()
            for k in range(elo, ehi):
                ready = t_v[e_src_v[k]] + e_lag_v[k]
                if ready > bounds[e_pos_v[k] - lo]:
                    bounds[e_pos_v[k] - lo] = ready
            prev = NONE
            for p in range(lo, hi):
                if head_v[p]:
                    src = carry_v[p]
                    via_chain = (t_v[src] if src >= 0 else NONE) + c_v[p]
                else:
                    via_chain = prev + (c_v[p] - c_v[p - 1])
                best = bounds[p - lo]
                prev = via_chain if via_chain > best else best
                t_v[order_v[p]] = prev
            continue
        bound = anchor[lo:hi].copy()
        if ehi > elo:
            np.maximum.at(bound, e_pos[elo:ehi] - lo, t[e_src[elo:ehi]] + e_lag[elo:ehi])
        cc = c[lo:hi]
        if runs == 1:
            best_arr = np.maximum.accumulate(bound - cc)
        else:
            best_arr = _segmented_cummax(bound - cc, run_start[lo:hi])
        src_arr = carry_from[lo:hi]
        carry = np.where(src_arr >= 0, t[np.maximum(src_arr, 0)], NONE)
        t[order[lo:hi]] = np.maximum(carry + cc, best_arr + cc)
    return t
