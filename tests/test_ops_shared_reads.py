"""Values the ops section reads once instead of per reader, and the op-name codes without the table lookup, equal
the per-reader ways: ops.sums.gpu_op_durations (the GPU ops' durations computed once per trace where they fit one
block, else per call) equals gpu_durations at the same positions (positions, slices, none, every GPU op; both
paths; the shared array read only); gpu_op_name_codes holds the joined ops' codes that launching_ops reads; and
kind_rows.op_codes_at / tree.op_name_codes equal the op-name table's lookup (identity and renamed tables)."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses.columns import event_columns
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.ops import kind_rows, sums, tree

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


def test_op_codes_at_equals_the_table_lookup() -> None:
    """kind_rows.op_codes_at: the widened name codes where the table is the identity, the lookup elsewhere; -1
    (null name), no rows, one row, repeated rows."""
    rng = np.random.default_rng(5)
    size = 50
    name = rng.integers(-1, size, 1000).astype(np.int32)
    identity = np.r_[np.arange(size, dtype=np.int64), -1]
    renamed = identity.copy()
    renamed[[3, 7, 8]] = [size, size + 1, 3]
    marks = np.zeros(size + 1, bool)
    marks[[3, 7, 8]] = True
    for rows in (
        np.arange(name.size),
        np.zeros(0, np.int64),
        np.array([5]),
        np.array([9, 9, 2, 0]),
        np.flatnonzero(name < 0),
    ):
        for code, nvtx in ((identity, np.zeros(size + 1, bool)), (renamed, marks)):
            got = kind_rows.op_codes_at(code, nvtx, name, rows)
            assert got.dtype == np.int64 and np.array_equal(got, code[name[rows]])


def _annotation(name: str, start: int, end: int) -> dict:
    return {"kind": "annotation", "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": 1}


@pytest.mark.parametrize("path", [*TRACES, None])
def test_op_name_codes_equal_the_table_lookup(path: str | None) -> None:
    if path is None:  # emit_nvtx op ranges beside a plain annotation: a renamed table
        rows = [
            _annotation("aten::mm, seq = 12", 0, 10),
            _annotation("## forward ##", 0, 40),
            _annotation("aten::add, seq = 13, op_id = 2, sizes = [[8]]", 20, 30),
        ]
        trace = tracelens.Trace.from_rows(rows)
    else:
        trace = tracelens.load(fixture_path(path))
    names = tree.op_names(trace)
    cols = event_columns(trace)
    every = np.arange(trace.num_events)
    assert np.array_equal(tree.op_name_codes(trace, every), names.code[cols.name[every]])
    assert path is not None or names.nvtx.any()


def _kernel_copy_reference(
    code: np.ndarray, duration: np.ndarray, kernel: np.ndarray, kernels: bool
) -> sums.CodeSums:
    columns = {"kernels": kernel.astype(np.int64)} if kernels else {}
    return sums.code_sums(
        code, **columns, gpu=np.where(kernel, duration, 0), copy=np.where(kernel, 0, duration)
    )


def _same_sums(a: sums.CodeSums, b: sums.CodeSums) -> None:
    assert a.index.dtype == b.index.dtype and np.array_equal(a.index, b.index)
    assert list(a.columns) == list(b.columns)
    for name in a.columns:
        assert a.columns[name].dtype == b.columns[name].dtype, name
        assert np.array_equal(a.columns[name], b.columns[name]), name


@pytest.mark.parametrize("seed", range(6))
def test_kernel_copy_sums_equal_code_sums(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (0, 1, 2, 17, 5000):
        for high in (1, 10**6, 2**40, 2**62):  # 2**40 and up: past float64's exact sums, code_sums' own way
            code = rng.integers(-1, 40, n)
            duration = rng.integers(-high if seed % 2 else 0, high, n, dtype=np.int64)
            for kernel in (rng.random(n) < 0.7, np.ones(n, bool), np.zeros(n, bool)):
                for kernels in (False, True):
                    got = sums.kernel_copy_sums(code, duration, kernel, kernels)
                    _same_sums(got, _kernel_copy_reference(code, duration, kernel, kernels))
    # codes below -1: code_sums' sorted way
    code = np.array([-3, 5, 5, -1, 0])
    duration = np.array([1, 2, 3, 4, 5], np.int64)
    kernel = np.array([True, False, True, True, False])
    _same_sums(
        sums.kernel_copy_sums(code, duration, kernel), _kernel_copy_reference(code, duration, kernel, False)
    )


def test_blocks_of_kernel_copy_sums_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    n = 1000
    code, duration, kernel = (
        rng.integers(-1, 30, n),
        rng.integers(0, 10**9, n, dtype=np.int64),
        rng.random(n) < 0.5,
    )
    whole = _kernel_copy_reference(code, duration, kernel, True)
    monkeypatch.setattr(sums, "SUM_BLOCK", 64)
    by_blocks = sums.code_sums_in_blocks(
        n, lambda lo, hi: sums.kernel_copy_sums(code[lo:hi], duration[lo:hi], kernel[lo:hi], True)
    )
    _same_sums(by_blocks, whole)
