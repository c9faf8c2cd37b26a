"""The critical path of a replay: from the point that ends last, back through what set each point's time.

Each point on the path owns the time between its setter and itself, in one category:
    host            the host's work between calls, a non-blocking call's own time, a launch's latency
    sync_waits      a blocking call's own cost and its wake-up after what it waited for (a launch blocked on a
                    full command buffer included: its end waits for the GPU to take queued work)
    kernels         a kernel's run (and a stream's gap before a queued op)
    copies          a memcpy or memset
    communication   a collective kernel (NCCL/RCCL)
The walk loops over chain switches on the path (a stretch of one chain is taken whole), not over events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analyses.columns import event_columns
from ..analyses.names import is_collective_kernel
from ..trace import ALL_KINDS, KERNEL
from .engine import native_solver
from .graph import GPU_END, GPU_START, HOST_END, HOST_START, NONE, Graph, unique_ints
from .name_tests import name_lookup, names_mask

CATEGORIES = ("host", "sync_waits", "kernels", "copies", "communication")
TOP = 5
# name dictionaries up to this size, or up to the path's points, have the top lists summed over the whole dictionary
# (the compiled pass then needs no path-sized arrays: the numpy path's ~8 of them were 256 MiB of the what-if
# section's peak on the x1000 Nsight export, 4.4M path points, 16,752 names)
TOP_BY_DICTIONARY = 4096
ON_HOST_SHARE = 0.5
# ``bound``: which side sets the pace. The host side is the path's host and sync_waits time (the host's own work
# and its waits' own cost), the GPU side its kernels, copies and communication. At least BOUND_SHARE of the path on
# one side names that side ("host" or "gpu"); neither side reaching it is "mixed" (no single side to fix first).
BOUND_SHARE = 2 / 3
HOST_SIDE = ("host", "sync_waits")
BOUNDS = ("host", "gpu", "mixed")
STEP_LIMIT = 2000  # steps broken down one by one


def bound_of(ns_by_category: np.ndarray) -> str | None:
    """ "host", "gpu" or "mixed" from a path's time per category (CATEGORIES order); None for an empty path."""
    total = float(ns_by_category.sum())
    if total <= 0:
        return None
    host = float(sum(ns_by_category[CATEGORIES.index(c)] for c in HOST_SIDE)) / total
    if host >= BOUND_SHARE:
        return "host"
    if 1.0 - host >= BOUND_SHARE:
        return "gpu"
    return "mixed"


# The critical walk's first room for stretches (chain switches): 64k, or a 32nd of the points where more.
WALK_ROOM, WALK_ROOM_SHARE = 1 << 16, 32


def path_stretches(graph: Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The critical path as stretches of chains, in path order from the start: (each stretch's first point, its
    last point, what set its first point (-1: none)); inside a stretch each point's setter is the point before it.
    Walked by the compiled helper (reading what set only the points it walks through); None without it or points."""
    solver = native_solver()
    if solver is None or graph.size == 0:
        return None
    n = graph.size
    # room for the few stretches of most walks (small arrays, not three point-sized ones left mostly unwritten,
    # whose untouched pages the arrays allocated after them would fault in); again with room for n where more
    room = min(n, max(WALK_ROOM, n // WALK_ROOM_SHARE))
    while True:
        bottoms, tops, head_sources = (np.empty(room, np.int64) for _ in range(3))
        count = solver.critical_walk(  # type: ignore[attr-defined]
            np.ascontiguousarray(t, np.int64),
            np.ascontiguousarray(graph.lag, np.int64),
            np.ascontiguousarray(graph.chain_first, dtype=bool).view(np.uint8),
            np.ascontiguousarray(graph.edge_src, np.int64),
            np.ascontiguousarray(graph.edge_dst, np.int64),
            np.ascontiguousarray(graph.edge_lag, np.int64),
            int(np.argmax(t)),
            bottoms,
            tops,
            head_sources,
        )
        if count >= 0 or room == n:
            break
        room = n
    # (the walk writes the last stretch first)
    return bottoms[:count][::-1].copy(), tops[:count][::-1].copy(), head_sources[:count][::-1].copy()


def path_points(graph: Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(points on the critical path, ending at the last point, in path order from the start; each one's setter):
    from :func:`path_stretches` where the compiled helper was built, else :func:`path_points_by_numpy`; both give
    the same arrays."""
    stretches = path_stretches(graph, t)
    if stretches is None:
        return path_points_by_numpy(graph, t)
    return _points_of(*stretches)


def _points_of(lo: np.ndarray, hi: np.ndarray, head_sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`path_points` of the stretches lo..hi (:func:`path_stretches`)."""
    lengths = hi - lo + 1
    starts = np.cumsum(lengths) - lengths
    # one path-sized array: steps of 1, each stretch's first point a jump from the last point of the stretch before
    # (the first one's from 0), summed in place
    path = np.ones(int(lengths.sum()), np.int64)
    jumps = lo.copy()
    jumps[1:] -= lo[:-1] + lengths[:-1] - 1
    path[starts] = jumps
    np.cumsum(path, out=path)
    setter = path - 1
    setter[starts] = head_sources
    return path, setter


def setters(graph: Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each point, what set its replayed time: (source point or -1, is_edge). The chain predecessor where
    it binds (ties go to a cross edge, so a wait's end points at the op it waited for), else the binding
    cross edge's source, else -1 (an anchor)."""
    n = graph.size
    # a point's chain predecessor is the point before it (chains are stored contiguously): no index arrays
    via_chain = np.empty(n, np.int64)
    np.add(t[:-1], graph.lag[1:], out=via_chain[1:])
    if n:
        via_chain[0] = t[-1] + graph.lag[0]  # point 0 starts a chain: never read
    use_edge = np.zeros(n, bool)
    src, dst = graph.edge_src, graph.edge_dst
    if src.size:
        # only the edges' targets can be set by an edge: tested there, not at every point
        ready = t[src] + graph.edge_lag
        via_edge = np.full(n, NONE, np.int64)
        np.maximum.at(via_edge, dst, ready)
        at_dst = via_edge[dst]
        best = ready == at_dst
        binds = (at_dst >= t[dst]) & (at_dst > NONE // 2)
        use_edge[dst[binds]] = True
        del via_edge
    use_chain = via_chain >= t
    use_chain &= ~graph.chain_first
    use_chain &= ~use_edge
    source = np.arange(-1, n - 1, dtype=np.int64)
    source[~use_chain] = -1
    if src.size:
        # each edge-set point's binding source (of equal ones, the last edge, as one assignment of them all gives)
        chosen = best & binds
        source[dst[chosen]] = src[chosen]
    return source, use_edge


def path_points_by_numpy(graph: Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`path_points` from every point's setter (:func:`setters`): the path without the compiled
    helper, and its reference."""
    source, _ = setters(graph, t)
    n = graph.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # the first point of the stretch of its chain that led to it through chain predecessors only: a running max of
    # the points not set by their chain predecessor (one index array, in place)
    head = np.arange(-1, n - 1, dtype=np.int64)
    by_chain = source == head
    head += 1
    head[by_chain] = 0
    del by_chain
    np.maximum.accumulate(head, out=head)
    # a loop over chain switches on the path, through memoryviews (plain ints, no numpy call per switch)
    head_v, source_v = head.data, source.data
    tops: list[int] = []
    bottoms: list[int] = []
    point = int(np.argmax(t))
    for _ in range(n):
        h = head_v[point]
        tops.append(point)
        bottoms.append(h)
        nxt = source_v[h]
        if nxt < 0 or nxt == h:
            break
        point = nxt
    # the stretches bottom..top, first switch last: one index array
    lo = np.array(bottoms[::-1], np.int64)
    lengths = np.array(tops[::-1], np.int64) - lo + 1
    starts = np.cumsum(lengths) - lengths
    path = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(lo - starts, lengths)
    return path, source[path]


def path_categories(
    graph: Graph, t: np.ndarray, trace: Any, path: np.ndarray, setter: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(each path point's category, an index into CATEGORIES; the time it owns: its time - its setter's)."""
    category, seg, _, _, _ = _path_facts(graph, t, trace, path, setter)
    return category, seg


def _path_facts(
    graph: Graph, t: np.ndarray, trace: Any, path: np.ndarray, setter: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`path_categories`, and each path point's kind, whether its row is a kernel and its row (read once)."""
    set_by = np.maximum(setter, 0)  # (read at -1: masked below)
    seg = t[path]
    seg -= t[set_by]  # in place: no second and third path-sized array
    seg[setter < 0] = 0
    kind = graph.kind[path]
    cols = event_columns(trace)
    rows = graph.row[path]
    is_kernel = cols.kind[rows] == ALL_KINDS.index(KERNEL)
    waited = np.zeros(graph.size, bool)
    waited[graph.call_end[graph.call_waited]] = True
    category = np.full(path.size, 0, np.int64)  # host
    category[(kind == HOST_END) & waited[path]] = 1
    gpu = (kind == GPU_START) | (kind == GPU_END)
    launched = (kind == GPU_START) & (setter >= 0) & (graph.kind[set_by] == HOST_START)
    del set_by
    on_gpu = np.flatnonzero(gpu & ~launched)
    category[on_gpu] = 2
    category[on_gpu[~is_kernel[on_gpu]]] = 3
    # the collective kernels' names tested at those points only, not at every point of the path
    category[
        on_gpu[names_mask(lambda: cols.name[rows[on_gpu]], on_gpu.size, cols.names, is_collective_kernel)]
    ] = 4
    return category, seg, kind, is_kernel, rows


def _per_step_sums(steps: np.ndarray, category: np.ndarray, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the steps of the path's points, ascending, -1 (none) left out; per step the time of its points per category):
    every step's sums in one bincount, each bin adding its points in path order (as one bincount per step did).
    ``steps`` (a fresh int64 array: overwritten) -> bin (step + 1) x categories + category, in place, where the
    steps are few (window indices), the unknown step's bins read by none; else over the known points' ranks."""
    width = len(CATEGORIES)
    span = int(steps.max(initial=-1)) + 2
    if steps.size and int(steps.min()) >= -1 and span <= 4 * steps.size + 1024:
        steps += 1
        steps *= width
        steps += category
        sums = np.bincount(steps, weights=seg, minlength=span * width).reshape(span, width)
        counts = np.bincount(steps, minlength=span * width).reshape(span, width)
        present = np.asarray(counts[1:].any(axis=1))  # the known steps with a point on the path
        return np.flatnonzero(present), sums[1:][present]
    known = steps >= 0
    listed, at = unique_ints(steps[known], return_inverse=True)
    by_step = np.bincount(
        at.reshape(-1) * width + category[known], weights=seg[known], minlength=listed.size * width
    ).reshape(listed.size, width)
    return listed, by_step


@dataclass
class PathSums:
    """What the critical path's points add up to: its length, time per category (CATEGORIES order, float sums
    in path order as numpy's bincount adds them), the steps with a point on it (ascending) and their time per
    category, and the top kernels and host calls by time ({name, ns})."""

    total: int
    by: np.ndarray
    listed: np.ndarray
    by_step: np.ndarray
    top_kernels: list[dict[str, Any]]
    top_host_calls: list[dict[str, Any]]


def _top_by_dictionary(sums: np.ndarray, names: Any) -> list[dict[str, Any]]:
    """The TOP names by ``sums`` (per name code + 1, code -1 (no name) at 0, over the whole dictionary): the
    names no point uses sum to 0, which the list leaves out (ties: the lower code first)."""
    order = np.argsort(-sums, kind="stable")[:TOP]
    return [{"name": str(names[i - 1]) if i > 0 else None, "ns": int(sums[i])} for i in order if sums[i] > 0]


def path_sums_by_numpy(
    graph: Graph, t: np.ndarray, trace: Any, path: np.ndarray, setter: np.ndarray, step_of: np.ndarray | None
) -> PathSums:
    """:class:`PathSums` of the path ``path`` (its points' setters ``setter``) with numpy: the path without the
    compiled helper, and the reference of :func:`path_sums_natively`."""
    category, seg, kind, is_kernel, rows = _path_facts(graph, t, trace, path, setter)
    cols = event_columns(trace)
    by = np.bincount(category, weights=seg, minlength=len(CATEGORIES))
    if step_of is not None:
        listed, by_step = _per_step_sums(step_of[path], category, seg)
    else:
        listed, by_step = np.zeros(0, np.int64), np.zeros((0, len(CATEGORIES)))

    def top(mask: np.ndarray) -> list[dict[str, Any]]:
        codes = cols.name[rows[mask]]
        if codes.size == 0:
            return []
        weights = seg[mask]
        if len(cols.names) <= TOP_BY_DICTIONARY:
            # summed per name code + 1 (code -1, no name, at 0) over the whole dictionary: no distinct codes found
            # first; each sum adds its points in path order as before
            return _top_by_dictionary(
                np.bincount(codes + 1, weights=weights, minlength=len(cols.names) + 1), cols.names
            )
        code, inverse = unique_ints(codes, return_inverse=True)
        sums = np.bincount(inverse, weights=weights)
        order = np.argsort(-sums, kind="stable")[:TOP]
        return [
            {"name": str(cols.names[code[i]]) if code[i] >= 0 else None, "ns": int(sums[i])}
            for i in order
            if sums[i] > 0
        ]

    return PathSums(
        int(seg.sum()),
        by,
        listed,
        by_step,
        top((kind == GPU_END) & is_kernel),
        top(kind == HOST_END),
    )


def path_sums_natively(
    graph: Graph,
    t: np.ndarray,
    trace: Any,
    stretches: tuple[np.ndarray, np.ndarray, np.ndarray],
    step_of: np.ndarray | None,
) -> PathSums | None:
    """:func:`path_sums_by_numpy` of the path ``stretches`` (:func:`path_stretches`) in one compiled pass over its
    points (no path-sized arrays: the categories, times and sums per step and name as the points are read); None
    where it does not apply (no compiled helper, a name dictionary beyond both TOP_BY_DICTIONARY and the path's
    points, name codes or rows of another type, steps beyond a few per path point: numpy then)."""
    solver = native_solver()
    cols = event_columns(trace)
    names, name, event_kind = cols.names, cols.name, cols.kind
    limit = max(TOP_BY_DICTIONARY, int((stretches[1] - stretches[0] + 1).sum()))  # (the path's points)
    if (
        solver is None
        or len(names) > limit
        or not all(
            isinstance(a, np.ndarray) and a.dtype.kind == "i" and a.dtype.itemsize in (4, 8)
            for a in (name, graph.row)
        )
        or not (isinstance(event_kind, np.ndarray) and event_kind.dtype == np.int8)
        or graph.kind.dtype != np.int8
    ):
        return None
    collective = name_lookup(
        names, is_collective_kernel, limit
    )  # (the names tested once: no more than the path)
    if collective is None:
        return None
    lo, hi, head = stretches
    width = len(CATEGORIES)
    steps = np.zeros(0, np.int64)
    span = 0
    if step_of is not None:
        steps = np.ascontiguousarray(step_of, np.int64)
        low, high = solver.stretch_range(steps, lo, hi)  # type: ignore[attr-defined]
        span = high + 2
        if low < -1 or span > 4 * int((hi - lo + 1).sum()) + 1024:
            return None  # (as _per_step_sums: bins for the steps while they are few)
    by = np.zeros(width)
    step_sums, step_counts = np.zeros(span * width), np.zeros(span * width, np.int64)
    kernels, hosts = np.zeros(len(names) + 1), np.zeros(len(names) + 1)
    waited = np.unique(graph.call_end[graph.call_waited]).astype(np.int64)
    total = solver.path_sums(  # type: ignore[attr-defined]
        np.ascontiguousarray(t, np.int64),
        graph.kind,
        np.ascontiguousarray(graph.row),
        waited,
        event_kind,
        np.ascontiguousarray(name),
        # (no byte where no name passes: the rule read for no point)
        collective.view(np.uint8) if collective.any() else np.zeros(0, np.uint8),
        np.array([HOST_START, HOST_END, GPU_START, GPU_END, ALL_KINDS.index(KERNEL)], np.int64),
        steps,
        lo,
        hi,
        head,
        by,
        step_sums,
        step_counts,
        kernels,
        hosts,
    )
    listed, by_step = np.zeros(0, np.int64), np.zeros((0, width))
    if step_of is not None:
        present = np.asarray(step_counts.reshape(span, width)[1:].any(axis=1))
        listed, by_step = np.flatnonzero(present), step_sums.reshape(span, width)[1:][present]
    return PathSums(
        int(total), by, listed, by_step, _top_by_dictionary(kernels, names), _top_by_dictionary(hosts, names)
    )


def critical_path(
    graph: Graph, t: np.ndarray, trace: Any, step_of: np.ndarray | None = None
) -> dict[str, Any] | None:
    """The ``critical_path`` block of the whatif section (docs/json.md); ``step_of``: each point's step (-1
    none), for the per-step breakdown."""
    stretches = path_stretches(graph, t)
    sums = None if stretches is None else path_sums_natively(graph, t, trace, stretches, step_of)
    if sums is None:
        path, setter = path_points(graph, t) if stretches is None else _points_of(*stretches)
        if path.size == 0:
            return None
        sums = path_sums_by_numpy(graph, t, trace, path, setter, step_of)
    total, by = sums.total, sums.by
    shares = {name: (float(by[i]) / total if total else None) for i, name in enumerate(CATEGORIES)}
    ns = {name: int(by[i]) for i, name in enumerate(CATEGORIES)}
    per_step: list[dict[str, Any]] = []
    if step_of is not None:
        for step, step_sums in zip(sums.listed[:STEP_LIMIT], sums.by_step[:STEP_LIMIT], strict=True):
            length = float(step_sums.sum())  # (a loop over steps)
            per_step.append(
                {
                    "step": int(step),
                    "length_ns": int(length),
                    "ns": {name: int(step_sums[i]) for i, name in enumerate(CATEGORIES)},
                    "on_host": bool(length and step_sums[0] / length > ON_HOST_SHARE),
                    "bound": bound_of(step_sums),
                }
            )
    return {
        "length_ns": total,
        "ns": ns,
        "shares": shares,
        "on_host": bool(shares["host"] is not None and shares["host"] > ON_HOST_SHARE),
        "host_side_share": (
            float(sum(by[CATEGORIES.index(c)] for c in HOST_SIDE)) / total if total else None
        ),
        "bound": bound_of(by),
        "top_kernels": sums.top_kernels,
        "top_host_calls": sums.top_host_calls,
        "per_step": per_step,
    }
