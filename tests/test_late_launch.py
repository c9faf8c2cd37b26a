"""analyses/late_launch.py: the late-launch flags by the compiled walk (``_kernel_stats.late_launch``) equal the numpy
path and a gap-by-gap reference from the definition (the earliest op starting at or after the gap's end, else the
last op; late where it is matched and its call ends after the gap begins), on random ops and gaps with ties (ops
starting together, at a gap's end, calls ending exactly at a gap's start), unsorted ops, every op or some of them,
int32/int64 launch rows, unmatched rows 0 / -1; empty gaps and one op; and the walk declines on descending gap ends."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses import late_launch as module
from tracelens.analyses.late_launch import late_flags, late_flags_numpy

compiled = pytest.mark.skipif(
    module._compiled is None or not hasattr(module._compiled, "late_launch"),
    reason="the compiled pass is not built",
)


def reference(op_start, op_pos, matched, launch_row, end, gap_starts, gap_ends) -> np.ndarray:
    """Gap by gap, from the definition (ties of op starts: the first in stable start order)."""
    if op_pos is None:
        op_pos = np.arange(op_start.size)
    order = sorted(range(op_start.size), key=lambda k: (int(op_start[k]), k))
    out = np.zeros(gap_ends.size, bool)
    for i in range(gap_ends.size):  # a loop over a test's few gaps
        later = [k for k in order if op_start[k] >= gap_ends[i]]
        k = later[0] if later else order[-1]
        p = int(op_pos[k])
        out[i] = bool(matched[p]) and int(end[int(launch_row[p])]) > int(gap_starts[i])
    return out


def case(rng: np.random.Generator, ops: int, gaps: int, pairs: int, row_type: type, sort: bool, subset: bool):
    rows = 50
    end = rng.integers(0, 40, rows).astype(np.int64)
    matched = rng.random(pairs) < 0.7
    launch_row = rng.integers(0, rows, pairs).astype(row_type)
    launch_row[~matched] = rng.choice([0, -1], int((~matched).sum()))
    op_pos = np.sort(rng.choice(pairs, ops, replace=False)).astype(np.int64) if subset else None
    op_start = rng.integers(0, 30, ops if subset else pairs).astype(np.int64)
    if sort:
        op_start = np.sort(op_start)
    gap_ends = np.sort(rng.integers(0, 35, gaps)).astype(np.int64)
    gap_starts = gap_ends - rng.integers(0, 6, gaps).astype(np.int64)
    return op_start, op_pos, matched, launch_row, end, gap_starts, gap_ends


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("row_type", [np.int32, np.int64])
def test_flags_equal_reference(seed: int, row_type: type) -> None:
    rng = np.random.default_rng(seed)
    pairs = int(rng.integers(1, 40))
    subset = bool(seed % 2)
    ops = int(rng.integers(1, pairs + 1)) if subset else pairs
    args = case(rng, ops, int(rng.integers(0, 30)), pairs, row_type, sort=seed % 3 != 0, subset=subset)
    expected = reference(*args)
    assert np.array_equal(late_flags_numpy(*args), expected)
    assert np.array_equal(late_flags(*args), expected)


@compiled
def test_walk_equals_numpy_on_sorted_ops() -> None:
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        pairs = int(rng.integers(1, 200))
        args = case(rng, pairs, int(rng.integers(1, 300)), pairs, np.int32, sort=True, subset=False)
        found = module._compiled_flags(*args)
        assert found is not None
        assert np.array_equal(found, late_flags_numpy(*args))
        assert np.array_equal(found, reference(*args))


@compiled
def test_walk_declines() -> None:
    one = np.array([5], np.int64)
    matched, rows, end = np.array([True]), np.array([0], np.int32), np.array([9], np.int64)
    # gap ends descending
    gs, ge = np.array([0, 0], np.int64), np.array([4, 3], np.int64)
    assert module._compiled_flags(one, None, matched, rows, end, gs, ge) is None
    assert np.array_equal(
        late_flags(one, None, matched, rows, end, gs, ge), reference(one, None, matched, rows, end, gs, ge)
    )
    # ops' starts descending: the numpy path sorts them
    two = np.array([7, 5], np.int64)
    m2, r2 = np.array([True, False]), np.array([0, -1], np.int32)
    gs, ge = np.array([0, 4], np.int64), np.array([2, 6], np.int64)
    assert module._compiled_flags(two, None, m2, r2, end, gs, ge) is None
    assert np.array_equal(
        late_flags(two, None, m2, r2, end, gs, ge), reference(two, None, m2, r2, end, gs, ge)
    )


def test_edges() -> None:
    one = np.array([5], np.int64)
    matched, rows, end = np.array([True]), np.array([0], np.int64), np.array([9], np.int64)
    empty = np.zeros(0, np.int64)
    for fn in (late_flags, late_flags_numpy):
        assert fn(one, None, matched, rows, end, empty, empty).size == 0
        # one op: each gap takes it, before or after its start; the call's end equal to the gap's start is not late
        gs, ge = np.array([0, 9, 10], np.int64), np.array([3, 12, 20], np.int64)
        assert fn(one, None, matched, rows, end, gs, ge).tolist() == [True, False, False]
        assert fn(one, np.array([0]), matched, rows, end, gs, ge).tolist() == [True, False, False]
        # unmatched: never late
        assert not fn(one, None, np.array([False]), np.array([-1], np.int64), end, gs, ge).any()
