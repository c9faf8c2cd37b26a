"""CUDA green contexts (CUDA 12.4+) of an Nsight Systems export: the SMs each was given, and each kernel's.

A green context runs its kernels on a partition of the GPU's SMs (``TARGET_INFO_CUDA_CONTEXT_INFO``:
``isGreenContext``, ``numMultiprocessors``; a kernel's ``greenContextId`` names it, 0 where none): its kernels'
occupancy and grid fill are judged against those SMs, not the whole GPU's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .database import Database


def _int_below(value: Any, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < limit


CONTEXT_TABLE = "TARGET_INFO_CUDA_CONTEXT_INFO"


def green_context_sms(db: Database) -> dict[tuple[int, int], int]:
    """(pid, context id) -> the SMs of each CUDA green context (CUDA 12.4+), from ``TARGET_INFO_CUDA_CONTEXT_INFO``
    rows with ``isGreenContext`` set (CUPTI's numMultiprocessors: "invalid if isGreenContext is 0"); empty without
    the table, its columns, or a green context. A context given two counts (a damaged export) is left out."""
    wanted = {"processId", "contextId", "isGreenContext", "numMultiprocessors"}
    if CONTEXT_TABLE not in db.tables or not wanted <= set(db.columns(CONTEXT_TABLE)):
        return {}
    counts: dict[tuple[int, int], set[int]] = {}
    for pid, context, sms in db.small(
        f"SELECT DISTINCT processId, contextId, numMultiprocessors FROM {CONTEXT_TABLE} WHERE isGreenContext = 1"
    ):
        # ids the columns hold (pid 24 bits, context ids uint32), a positive count: else a damaged row, left out
        if _int_below(pid, 2**31) and _int_below(context, 2**32) and _int_below(sms, 2**31) and sms > 0:
            counts.setdefault((pid, context), set()).add(sms)
    return {key: next(iter(found)) for key, found in counts.items() if len(found) == 1}


def context_sm_counts(
    pid: np.ndarray, green: np.ndarray, context: np.ndarray, sms: dict[tuple[int, int], int]
) -> pa.Array:
    """Per kernel, the SMs of its green context (``sms``: :func:`green_context_sms`), null where it ran in none:
    looked up by (pid, greenContextId), else (pid, contextId) (nsys writes 0 for "no green context")."""
    keys = np.array(sorted((p << 32) | c for p, c in sms), np.int64)
    values = np.array([sms[(int(k) >> 32, int(k) & 0xFFFFFFFF)] for k in keys], np.int32)

    def find(ids: np.ndarray) -> np.ndarray:
        usable = (pid >= 0) & (ids > 0) & (ids < 1 << 32)
        wanted = np.where(usable, (pid << 32) | np.where(usable, ids, 0), -1)
        pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
        return np.where(usable & (keys[pos] == wanted), pos, -1)

    at = find(green)
    at = np.where(at >= 0, at, find(context))
    return pa.array(values[np.maximum(at, 0)], pa.int32(), mask=at < 0)
