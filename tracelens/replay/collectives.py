"""The communication remedy as a graph change: exposed collectives overlapped with the next independent compute.

What makes computation wait for a collective in the graph, and what the remedy does with each:
- the collective runs on a stream that also runs computation (NCCL on the compute stream): the op after it on
  the stream starts after its end. The collective becomes a zero-length placeholder on its stream (the ops
  after it start once it started: it still waits for the work before it, the data it reduces), and its
  completion -- its start + its own transfer time, and every other participant's start + that transfer time
  (its collective edges) -- moves to what waits for it: the host calls that waited for it, and the first host
  wait on its stream after it (a synchronize there still waits for the collective, as it would on a side
  stream; a completion nothing on the host waits for does not count in the replayed span);
- computation on another stream waits for the collective's event (``cudaStreamWaitEvent``): that event edge
  goes, as if the collective had been issued early enough (prefetched) for the computation not to wait;
- host calls that wait for a collective keep waiting for its completion (a launch blocked on a full command
  buffer keeps waiting for the start of the op that released it: it waits for no completion).
A collective keeps its own transfer time (no slowdown from sharing the SMs and memory with computation), and
placeholders of consecutive collectives on one stream do not queue behind each other: an upper bound.
"""

from __future__ import annotations

import numpy as np

from .graph import GPU_END, GPU_START, Graph
from .joins import inner_join


def overlap_collectives(g: Graph, is_collective: np.ndarray) -> tuple[Graph | None, int, int]:
    """(the changed graph or None when nothing changes, collectives made placeholders, event waits dropped);
    ``is_collective``: per GPU op, a collective kernel."""
    ph, drop_event = placeholders(g, is_collective)
    if ph.size == 0 and not drop_event.any():
        return None, 0, 0
    ph_end = g.op_end[ph]
    # each placeholder's completion sources: (its own start, its transfer), (each participant's start, the
    # transfer its collective edge carries)
    into = np.isin(g.edge_dst, ph_end) & g.edge_is_collective
    source_end = np.concatenate([ph_end, g.edge_dst[into]])
    source_src = np.concatenate([g.op_start[ph], g.edge_src[into]])
    source_lag = np.concatenate([g.lag[ph_end], g.edge_lag[into]])
    waits, first_src, same_stream = placeholder_waits(g, ph_end)
    # (waiter, its wait edge) per pair with the same wait source; then (source, target) per pair with the same
    # placeholder end: the rows and the order of pandas' inner merges
    waiter, wait = inner_join(first_src[same_stream], g.edge_src[waits])
    target_end, target_wait = ph_end[same_stream][waiter], waits[wait]
    source, target = inner_join(source_end, target_end)
    new_wait = target_wait[target]
    moved = g.edge_is_wait & np.isin(g.edge_src, ph_end)  # waits on a placeholder itself: re-sourced below
    drop = drop_event | moved | into
    keep = ~drop
    n_new = source.size
    lag = g.lag.copy()
    lag[ph_end] = 0
    new_src = source_src[source].astype(np.int64, copy=False)
    new_dst = g.edge_dst[new_wait].astype(np.int64, copy=False)
    new_lag = source_lag[source]
    zeros = np.zeros(n_new, bool)
    return (
        g.with_changes(
            lag=lag,
            edge_src=np.concatenate([g.edge_src[keep], new_src]),
            edge_dst=np.concatenate([g.edge_dst[keep], new_dst]),
            edge_lag=np.concatenate([g.edge_lag[keep], (new_lag + g.edge_lag[new_wait]).astype(np.int64)]),
            edge_typical=np.concatenate(
                [g.edge_typical[keep], (new_lag + g.edge_typical[new_wait]).astype(np.int64)]
            ),
            edge_is_wait=np.concatenate([g.edge_is_wait[keep], np.ones(n_new, bool)]),
            edge_is_wake=np.concatenate([g.edge_is_wake[keep], zeros]),
            edge_is_collective=np.concatenate([g.edge_is_collective[keep], zeros]),
        ),
        int(ph.size),
        int(drop_event.sum()),
    )


def placeholders(g: Graph, is_collective: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the collective ops made placeholders: those followed on their stream by more work, on a stream that also
    computes; per edge, whether it is a GPU event wait on a collective's end, which the overlap drops)."""
    op_chain = g.chain[g.op_start]
    nxt = np.minimum(g.op_end + 1, g.size - 1)
    has_successor = (g.op_end + 1 < g.size) & (g.chain[nxt] == op_chain) & ~g.chain_first[nxt]
    compute_chains = np.unique(op_chain[~is_collective])
    placeholder = is_collective & has_successor & np.isin(op_chain, compute_chains)
    collective_end = np.zeros(g.size, bool)
    collective_end[g.op_end[is_collective]] = True
    is_event = (g.kind[g.edge_src] == GPU_END) & (g.kind[g.edge_dst] == GPU_START) & ~g.edge_is_collective
    return np.flatnonzero(placeholder), is_event & collective_end[g.edge_src]


def placeholder_waits(g: Graph, ph_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What waits for each placeholder's completion: the host waits on it, and the first host wait on a later op of
    its stream (points of a stream are stored in stream order). (the wait edges, sorted by source; per placeholder
    end the first wait source at or after it, -1 where none; whether that source is on the placeholder's stream)."""
    # (a queue wait, a launch blocked on a full command buffer, waits for an op's start, not for a completion)
    waits = np.flatnonzero(g.edge_is_wait & ~g.queue_wait_edges())
    w_src = g.edge_src[waits]
    order = np.argsort(w_src, kind="stable")
    waits, w_src = waits[order], w_src[order]
    at = np.searchsorted(w_src, ph_end, side="left")
    at_ok = at < w_src.size
    first_src = (
        np.where(at_ok, w_src[np.minimum(at, w_src.size - 1)], -1) if w_src.size else np.full(ph_end.size, -1)
    )
    same_stream = at_ok & (g.chain[np.maximum(first_src, 0)] == g.chain[ph_end])
    return waits, first_src, same_stream
