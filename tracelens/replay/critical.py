"""The critical path of a replay: from the point that ends last, back through what set each point's time.

Each point on the path owns the time between its setter and itself, in one category:
    host            the host's work between calls, a non-blocking call's own time, a launch's latency
    sync_waits      a blocking call's own cost and its wake-up after what it waited for
    kernels         a kernel's run (and a stream's gap before a queued op)
    copies          a memcpy or memset
    communication   a collective kernel (NCCL/RCCL)
The walk loops over chain switches on the path (a stretch of one chain is taken whole), not over events.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analyses.columns import event_columns
from ..analyses.names import is_collective_kernel
from ..trace import ALL_KINDS, KERNEL
from .engine import native_solver, setters
from .graph import GPU_END, GPU_START, HOST_END, HOST_START, Graph, unique_ints
from .name_tests import names_mask

CATEGORIES = ("host", "sync_waits", "kernels", "copies", "communication")
TOP = 5
TOP_BY_DICTIONARY = 4096  # name dictionaries up to this size: the top lists summed over the whole dictionary
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


def path_points(graph: Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(points on the critical path, ending at the last point, in path order from the start; each one's setter):
    walked by the compiled helper where it was built (reading what set only the points it walks through), else
    :func:`path_points_by_numpy`; both give the same arrays."""
    solver = native_solver()
    if solver is None or graph.size == 0:
        return path_points_by_numpy(graph, t)
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
    # the stretches bottom..top, first switch last: one index array; inside a stretch each point's setter is the
    # point before it, at its bottom what the walk found
    lo = bottoms[:count][::-1]
    lengths = tops[:count][::-1] - lo + 1
    starts = np.cumsum(lengths) - lengths
    # one path-sized array: steps of 1, each stretch's first point a jump from the last point of the stretch before
    # (the first one's from 0), summed in place
    path = np.ones(int(lengths.sum()), np.int64)
    jumps = lo.copy()
    jumps[1:] -= lo[:-1] + lengths[:-1] - 1
    path[starts] = jumps
    np.cumsum(path, out=path)
    setter = path - 1
    setter[starts] = head_sources[:count][::-1]
    return path, setter


def path_points_by_numpy(graph: Graph, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`path_points` from every point's setter (:func:`engine.setters`): the path without the compiled
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


def critical_path(
    graph: Graph, t: np.ndarray, trace: Any, step_of: np.ndarray | None = None
) -> dict[str, Any] | None:
    """The ``critical_path`` block of the whatif section (docs/json.md); ``step_of``: each point's step (-1
    none), for the per-step breakdown."""
    path, setter = path_points(graph, t)
    if path.size == 0:
        return None
    category, seg, kind, is_kernel, rows = _path_facts(graph, t, trace, path, setter)
    cols = event_columns(trace)
    total = int(seg.sum())
    by = np.bincount(category, weights=seg, minlength=len(CATEGORIES))
    shares = {name: (float(by[i]) / total if total else None) for i, name in enumerate(CATEGORIES)}
    ns = {name: int(by[i]) for i, name in enumerate(CATEGORIES)}
    per_step: list[dict[str, Any]] = []
    if step_of is not None:
        listed, by_step = _per_step_sums(step_of[path], category, seg)
        for step, sums in zip(listed[:STEP_LIMIT], by_step[:STEP_LIMIT], strict=True):  # a loop over steps
            length = float(sums.sum())
            per_step.append(
                {
                    "step": int(step),
                    "length_ns": int(length),
                    "ns": {name: int(sums[i]) for i, name in enumerate(CATEGORIES)},
                    "on_host": bool(length and sums[0] / length > ON_HOST_SHARE),
                    "bound": bound_of(sums),
                }
            )

    def top(mask: np.ndarray) -> list[dict[str, Any]]:
        codes = cols.name[rows[mask]]
        if codes.size == 0:
            return []
        weights = seg[mask]
        if len(cols.names) <= TOP_BY_DICTIONARY:
            # summed per name code + 1 (code -1, no name, at 0) over the whole dictionary: no distinct codes found
            # first; each sum adds its points in path order as before, and the names no point uses sum to 0, which
            # the list leaves out (ties: the lower code first, as among the distinct codes)
            sums = np.bincount(codes + 1, weights=weights, minlength=len(cols.names) + 1)
            code = np.arange(-1, len(cols.names))
        else:
            code, inverse = unique_ints(codes, return_inverse=True)
            sums = np.bincount(inverse, weights=weights)
        order = np.argsort(-sums, kind="stable")[:TOP]
        return [
            {"name": str(cols.names[code[i]]) if code[i] >= 0 else None, "ns": int(sums[i])}
            for i in order
            if sums[i] > 0
        ]

    return {
        "length_ns": total,
        "ns": ns,
        "shares": shares,
        "on_host": bool(shares["host"] is not None and shares["host"] > ON_HOST_SHARE),
        "host_side_share": (
            float(sum(by[CATEGORIES.index(c)] for c in HOST_SIDE)) / total if total else None
        ),
        "bound": bound_of(by),
        "top_kernels": top((kind == GPU_END) & is_kernel),
        "top_host_calls": top(kind == HOST_END),
        "per_step": per_step,
    }
