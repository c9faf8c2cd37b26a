"""The kernels section reads the kernels' name codes and durations at the kernel rows the load holds
(enrich.held_kernel_rows) instead of finding them again in the kind column: the same rows, codes and durations
(dtypes included) and the same section, on Kineto, xplane and Nsight traces, one with no kernel, and a trace built
in memory (no rows held: the blockwise path)."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import kernels
from tracelens.analyses.columns import event_columns
from tracelens.enrich import held_kernel_rows
from tracelens.trace import ALL_KINDS, KERNEL, Trace

TRACES = [
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "gpu/jax_mlp_cuda.xplane.pb",
    "gpu/mlp_cpu_activity_only_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
    "nsys/handmade_nsys2022.sqlite",
    "kineto/overlapping_streams.json",
    "pytorch_cpu_train.pt.trace.json.gz",
]


@pytest.mark.parametrize("path", TRACES)
def test_held_rows_give_the_kind_columns_kernels(path: str) -> None:
    trace = tracelens.load(fixture_path(path))
    cols = event_columns(trace)
    rows = held_kernel_rows(trace)
    assert rows is not None  # a load holds them
    assert np.array_equal(rows, np.flatnonzero(cols.kind == ALL_KINDS.index(KERNEL)))
    held = kernels._kernel_codes_and_durations(cols, rows)
    scanned = kernels._kernel_codes_and_durations(cols)
    for a, b in zip(held, scanned, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_a_trace_built_in_memory_holds_no_rows() -> None:
    rows = [
        {"kind": "kernel", "name": "k", "start_ns": 0, "end_ns": 10, "device": 0},
        {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 0, "end_ns": 5, "pid": 1, "tid": 1},
        {"kind": "kernel", "name": "k2", "start_ns": 20, "end_ns": 25, "device": 0},
    ]
    trace = Trace.from_rows(rows)
    assert held_kernel_rows(trace) is None
    summary = kernels.kernel_summary(trace)
    assert summary["count"] == 2 and summary["total_ns"] == 15
