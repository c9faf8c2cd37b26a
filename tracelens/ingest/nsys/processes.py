"""Exports of several processes (MPI ranks, DDP workers under one ``nsys profile``): what CUPTI numbers per
process is made unique across the export before the parts are assembled.

- Correlation ids: CUPTI counts each process's API calls from 1, so ranks repeat each other's ids; joined on the
  id alone, a rank's kernels took another rank's launch calls (wrong latencies, ops "enqueued" by one call as if
  graph launches, NVTX ranges credited with another rank's GPU time). Where rows of more than one process carry
  correlation ids, ``correlation_id = pid * 2^32 + correlationId`` (CUPTI's id is 32-bit: no two keys meet).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import Part

PROCESS_SHIFT = 1 << 32  # above every 32-bit CUPTI correlation id


def _correlated_pids(part: Part) -> np.ndarray:
    """The distinct pids of the part's rows that carry a correlation id (null pids left out)."""
    corr, pid = part.columns.get("correlation_id"), part.columns.get("pid")
    if corr is None or pid is None or not len(corr):
        return np.empty(0, np.int64)
    kept = pid.filter(pc.and_(corr.is_valid(), pid.is_valid()))
    return np.asarray(pc.unique(kept).cast(pa.int64()), np.int64)


def key_correlation_ids_by_process(parts: list[Part]) -> bool:
    """Make correlation ids unique per process where rows of several processes carry them (in place); whether
    they were. One process: the ids stay as exported."""
    pids = np.unique(np.concatenate([_correlated_pids(p) for p in parts] or [np.empty(0, np.int64)]))
    if pids.size < 2:
        return False
    for part in parts:
        corr, pid = part.columns.get("correlation_id"), part.columns.get("pid")
        if corr is None or pid is None:
            continue
        wide = corr.cast(pa.int64())
        keyed = pc.add(pc.multiply(pid.cast(pa.int64()), PROCESS_SHIFT), wide)
        # a row without a pid keeps its id (it can join no other process's call anyway)
        part.columns["correlation_id"] = pc.if_else(pid.is_null(), wide, keyed)
    return True
