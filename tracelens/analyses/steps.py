"""Steps and the step-time breakdown.

Definitions (docs/analyses.md, "steps"):
    step            = rows of kind `step` with the same `step` number merged: [min start, max end)
                      (ProfilerStep#N, TF step markers, tracelens/step#N); unnumbered rows are numbered by order
    duration_ns     = end - start
    gpu busy        = per device, the device's busy union (kernel, memcpy, memset) inside the step
    host breakdown  = the step window split by priority among the host categories of the step threads
                      (threads that carry step rows plus threads that launched GPU work; all host threads when
                      none is known): input > ... as in attribution, with sync first:
                      sync > input > launch > cpu, `other` = the rest; the parts sum to duration_ns
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import intervals
from ..trace import STEP, Trace
from .attribution import HostRows, host_rows, thread_codes
from .columns import device_busy, event_columns
from .host_split import priority_split
from .launch import launch_pairs
from .level_cut import row_pass
from .names import CAUSES, HOST_CATEGORY_PRIORITY, NOTHING
from .step_arrays import step_window_arrays
from .window_split import disjoint_windows

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

STEP_LIMIT = 2000  # steps listed one by one; the summary covers all
HOST_KEYS = {c: ("other" if c == NOTHING else c) for c in CAUSES}


def step_threads(trace: Trace) -> np.ndarray:
    rows = host_rows(trace)
    cols = event_columns(trace)
    steps = cols.of_kind(STEP)
    pairs = launch_pairs(trace)
    matched = pairs["matched"]
    pids = np.concatenate([cols.pid[steps], pairs["pid"][matched]])
    tids = np.concatenate([cols.tid[steps], pairs["tid"][matched]])
    known = tids >= 0
    codes = thread_codes(rows, pids[known], tids[known]) if known.any() else np.empty(0, np.int64)
    if codes.size == 0:
        # No thread known to drive the steps: a step marker on a thread with no other rows, or none at all.
        step_pids = np.unique(cols.pid[steps])
        step_pids = step_pids[step_pids >= 0]
        if step_pids.size:
            codes = np.flatnonzero(np.isin(rows.threads.pid, step_pids))
    return codes if codes.size else np.arange(len(rows.threads))


def _union_of_masked(
    s: np.ndarray, e: np.ndarray, mask: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """``intervals.merge(s[mask], e[mask])`` of intervals in start order whose ends are not before their starts
    (``count``: how many the mask selects). A few selected rows are gathered and merged (in start order: no sort);
    many are merged in place: a running max of the selected ends, a new interval at each selected start past
    every selected end before it."""
    if count * 8 < s.size:
        picked = np.flatnonzero(mask)
        return intervals.merge(s[picked], e[picked])
    if count == s.size:  # every row: no masked copy of the ends
        reach = np.maximum.accumulate(e)
        new = np.empty(s.size, bool)
        new[:1] = True
        np.greater(s[1:], reach[:-1], out=new[1:])
    else:
        reach = np.where(mask, e, np.iinfo(np.int64).min)
        np.maximum.accumulate(reach, out=reach)
        new = mask.copy()
        new[1:] &= s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    del new
    if first.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # each interval ends at the running max just before the next one begins (unselected rows carry it on)
    last = np.empty_like(first)
    np.subtract(first[1:], 1, out=last[:-1])
    last[-1] = s.size - 1
    return s[first], reach[last]


def step_split(starts: np.ndarray, ends: np.ndarray, rows: HostRows, thread_set: np.ndarray) -> np.ndarray:
    """``priority_split(starts, ends, rows, thread_set)[0]``: the step windows split among the host categories.

    The host rows are in start order (the event table is) and hold nearly every row of a trace with steps: the
    union through each priority level is one masked pass over them (``_union_of_masked``), with no per-level merge,
    no sort of the levels' unions joined, no gathered copy of the chosen threads' rows. Where the rows are not in
    start order, or a row ends before it starts, ``priority_split`` itself (the union of such rows depends on how
    they are grouped). Sorted disjoint windows (the usual steps) take one compiled pass over the host rows instead
    (``_compiled_coverage``)."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    covered = _compiled_coverage(starts, ends, rows, thread_set)
    if covered is not None:
        out = np.zeros((starts.size, len(CAUSES)), np.int64)
        out[:, : covered.shape[0]] = np.diff(covered, axis=0, prepend=0).T
        out[:, -1] = (ends - starts) - covered[-1]
        return out
    s, e = rows.starts(), rows.ends()
    if s.size and (bool((s[1:] < s[:-1]).any()) or bool((e < s).any())):
        return priority_split(starts, ends, rows, thread_set)[0]
    levels = len(HOST_CATEGORY_PRIORITY)
    chosen = np.zeros(len(rows.threads), bool)
    chosen[thread_set] = True
    # each row's level, rows of other threads past the last level
    level_of = rows.category.astype(np.int8, copy=True)
    if not chosen.all():
        level_of[~chosen[rows.thread]] = levels
    through = np.cumsum(np.bincount(level_of, minlength=levels + 1)[:levels])  # rows at or before each level
    out = np.zeros((starts.size, len(CAUSES)), np.int64)
    covered_before = np.zeros(starts.size, np.int64)
    for level in range(levels):
        if through[level] == (through[level - 1] if level else 0):
            continue  # no row of this level: the union is unchanged
        union = _union_of_masked(s, e, level_of <= level, int(through[level]))
        covered = intervals.overlap_with_union(starts, ends, *union)
        out[:, level] = covered - covered_before
        covered_before = covered
    out[:, -1] = (ends - starts) - covered_before
    return out


def _compiled_coverage(
    starts: np.ndarray, ends: np.ndarray, rows: HostRows, thread_set: np.ndarray
) -> np.ndarray | None:
    """Per level (HOST_CATEGORY_PRIORITY order) and window, the window's time covered by the union of the chosen
    threads' rows of that level and the earlier ones, by one compiled pass over the host rows reading their times
    where they stand (``_merge_search.level_coverage``: no gathered copy of the rows' times, no masked pass per
    level); None where the pass is not built, the windows overlap or are not sorted, the event times are not plain
    int64 arrays, a row ends before it starts or the rows are not in start order (the numpy path then)."""
    if _compiled is None or not hasattr(_compiled, "level_coverage") or not disjoint_windows(starts, ends):
        return None
    args = row_pass(rows, thread_set)
    if args is None:
        return None
    covered = np.zeros((args.levels, starts.size), np.int64)
    done = _compiled.level_coverage(*args, np.ascontiguousarray(starts), np.ascontiguousarray(ends), covered)
    return covered if done else None


def step_breakdown(trace: Trace) -> dict[str, Any]:
    windows = step_window_arrays(trace)
    if len(windows) == 0:
        return {"count": 0, "steps": [], "summary": None}
    starts, ends = windows.start, windows.end
    durations = ends - starts
    split = step_split(starts, ends, host_rows(trace), step_threads(trace))
    busy = device_busy(trace)
    gpu = {d: intervals.overlap_with_union(starts, ends, b.busy_starts, b.busy_ends) for d, b in busy.items()}
    total = int(durations.sum())
    listed = []
    numbers = windows.step[:STEP_LIMIT].tolist()  # not .iat per step: ~0.1 ms each
    for i in range(min(len(windows), STEP_LIMIT)):
        listed.append(
            {
                "step": int(numbers[i]),
                "start_ns": int(starts[i]),
                "end_ns": int(ends[i]),
                "duration_ns": int(durations[i]),
                "gpu_busy": [{"device": d, "busy_ns": int(v[i])} for d, v in gpu.items()],
                "host": {HOST_KEYS[c]: int(split[i, j]) for j, c in enumerate(CAUSES)},
            }
        )
    host_totals = {HOST_KEYS[c]: int(split[:, j].sum()) for j, c in enumerate(CAUSES)}
    summary = {
        "total_ns": total,
        "mean_ns": float(durations.mean()),
        "median_ns": float(np.median(durations)),
        "min_ns": int(durations.min()),
        "max_ns": int(durations.max()),
        "host_ns": host_totals,
        "host_share": {k: (v / total if total > 0 else 0.0) for k, v in host_totals.items()},
        "gpu_busy": [
            {"device": d, "busy_ns": int(v.sum()), "utilization": float(v.sum() / total) if total else 0.0}
            for d, v in gpu.items()
        ],
    }
    return {"count": int(len(windows)), "listed": len(listed), "steps": listed, "summary": summary}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return step_breakdown(trace)
