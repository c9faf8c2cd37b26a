"""Per-kernel-name totals over all devices (the ``kernels`` block), like nsys ``cuda_gpu_kern_sum``.

For every distinct kernel name (kind ``kernel`` rows; duration = end_ns - start_ns):

count, total_ns, min_ns, max_ns   plain aggregates of the durations
avg_ns                            total_ns / count
median_ns                         median of the durations (mean of the middle two for an even count)
stdev_ns                          sample standard deviation (n - 1 in the denominator); 0 for a single launch
time_fraction                     total_ns / summed duration of all kernels (NOT of wall time), 0-1

Names are sorted by total_ns descending, then name. ``by_name`` lists every name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..trace import ALL_KINDS, KERNEL, Trace
from .blocks import BLOCK_ROWS, count_of_kind
from .columns import event_columns

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

# Kernels whose (name code, duration) a block of the table gives at once, and about how many a groupby takes.
KERNEL_CHUNK = 1 << 20


def kernel_summary(trace: Trace) -> dict[str, Any]:
    """Count, summed time and the per-name statistics of every kernel in the trace."""
    import pandas as pd

    cols = event_columns(trace)
    code, duration = _kernel_codes_and_durations(cols)
    if not code.size:
        return {"count": 0, "total_ns": 0, "distinct_names": 0, "by_name": []}
    # Group on the name dictionary's integer codes (strings only for the distinct names at the end), a few names'
    # kernels at a time: each name's kernels in their order, so each statistic is the one of all its kernels.
    ranges = _code_ranges(code)
    chunk = np.zeros(int(code.max()) + 2, np.uint8)  # per slot (code + 1): its range
    for i, (lo, hi) in enumerate(ranges):  # a loop over a few ranges
        chunk[lo + 1 : hi + 1] = i
    of_kernel = chunk[code + 1] if len(ranges) > 1 else None
    stats = pd.concat([_stats(code, duration, of_kernel, i) for i in range(len(ranges))], ignore_index=True)
    del of_kernel
    if len(stats) > 1:  # the names in order of their first kernel, as one groupby(sort=False) gives them
        first = _first_positions(code)
        stats = stats.iloc[np.argsort(first[stats["code"].to_numpy() + 1], kind="stable")]
        stats = stats.reset_index(drop=True)
    names = np.append(cols.names, "").astype(object)  # code -1 (null name) picks the trailing ""
    stats["name"] = names[stats["code"].to_numpy()].astype(str)
    stats["std"] = stats["std"].fillna(0.0)  # a single launch has no spread
    stats = stats.sort_values(["sum", "name"], ascending=[False, True], kind="stable")
    total = int(duration.sum())
    by_name = [
        {
            "name": name,
            "count": int(count),
            "total_ns": int(total_ns),
            "avg_ns": float(total_ns) / float(count),
            "median_ns": float(median),
            "min_ns": int(lo),
            "max_ns": int(hi),
            "stdev_ns": float(std),
            "time_fraction": (float(total_ns) / total) if total > 0 else 0.0,
        }
        for name, count, total_ns, lo, hi, median, std in zip(
            stats["name"],
            stats["count"],
            stats["sum"],
            stats["min"],
            stats["max"],
            stats["median"],
            stats["std"],
            strict=True,
        )
    ]
    return {"count": int(code.size), "total_ns": total, "distinct_names": len(by_name), "by_name": by_name}


def _kernel_codes_and_durations(cols: Any) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' name codes and durations (end - start, int64), in row order, read a block of the table at a
    time: no mask, row positions or gathered starts and ends of every kernel."""
    code_kind = ALL_KINDS.index(KERNEL)
    kind, name, start, end = cols.kind, cols.name, cols.start, cols.end
    count = count_of_kind(kind, code_kind)
    code, duration = np.empty(count, name.dtype), np.empty(count, np.int64)
    at = 0
    for lo in range(0, kind.size if count else 0, BLOCK_ROWS):  # a loop over blocks of rows
        rows = np.flatnonzero(kind[lo : lo + BLOCK_ROWS] == code_kind)
        rows += lo
        code[at : at + rows.size] = name[rows]
        np.subtract(end[rows], start[rows], out=duration[at : at + rows.size])
        at += rows.size
        del rows
    return code, duration


def _code_ranges(code: np.ndarray) -> list[tuple[int, int]]:
    """Ranges [lo, hi) of name codes (-1 the null name) holding about KERNEL_CHUNK kernels each (a name's kernels
    all in one range; at most 255 ranges)."""
    counts = np.cumsum(np.bincount(code.astype(np.int64) + 1))  # slot = code + 1
    step = max(KERNEL_CHUNK, -(-int(counts[-1]) // 255))
    cuts = np.unique(np.searchsorted(counts, np.arange(step, int(counts[-1]), step)))
    bounds = [0, *(int(c) + 1 for c in cuts), counts.size]
    return [(lo - 1, hi - 1) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if hi > lo]


def _stats(code: np.ndarray, duration: np.ndarray, of_kernel: np.ndarray | None, i: int) -> pd.DataFrame:
    """Each name's count, sum, min, max, median and std of durations, for the kernels of the i-th code range
    (``of_kernel``: each kernel's range; None: one range), in order of each name's first kernel (pandas'
    groupby, over those kernels in their order)."""
    import pandas as pd

    if of_kernel is None:
        frame = pd.DataFrame({"code": code, "dur": duration}, copy=False)
    else:
        mine = of_kernel == i
        frame = pd.DataFrame(
            {"code": np.compress(mine, code), "dur": np.compress(mine, duration)}, copy=False
        )
        del mine
    grouped = frame.groupby("code", sort=False)["dur"]
    return grouped.agg(["count", "sum", "min", "max", "median", "std"]).reset_index()


def _first_positions(code: np.ndarray) -> np.ndarray:
    """Per slot (name code + 1), the position of its first kernel (the kernels' count where none)."""
    first = np.full(int(code.max()) + 2, code.size, np.int64)
    for lo in range(((code.size - 1) // BLOCK_ROWS) * BLOCK_ROWS, -1, -BLOCK_ROWS):  # blocks, the last first
        block = code[lo : lo + BLOCK_ROWS].astype(np.int64) + 1
        # the last write wins: each slot's smallest position in the block, written after the later blocks'
        first[block[::-1]] = np.arange(lo + block.size - 1, lo - 1, -1)
    return first


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return kernel_summary(trace)
