"""diagnosis.cause.native_slot_sums (replay/_replay_solve.c slot_sums, the compiled pass of the top host names
summed together) against an independent numpy computation of the same slots: each row's slot from its category
(code -1 read as np.take reads it) or the dropped block where the row is flagged, plus its name code + 1; the
counts and the float sums of durations per slot. Edge cases: no rows, one row, every row in one slot (ties),
repeated flagged rows, several chunks; out-of-range values declined (False). And _top_host_names_of the same with
the extension and without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens.analyses.diagnosis import cause
from tracelens.replay import engine

needs_native = pytest.mark.skipif(engine.native_solver() is None, reason="_replay_solve not built")


def reference(
    category: np.ndarray,
    base: np.ndarray,
    name: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    flagged: np.ndarray,
    slots: int,
    chunk: int,
) -> tuple[np.ndarray, np.ndarray]:
    count, total = np.zeros(slots, np.int64), np.zeros(slots)
    for lo in range(0, category.size, chunk):
        hi = min(lo + chunk, category.size)
        slot = base[category[lo:hi].astype(np.int64) % base.size]
        in_chunk = flagged[(flagged >= lo) & (flagged < hi)] - lo
        slot[in_chunk] = base[-1]
        slot = slot + name[lo:hi].astype(np.int64) + 1
        part = np.zeros(slots)
        for s, d in zip(slot.tolist(), (end[lo:hi] - start[lo:hi]).tolist(), strict=True):  # row order
            count[s] += 1
            part[s] += float(d)
        total += part
    return count, total


def made_up(rows: int, names: int, seed: int, one_slot: bool = False) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    categories = 5
    width = names + 1
    base = np.full(categories + 1, 3 * width, np.int64)
    base[[0, 2, 3]] = [0, width, 2 * width]
    category = rng.integers(-1, categories, rows).astype(np.int8)
    name = rng.integers(-1, names, rows).astype(np.int32)
    if one_slot:
        category[:] = 2
        name[:] = 0
    start = rng.integers(0, 1 << 40, rows)
    end = start + rng.integers(-5, 1 << 30, rows)
    flagged = np.sort(rng.choice(rows, size=rows // 4, replace=True)) if rows else np.zeros(0, np.int64)
    return category, base, name, start, end, flagged.astype(np.int64), np.int64(4 * width)


@needs_native
@pytest.mark.parametrize("chunk", [3, 1 << 22])
@pytest.mark.parametrize(
    "rows,names,seed,one_slot",
    [
        (0, 3, 0, False),
        (1, 3, 1, False),
        (1, 0, 2, False),
        (50, 4, 3, True),
        (1000, 7, 4, False),
        (997, 1, 5, False),
    ],
)
def test_native_slot_sums_equal_numpy(
    rows: int, names: int, seed: int, one_slot: bool, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    category, base, name, start, end, flagged, slots = made_up(rows, names, seed, one_slot)
    monkeypatch.setattr(cause, "ROW_CHUNK", chunk)
    count, total = np.zeros(int(slots), np.int64), np.zeros(int(slots))
    assert cause.native_slot_sums(category, base, name, start, end, flagged, count, total)
    want_count, want_total = reference(category, base, name, start, end, flagged, int(slots), chunk)
    assert count.tolist() == want_count.tolist()
    assert total.tobytes() == want_total.tobytes()


@needs_native
def test_native_slot_sums_decline_out_of_range() -> None:
    category, base, name, start, end, flagged, slots = made_up(20, 3, 6)
    count, total = np.zeros(int(slots), np.int64), np.zeros(int(slots))
    bad_name = name.copy()
    bad_name[5] = 1 << 20
    assert not cause.native_slot_sums(category, base, bad_name, start, end, flagged, count, total)
    bad_category = category.copy()
    bad_category[0] = 100
    assert not cause.native_slot_sums(bad_category, base, name, start, end, flagged, count, total)
    assert not cause.native_slot_sums(category, base, name, start, end, flagged[::-1].copy(), count, total)
    # other column types: numpy's path
    assert not cause.native_slot_sums(
        category, base, name.astype(np.int64), start, end, flagged, count, total
    )


TRACES = [
    FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz",
    FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz",
    FIXTURES / "nsys" / "handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("chunk", [5, 1 << 22])
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_top_host_names_of_with_and_without_extension(
    path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not path.exists():
        pytest.skip(f"{path.name} absent")
    trace = tracelens.load(path)
    monkeypatch.setattr(cause, "ROW_CHUNK", chunk)
    native = cause._top_host_names_of(trace, cause.SUMMED_TOGETHER, 100)
    monkeypatch.setattr(cause, "native_solver", lambda: None)
    assert cause._top_host_names_of(trace, cause.SUMMED_TOGETHER, 100) == native
