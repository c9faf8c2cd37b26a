"""Synchronization stalls: blocking host syncs, the `.item()` / `.cpu()` pattern, stream and event waits.

Definitions (docs/analyses.md, "sync"):
    blocking sync   = runtime/driver call matching names.is_blocking_sync (cuda/hip/cu *Synchronize,
                      synchronous memcpy); time = summed call durations
    per step        = a call belongs to the step whose window contains its start
    item pattern    = a device-to-host copy of fewer than ITEM_MAX_BYTES bytes whose launch call is itself a
                      synchronous memcpy, or whose launch call is followed on the same thread by a blocking
                      sync as the next runtime/driver call (PyTorch `.item()`, `.cpu()`, `print(tensor)`);
                      wait_ns = summed durations of those blocking calls (each call counted once)
    gpu waits       = gpu_sync rows per sync_kind (count, summed duration) and *StreamWaitEvent calls
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..trace import CPU_OP, DRIVER, GPU_SYNC, RUNTIME, Trace
from .launch import launch_pairs
from .names import is_blocking_sync, is_sync_copy, name_mask
from .steps import STEP_LIMIT, step_windows

ITEM_MAX_BYTES = 64 * 1024
TOP_N = 10
_STREAM_WAIT = re.compile(r"^(cuda|hip|cu)StreamWaitEvent(_v\d+)?$")


def _api_calls(trace: Trace) -> pd.DataFrame:
    api = trace.of_kind(RUNTIME, DRIVER)
    return pd.DataFrame({
        "name": api["name"].astype(str).to_numpy(),
        "start": api["start_ns"].to_numpy(np.int64),
        "end": api["end_ns"].to_numpy(np.int64),
        "pid": api["pid"].to_numpy(np.int64, na_value=-1),
        "tid": api["tid"].to_numpy(np.int64, na_value=-1),
        "blocking": name_mask(api["name"], is_blocking_sync),
        "sync_copy": name_mask(api["name"], is_sync_copy),
    })


def _step_index(starts: np.ndarray, windows: pd.DataFrame) -> np.ndarray:
    """Index of the step containing each time (-1 when none); steps sorted by start."""
    if windows.empty:
        return np.full(starts.size, -1)
    ws = windows["start"].to_numpy(np.int64)
    we = windows["end"].to_numpy(np.int64)
    idx = np.searchsorted(ws, starts, side="right") - 1
    ok = (idx >= 0) & (starts < we[np.maximum(idx, 0)])
    return np.where(ok, idx, -1)


def item_pattern(trace: Trace, calls: pd.DataFrame) -> dict[str, Any]:
    pairs = launch_pairs(trace)
    small = pairs[pairs["matched"] & (pairs["copy_kind"] == "DtoH") & (pairs["bytes"] >= 0)
                  & (pairs["bytes"] < ITEM_MAX_BYTES)]
    empty = {"count": 0, "sync_calls": 0, "wait_ns": 0, "max_bytes": ITEM_MAX_BYTES, "top_ops": [], "per_step": []}
    if small.empty:
        return empty
    blocking = calls[calls["blocking"]].reset_index(drop=True)
    blocking["call_id"] = np.arange(len(blocking))
    # The next runtime/driver call on the thread that starts at or after the copy's launch call ends.
    after = pd.DataFrame({"pid": small["pid"].to_numpy(np.int64), "tid": small["tid"].to_numpy(np.int64),
                          "t": small["launch_end"].to_numpy(np.int64),
                          "self_sync": name_mask(small["launch_name"], is_sync_copy),
                          "external_id": small["external_id"].to_numpy(np.int64),
                          "start": small["start"].to_numpy(np.int64)})
    after["row"] = np.arange(len(after))
    nxt = calls.assign(t=calls["start"], blocking_id=-1)
    nxt.loc[nxt["blocking"], "blocking_id"] = np.arange(int(nxt["blocking"].sum()))
    joined = pd.merge_asof(after.sort_values("t"), nxt.sort_values("t")[["pid", "tid", "t", "blocking", "blocking_id",
                                                                           "start", "end"]]
                           .rename(columns={"start": "call_start", "end": "call_end"}),
                           on="t", by=["pid", "tid"], direction="forward", allow_exact_matches=True)
    followed = joined["blocking"].fillna(False).to_numpy(bool)
    hit = joined[followed | joined["self_sync"].to_numpy(bool)]
    waited = hit[hit["blocking_id"].fillna(-1) >= 0].drop_duplicates("blocking_id")
    wait_ns = int((waited["call_end"] - waited["call_start"]).sum())
    # Self-synchronous copies: the launch call itself is the wait.
    self_calls = small.iloc[hit.loc[hit["self_sync"], "row"].to_numpy()]
    self_calls = self_calls.drop_duplicates("correlation_id")
    wait_ns += int((self_calls["launch_end"] - self_calls["launch_start"]).sum())
    cpu_ops = trace.of_kind(CPU_OP)
    ext_names = pd.Series(cpu_ops["name"].astype(str).to_numpy(), index=cpu_ops["external_id"].to_numpy(np.int64, na_value=-1))
    ext_names = ext_names[~ext_names.index.duplicated(keep="first")]
    op_names = pd.Series(hit["external_id"].map(ext_names)).dropna()
    top = op_names.value_counts().head(TOP_N)
    steps = step_windows(trace)
    per_step = np.bincount(_step_index(hit["start"].to_numpy(np.int64), steps) + 1, minlength=len(steps) + 1)[1:]
    return {"count": int(len(hit)), "sync_calls": int(len(waited) + len(self_calls)), "wait_ns": wait_ns,
            "max_bytes": ITEM_MAX_BYTES,
            "top_ops": [{"name": n, "count": int(c)} for n, c in top.items()],
            "per_step": [int(x) for x in per_step[:STEP_LIMIT]]}


def sync_stats(trace: Trace) -> dict[str, Any]:
    calls = _api_calls(trace)
    blocking = calls[calls["blocking"]]
    dur = (blocking["end"] - blocking["start"]).to_numpy(np.int64)
    by_name = (pd.DataFrame({"name": blocking["name"].to_numpy(), "dur": dur}).groupby("name")["dur"]
               .agg(["count", "sum"]).sort_values("sum", ascending=False).head(TOP_N))
    steps = step_windows(trace)
    idx = _step_index(blocking["start"].to_numpy(np.int64), steps)
    per_step_count = np.bincount(idx + 1, minlength=len(steps) + 1)[1:]
    per_step_ns = np.bincount(idx + 1, weights=dur, minlength=len(steps) + 1)[1:]
    gsync = trace.of_kind(GPU_SYNC)
    gkind = gsync["sync_kind"].astype(str).replace({"nan": "unknown", "<NA>": "unknown"}).to_numpy()
    gdur = (gsync["end_ns"] - gsync["start_ns"]).to_numpy(np.int64)
    gpu_waits = (pd.DataFrame({"kind": gkind, "dur": gdur}).groupby("kind")["dur"].agg(["count", "sum"])
                 if len(gsync) else pd.DataFrame(columns=["count", "sum"]))
    stream_wait_calls = int(calls["name"].str.match(_STREAM_WAIT).sum()) if len(calls) else 0
    return {
        "blocking": {"count": int(len(blocking)), "total_ns": int(dur.sum()),
                     "by_name": [{"name": n, "count": int(r["count"]), "total_ns": int(r["sum"])}
                                 for n, r in by_name.iterrows()]},
        "per_step": [{"step": int(s), "count": int(c), "total_ns": int(round(t))}
                     for s, c, t in zip(steps["step"].to_numpy()[:STEP_LIMIT], per_step_count, per_step_ns,
                                        strict=False)],
        "per_step_mean": ({"count": float(per_step_count.mean()), "total_ns": float(per_step_ns.mean())}
                          if len(steps) else None),
        "item_pattern": item_pattern(trace, calls),
        "gpu_waits": [{"sync_kind": k, "count": int(r["count"]), "total_ns": int(r["sum"])}
                      for k, r in gpu_waits.iterrows()],
        "stream_wait_event_calls": stream_wait_calls,
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return sync_stats(trace)
