"""The points' steps by the compiled helper (replay/steps.py: _replay_solve.c launched_steps, worked_step_span)
against the numpy passes (the path without it, the reference), on random steps and marker points (none, all,
repeated, the first and last point) and on the graphs of real traces (Context.step_of, _step_reading)."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.replay import engine, remedies
from tracelens.replay.steps import worked_step_span

native = pytest.mark.skipif(engine._replay_solve is None, reason="_replay_solve not built (no C compiler)")


def _span_reference(step_of: np.ndarray, skip: np.ndarray) -> tuple[int, int]:
    worked = step_of >= 0
    worked[skip] = False
    if not worked.any():
        return -1, -1
    return int(step_of[worked].min()), int(step_of[worked].max())


@native
@pytest.mark.parametrize("seed", range(60))
def test_worked_step_span_equals_the_masked_min_and_max(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    step_of = rng.integers(-1, int(rng.integers(1, 6)), n).astype(np.int64)
    skip = rng.choice(n, int(rng.integers(0, n + 1)), replace=True) if n else np.zeros(0, np.int64)
    skip = skip.astype(np.int64)
    expected = _span_reference(step_of, skip)
    assert worked_step_span(step_of, skip) == expected
    monkeypatch.setattr(engine, "_replay_solve", None)
    assert worked_step_span(step_of.copy(), skip) == expected


TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "demo.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@native
@pytest.mark.parametrize("name", TRACES)
def test_steps_of_traces_equal_without_the_helper(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    native_ctx = remedies.Context(trace)
    step_of, reading = native_ctx.step_of, native_ctx._step_reading
    monkeypatch.setattr(engine, "_replay_solve", None)
    numpy_ctx = remedies.Context(trace)
    np.testing.assert_array_equal(step_of, numpy_ctx.step_of)
    other = numpy_ctx._step_reading
    assert (reading is None) == (other is None)
    if reading is not None and other is not None:
        for a, b in zip(reading, other, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(40))
def test_only_gpu_op_equals_the_count_per_owner(seed: int) -> None:
    from tracelens.replay.occupancy_model import only_gpu_op

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    owner = rng.integers(-1, 8, n)
    if seed % 2:  # ascending owners (the usual case), unowned ops among them
        owner = np.where(owner < 0, -1, np.sort(np.maximum(owner, 0)))
    owner = owner.astype(np.int32)
    owned = owner[owner >= 0]
    counts = np.bincount(owned) if owned.size else np.zeros(0, np.int64)
    expected = np.array([o >= 0 and counts[o] == 1 for o in owner.tolist()], bool)
    np.testing.assert_array_equal(only_gpu_op(owner), expected)
