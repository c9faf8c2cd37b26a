"""occupancy_model's kernel fill by the compiled pass (_replay_solve.c op_fill) against the numpy reference
(fill_by_numpy): the same fill per op, the same ops under 1 with the same recorded times and the same counts, on
made-up ops and kernels (rows ascending or not, ops that are no kernel, repeated rows, names excluded or null,
configurations with a NaN wave fill, no op); and kernel_model with and without the helper on real traces."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tracelens.replay import engine, occupancy_model
from tracelens.replay.remedies import Context

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")

NAMES = np.array(
    ["my_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "volta_sgemm_128x64_nn", "elementwise_kernel"],
    dtype=object,
)


@native
@settings(max_examples=300, deadline=None)
@given(
    n_rows=st.integers(1, 60),
    kernel_share=st.sampled_from([0.0, 0.3, 1.0]),
    n_ops=st.integers(0, 50),
    n_configs=st.integers(1, 6),
    ascending=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_pass_equals_numpy(
    n_rows: int, kernel_share: float, n_ops: int, n_configs: int, ascending: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    kernel_rows = np.flatnonzero(rng.random(n_rows) < kernel_share).astype(np.int64)
    if kernel_rows.size == 0:
        kernel_rows = np.array([int(rng.integers(0, n_rows))], np.int64)
    op_row = rng.integers(0, n_rows, n_ops).astype(np.int64)
    if ascending:
        op_row.sort()
    time = rng.integers(0, 1000, 2 * n_ops + 3).astype(np.int64)
    g = SimpleNamespace(
        op_row=op_row,
        op_start=2 * np.arange(n_ops, dtype=np.int64) + 1,
        op_end=2 * np.arange(n_ops, dtype=np.int64) + 2,
        time=time,
    )
    occ = SimpleNamespace(
        rows=kernel_rows, config=rng.integers(0, n_configs, kernel_rows.size).astype(np.int64)
    )
    name = rng.integers(-1, NAMES.size, n_rows).astype(np.int32)  # -1: a null name
    cols = SimpleNamespace(name=name, names=NAMES)
    config_fill = rng.choice([0.25, 0.5, 0.999, 1.0, np.nan], n_configs)
    finite = rng.random(n_configs) < 0.7
    found = occupancy_model._fill_natively(g, occ, cols, config_fill, finite)  # type: ignore[arg-type]
    assert found is not None
    expected = occupancy_model.fill_by_numpy(g, occ, cols, config_fill, finite)  # type: ignore[arg-type]
    for a, b in zip(found[:3], expected[:3], strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert list(found[3].items()) == list(expected[3].items())


@native
@pytest.mark.parametrize(
    "name",
    [
        "gpu/resnet18_train_cuda.pt.trace.json.gz",
        "gpu/transformer_bf16_cuda.pt.trace.json.gz",
        "gpu/pytorch_tiny-kernels_cuda.pt.trace.json.gz",
        "gpu/cuda_graph_cuda.pt.trace.json.gz",
    ],
)
def test_kernel_model_with_and_without_the_helper(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(fixture_path(name))
    g = Context(trace).graph
    fill, floor, how = occupancy_model.kernel_model(trace, g)
    monkeypatch.setattr(engine, "_replay_solve", None)
    fill_np, floor_np, how_np = occupancy_model.kernel_model(trace, g)
    np.testing.assert_array_equal(fill, fill_np)
    np.testing.assert_array_equal(floor, floor_np)
    assert list(how.items()) == list(how_np.items())
