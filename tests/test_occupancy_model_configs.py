"""occupancy_model.kernel_model computes each launch's fill per launch configuration and gathers it once to the
graph's ops: it equals the per-launch computation (the calculator's values gathered to every launch first, the
earlier way), fill, floor and counts, on traces with and without registers, excluded kernels and several
devices, and on made-up configurations (unknown SM counts, limiters, NaN grids, excluded launches)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses.columns import event_columns
from tracelens.analyses.names import code_mask, is_collective_kernel, is_library_kernel
from tracelens.analyses.occupancy import LOW_OCCUPANCY
from tracelens.enrich import KernelOccupancy
from tracelens.occupancy_calc import LIMIT_BLOCKS, LIMIT_WARPS
from tracelens.replay import occupancy_model
from tracelens.replay.occupancy_model import kernel_model, wave_fill
from tracelens.replay.remedies import Context

TRACES = [
    "gpu/pairs/occupancy_before.pt.trace.json.gz",
    "gpu/pairs_h100/occupancy_before.pt.trace.json.gz",
    "gpu/pairs_h200_vm/launch_before.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/pytorch_tiny-kernels_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


def per_launch_model(trace: Any, g: Any) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """kernel_model as it was: every value per launch (the reference)."""
    n = g.op_row.size
    fill = np.ones(n)
    floor = np.zeros(n, np.int64)
    occ = KernelOccupancy(trace)
    if occ.rows.size == 0 or n == 0:
        return fill, floor, {}
    cols = event_columns(trace)
    codes = cols.name[occ.rows]
    excluded = code_mask(codes, cols.names, is_collective_kernel) | code_mask(
        codes, cols.names, is_library_kernel
    )
    by_shape = (occ.limiter == LIMIT_WARPS) | (occ.limiter == LIMIT_BLOCKS) | (occ.limiter < 0)
    shape_limited = ~excluded & by_shape & (occ.shape < LOW_OCCUPANCY)
    sm_count = np.full(occ.rows.size, np.nan)
    for dev, note in occ.device_notes.items():
        if note.get("sm_count"):
            sm_count[occ.device == dev] = float(note["sm_count"])
    quantized = wave_fill(occ.grid, sm_count, occ.active.astype(float))
    shape = np.where(shape_limited, occ.shape, 1.0)
    sm_fill = np.nan_to_num(occ.grid_fill, nan=1.0) * shape
    per_kernel = np.where(np.isfinite(quantized), quantized * shape, sm_fill)
    per_kernel = np.where(excluded, 1.0, per_kernel)
    at = np.minimum(np.searchsorted(occ.rows, g.op_row), occ.rows.size - 1)
    hit = occ.rows[at] == g.op_row
    fill = np.where(hit, per_kernel[at], 1.0)
    how = {
        "wave_quantized": int((hit & np.isfinite(quantized[at]) & (fill < 1.0)).sum()),
        "sm_fill_only": int((hit & ~np.isfinite(quantized[at]) & (fill < 1.0)).sum()),
    }
    under = np.flatnonzero(fill < 1.0)
    if under.size == 0:
        return fill, floor, how
    floor[under] = occupancy_model._traffic_floor(trace, g, under)
    how["floored"] = int(
        (floor[under] > np.ceil((g.time[g.op_end[under]] - g.time[g.op_start[under]]) * fill[under])).sum()
    )
    return fill, floor, how


def _same(trace: Any) -> None:
    g = Context(trace).graph
    fill, floor, how = kernel_model(trace, g)
    want_fill, want_floor, want_how = per_launch_model(trace, g)
    assert fill.tobytes() == want_fill.tobytes()  # bit for bit (NaN never: 1 where unknown)
    assert np.array_equal(floor, want_floor)
    assert how == want_how


@pytest.mark.parametrize("name", TRACES)
def test_per_configuration_fill_equals_per_launch(name: str) -> None:
    _same(tracelens.load(fixture_path(name)))


@pytest.mark.parametrize("seed", range(6))
def test_per_configuration_fill_equals_per_launch_on_made_up_configurations(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calculator's per-configuration values replaced by made-up ones (NaN grids and shapes, unknown
    limiters and active blocks, devices without an SM count, configurations shared by many launches), and some
    launches' names made collective: both ways still agree."""
    trace = tracelens.load(fixture_path("gpu/resnet18_train_cuda.pt.trace.json.gz"))
    rng = np.random.default_rng(seed)
    real_init = KernelOccupancy.__init__
    launches = KernelOccupancy(trace).rows.size
    size = max(1, min(7, launches))
    config = rng.integers(0, size, launches).astype(np.intp)
    per_config = {
        "device": rng.choice([0.0, 1.0, np.nan], size),
        "grid": rng.choice([np.nan, 0.0, 1.0, 64.0, 140.0, 1000.0, 4096.0], size),
        "active": rng.choice(np.array([-1, 0, 1, 2, 4], np.int32), size),
        "limiter": rng.choice(np.array([-1, 0, 1, 2, 3], np.int8), size),
        "grid_fill": np.where(rng.random(size) < 0.3, np.nan, rng.random(size)),
        "shape": np.where(rng.random(size) < 0.2, np.nan, rng.random(size)),
    }

    def made_up(self: KernelOccupancy, trace: Any) -> None:
        real_init(self, trace)
        self._config, self._per_config = config, per_config
        self.device_notes = {0: {"sm_count": 132}, 1: {"sm_count": None}}

    monkeypatch.setattr(KernelOccupancy, "__init__", made_up)
    _same(trace)


def test_no_kernels_and_empty_graph() -> None:
    trace = tracelens.load(fixture_path("gpu/mlp_cpu_activity_only_cuda.pt.trace.json.gz"))
    _same(trace)
