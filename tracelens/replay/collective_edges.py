"""The replay graph's collective edges: the NCCL/RCCL kernels of one collective matched across the devices that
take part (:func:`collective_ids`, the rule run/crossrank.py uses across ranks), and the edges that end each
participant after every other participant's start (:func:`collective_edges`)."""

from __future__ import annotations

import numpy as np

from .joins import cumcount, inner_join, run_heads, run_ids
from .points import NONE


def collective_ids(
    is_collective: np.ndarray, name: np.ndarray, device: np.ndarray, start: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """Per op, the id of the collective it takes part in (-1: none). A collective: the collective kernels with one
    name and one ordinal among that name's kernels on each device (by start), matched when every device that runs
    the name has that ordinal (a device missing it, or a single device, leaves it unmatched), and every
    participant's end at or after every participant's start (else the devices' clocks disagree: unmatched). Ids
    number the matched collectives by (name, ordinal)."""
    out = np.full(is_collective.size, -1, np.int64)
    ops = np.flatnonzero(is_collective)
    if ops.size == 0:
        return out
    # by (name, device, start, end), ties in op order: each kernel's ordinal among its name's on its device
    order = np.lexsort((end[ops], start[ops], device[ops], name[ops]))
    ops = ops[order]
    nm, dev, st, en = name[ops], device[ops], start[ops], end[ops]
    ordinal = cumcount(nm, dev)
    # the devices that run each name: the (name, device) runs within its run
    devices = np.bincount(run_ids(nm), weights=run_heads(nm, dev)).astype(np.int64)[run_ids(nm)]
    # per (name, ordinal), in that order: how many take part, the last start, the first end
    by_pair = np.lexsort((ordinal, nm))
    pair = np.empty(ops.size, np.int64)
    pair[by_pair] = run_ids(nm[by_pair], ordinal[by_pair])
    n_pairs = int(pair.max()) + 1
    count = np.bincount(pair, minlength=n_pairs)
    last_start = np.full(n_pairs, NONE, np.int64)
    np.maximum.at(last_start, pair, st)
    first_end = np.full(n_pairs, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first_end, pair, en)
    matched = (devices >= 2) & (count[pair] == devices) & (first_end[pair] >= last_start[pair])
    # ids among the matched pairs only, in (name, ordinal) order (every participant of a pair matches or none)
    pair_matched = np.zeros(n_pairs, bool)
    pair_matched[pair[matched]] = True
    ids = np.cumsum(pair_matched) - 1
    out[ops[matched]] = ids[pair[matched]]
    return out


def collective_edges(
    collective: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source op, target op, lag) per ordered pair of distinct participants of each collective: the target ends
    after the source starts by its own transfer time (its recorded end - the collective's last start)."""
    members = np.flatnonzero(collective >= 0)
    empty = np.zeros(0, np.int64)
    if members.size == 0:
        return empty, empty, empty
    members = members[np.argsort(collective[members], kind="stable")]
    group = collective[members]
    # every pair of one collective's participants, by source, then target, in the participants' order
    src_at, dst_at = inner_join(group, group)
    distinct = src_at != dst_at
    src, dst = members[src_at[distinct]], members[dst_at[distinct]]
    last_start = np.full(int(group.max()) + 1, NONE, np.int64)
    np.maximum.at(last_start, group, start[members])
    return src.astype(np.int64), dst.astype(np.int64), end[dst] - last_start[collective[dst]]
