"""The GPU ops' times device_busy's compiled pass leaves for the launch pairs (``busy_scan.merged_busy_and_times``,
``op_times.op_times``) equal the definition, ``start[gpu]`` and ``end[gpu]`` at the GPU ops' rows (GPU kinds with a
device >= 0, ascending): no GPU op, one, ties of starts, several devices; none kept where they do not fit the bound
given or exceed OP_TIMES_KEPT_ROWS; the merged intervals the same with or without them; and launch_pairs' start and
end columns on a real trace the same whether taken from them or gathered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_busy_scan import reference

import tracelens
from tests.conftest import FIXTURES
from tracelens.analyses import busy_scan, derived, launch
from tracelens.analyses.columns import GPU_OP_TIMES, device_busy, event_columns
from tracelens.trace import ALL_KINDS, GPU_ACTIVITY_KINDS

pytestmark = pytest.mark.skipif(busy_scan._compiled is None, reason="the compiled pass is not built")

_GPU = [ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS]


def columns(seed: int, n: int, devices: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    kind = rng.integers(-1, len(ALL_KINDS), n).astype(np.int8)
    device = rng.integers(-1, devices + 1, n).astype(np.int32)
    start = np.sort(rng.integers(0, 40, n)).astype(np.int64)  # many ties
    end = start + rng.integers(0, 13, n)
    return kind, device, start, end


def gpu_rows(kind: np.ndarray, device: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.isin(kind, _GPU) & (device >= 0))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("n", [0, 1, 2, 9, 50, 5000])
@pytest.mark.parametrize("devices", [0, 1, 3])
def test_times_equal_the_ops_own(seed: int, n: int, devices: int) -> None:
    kind, device, start, end = columns(seed, n, devices)
    gpu = gpu_rows(kind, device)
    bound = int(np.count_nonzero(device >= 0))
    scanned = busy_scan.merged_busy_and_times(kind, device, start, end, bound)
    assert scanned is not None
    found, times = scanned
    expected = reference(kind, device, start, end)
    assert len(found) == len(expected)
    for (d, s, e, lo, hi), (d2, s2, e2, lo2, hi2) in zip(found, expected, strict=True):
        assert (d, lo, hi) == (d2, lo2, hi2)
        np.testing.assert_array_equal(s, s2)
        np.testing.assert_array_equal(e, e2)
    if bound == 0:
        assert times is None  # no bound: nothing kept
        return
    assert times is not None
    np.testing.assert_array_equal(times[0], start[gpu])
    np.testing.assert_array_equal(times[1], end[gpu])
    assert times[0].dtype == np.int64 and not times[0].flags.writeable


def test_no_times_where_the_bound_is_short_or_too_large() -> None:
    kind, device, start, end = columns(3, 400, 2)
    ops = gpu_rows(kind, device).size
    assert ops > 1
    short = busy_scan.merged_busy_and_times(kind, device, start, end, ops - 1)
    exact = busy_scan.merged_busy_and_times(kind, device, start, end, ops)
    huge = busy_scan.merged_busy_and_times(kind, device, start, end, busy_scan.OP_TIMES_KEPT_ROWS + 1)
    assert short is not None and exact is not None and huge is not None
    assert short[1] is None and huge[1] is None and exact[1] is not None
    for a, b in zip(short[0], exact[0], strict=True):  # the merge the same either way
        assert a[0] == b[0] and a[3:] == b[3:]
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[2], b[2])


def test_kept_rows_bound_is_the_lean_cache_size() -> None:
    from tracelens.analyses import lean_columns

    assert busy_scan.OP_TIMES_KEPT_ROWS == lean_columns.CACHED_ROWS


def test_out_of_order_declines() -> None:
    kind = np.full(3, _GPU[0], np.int8)
    device = np.zeros(3, np.int8)
    start = np.array([5, 3, 9], np.int64)
    assert busy_scan.merged_busy_and_times(kind, device, start, start + 1, 3) is None


_TRACES = sorted((FIXTURES / "gpu").glob("*.pt.trace.json.gz"))
KEPT: list[bool] = []  # per trace above: whether the pairs took the pass's times (device stored sparse)


@pytest.mark.parametrize("path", _TRACES, ids=lambda p: p.name)
def test_pairs_times_equal_gathered(path: Path) -> None:
    trace = tracelens.load(path)
    device_busy(trace)  # first, as the attribution section asks: the pass leaves the times where it runs
    pairs = launch.launch_pairs(trace)
    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))
    KEPT.append(derived.held(trace, GPU_OP_TIMES) is not None)
    for _ in range(2):  # a read of the whole column is a copy each time
        np.testing.assert_array_equal(pairs["start"], cols.start[rows])
        np.testing.assert_array_equal(pairs["end"], cols.end[rows])
    picked = np.arange(0, rows.size, 3)
    np.testing.assert_array_equal(pairs[picked]["start"], cols.start[rows[picked]])
    np.testing.assert_array_equal(pairs[picked]["end"], cols.end[rows[picked]])


def test_some_trace_took_the_kept_times() -> None:
    """(runs after the traces above) the kept path was exercised by at least one of them."""
    if len(KEPT) == len(_TRACES):
        assert any(KEPT), KEPT
