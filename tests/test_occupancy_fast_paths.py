"""The occupancy section's and the enrich step's fast paths equal the code they replaced (kept here as references)
on hypothesis-generated traces."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import enrich, occupancy_calc
from tracelens.analyses import occupancy
from tracelens.analyses.columns import dictionary_codes
from tracelens.analyses.names import code_mask, is_collective_kernel, is_library_kernel
from tracelens.arrow_read import arrow_numpy
from tracelens.enrich import KernelOccupancy, annotate_occupancy
from tracelens.occupancy_calc import LimitsUnavailable
from tracelens.trace import KERNEL, Trace

ARRAYS = (
    "rows",
    "device",
    "threads",
    "grid",
    "registers",
    "shared",
    "duration",
    "reported",
    "theoretical",
    "estimated",
    "waves",
    "blocks_per_sm",
    "active",
    "limiter",
    "grid_fill",
    "shape",
)


class _ReferenceRows(enrich._Rows):
    """enrich._Rows before its own alignment of sparse columns: every column by EventStore.take."""

    def column(self, name: str) -> np.ndarray:
        return arrow_numpy(pc.cast(self.trace.take(name, self.rows), pa.float64()))


def _int64_reference(trace: Trace, rows: np.ndarray, name: str) -> np.ndarray:
    """enrich._Rows.int64 before its numpy gather: an Arrow take."""
    return arrow_numpy(trace.take(name, rows)).astype(np.int64)


class ReferenceKernelOccupancy:
    """tracelens.enrich.KernelOccupancy before it ran the calculator once per launch configuration: every
    per-launch array computed per device mask."""

    def __init__(self, trace: Trace) -> None:
        self.rows = enrich._kind_rows(trace, KERNEL)
        kernels = _ReferenceRows(trace, self.rows)
        n = self.rows.size
        self.device = enrich._float_column(kernels, "device")
        self.threads = enrich._product(kernels, "block")
        self.grid = enrich._product(kernels, "grid")
        self.registers = enrich._float_column(kernels, "registers_per_thread")
        self.shared = enrich._shared_bytes(kernels)
        self.duration = _int64_reference(trace, self.rows, "end_ns") - _int64_reference(
            trace, self.rows, "start_ns"
        )
        self.reported = enrich._float_column(kernels, "reported_occupancy")
        self.theoretical = np.full(n, np.nan)
        self.estimated = np.full(n, np.nan)
        self.waves = np.full(n, np.nan)
        self.blocks_per_sm = np.full(n, np.nan)
        self.active = np.full(n, -1, dtype=np.int32)
        self.limiter = np.full(n, -1, dtype=np.int8)
        self.grid_fill = np.full(n, np.nan)  # min(1, grid blocks / SMs)
        self.shape = np.full(n, np.nan)  # occupancy the block shape alone allows
        self.device_notes: dict[int, dict[str, Any]] = {}
        for dev in np.unique(self.device[~np.isnan(self.device)]).astype(np.int64):
            mask = self.device == dev
            info = trace.device_info(int(dev))
            note: dict[str, Any] = {
                "name": info.get("name"),
                "reason": None,
                "limits": None,
                "sm_count": info.get("sm_count"),
            }
            self.device_notes[int(dev)] = note
            if info.get("sm_count"):
                self.grid_fill[mask] = np.minimum(1.0, self.grid[mask] / int(info["sm_count"]))
            try:
                limits = occupancy_calc.device_limits(info)
            except LimitsUnavailable as why:
                note["reason"] = str(why)
                continue
            note["limits"] = limits
            self.shape[mask] = occupancy_calc.shape_occupancy(limits, self.threads[mask])
            if np.isnan(self.registers[mask]).all():
                note["reason"] = "the trace records no registers per thread for this device's kernels"
                continue
            res = occupancy_calc.compute(
                limits, self.threads[mask], self.registers[mask], self.shared[mask], self.grid[mask]
            )
            self.theoretical[mask] = res.theoretical
            self.estimated[mask] = res.estimated_achieved
            self.waves[mask] = res.waves
            self.blocks_per_sm[mask] = res.blocks_per_sm
            self.active[mask] = res.active_blocks_per_sm
            self.limiter[mask] = res.limiter


DEVICES = [
    {"id": 0, "compute_major": 8, "compute_minor": 0, "sm_count": 108},
    {"id": 1, "compute_major": 7, "compute_minor": 0},  # no SM count: theoretical only
    {"id": 2, "name": "some GPU"},  # no compute capability: not computed, with a reason
]
MAYBE = st.one_of(st.none(), st.sampled_from([1, 2, 32, 64, 100, 256, 1024, 4096]))


@st.composite
def kernel_traces(draw: Any) -> Trace:
    """Kernels on three devices (or none), launch geometry from few values (so configurations repeat), some missing,
    beside non-kernel rows."""
    rows = []
    for _ in range(draw(st.integers(0, 40))):
        start = draw(st.integers(0, 10_000))
        if draw(st.integers(0, 5)) == 0:
            rows.append(
                {"kind": "memcpy", "name": "copy", "start_ns": start, "end_ns": start + 5, "device": 0}
            )
            continue
        row = {
            "kind": KERNEL,
            "name": draw(st.sampled_from(["k", "ncclKernel_AllReduce", "sm80_xmma_gemm", "other"])),
            "start_ns": start,
            "end_ns": start + draw(st.integers(0, 3000)),
            "device": draw(st.one_of(st.none(), st.integers(0, 2))),
            "stream": draw(st.integers(1, 3)),
        }
        for column in ("block_x", "block_y", "grid_x", "grid_z", "registers_per_thread"):
            row[column] = draw(MAYBE)
        row["static_shared_bytes"] = draw(st.one_of(st.none(), st.sampled_from([0, 1024, 40000, 300000])))
        row["dynamic_shared_bytes"] = draw(st.one_of(st.none(), st.sampled_from([0, 4096])))
        row["reported_occupancy"] = draw(st.one_of(st.none(), st.sampled_from([0.25, 0.5])))
        rows.append(row)
    return Trace.from_rows(rows, devices=DEVICES)


def _assert_same(new: KernelOccupancy, old: ReferenceKernelOccupancy) -> None:
    for name in ARRAYS:
        a, b = getattr(new, name), getattr(old, name)
        assert a.dtype == b.dtype, name
        assert np.array_equal(a, b, equal_nan=True), name
    assert new.device_notes == old.device_notes


@settings(max_examples=60, deadline=None)
@given(kernel_traces())
def test_kernel_occupancy_per_configuration_equals_per_launch(trace: Trace) -> None:
    _assert_same(KernelOccupancy(trace), ReferenceKernelOccupancy(trace))
    # the second construction reads what the first kept; the annotated trace shares it
    _assert_same(KernelOccupancy(trace), ReferenceKernelOccupancy(trace))
    annotated = annotate_occupancy(trace)
    _assert_same(KernelOccupancy(annotated), ReferenceKernelOccupancy(annotated))


@settings(max_examples=20, deadline=None)
@given(kernel_traces())
def test_colliding_keys_fall_back_to_one_configuration_per_launch(trace: Trace) -> None:
    # a mixing multiplier of 0 keys each launch by its shared memory alone: launches that differ elsewhere
    # collide, the check catches it and every launch becomes its own configuration
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(enrich, "_MIX", np.int64(0))
        patch.setattr(enrich, "_LAUNCHES", type(enrich._LAUNCHES)())
        _assert_same(KernelOccupancy(trace), ReferenceKernelOccupancy(trace))


def test_configurations_number_launches_by_their_inputs() -> None:
    a = np.array([1.0, 2.0, 1.0, np.nan, 2.0, np.nan])
    b = np.array([5.0, 5.0, 5.0, 5.0, 6.0, 5.0])
    config, first = enrich._configurations([a, b])
    assert config.tolist() == [0, 1, 0, 2, 3, 2]
    assert first.tolist() == [0, 1, 3, 4]


def empty_sm_ns_each_reference(starts: np.ndarray, ends: np.ndarray, fills: list[np.ndarray]) -> list[float]:
    """tracelens.analyses.occupancy.empty_sm_ns_each before it picked the running intervals first."""
    if starts.size == 0:
        return [0.0 for _ in fills]
    times = np.concatenate([starts, ends])
    order = np.argsort(times, kind="stable")
    running = np.cumsum(np.concatenate([np.ones(starts.size), -np.ones(ends.size)])[order])[:-1]
    length = np.diff(times[order]).astype(np.float64)
    active = running > 0
    out = []
    for fill in fills:
        filled = np.cumsum(np.concatenate([fill, -fill])[order])[:-1]
        empty = 1.0 - np.clip(np.round(filled, 9), 0.0, 1.0)
        out.append(float((length * empty)[active].sum()))
    return out


FILLS = st.sampled_from([0.0, 0.1, 1 / 3, 0.5, 0.7, 1.0, 1e-10])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 2000), FILLS, FILLS), max_size=60),
)
def test_empty_sm_ns_each_equals_the_reference(launches: list) -> None:
    starts = np.array([s for s, _, _, _ in launches], np.int64)
    ends = starts + np.array([d for _, d, _, _ in launches], np.int64)
    fills = [np.array([f for _, _, f, _ in launches]), np.array([g for _, _, _, g in launches])]
    assert occupancy.empty_sm_ns_each(starts, ends, fills) == empty_sm_ns_each_reference(starts, ends, fills)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 300), st.integers(0, 300), FILLS, FILLS), max_size=60),
    st.booleans(),
)
def test_empty_sm_ns_of_launches_one_at_a_time_equals_the_reference(launches: list, touch: bool) -> None:
    # launches one after another (the serial path), or with one pair touching or overlapping (the sort)
    gaps = np.array([g for g, _, _, _ in launches], np.int64)
    durations = np.array([d for _, d, _, _ in launches], np.int64)
    starts = np.cumsum(gaps + np.r_[0, durations[:-1]]).astype(np.int64)
    ends = starts + durations
    if touch and starts.size > 1:
        starts[-1] = ends[-2] - (gaps[-1] % 2)  # touching the previous end, or starting 1 ns before it
        ends[-1] = starts[-1] + durations[-1]
    fills = [np.array([f for _, _, f, _ in launches]), np.array([g for _, _, _, g in launches])]
    assert occupancy.empty_sm_ns_each(starts, ends, fills) == empty_sm_ns_each_reference(starts, ends, fills)


@settings(max_examples=30, deadline=None)
@given(kernel_traces())
def test_collective_and_library_masks_equal_the_taken_names(trace: Trace) -> None:
    occ = occupancy._KernelOccupancy(trace)
    codes, values = dictionary_codes(trace.take("name", occ.rows))
    dictionary = np.asarray(values, dtype=object)
    collective = code_mask(codes, dictionary, is_collective_kernel)
    library = code_mask(codes, dictionary, is_library_kernel) & ~collective
    assert np.array_equal(occ.collective, collective) and np.array_equal(occ.library, library)
    for with_shape in (True, False):
        fill = np.where(occ.excluded, 1.0, np.nan_to_num(occ.grid_fill, nan=1.0))
        if with_shape:
            fill = fill * np.where(occ.shape_limited, occ.shape, 1.0)
        assert np.array_equal(occ.sm_fill(with_shape), fill)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=30))
def test_rows_align_a_sparse_column_carried_by_more_rows(kinds: list) -> None:
    # kernels and copies on devices beside more host rows without one: the device column is sparse, its rows a
    # superset of the kernels'
    rows = [
        {
            "kind": KERNEL if is_kernel else "memcpy",
            "name": "k",
            "start_ns": i,
            "end_ns": i + 1,
            "device": dev,
        }
        for i, (is_kernel, dev) in enumerate(kinds)
    ]
    rows += [
        {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": i, "end_ns": i + 1}
        for i in range(2 * len(rows))
    ]
    trace = Trace.from_rows(rows, devices=DEVICES)
    kernels = enrich._kind_rows(trace, KERNEL)
    fast, reference = enrich._Rows(trace, kernels), _ReferenceRows(trace, kernels)
    assert np.array_equal(fast.column("device"), reference.column("device"), equal_nan=True)
    carried = trace.store.columns["device"].rows
    assert fast._positions_in(carried) is not None  # every kernel has a device here
