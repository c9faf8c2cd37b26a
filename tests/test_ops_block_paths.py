"""The ops section's whole-block shortcuts against the paths they skip: ``masked_sums.sum_where`` (the int64 adds
of the selected values without a compressed copy; memcpy, devices and the ops report use it) against the compressed
sums, wrapping included, and ``count_where`` against the mask's sum; ``with_recorded_ops``
where every GPU op is joined (no compressed rows) against the masked writes, on fixture traces; ``by_innermost``
and the report's GPU block where every GPU op has an op against the positions path (the shortcut turned off)."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import ops
from tracelens.analyses.masked_sums import count_where, sum_where
from tracelens.analyses.ops import tree

TRACES = [
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("seed", range(6))
def test_sum_where_equals_the_compressed_sum(seed: int) -> None:
    rnd = np.random.default_rng(seed)
    size = [0, 1, 7, 1000, 5000, 3][seed]
    big = 2**62 if seed in (3, 5) else 10**9  # sums wrapping past int64 as well
    values = rnd.integers(-big, big, size, dtype=np.int64)
    for where in (rnd.random(size) < 0.5, np.zeros(size, bool), np.ones(size, bool)):
        got = sum_where(values, where)
        assert count_where(where) == int(where.sum())
        want = values[where].sum()
        assert got == want
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.int64


@pytest.mark.parametrize("name", TRACES)
def test_with_recorded_ops_whole_equals_masked(name: str) -> None:
    trace = tracelens.load(fixture_path(name))
    op_row = tree.op_of_gpu_ops(trace)
    recorded = tree.op_names(trace).recorded
    # as joined (some GPU ops without an op: the masked writes), every one joined (the whole rows), a part
    for rows in (op_row, np.where(op_row >= 0, op_row, op_row.max(initial=-1)), op_row[::2]):
        got = tree.with_recorded_ops(trace, rows)
        code = np.full(rows.size, -1, np.int64)
        code[rows >= 0] = tree.op_name_codes(trace, rows[rows >= 0])
        joined = rows >= 0
        if recorded is not None:
            mine = recorded[: rows.size]
            code, joined = np.where(mine >= 0, mine, code), joined | (mine >= 0)
        np.testing.assert_array_equal(got[0], joined)
        np.testing.assert_array_equal(got[1], code)
        assert got[1].dtype == np.int64


@pytest.mark.parametrize("name", TRACES)
def test_report_blocks_equal_the_positions_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(fixture_path(name))
    got = ops.ops_report(trace)

    class Partial(np.ndarray):
        def all(self, *args, **kwargs):  # type: ignore[no-untyped-def,override]
            return False  # the positions path, as where some GPU op is not attributed

    real = tree.with_recorded_ops

    def partial(*args, **kwargs):  # type: ignore[no-untyped-def]
        found, code = real(*args, **kwargs)
        return found.view(Partial), code

    monkeypatch.setattr(ops, "with_recorded_ops", partial)
    attributed, op_code = tree.gpu_op_name_codes(trace)
    monkeypatch.setattr(ops, "gpu_op_name_codes", lambda _trace: (attributed.view(Partial), op_code))
    want = ops.ops_report(trace)
    assert got == want


@pytest.mark.parametrize("name", TRACES)
def test_ops_at_whole_column_equals_blocks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracelens.analyses.launch import launch_pairs
    from tracelens.analyses.ops import evidence

    trace = tracelens.load(fixture_path(name))
    pairs = launch_pairs(trace)
    for column in ("start", "end"):
        values = pairs[column]
        for times in (values[:0], values[:3], values[::7], np.array([-5, 2**40], np.int64)):
            got = evidence._ops_at(pairs, column, times)  # one block: the whole column
            monkeypatch.setattr(evidence, "SUM_BLOCK", 3)  # blocks of three GPU ops
            want = evidence._ops_at(pairs, column, times)
            monkeypatch.undo()
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype == np.int64
