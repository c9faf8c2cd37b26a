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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..enrich import held_kernel_rows
from ..trace import ALL_KINDS, KERNEL, Trace
from .blocks import BLOCK_ROWS, count_of_kind
from .columns import event_columns

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

try:  # the compiled moments (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# Kernels whose (name code, duration) a block of the table gives at once, and about how many a groupby takes.
KERNEL_CHUNK = 1 << 20


def kernel_summary(trace: Trace) -> dict[str, Any]:
    """Count, summed time and the per-name statistics of every kernel in the trace."""
    cols = event_columns(trace)
    code, duration = _kernel_codes_and_durations(cols, held_kernel_rows(trace))
    if not code.size:
        return {"count": 0, "total_ns": 0, "distinct_names": 0, "by_name": []}
    stats = _name_stats(code, duration) if _compiled is not None else _frame_stats(code, duration)
    names = np.append(cols.names, "").astype(object)  # code -1 (null name) picks the trailing ""
    label = [str(name) for name in names[stats.code].tolist()]  # a loop over the distinct names
    # by summed time, largest first, then name (Python's string order), then first kernel: the frame's stable sort
    rank = np.empty(len(label), np.int64)
    rank[sorted(range(len(label)), key=label.__getitem__)] = np.arange(len(label))
    order = np.lexsort((rank, ~stats.total))  # ~: descending without the overflow of a negation
    total = int(duration.sum())
    by_name = [
        {
            "name": label[i],
            "count": int(stats.count[i]),
            "total_ns": int(stats.total[i]),
            "avg_ns": float(stats.total[i]) / float(stats.count[i]),
            "median_ns": float(stats.median[i]),
            "min_ns": int(stats.lo[i]),
            "max_ns": int(stats.hi[i]),
            "stdev_ns": float(stats.std[i]),
            "time_fraction": (float(stats.total[i]) / total) if total > 0 else 0.0,
        }
        for i in order.tolist()
    ]
    return {"count": int(code.size), "total_ns": total, "distinct_names": len(by_name), "by_name": by_name}


@dataclass(frozen=True)
class NameStats:
    """Per kernel name (its code, -1 the null name), in order of its first kernel: the count, sum, min, max,
    median and sample standard deviation (0 for one kernel) of its durations."""

    code: np.ndarray
    count: np.ndarray
    total: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    median: np.ndarray
    std: np.ndarray


def _name_stats(code: np.ndarray, duration: np.ndarray) -> NameStats:
    """:class:`NameStats` without pandas: count, sum, min, max and Welford's running moments in one compiled pass
    (pandas' group_var update, step for step: the same std to the last bit), each name's median from its sorted
    durations, a few names' kernels at a time (:func:`_code_ranges`: no sort of all kernels at once)."""
    slots = int(code.max()) + 2  # slot = code + 1
    count, total, lo, hi = (np.empty(slots, np.int64) for _ in range(4))
    mean, m2 = np.empty(slots, np.float64), np.empty(slots, np.float64)
    if code.dtype.kind != "i" or code.dtype.itemsize not in (2, 4, 8):
        code = code.astype(np.int64)
    _compiled.group_moments(code, np.ascontiguousarray(duration, np.int64), count, total, lo, hi, mean, m2)
    median = np.zeros(slots, np.float64)
    ranges = _code_ranges(code)
    for lo_code, hi_code in ranges:  # a loop over a few ranges of codes
        mine = (code >= lo_code) & (code < hi_code) if len(ranges) > 1 else None
        part_code = code if mine is None else np.compress(mine, code)
        part = duration if mine is None else np.compress(mine, duration)
        median += _medians(part_code.astype(np.int64) + 1, part, slots)
        del mine, part_code, part
    present = np.flatnonzero(count)
    present = present[np.argsort(_first_positions(code)[present], kind="stable")]  # by first kernel
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(m2[present] / (count[present] - 1).astype(np.float64))
    std[count[present] < 2] = 0.0  # a single launch has no spread
    return NameStats(
        present - 1, count[present], total[present], lo[present], hi[present], median[present], std
    )


def _medians(slot: np.ndarray, duration: np.ndarray, slots: int) -> np.ndarray:
    """Per slot, the median of its durations among these kernels (all of its kernels; 0 where it has none here):
    the middle value, or the mean of the middle two in float64, as pandas' median gives it. The kernels sorted by
    (slot, duration) as one int64 key where it fits (a sort of one array: 9 ms for 1M kernels, a two-key lexsort
    160 ms)."""
    out = np.zeros(slots, np.float64)
    if slot.size == 0:
        return out
    lo = int(duration.min())
    span = int(duration.max()) - lo + 1
    here = np.bincount(slot, minlength=slots)
    begin = np.cumsum(here) - here
    has = np.flatnonzero(here)
    n = here[has]
    middle = (begin[has] + n // 2, begin[has] + (n - 1) // 2)  # positions of the upper and lower middle
    if slots * span < 2**63:  # slot * span + (duration - lo) fits an int64
        key = slot * np.int64(span)
        key += duration
        key -= lo
        key.sort()
        base = has * np.int64(span) - lo  # a key less this is the duration
        upper, lower = ((key[at] - base).astype(np.float64) for at in middle)
    else:  # durations spread past what a key holds (damaged timestamps): a two-key sort
        ordered = duration[np.lexsort((duration, slot))]
        upper, lower = (ordered[at].astype(np.float64) for at in middle)
    out[has] = np.where(n % 2 == 1, upper, (upper + lower) / 2)
    return out


def _frame_stats(code: np.ndarray, duration: np.ndarray) -> NameStats:
    """:class:`NameStats` by pandas' groupby where the compiled pass is not built, a few names' kernels at a time."""
    import pandas as pd

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
    return NameStats(
        code=stats["code"].to_numpy(),
        count=stats["count"].to_numpy(),
        total=stats["sum"].to_numpy(),
        lo=stats["min"].to_numpy(),
        hi=stats["max"].to_numpy(),
        median=stats["median"].to_numpy(),
        std=stats["std"].fillna(0.0).to_numpy(),  # a single launch has no spread
    )


def _kernel_codes_and_durations(cols: Any, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' name codes and durations (end - start, int64), in row order: gathered at ``rows`` (the kernel
    rows the load found and holds, :func:`tracelens.enrich.held_kernel_rows`), else read a block of the table at a
    time (no mask, row positions or gathered starts and ends of every kernel)."""
    if rows is not None:  # no pass over the kind column to find them again
        duration = np.empty(rows.size, np.int64)
        start, end = cols.start, cols.end
        # blocks of kernels: no gathered start and end of every kernel at once
        for lo in range(0, rows.size, BLOCK_ROWS):
            picked = rows[lo : lo + BLOCK_ROWS]
            np.subtract(end[picked], start[picked], out=duration[lo : lo + picked.size])
        return cols.name[rows], duration
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
