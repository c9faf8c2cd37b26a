"""The what-if replay's passes shared or skipped (name rules once per dictionary, one-time rows by search, thread
codes by runs) give the arrays of the passes they replace."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses.names import code_mask, is_collective_kernel, is_graph_launch, is_library_kernel
from tracelens.replay import name_tests
from tracelens.replay.name_tests import name_lookup, names_mask

NAMES = np.array(
    [
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "volta_sgemm_128x64_nn",
        "void at::native::vectorized_elementwise_kernel<4>",
        "cudaGraphLaunch",
        "cudaLaunchKernel",
        "",
    ],
    dtype=object,
)


@pytest.mark.parametrize("predicate", [is_collective_kernel, is_library_kernel, is_graph_launch])
@pytest.mark.parametrize(
    "codes",
    [
        np.zeros(0, np.int32),  # no rows
        np.array([2], np.int32),  # one row
        np.array([-1, 0, 1, 2, 3, 4, 5, -1, 3, 3], np.int32),  # nulls, repeats
        np.random.default_rng(0).integers(-1, 6, 1000).astype(np.int32),
    ],
)
def test_names_mask_equals_code_mask(predicate, codes) -> None:
    expected = code_mask(codes, NAMES, predicate)
    got = names_mask(lambda: codes, codes.size, NAMES, predicate)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == bool and got.shape == codes.shape


def test_names_mask_reads_no_row_where_no_name_passes() -> None:
    def never(name: str) -> bool:
        return False

    def codes() -> np.ndarray:
        raise AssertionError("read the rows")

    np.testing.assert_array_equal(names_mask(codes, 3, NAMES, never), np.zeros(3, bool))


def test_lookup_is_kept_per_dictionary_and_read_only() -> None:
    first = name_lookup(NAMES, is_library_kernel)
    assert first is not None and not first.flags.writeable
    assert name_lookup(NAMES, is_library_kernel) is first  # the same answer, not tested again
    other = NAMES.copy()
    other[1] = "not a library kernel"
    again = name_lookup(other, is_library_kernel)  # another dictionary: its own answer
    assert again is not None and not again[1] and first[1]
    assert not first[-1] and not again[-1]  # code -1 (null) is never a name that passes


def test_large_dictionary_falls_back_to_code_mask(monkeypatch) -> None:
    monkeypatch.setattr(name_tests, "SMALL_DICTIONARY", 2)
    assert name_lookup(NAMES, is_library_kernel) is None
    codes = np.array([1, 0, -1, 2], np.int32)
    np.testing.assert_array_equal(
        names_mask(lambda: codes, codes.size, NAMES, is_library_kernel),
        code_mask(codes, NAMES, is_library_kernel),
    )


@pytest.mark.parametrize(
    "values, query",
    [
        (np.zeros(0, np.int64), np.array([0, 5, -1], np.int64)),  # no one-time rows
        (np.array([3], np.int64), np.zeros(0, np.int64)),  # no rows asked
        (np.array([0], np.int64), np.array([0, 0, 1], np.int64)),  # one row, asked twice
        (np.array([2, 5, 9], np.int64), np.array([9, 10, 0, 2, 5, 5, 4, 100], np.int64)),  # past the last
    ],
)
def test_in_sorted_equals_a_mask_gathered(values: np.ndarray, query: np.ndarray) -> None:
    from tracelens.replay.graph import _in_sorted

    mask = np.zeros(int(max(query.max(initial=0), values.max(initial=0))) + 1, bool)
    mask[values] = True  # the mask of every row the build read before
    np.testing.assert_array_equal(_in_sorted(values, query), mask[query])


@pytest.mark.parametrize(
    "threads, run_length, size", [(1, 1, 0), (1, 1, 1), (2, 5000, 20000), (3, 1, 2000), (5, 40, 999)]
)
def test_thread_codes_by_runs_equal_the_codes_of_every_row(threads: int, run_length: int, size: int) -> None:
    from types import SimpleNamespace

    from tracelens.replay.host_calls import _thread_codes_at, _thread_keys_at
    from tracelens.values import dense_codes

    rng = np.random.default_rng(threads * 7 + size)
    which = np.repeat(rng.integers(0, threads, size // run_length + 1), run_length)[:size]
    pids = np.array([7, 7, 9, 2**40, 9][:threads], np.int64)
    tids = np.array([100, 2**33, 100, 5, -3][:threads], np.int64)
    cols = SimpleNamespace(pid=pids[which], tid=tids[which])
    rows = np.flatnonzero(rng.random(size) < 0.7)
    codes, keys = _thread_codes_at(cols, rows)  # type: ignore[arg-type]
    expected_codes, expected_keys = dense_codes(_thread_keys_at(cols, rows))  # type: ignore[arg-type]
    np.testing.assert_array_equal(keys, expected_keys)
    np.testing.assert_array_equal(codes, expected_codes)
    assert codes.dtype == np.int64


TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("name", TRACES)
def test_critical_path_top_lists_by_dictionary_equal_by_distinct_codes(name: str, monkeypatch) -> None:
    from pathlib import Path

    import tracelens
    from tracelens.replay import critical
    from tracelens.replay.remedies import Context

    path = Path(__file__).resolve().parents[1] / "fixtures" / name
    if not path.exists():
        pytest.skip(f"{name} absent")
    ctx = Context(tracelens.load(path))
    fast = critical.critical_path(ctx.graph, ctx.base.times, ctx.trace, ctx.step_of)
    monkeypatch.setattr(critical, "TOP_BY_DICTIONARY", -1)  # the sums over the distinct codes the path uses
    monkeypatch.setattr(critical.np, "bincount", _bincount_no_minlength_over(critical.np.bincount, ctx))
    reference = critical.critical_path(ctx.graph, ctx.base.times, ctx.trace, ctx.step_of)
    assert fast == reference
    assert fast is not None and (fast["top_kernels"] or fast["top_host_calls"])


def _bincount_no_minlength_over(bincount, ctx):  # type: ignore[no-untyped-def]
    """np.bincount, refusing a count over the whole name dictionary (the reference must not take that path)."""
    from tracelens.analyses.columns import event_columns

    size = len(event_columns(ctx.trace).names) + 1

    def guarded(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert kwargs.get("minlength") != size, "summed over the dictionary"
        return bincount(*args, **kwargs)

    return guarded


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("name", TRACES[:2])
def test_wake_edges_leave_out_rows_of_no_thread(name: str, wide: bool) -> None:
    """Framework rows with a negative tid (no thread) cover no idle gap, whether the rows of each waiting thread are
    found by its tid alone (a tid column that fits in 32 bits) or not (a wide one, where a negative tid's low 32
    bits may equal a thread's tid)."""
    from pathlib import Path

    import tracelens
    from tests.test_whatif_lean_passes import assert_wake_edges_match_reference
    from tracelens.analyses.columns import event_columns
    from tracelens.replay.remedies import Context
    from tracelens.trace import ALL_KINDS, CPU_OP

    path = Path(__file__).resolve().parents[1] / "fixtures" / name
    if not path.exists():
        pytest.skip(f"{name} absent")
    trace = tracelens.load(path)
    g = Context(trace).graph
    cols = event_columns(trace)
    own = np.flatnonzero(cols.kind == ALL_KINDS.index(CPU_OP))
    tid = cols.tid.astype(np.int64)  # held as int64 (a Kineto trace's), where a tid may not fit in 32 bits
    cols._fields["tid"] = tid
    thread_tid = int(tid[g.call_row[0]])
    tid[own[::3]] = -1  # every third framework row on no thread
    if wide:
        tid[own[1::7]] = thread_tid - (1 << 32)  # negative, with a thread's tid in its low 32 bits
        tid[own[-1]] = 1 << 40  # the column no longer fits in 32 bits
    assert_wake_edges_match_reference(cols, g)


@pytest.mark.parametrize(
    "steps",
    [
        [0],
        [-1, -1, 0, 0, 1, 3, 3, -1],  # unknown steps, a step with no point (2)
        [-1, -1],  # no known step
        [5, 5, 4, 7, -1, 4],  # out of order
        list(np.random.default_rng(3).integers(-1, 40, 3000)),
    ],
)
def test_per_step_sums_equal_the_sums_over_distinct_steps(steps: list) -> None:
    from tracelens.replay.critical import CATEGORIES, _per_step_sums
    from tracelens.replay.graph import unique_ints

    rng = np.random.default_rng(len(steps))
    steps_arr = np.array(steps, np.int64)
    category = rng.integers(0, len(CATEGORIES), steps_arr.size).astype(np.int64)
    seg = rng.integers(-5, 10**9, steps_arr.size).astype(np.int64)
    # the reference: the known points' steps ranked, one bincount over (rank, category)
    known = steps_arr >= 0
    listed, at = unique_ints(steps_arr[known], return_inverse=True)
    width = len(CATEGORIES)
    expected = np.bincount(
        at.reshape(-1) * width + category[known], weights=seg[known], minlength=listed.size * width
    ).reshape(listed.size, width)
    got_listed, got = _per_step_sums(steps_arr.copy(), category, seg)
    np.testing.assert_array_equal(got_listed, listed)
    np.testing.assert_array_equal(got, expected)  # the same float sums: each bin adds in the same order
