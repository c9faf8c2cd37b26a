"""The fast paths of the shared derived values (Coverage, sparse columns at rows, thread-time positions,
collective types) against the plain computations they replace, on hypothesis inputs that reach both the fast
paths and their fallbacks, and on shared traces."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_params
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals

_SETTINGS = settings(max_examples=40, deadline=None)


class _ReferenceCoverage:
    """Coverage as first written: three gathers per time and a mask of the times before every edge."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        edges = np.concatenate([np.asarray(starts, np.int64), np.asarray(ends, np.int64)])
        steps = np.repeat(np.array([1, -1], np.int64), np.size(starts))
        order = np.argsort(edges, kind="stable")
        self.edges = edges[order]
        self.covering = np.cumsum(steps[order])
        self.integral = np.zeros(self.edges.size, np.int64)
        if self.edges.size:
            np.cumsum(self.covering[:-1] * np.diff(self.edges), out=self.integral[1:])

    def overlap(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        if starts.size == 0 or self.edges.size == 0:
            return np.zeros(starts.size, dtype=np.int64)
        return self._integral_at(ends) - self._integral_at(starts)

    def _integral_at(self, t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(self.edges, t, side="right") - 1
        at = np.maximum(k, 0)
        value = self.integral[at] + self.covering[at] * (t - self.edges[at])
        value[k < 0] = 0
        return value


@st.composite
def _coverage_case(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # epoch-nanosecond offsets: covering x edge wraps int64 in the fast path's base, the sums must not
    offset = draw(st.sampled_from([0, 1_700_000_000_000_000_000, -(2**40)]))
    n = draw(st.integers(0, 60))
    starts = rng.integers(0, 5_000, n) + offset
    ends = starts + rng.integers(0, 300, n)
    # many ascending times (search_sorted's blocked path) or a few unordered ones
    m = draw(st.sampled_from([0, 7, 40_000]))
    t0 = np.sort(rng.integers(-100, 5_500, m)) if draw(st.booleans()) else rng.integers(-100, 5_500, m)
    t0 = t0 + offset
    t1 = t0 + rng.integers(-50, 400, m)  # some end before they start
    return starts, ends, t0, t1


@_SETTINGS
@given(_coverage_case())
def test_coverage_overlap_equals_reference(case):
    starts, ends, t0, t1 = case
    got = intervals.Coverage(starts, ends).overlap(t0, t1)
    expected = _ReferenceCoverage(starts, ends).overlap(t0, t1)
    assert got.dtype == np.int64
    assert np.array_equal(got, expected)


@st.composite
def _row_sets(draw):
    """Two ascending row sets of one table: dense enough for _matches' marks or sparse enough for its searches."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    table = draw(st.sampled_from([1, 50, 3_000, 200_000]))
    share = draw(st.sampled_from([0.0, 0.001, 0.3, 1.0]))
    carried = np.flatnonzero(rng.random(table) < share).astype(np.int32)
    pick = draw(st.sampled_from(["subset", "random", "same"]))
    if pick == "same":
        rows = carried.copy()
    elif pick == "subset" and carried.size:
        rows = np.sort(rng.choice(carried, int(rng.integers(0, carried.size + 1)), replace=False))
    else:
        rows = np.flatnonzero(rng.random(table) < draw(st.sampled_from([0.0, 0.01, 0.5]))).astype(np.int32)
    return rows.astype(np.int32), carried


@_SETTINGS
@given(_row_sets())
def test_matches_equals_intersect1d(sets):
    from tracelens.analyses.columns import _matches

    rows, carried = sets
    mine, theirs = _matches(rows, carried)
    _, expected_mine, expected_theirs = np.intersect1d(rows, carried, assume_unique=True, return_indices=True)
    assert mine.tolist() == expected_mine.tolist()
    assert theirs.tolist() == expected_theirs.tolist()


@_SETTINGS
@given(_row_sets(), st.booleans(), st.sampled_from(["int8", "int32", "int64"]))
def test_ints_at_equals_the_whole_column_gathered(sets, with_nulls, arrow_type):
    import pyarrow as pa

    from tracelens.analyses.columns import _ints, _ints_at
    from tracelens.trace import EventStore, SparseColumn

    rows, carried = sets
    rng = np.random.default_rng(int(rows.size) * 7 + int(carried.size))
    high = {"int8": 100, "int32": 2**31 - 1, "int64": 2**40}[arrow_type]
    values = rng.integers(0, high, carried.size)
    mask = rng.random(carried.size) < 0.2 if with_nulls else None
    column = SparseColumn(carried, pa.array(values, getattr(pa, arrow_type)(), mask=mask))
    table = max(int(rows[-1]) if rows.size else 0, int(carried[-1]) if carried.size else 0) + 1
    store = EventStore(table, {"stream": column})
    got = _ints_at(store, "stream", rows)
    expected = _ints(store, "stream")[rows]
    assert got.dtype == expected.dtype
    assert got.tolist() == expected.tolist()


def _reference_thread_time_positions(groups):
    """thread_time_positions as first written: codes widened, then a new array for each sum."""
    from tracelens.values import dense_codes

    all_keys = np.concatenate([keys for keys, _ in groups])
    codes, uniques = dense_codes(all_keys)
    times = [t for _, ts in groups for t in ts]
    present = [t for t in times if t.size]
    lo = min(int(t.min()) for t in present) if present else 0
    width = (max(int(t.max()) for t in present) if present else 0) - lo + 2
    if len(uniques) * width >= 2**62:
        _, ranks = np.unique(np.concatenate(times), return_inverse=True)
        times = np.split(ranks.astype(np.int64), np.cumsum([t.size for t in times])[:-1])
        lo, width = 0, int(ranks.max()) + 2
    out, at, i = [], 0, 0
    for keys, ts in groups:
        thread = codes[at : at + keys.size].astype(np.int64) * width
        at += keys.size
        for _ in ts:
            out.append(thread + (times[i] - lo))
            i += 1
    return out


@_SETTINGS
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([10**4, 2**61]),  # packed, or too wide to pack (ranks)
    st.lists(st.tuples(st.integers(0, 300), st.integers(1, 3)), min_size=1, max_size=3),
)
def test_thread_time_positions_equals_reference(seed, span, shapes):
    from tracelens.analyses.columns import thread_key, thread_time_positions

    rng = np.random.default_rng(seed)
    threads = thread_key(rng.integers(1, 4, 5).astype(np.int32), rng.integers(1, 9, 5).astype(np.int32))
    groups = [
        (rng.choice(threads, n), [rng.integers(-span, span, n, dtype=np.int64) for _ in range(k)])
        for n, k in shapes
    ]
    got = thread_time_positions(groups)
    expected = _reference_thread_time_positions(groups)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.int64
        assert g.tolist() == e.tolist()


def _reference_collective_types(cols, rows, kernel, on_device):
    """communication_report's types as first written: np.where over the mapped names, then a comparison of every
    row's type with ""."""
    from tracelens.analyses.communication import _inside_xla_ops, collective_type, is_xla_collective
    from tracelens.analyses.names import code_map, code_mask
    from tracelens.trace import GPU_ANNOTATION

    types = np.where(
        kernel[rows], code_map(cols.name[rows], cols.names, lambda n: collective_type(n) or "", ""), ""
    )
    ops = np.flatnonzero(cols.of_kind(GPU_ANNOTATION) & on_device)
    if ops.size and code_mask(cols.name[ops], cols.names, is_xla_collective).any():
        xla_type = code_map(
            cols.name[ops], cols.names, lambda n: collective_type(n) if is_xla_collective(n) else "", ""
        )
        _inside_xla_ops(cols, rows, types, ops, xla_type)
    return types, types != "", kernel[rows]


@pytest.mark.shared
@pytest.mark.parametrize(
    "path",
    shared_params(
        "pytorch", "a100_nccl_2rank_rank0_2024.json.gz", "h100_bert_small_inference_torch2.6.json.gz"
    )
    + shared_params("nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    + shared_params("tf", "*.xplane.pb"),
)
def test_collective_types_equal_reference(path):
    import tracelens
    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.communication import _collective_types
    from tracelens.trace import KERNEL, MEMCPY, MEMSET

    cols = event_columns(tracelens.load(path))
    on_device = cols.device >= 0
    kernel = cols.of_kind(KERNEL) & on_device
    rows = np.flatnonzero(kernel | (cols.of_kind(MEMCPY, MEMSET) & on_device))
    got = _collective_types(cols, rows, kernel, on_device)
    expected = _reference_collective_types(cols, rows, kernel, on_device)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype
        assert g.tolist() == e.tolist()
    if "nccl" in path.name:
        assert got[1].any()  # the NCCL kernels: the code path is exercised on collectives
