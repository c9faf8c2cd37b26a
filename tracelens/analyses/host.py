"""What the host side recorded: time per event kind and the busiest names (the ``host`` block).

Reported for every trace, and the whole story when a trace has no GPU activity.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..trace import ALL_KINDS, GPU_ACTIVITY_KINDS, GPU_ANNOTATION, GPU_SYNC, Trace
from ..values import distinct
from .columns import event_columns, thread_key

TOP_N = 10


def host_summary(trace: Trace, top_n: int = TOP_N) -> dict[str, Any]:
    """Count and summed duration per host event kind, the host span, and the top names by summed time."""
    cols = event_columns(trace)
    host = ~cols.of_kind(*GPU_ACTIVITY_KINDS, GPU_SYNC, GPU_ANNOTATION) & (cols.kind >= 0)
    has_gpu = bool((cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)).any())
    if not host.any():
        return {"span_ns": 0, "threads": 0, "by_kind": [], "top": [], "has_gpu_activity": has_gpu}
    host = np.flatnonzero(host)
    kind, name = cols.kind[host], cols.name[host]
    duration = cols.end[host] - cols.start[host]
    by_kind = [
        {"kind": ALL_KINDS[k], "count": int((kind == k).sum()), "total_ns": int(duration[kind == k].sum())}
        for k in sorted(np.unique(kind), key=lambda k: ALL_KINDS[k])
    ]
    # (kind, name) pairs as one integer key; names are dictionary codes (-1 for a null name).
    key = kind.astype(np.int64) * (len(cols.names) + 1) + (name + 1)
    if len(ALL_KINDS) * (len(cols.names) + 1) <= 4 * key.size + 1024:
        # Few (kind, name) slots for the rows: count into every slot (no hash table sized by the row count).
        totals = np.bincount(key, weights=duration).astype(np.int64)
        counts = np.bincount(key)
        pairs = np.flatnonzero(counts)
        totals, counts = totals[pairs], counts[pairs]
    else:
        inverse, pairs = pd.factorize(key)  # hashing, not sorting: millions of rows
        totals = np.bincount(inverse, weights=duration).astype(np.int64)
        counts = np.bincount(inverse)
    pair_kind, pair_name = pairs // (len(cols.names) + 1), pairs % (len(cols.names) + 1) - 1
    labels = np.array([cols.names[n] if n >= 0 else "" for n in pair_name], dtype=object)
    order = np.lexsort((labels.astype(str), -totals))[:top_n]
    pid, tid = cols.pid[host], cols.tid[host]
    known = (pid >= 0) & (tid >= 0)
    threads = distinct(thread_key(pid[known], tid[known]))
    return {
        "span_ns": int(cols.end[host].max() - cols.start[host].min()),
        "threads": int(threads.size),
        "by_kind": by_kind,
        "top": [{"kind": ALL_KINDS[pair_kind[i]], "name": str(labels[i]), "count": int(counts[i]),
                 "total_ns": int(totals[i])} for i in order],
        "has_gpu_activity": has_gpu,
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return host_summary(trace)
