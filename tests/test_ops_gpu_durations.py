"""ops.sums.gpu_op_durations (the GPU ops' durations computed once per trace where they fit one block, else per
call) equals gpu_durations gathered at the same positions, for positions, slices, none and every GPU op, on both
paths; the shared array is read only."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.ops import sums, tree

TRACES = [
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
    "pytorch_cpu_train.pt.trace.json.gz",
]


@pytest.mark.parametrize("path", TRACES)
@pytest.mark.parametrize("block", [sums.SUM_BLOCK, 3])
def test_gpu_op_durations_equal_the_gathered_ones(
    path: str, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sums, "SUM_BLOCK", block)  # 3: the per-call path (more GPU ops than a block)
    trace = tracelens.load(fixture_path(path))
    pairs = launch_pairs(trace)
    n = len(pairs)
    rng = np.random.default_rng(n)
    cases: list[np.ndarray | slice] = [
        np.arange(n),
        np.zeros(0, np.int64),
        np.sort(rng.choice(n, size=n // 3, replace=False)) if n else np.zeros(0, np.int64),
        slice(0, n),
        slice(n // 2, n),
        slice(0, min(n, 1)),
    ]
    for at in cases:
        positions = np.arange(n)[at] if isinstance(at, slice) else at
        got = sums.gpu_op_durations(trace, at)
        expected = (pairs["end"][positions] - pairs["start"][positions]).astype(np.int64)
        assert got.dtype == np.int64 and np.array_equal(got, expected)
        assert np.array_equal(got, sums.gpu_durations(pairs, positions))
    if n and block == sums.SUM_BLOCK and n <= block:
        with pytest.raises(ValueError):
            sums.gpu_op_durations(trace, slice(0, n))[0] = 1  # the shared array is read only


@pytest.mark.parametrize("path", TRACES)
def test_gpu_op_name_codes_are_the_joined_ops_codes(path: str) -> None:
    """evidence.launching_ops reads a joined GPU op's name code from gpu_op_name_codes where no op is recorded on
    it: there it is op_name_codes of the joined op row."""
    trace = tracelens.load(fixture_path(path))
    op_row = tree.op_of_gpu_ops(trace)
    recorded = tree.op_names(trace).recorded
    joined = op_row >= 0
    if recorded is not None:
        joined &= recorded < 0
    codes = tree.gpu_op_name_codes(trace)[1]
    assert np.array_equal(codes[joined], tree.op_name_codes(trace, op_row[joined]))
    assert np.all(
        codes[op_row < 0] == (-1 if recorded is None else np.where(recorded >= 0, recorded, -1)[op_row < 0])
    )
