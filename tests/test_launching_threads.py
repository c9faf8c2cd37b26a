"""attribution.launching_threads (each launching thread once, from an Nsight export's thread codes) against every
launched op's pid and tid read from the launch pairs, as feeding_threads read them before: the same threads per
device, and the same feeding threads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tracelens
from tests.conftest import FIXTURES, shared_params
from tracelens.analyses import attribution
from tracelens.analyses.columns import device_busy, thread_key
from tracelens.analyses.launch import launch_pairs


def _keys(pids: np.ndarray, tids: np.ndarray) -> list[int]:
    return sorted(pd.unique(thread_key(np.asarray(pids), np.asarray(tids))).tolist())


@pytest.mark.parametrize(
    "path",
    shared_params("nsys", "*")
    + [FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz"]  # plain pid/tid arrays: every op's
    + sorted((FIXTURES / "nsys").glob("*.sqlite")),
)
def test_launching_threads_equal_every_ops_threads(path: Path) -> None:
    trace = tracelens.load(path)
    pairs = launch_pairs(trace)
    rows = attribution.host_rows(trace)
    for device in device_busy(trace):
        ops = (pairs["device"] == device) & pairs["matched"]
        every = pairs[ops]
        got = attribution.launching_threads(trace, ops)
        assert _keys(*got) == _keys(every["pid"], every["tid"])
        assert np.array_equal(
            attribution.thread_codes(rows, *got), attribution.thread_codes(rows, every["pid"], every["tid"])
        )
    nothing = np.zeros(len(pairs), bool)
    assert _keys(*attribution.launching_threads(trace, nothing)) == []


def _late_launch_reference(trace: tracelens.Trace, busy) -> np.ndarray:  # type: ignore[no-untyped-def]
    """attribution._late_launch as it read the launch ends before: through a row selection of the pairs."""
    pairs = launch_pairs(trace)
    on_device = np.flatnonzero(pairs["device"] == busy.device)
    if on_device.size == 0:
        return np.zeros(busy.gap_ends.size, bool)
    op_start = pairs[on_device]["start"]
    order = np.argsort(op_start, kind="stable")
    op_start, on_device = op_start[order], on_device[order]
    idx = np.minimum(np.searchsorted(op_start, busy.gap_ends, side="left"), op_start.size - 1)
    at = pairs[on_device[idx]]
    return at["matched"] & (at["launch_end"] > busy.gap_starts)


@pytest.mark.parametrize(
    "path",
    shared_params("nsys", "*")
    + shared_params("pytorch", "a100_nccl*", "a100_alexnet_cuda_sync*")
    + [FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz"]
    + sorted((FIXTURES / "nsys").glob("*.sqlite")),
)
def test_late_launch_equals_the_row_selection(path: Path) -> None:
    trace = tracelens.load(path)
    for busy in device_busy(trace).values():
        assert np.array_equal(attribution._late_launch(trace, busy), _late_launch_reference(trace, busy))
