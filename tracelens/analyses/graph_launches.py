"""The launch section's CUDA/HIP graph launches (``launch.launch_stats``' ``cuda_graphs``): the API calls that launch
a graph, and the GPU ops such a call launched; the launch latency per call (``first_op_latency``).

A graph launch's name holds "GraphLaunch" (``names.is_graph_launch``: ``(cuda|hip|cu)GraphLaunch`` and API suffixes),
so where no name of a small dictionary does (most traces: 357 names on the 406 MB Kineto tile), there is none, and the
API calls' names are not read (a mask of the 521K calls among 1.5M rows, their names gathered and marked: ~4-6 ms on
the sections' critical thread)."""

from __future__ import annotations

import numpy as np

from ..trace import DRIVER, RUNTIME
from .columns import EventColumns, Table
from .names import is_graph_launch, names_in_use

# Dictionaries of up to this many names are searched for the word first (a Python test per name).
FEW_NAMES = 1 << 14
GRAPH_WORD = "GraphLaunch"


def graph_launches(cols: EventColumns, pairs: Table) -> tuple[int, np.ndarray]:
    """(how many API calls launch a graph; per GPU op of ``pairs`` (``launch.launch_pairs``), whether it is matched
    to such a call)."""
    names = cols.names
    if len(names) <= FEW_NAMES and not any(GRAPH_WORD in str(name) for name in names.tolist()):
        return 0, np.zeros(len(pairs), bool)
    api = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER))  # a gather by index: faster than by mask
    api_names = cols.name[api]
    del api
    # per name code (a last slot, False, for -1): a graph launch; tested at the calls' names only
    is_graph = np.zeros(len(names) + 1, bool)
    used = names_in_use(api_names, len(names))
    is_graph[used] = np.fromiter((is_graph_launch(str(names[c])) for c in used), bool, used.size)
    # A matched op's launch name is a call's: no graph launch among the calls' names, none among the ops'.
    if not is_graph.any():
        return 0, np.zeros(len(pairs), bool)
    return int(is_graph[api_names].sum()), pairs["matched"] & is_graph[pairs["launch_name"]]


def first_op_latency(matched: Table) -> np.ndarray:
    """Per launch call, its first GPU op's start minus the call's end: a graph launch's later ops wait behind its
    earlier ones (tens of ms into a large graph), not for the launch."""
    correlation, start = matched["correlation_id"], matched["start"]
    order = np.lexsort((start, correlation))
    first = order[np.r_[True, correlation[order][1:] != correlation[order][:-1]]]
    return start[first] - matched["launch_end"][first]
