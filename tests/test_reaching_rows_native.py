"""diagnosis.unexplained_idle._reaching_rows by the compiled walk (replay/_replay_solve.c reaching_rows) against
a plain per-row reference (the first union interval ending after a row's start begins before its end) and the
numpy placing it replaces: no rows, one row, no union, ties (equal starts, starts on union ends, empty rows),
rows ending before they start, several chunks; and unexplained_idle's host activity the same with the extension
and without it on real traces."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens import intervals
from tracelens.analyses.diagnosis import unexplained_idle
from tracelens.replay import engine

needs_native = pytest.mark.skipif(engine.native_solver() is None, reason="_replay_solve not built")


def reference(
    start: np.ndarray, end: np.ndarray, mask: np.ndarray, us: np.ndarray, ue: np.ndarray
) -> list[int]:
    found = []
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
        after = [k for k, u_end in enumerate(ue.tolist()) if u_end > s]
        if mask[i] and after and int(us[after[0]]) < e:
            found.append(i)
    return found


def made_up(rows: int, unions: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, 200, rows)).astype(np.int64)  # many equal starts
    end = start + rng.integers(-3, 30, rows)
    mask = rng.random(rows) < 0.7
    us, ue = intervals.merge(np.sort(rng.integers(0, 200, unions)), np.sort(rng.integers(0, 200, unions)) + 5)
    return start, end, mask, np.asarray(us, np.int64), np.asarray(ue, np.int64)


def rows_of(
    start: np.ndarray, end: np.ndarray, mask: np.ndarray, us: np.ndarray, ue: np.ndarray, native: bool
) -> list[int]:
    cols = SimpleNamespace(start=start, end=end)
    with pytest.MonkeyPatch.context() as patch:
        if not native:
            patch.setattr(unexplained_idle, "native_solver", lambda: None)
        chunks = list(unexplained_idle._reaching_rows(cols, mask, us, ue, True))  # type: ignore[arg-type]
    assert all(c.dtype == np.int64 for c in chunks)
    return np.concatenate(chunks).tolist() if chunks else []


@needs_native
@pytest.mark.parametrize("chunk", [4, 1 << 22])
@pytest.mark.parametrize(
    "rows,unions,seed", [(0, 3, 0), (1, 3, 1), (1, 0, 2), (40, 0, 3), (40, 1, 4), (300, 12, 5), (301, 40, 6)]
)
def test_native_reaching_rows_equal_reference(
    rows: int, unions: int, seed: int, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    start, end, mask, us, ue = made_up(rows, unions, seed)
    monkeypatch.setattr(unexplained_idle, "HOST_CHUNK", chunk)
    native = rows_of(start, end, mask, us, ue, native=True)
    assert native == reference(start, end, mask, us, ue)
    if rows:
        assert native == rows_of(start, end, mask, us, ue, native=False)


@needs_native
def test_native_reaching_rows_declines_unordered() -> None:
    solver = engine.native_solver()
    start = np.array([5, 3], np.int64)
    out = np.empty(2, np.int64)
    ones = np.ones(2, np.uint8)
    union = np.array([0], np.int64), np.array([10], np.int64)
    assert solver.reaching_rows(start, start + 1, ones, *union, out) == -1  # type: ignore[attr-defined]
    assert solver.reaching_rows(start[::-1].copy(), start + 1, ones, *union, out) == 2  # type: ignore[attr-defined]


TRACES = [
    FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz",
    FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz",
    FIXTURES / "nsys" / "handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_host_activity_with_and_without_extension(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not path.exists():
        pytest.skip(f"{path.name} absent")
    native = unexplained_idle._host_activity(tracelens.load(path))
    monkeypatch.setattr(unexplained_idle, "native_solver", lambda: None)
    assert unexplained_idle._host_activity(tracelens.load(path)) == native
