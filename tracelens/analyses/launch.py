"""Launch stalls: how long GPU work waits after its launch call, and whether the host keeps up.

Definitions (docs/analyses.md, "launch"):
    launch call     = the runtime/driver row whose correlation_id equals the GPU op's (one per id: runtime
                      rows before driver rows, then the earliest)
    launch latency  = GPU op start - launch call end, clipped at 0 (negative values counted as clock skew)
    short kernel    = kernel duration < its launch call's duration
    small kernel    = kernel duration < SMALL_KERNEL_NS; small_kernel_share = their summed time / all kernel time
    issue rate      = launch calls that enqueued a GPU op / (last such call end - first such call start), per s
    execution rate  = GPU ops / device busy time, per second; issue_to_execution = issue / execution
    queue depth     = per stream, ops launched and not finished: +1 at the launch call end, -1 at the GPU op
                      end (at equal times the -1 first); max and time-weighted mean over
                      [first launch end, last op end)
    CUDA graphs     = (cuda|hip|cu)GraphLaunch calls, GPU ops with graph_id
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..trace import DRIVER, GPU_ACTIVITY_KINDS, KERNEL, RUNTIME, Trace
from .gaps import device_busy, memo
from .names import is_graph_launch, name_mask

SMALL_KERNEL_NS = 10_000
PERCENTILES = (50, 90, 99)


def launch_calls(trace: Trace) -> pd.DataFrame:
    """Runtime and driver rows that carry a correlation id, one per id (runtime first, then earliest)."""

    def compute() -> pd.DataFrame:
        api = trace.of_kind(RUNTIME, DRIVER)
        api = api[api["correlation_id"].notna()]
        frame = pd.DataFrame({
            "correlation_id": api["correlation_id"].to_numpy(np.int64),
            "launch_start": api["start_ns"].to_numpy(np.int64),
            "launch_end": api["end_ns"].to_numpy(np.int64),
            "pid": api["pid"].to_numpy(np.int64, na_value=-1),
            "tid": api["tid"].to_numpy(np.int64, na_value=-1),
            "is_driver": (api["kind"].astype(str) == DRIVER).to_numpy(),
            "launch_name": api["name"],
            "external_id": api["external_id"].to_numpy(np.int64, na_value=-1),
        })
        frame = frame.sort_values(["correlation_id", "is_driver", "launch_start"], kind="stable")
        return frame.drop_duplicates("correlation_id", keep="first").reset_index(drop=True)

    return memo(trace, "launch_calls", compute)


def launch_pairs(trace: Trace) -> pd.DataFrame:
    """One row per GPU op (kernel/memcpy/memset with a device) joined to its launch call where one exists.

    Columns: kind, name, device, stream, start, end, graph_id, bytes, copy_kind, correlation_id, and from the
    launch call: launch_start, launch_end, pid, tid, launch_name, external_id (NaN/-1 when unmatched).
    """

    def compute() -> pd.DataFrame:
        gpu = trace.of_kind(*GPU_ACTIVITY_KINDS)
        gpu = gpu[gpu["device"].notna()]
        ops = pd.DataFrame({
            "kind": gpu["kind"].astype(str).to_numpy(),
            "name": gpu["name"].to_numpy(),
            "device": gpu["device"].to_numpy(np.int64),
            "stream": gpu["stream"].to_numpy(np.int64, na_value=-1),
            "start": gpu["start_ns"].to_numpy(np.int64),
            "end": gpu["end_ns"].to_numpy(np.int64),
            "graph_id": gpu["graph_id"].to_numpy(np.int64, na_value=-1),
            "bytes": gpu["bytes"].to_numpy(np.int64, na_value=-1),
            "copy_kind": gpu["copy_kind"].astype(object).to_numpy(),
            "correlation_id": gpu["correlation_id"].to_numpy(np.float64, na_value=np.nan),
        })
        calls = launch_calls(trace)
        merged = ops.merge(calls.assign(correlation_id=calls["correlation_id"].astype(np.float64)),
                           on="correlation_id", how="left", sort=False)
        merged["matched"] = merged["launch_start"].notna()
        return merged

    return memo(trace, "launch_pairs", compute)


def _percentiles(values: np.ndarray) -> dict[str, Any]:
    if values.size == 0:
        return {"count": 0, "mean_ns": None, "max_ns": None, **{f"p{p}_ns": None for p in PERCENTILES}}
    pct = np.percentile(values, PERCENTILES, method="lower")
    return {"count": int(values.size), "mean_ns": float(values.mean()), "max_ns": int(values.max()),
            **{f"p{p}_ns": int(v) for p, v in zip(PERCENTILES, pct, strict=True)}}


def queue_depth(pairs: pd.DataFrame) -> list[dict[str, Any]]:
    """Outstanding launched-but-unfinished ops per (device, stream): max and time-weighted mean."""
    m = pairs[pairs["matched"]]
    if m.empty:
        return []
    key = m["device"].to_numpy(np.int64) * (1 << 32) + (m["stream"].to_numpy(np.int64) & 0xFFFFFFFF)
    launch_end = m["launch_end"].to_numpy(np.int64)
    gpu_end = m["end"].to_numpy(np.int64)
    keys = np.concatenate([key, key])
    times = np.concatenate([launch_end, np.maximum(gpu_end, launch_end)])
    deltas = np.concatenate([np.ones(key.size, np.int64), -np.ones(key.size, np.int64)])
    order = np.lexsort((deltas, times, keys))
    keys, times, deltas = keys[order], times[order], deltas[order]
    boundaries = np.flatnonzero(np.diff(keys)) + 1
    group_start = np.concatenate([[0], boundaries])
    group_end = np.concatenate([boundaries, [keys.size]])
    csum = np.cumsum(deltas)
    base = np.repeat(np.concatenate([[0], csum[group_end[:-1] - 1]]), group_end - group_start)
    depth = csum - base  # depth after each event, within its stream
    # Time each depth level lasts: until the next event of the same stream.
    next_time = np.append(times[1:], times[-1])
    last = np.zeros(keys.size, bool)
    last[group_end - 1] = True
    held = np.where(last, 0, next_time - times)
    weighted = np.add.reduceat(depth * held, group_start)
    spans = times[group_end - 1] - times[group_start]
    maxima = np.maximum.reduceat(depth, group_start)
    out = []
    for i, g in enumerate(group_start):
        k = int(keys[g])
        out.append({"device": k >> 32, "stream": _stream_of(k),
                    "max": int(maxima[i]), "mean": float(weighted[i] / spans[i]) if spans[i] > 0 else 0.0,
                    "ops": int((group_end[i] - g) // 2)})
    return out


def _stream_of(key: int) -> int:
    low = key & 0xFFFFFFFF
    return low - (1 << 32) if low >= (1 << 31) else low


def launch_stats(trace: Trace) -> dict[str, Any]:
    pairs = launch_pairs(trace)
    matched = pairs[pairs["matched"]]
    raw_latency = matched["start"].to_numpy(np.int64) - matched["launch_end"].to_numpy(np.int64)
    kernels = pairs[pairs["kind"] == KERNEL]
    k_dur = (kernels["end"] - kernels["start"]).to_numpy(np.int64)
    km = kernels[kernels["matched"]]
    km_dur = (km["end"] - km["start"]).to_numpy(np.int64)
    call_dur = (km["launch_end"] - km["launch_start"]).to_numpy(np.int64)
    short = km_dur < call_dur
    small = k_dur < SMALL_KERNEL_NS
    total_kernel = int(k_dur.sum())

    all_calls = launch_calls(trace)
    calls = all_calls[all_calls["correlation_id"].isin(matched["correlation_id"].astype(np.int64))]
    busy = device_busy(trace)
    total_busy = sum(b.busy_ns for b in busy.values())
    issue_span = int(calls["launch_end"].max() - calls["launch_start"].min()) if len(calls) else 0
    issue_rate = len(calls) / (issue_span / 1e9) if issue_span > 0 else None
    exec_rate = len(pairs) / (total_busy / 1e9) if total_busy > 0 else None

    api = trace.of_kind(RUNTIME, DRIVER)
    graph_calls = int(name_mask(api["name"], is_graph_launch).sum())
    graph_ops = int((pairs["graph_id"] >= 0).sum())
    return {
        "gpu_ops": int(len(pairs)),
        "matched_ops": int(len(matched)),
        "latency": {**_percentiles(np.maximum(raw_latency, 0)), "negative_count": int((raw_latency < 0).sum())},
        "short_kernels": {"count": int(short.sum()), "kernel_ns": int(km_dur[short].sum()),
                          "of_matched_kernels": int(len(km))},
        "small_kernels": {"threshold_ns": SMALL_KERNEL_NS, "count": int(small.sum()),
                          "kernel_ns": int(k_dur[small].sum()), "total_kernel_ns": total_kernel,
                          "share": float(k_dur[small].sum() / total_kernel) if total_kernel > 0 else 0.0},
        "rates": {"launch_calls": int(len(calls)), "issue_span_ns": issue_span, "issue_per_s": issue_rate,
                  "gpu_busy_ns": int(total_busy),
                  "execution_per_s": exec_rate,
                  "issue_to_execution": (issue_rate / exec_rate) if issue_rate and exec_rate else None},
        "queue_depth": queue_depth(pairs),
        "cuda_graphs": {"in_use": bool(graph_calls or graph_ops), "graph_launch_calls": graph_calls,
                        "graph_ops": graph_ops},
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return launch_stats(trace)
