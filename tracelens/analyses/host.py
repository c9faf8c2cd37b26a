"""What the host side recorded: time per event kind and the busiest names (the ``host`` block).

Reported for every trace, and the whole story when a trace has no GPU activity.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..trace import GPU_ACTIVITY_KINDS, GPU_ANNOTATION, GPU_SYNC, Trace

TOP_N = 10


def host_summary(trace: Trace, top_n: int = TOP_N) -> dict[str, Any]:
    """Count and summed duration per host event kind, the host span, and the top names by summed time."""
    df = trace.df
    host = df[~df["kind"].isin((*GPU_ACTIVITY_KINDS, GPU_SYNC, GPU_ANNOTATION))]
    if host.empty:
        return {"span_ns": 0, "threads": 0, "by_kind": [], "top": [], "has_gpu_activity": bool(trace.gpu_ids)}
    dur = (host["end_ns"] - host["start_ns"]).to_numpy(np.int64)
    frame = pd.DataFrame({"kind": host["kind"].astype(str).to_numpy(), "name": host["name"].astype(str).to_numpy(),
                          "dur": dur})
    by_kind = frame.groupby("kind", sort=True)["dur"].agg(["count", "sum"]).reset_index()
    top = (frame.groupby(["kind", "name"], sort=False)["dur"].agg(["count", "sum"]).reset_index()
           .sort_values(["sum", "name"], ascending=[False, True]).head(top_n))
    threads = host[["pid", "tid"]].dropna().drop_duplicates()
    return {
        "span_ns": int(host["end_ns"].max() - host["start_ns"].min()),
        "threads": int(len(threads)),
        "by_kind": [{"kind": r.kind, "count": int(r["count"]), "total_ns": int(r["sum"])} for _, r in by_kind.iterrows()],
        "top": [{"kind": r.kind, "name": r["name"], "count": int(r["count"]), "total_ns": int(r["sum"])}
                for _, r in top.iterrows()],
        "has_gpu_activity": bool(trace.gpu_ids),
    }


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return host_summary(trace)
