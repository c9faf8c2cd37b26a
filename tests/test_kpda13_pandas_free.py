"""The numpy replacements that take pandas off the Kineto analyze path equal the pandas computations they replaced,
on generated data (ties, empty, one row, nulls):

- trace.arrow_filled == pc.fill_null(array, fill).to_numpy(zero_copy_only=False)
- values.first_seen_sums == pd.Series(values).groupby(keys, sort=False).agg(["sum", "size"])
- kernels._name_stats (the compiled Welford pass and sorted medians) == the pandas groupby agg (_frame_stats),
  several code ranges included
- step_arrays.step_window_arrays == the frame groupby/sort_values it replaced
- host._top_by_template == its pandas version (Series.astype(str), pd.unique, map, pd.factorize)
- label_sums.sums_by_label / summed_by_row_key == their pandas groupbys
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tracelens.analyses import host, kernels
from tracelens.analyses.label_sums import summed_by_row_key, sums_by_label
from tracelens.analyses.step_arrays import step_window_arrays
from tracelens.arrow_read import arrow_filled
from tracelens.values import first_seen_sums

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.float32(), pa.float64()]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(0, 100)), max_size=40),
    st.sampled_from(INT_TYPES),
    st.integers(0, 5),
    st.integers(0, 5),
)
def test_arrow_filled_equals_fill_null_to_numpy(
    values: list[int | None], typ: pa.DataType, lo: int, cut: int
) -> None:
    array = pa.array(values, typ)
    array = array.slice(min(lo, len(array)), max(len(array) - lo - cut, 0))  # offsets too
    fill = 7 if pa.types.is_unsigned_integer(typ) else -1
    expected = pc.fill_null(array, fill).to_numpy(zero_copy_only=False)
    got = arrow_filled(array, fill)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    # without nulls a view of Arrow's memory: read only, as to_numpy gives it
    assert not len(array) or got.flags.writeable == (array.null_count > 0)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-3, 6), max_size=60),
    st.integers(0, 2**62),
)
def test_first_seen_sums_equals_pandas_groupby(keys: list[int], scale: int) -> None:
    key = np.array(keys, np.int64)
    values = (np.arange(key.size, dtype=np.int64) * 7919 + 1) * (scale // max(key.size, 1) // 8000)
    uniques, sums, sizes = first_seen_sums(key, values)
    expected = pd.Series(values).groupby(key, sort=False).agg(["sum", "size"])
    np.testing.assert_array_equal(uniques, expected.index.to_numpy(np.int64))
    np.testing.assert_array_equal(sums, expected["sum"].to_numpy(np.int64))
    np.testing.assert_array_equal(sizes, expected["size"].to_numpy(np.int64))


def _assert_same_stats(got: Any, expected: Any) -> None:
    for field in ("code", "count", "total", "lo", "hi", "median", "std"):
        a, b = np.asarray(getattr(got, field)), np.asarray(getattr(expected, field))
        assert a.dtype.kind == b.dtype.kind, field
        np.testing.assert_array_equal(a, b, err_msg=field)  # bit for bit: the floats printed as JSON


needs_compiled = pytest.mark.skipif(kernels._compiled is None, reason="the compiled moments are not built")


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 12), st.integers(0, 10**12)), min_size=1, max_size=300),
    st.sampled_from([np.int16, np.int32, np.int64]),
    st.booleans(),
    st.integers(2, 10**6),
)
def test_name_stats_equal_pandas_groupby(
    rows: list[tuple[int, int]], code_type: type, ties: bool, chunk: int
) -> None:
    code = np.array([c for c, _ in rows], code_type)
    duration = np.array([d for _, d in rows], np.int64)
    if ties:  # equal durations: medians between equal values, zero spread
        duration //= 10**11
    original = kernels.KERNEL_CHUNK
    try:
        kernels.KERNEL_CHUNK = chunk if chunk < 50 else original  # several code ranges too
        _assert_same_stats(kernels._name_stats(code, duration), kernels._frame_stats(code, duration))
    finally:
        kernels.KERNEL_CHUNK = original


@needs_compiled
def test_name_stats_one_kernel_and_large_values() -> None:
    for code, duration in [
        (np.array([3], np.int32), np.array([5], np.int64)),
        (np.array([0, 0, 1, 0], np.int32), np.array([2**60, 2**60 + 3, -4, 2**53 + 1], np.int64)),
        (np.zeros(10_000, np.int32), np.random.default_rng(3).integers(0, 10**9, 10_000)),
        # durations spread past what one (slot, duration) key holds: the medians by a two-key sort
        (np.array([1, 0, 1, 1, 0], np.int32), np.array([-(2**62), 2**62, 5, 5, 7], np.int64)),
    ]:
        _assert_same_stats(kernels._name_stats(code, duration), kernels._frame_stats(code, duration))


def _plain_step_windows(trace: tracelens.Trace) -> dict[str, list[int]]:
    """The step windows by plain Python over the step markers in table order: an unnumbered marker takes the next
    number after the highest recorded one; per number the first start and the last end; by start, then number."""
    from tracelens.analyses.columns import event_columns
    from tracelens.trace import STEP

    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(STEP))
    numbers = cols.at("step", rows).tolist()
    next_number = max([n for n in numbers if n >= 0], default=-1) + 1
    windows: dict[int, list[int]] = {}
    for number, start, end in zip(numbers, cols.start[rows].tolist(), cols.end[rows].tolist(), strict=True):
        if number < 0:
            number, next_number = next_number, next_number + 1
        window = windows.setdefault(number, [start, end])
        window[0], window[1] = min(window[0], start), max(window[1], end)
    ordered = sorted(windows.items(), key=lambda item: (item[1][0], item[0]))
    return {
        "step": [n for n, _ in ordered],
        "start": [w[0] for _, w in ordered],
        "end": [w[1] for _, w in ordered],
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 5), st.integers(0, 50), st.integers(0, 30)), max_size=25))
def test_step_window_arrays_equal_plain_python(marks: list[tuple[int, int, int]]) -> None:
    rows = [
        {
            "kind": "step",
            "name": f"ProfilerStep#{step}",
            "start_ns": start,
            "end_ns": start + length,
            "pid": 1,
            "tid": 1,
            "step": None if step < 0 else step,
        }
        for step, start, length in marks
    ]
    rows.append({"kind": "cpu_op", "name": "aten::mm", "start_ns": 0, "end_ns": 1, "pid": 1, "tid": 1})
    trace = tracelens.Trace.from_rows(rows)
    got, expected = step_window_arrays(trace), _plain_step_windows(trace)
    assert len(got) == len(expected["step"])
    for column in ("step", "start", "end"):
        assert getattr(got, column).tolist() == expected[column]


def _plain_top_by_template(
    kind: np.ndarray, labels: np.ndarray, totals: np.ndarray, counts: np.ndarray, top_n: int
) -> tuple[list[dict[str, Any]], int]:
    """host._top_by_template by plain Python: groups by (kind, template) in first-appearance order, bootstrap
    frames left out and counted, the top groups by total time, then template text, then first appearance."""
    from tracelens.analyses.names import is_thread_bootstrap, name_template
    from tracelens.trace import ALL_KINDS

    groups: dict[tuple[int, str], list[int]] = {}  # total, count, names
    bootstrap = 0
    for k, label, total, count in zip(
        kind.tolist(), labels.tolist(), totals.tolist(), counts.tolist(), strict=True
    ):
        if is_thread_bootstrap(str(label)):
            bootstrap += count
            continue
        group = groups.setdefault(
            (k, name_template(str(label)) or "(no name)"), [0, 0, 0]
        )  # empty: "(no name)"
        group[0] += total
        group[1] += count
        group[2] += 1
    ranked = sorted(enumerate(groups.items()), key=lambda e: (-e[1][1][0], e[1][0][1], e[0]))[:top_n]
    top = [
        {"kind": ALL_KINDS[k], "name": template, "count": count, "total_ns": total, "names": names}
        for _, ((k, template), (total, count, names)) in ranked
    ]
    return top, bootstrap


NAMES = [
    "ProfilerStep#1",
    "ProfilerStep#2",
    "aten::mm",
    "aten::mm, op_id = 5",
    "",
    "threading.py(1016): _bootstrap",
    "aten::add",
    "ü",
    "b",
    "a",
]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from(NAMES), st.integers(0, 50)), max_size=30),
    st.integers(0, 6),
)
def test_top_by_template_equals_plain_python(pairs: list[tuple[int, str, int]], top_n: int) -> None:
    kind = np.array([k for k, _, _ in pairs], np.int64)
    labels = np.empty(len(pairs), object)
    labels[:] = [n for _, n, _ in pairs]
    totals = np.array([t for _, _, t in pairs], np.int64)
    counts = totals % 7 + 1
    assert host._top_by_template(kind, labels, totals, counts, top_n) == _plain_top_by_template(
        kind, labels, totals, counts, top_n
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(-(2**40), 2**40)), max_size=30))
def test_sums_by_label_equals_pandas(rows: list[tuple[str, int]]) -> None:
    labels = [n for n, _ in rows]
    values = np.array([v for _, v in rows], np.int64)
    uniques, sums = sums_by_label(labels, {"ns": values})
    expected = pd.DataFrame({"ns": values, "label": labels}).groupby("label", sort=False)
    summed = expected["ns"].sum()
    assert uniques.tolist() == summed.index.tolist()
    np.testing.assert_array_equal(sums["ns"], summed.to_numpy(np.int64))
    np.testing.assert_array_equal(sums["texts"], expected.size().to_numpy(np.int64))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(5, 7), st.integers(0, 99)), max_size=30
    )
)
def test_summed_by_row_key_equals_pandas(rows: list[tuple[int, int, int, int]]) -> None:
    name, kind, tid, overlap = (np.array([r[k] for r in rows], np.int64) for k in range(4))
    got = summed_by_row_key(name, kind, tid, overlap)
    expected = (
        pd.DataFrame({"name": name, "kind": kind, "tid": tid, "overlap": overlap})
        .groupby(["name", "kind", "tid"], sort=False)["overlap"]
        .sum()
        .reset_index()
    )
    for i, column in enumerate(("name", "kind", "tid", "overlap")):
        np.testing.assert_array_equal(got[i], expected[column].to_numpy(np.int64))


FIXTURES = [
    "fixtures/demo.pt.trace.json.gz",
    "fixtures/pytorch_cpu_train.pt.trace.json.gz",
    "fixtures/gpu/resnet18_train_cuda.pt.trace.json.gz",
    "fixtures/kineto/overlapping_streams.json",
]


@pytest.mark.parametrize("path", FIXTURES)
def test_host_summary_hashed_pairs_equal_dense_slots(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The (kind, name) pairs summed by first_seen_sums per chunk (the path for millions of names) give the
    dense slots' answer."""
    dense = host.host_summary(tracelens.load(path))
    monkeypatch.setattr(host, "_count_every_slot", lambda slots, rows: False)
    monkeypatch.setattr(host, "CHUNK_ROWS", 97)  # several chunks: their pairs summed again
    assert host.host_summary(tracelens.load(path)) == dense


@pytest.mark.parametrize("path", FIXTURES)
def test_kernel_summary_without_the_compiled_pass(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pandas fallback (no C compiler at install) and the compiled moments give the same block."""
    compiled = kernels.kernel_summary(tracelens.load(path))
    monkeypatch.setattr(kernels, "_compiled", None)
    assert kernels.kernel_summary(tracelens.load(path)) == compiled


@pytest.mark.parametrize(
    "path",
    [
        "fixtures/gpu/pytorch_pageable-copies_cuda.pt.trace.json.gz",
        "fixtures/gpu/pytorch_sync-every-step_cuda.pt.trace.json.gz",
        "fixtures/demo.pt.trace.json.gz",
        "fixtures/nsys/handmade_nsys2026.sqlite",  # coded pid/tid, sparse columns
    ],
)
def test_trace_arrays_hold_the_frames_values(path: str) -> None:
    """Trace.arrays (numpy, no pandas) gives the values Trace.frame gives, every column of the schema, at some rows
    (nulls: NaN for numbers, None otherwise)."""
    from tracelens.trace import EVENT_SCHEMA

    trace = tracelens.load(path)
    rows = np.arange(0, trace.num_events, 3)
    columns = list(EVENT_SCHEMA.names)
    got, frame = trace.arrays(rows, columns), trace.frame(rows, columns)
    for column in columns:
        values, expected = got[column], frame[column]
        assert values.size == len(expected), column
        if values.dtype == object:
            as_objects = expected.astype(object)
            assert values.tolist() == as_objects.where(expected.notna(), None).tolist(), column
        elif values.dtype.kind == "f":
            np.testing.assert_array_equal(
                values, expected.to_numpy(np.float64, na_value=np.nan), err_msg=column
            )
        else:
            assert not expected.isna().any(), column
            np.testing.assert_array_equal(values, expected.to_numpy(values.dtype), err_msg=column)
