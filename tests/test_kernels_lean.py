"""The kernels block read a block of the table at a time and grouped a few names' kernels at a time
(analyses/kernels.py) equals the whole-table groupby it replaced (kept here as the reference), on generated
kernels: repeated and single launches, durations of 0 and large ones, a kernel without a name, blocks and name
chunks of a few rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import kernels
from tracelens.analyses.columns import event_columns
from tracelens.trace import KERNEL, Trace


def _reference(trace: Trace) -> dict[str, Any]:
    cols = event_columns(trace)
    is_kernel = np.flatnonzero(cols.of_kind(KERNEL))
    if not is_kernel.size:
        return {"count": 0, "total_ns": 0, "distinct_names": 0, "by_name": []}
    frame = pd.DataFrame({"code": cols.name[is_kernel], "dur": cols.end[is_kernel] - cols.start[is_kernel]})
    stats = frame.groupby("code", sort=False)["dur"].agg(["count", "sum", "min", "max", "median", "std"])
    stats = stats.reset_index()
    names = np.append(cols.names, "").astype(object)
    stats["name"] = names[stats["code"].to_numpy()].astype(str)
    stats["std"] = stats["std"].fillna(0.0)
    stats = stats.sort_values(["sum", "name"], ascending=[False, True], kind="stable")
    total = int(frame["dur"].sum())
    by_name = [
        {
            "name": n,
            "count": int(c),
            "total_ns": int(t),
            "avg_ns": float(t) / float(c),
            "median_ns": float(m),
            "min_ns": int(lo),
            "max_ns": int(hi),
            "stdev_ns": float(s),
            "time_fraction": (float(t) / total) if total > 0 else 0.0,
        }
        for n, c, t, lo, hi, m, s in zip(
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
    return {"count": int(len(frame)), "total_ns": total, "distinct_names": len(by_name), "by_name": by_name}


KERNEL_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["gemm", "relu", "copy_kernel", "nccl", None, "a", "b"]),
        st.integers(0, 1000),
        st.sampled_from([0, 1, 7, 1000, 10**9]),
        st.booleans(),
    ),
    max_size=60,
)


@settings(max_examples=80, deadline=None)
@given(KERNEL_ROWS, st.integers(1, 9), st.integers(1, 9))
def test_kernel_summary_equals_one_groupby(rows: list, block: int, chunk: int) -> None:
    events = []
    for name, start, length, is_kernel in rows:
        row = {
            "kind": "kernel" if is_kernel else "runtime",
            "name": name,
            "start_ns": start,
            "end_ns": start + length,
        }
        events.append({**row, "device": 0, "stream": 7} if is_kernel else {**row, "pid": 1, "tid": 1})
    expected = _reference(Trace.from_rows(events))
    saved = kernels.BLOCK_ROWS, kernels.KERNEL_CHUNK
    kernels.BLOCK_ROWS, kernels.KERNEL_CHUNK = block, chunk
    try:
        got = kernels.kernel_summary(Trace.from_rows(events))
    finally:
        kernels.BLOCK_ROWS, kernels.KERNEL_CHUNK = saved
    assert got == expected
