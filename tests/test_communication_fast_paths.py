"""The communication section's fast paths against the code they replaced (kept here as the reference)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import communication as comm
from tracelens.analyses.columns import event_columns
from tracelens.analyses.names import code_map, code_mask
from tracelens.trace import GPU_ANNOTATION, KERNEL, MEMCPY, MEMSET, Trace

KERNELS = [
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "ncclDevKernel_Generic",
    "ncclKernel_AllGather_RING_LL",
    "sm90_xmma_gemm",
    "elementwise_kernel",
    "all-reduce.3",
]
XLA_OPS = ["all-reduce.1", "all-gather-start.2", "fusion.7", "dot.1"]


def _reference_collective_types(cols, rows, kernel, on_device):
    """_collective_types as it was: a type string gathered for every row, is_collective by a second per-name
    test."""
    is_kernel = kernel[rows]
    kernel_name = cols.name[rows]
    kernel_name[~is_kernel] = -1
    types = code_map(kernel_name, cols.names, lambda n: comm.collective_type(n) or "", "")
    ops = np.flatnonzero(cols.of_kind(GPU_ANNOTATION) & on_device)
    if ops.size and code_mask(cols.name[ops], cols.names, comm.is_xla_collective).any():
        xla_type = code_map(
            cols.name[ops],
            cols.names,
            lambda n: comm.collective_type(n) if comm.is_xla_collective(n) else "",
            "",
        )
        comm._inside_xla_ops(cols, rows, types, ops, xla_type)
        is_collective = types != ""
    else:
        is_collective = code_mask(kernel_name, cols.names, lambda n: (comm.collective_type(n) or "") != "")
    return types, is_collective, is_kernel


@st.composite
def _gpu_rows(draw: st.DrawFn) -> list[dict]:
    rows = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["kernel", "kernel", "memcpy", "memset"]))
        start = draw(st.integers(0, 200))
        row = {
            "kind": kind,
            "name": draw(st.sampled_from(KERNELS)) if kind == "kernel" else kind,
            "start_ns": start,
            "end_ns": start + draw(st.integers(0, 40)),
            "device": draw(st.integers(0, 2)),
            "stream": draw(st.integers(1, 3)),
        }
        rows.append(row)
    if draw(st.booleans()):  # XLA ops on the GPU lines
        for _ in range(draw(st.integers(1, 4))):
            start = draw(st.integers(0, 200))
            rows.append(
                {
                    "kind": "gpu_annotation",
                    "name": draw(st.sampled_from(XLA_OPS)),
                    "start_ns": start,
                    "end_ns": start + draw(st.integers(1, 60)),
                    "device": draw(st.integers(0, 1)),
                    "stream": 9,
                }
            )
    return rows


@settings(max_examples=80, deadline=None)
@given(_gpu_rows())
def test_collective_types_and_report_match_the_code_before(rows: list[dict]) -> None:
    trace = Trace.from_rows(rows)
    cols = event_columns(trace)
    on_device = cols.device >= 0
    kernel = cols.of_kind(KERNEL) & on_device
    gpu = np.flatnonzero(kernel | (cols.of_kind(MEMCPY, MEMSET) & on_device))
    types, is_collective, is_kernel = comm._collective_types(cols, gpu, kernel, on_device)
    ref_types, ref_collective, ref_kernel = _reference_collective_types(cols, gpu, kernel, on_device)
    assert types.dtype == ref_types.dtype == object
    assert types.tolist() == ref_types.tolist()
    assert np.array_equal(is_collective, ref_collective)
    assert np.array_equal(is_kernel, ref_kernel)
    # Each device's figures as device_communication gives them from every one of its rows (the report passes a
    # device without collectives no types, sizes or factors): no message sizes recorded here, so NaN ones.
    report = comm.communication_report(trace)
    devices = cols.device[gpu]
    starts, ends = cols.start[gpu], cols.end[gpu]
    assert [d["device"] for d in report["devices"]] == np.unique(devices).tolist()
    for entry in report["devices"]:
        sel = devices == entry["device"]
        expected = comm.device_communication(
            starts[sel],
            ends[sel],
            ref_collective[sel],
            ref_kernel[sel],
            ref_types[sel],
            np.full(int(sel.sum()), np.nan),
            np.full(int(sel.sum()), np.nan),
        )
        assert {k: entry[k] for k in expected} == expected
