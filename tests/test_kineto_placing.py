"""kineto/placing.py: the records of some rows (GPU, op fields) put in table order (GPU rows as the rows of
their kinds, op rows by their starts), and the launch lookup by correlation id, against direct computations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import placing
from tracelens.ingest.kineto.appended import Appended


def _parts(sizes: list[int], rows: list[int], values: np.ndarray) -> tuple[Appended, np.ndarray]:
    """Blocks of ``sizes`` rows, with one record (``values`` in order) per listed joined row, appended; the
    listed joined rows in block order (appended as the blocks' own row numbers shifted)."""
    parts, offset = Appended(), 0
    chosen = set(rows)
    for size in sizes:
        local = np.array([r - offset for r in range(offset, offset + size) if r in chosen], dtype=np.int64)
        first = parts.joined("rows").size if offset else 0
        value = values[first : first + local.size]
        parts.add("value", value)
        parts.add("pair", np.column_stack([value, -value]).reshape(-1, 2))
        parts.add("rows", local, offset)
        offset += size
    return parts, parts.pop("rows")


def _direct_placement(order: np.ndarray, listed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each listed joined row's table row by a full inverse permutation: (index into ``listed`` in table order,
    table row)."""
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)  # each joined row's table row
    by_table_row = np.argsort(position[listed])
    return by_table_row, position[listed][by_table_row]


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 30), st.data())
def test_rows_of_kinds_and_rows_by_start_are_placed_as_a_full_inverse_places_them(
    m: int, data: st.DataObject
) -> None:
    """The GPU rows (the rows of some kinds) found in the sorted kinds, and a few rows found by bisection among
    equal starts (ties in most draws), against the rows' table rows from a full inverse permutation."""
    starts = np.array(data.draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    of_kind = np.array(data.draw(st.lists(st.booleans(), min_size=m, max_size=m)), dtype=bool)
    rows = np.flatnonzero(of_kind).astype(np.int64)
    placed = placing.rows_of_kinds_placed(np.flatnonzero(of_kind[order]), order, rows)
    assert placed is not None
    want_kept, want_at = _direct_placement(order, rows)
    np.testing.assert_array_equal(placed[0], want_kept)
    np.testing.assert_array_equal(placed[1], want_at)
    np.testing.assert_array_equal(placed, placing.in_table_order(rows, order, m))
    few = np.array(sorted(data.draw(st.sets(st.integers(0, max(m - 1, 0)), max_size=m))), dtype=np.int64)
    kept, at = placing.placed_rows(few, starts[few], starts[order], order)
    want_kept, want_at = _direct_placement(order, few)
    np.testing.assert_array_equal(kept, want_kept)
    np.testing.assert_array_equal(at, want_at)


def test_rows_of_kinds_decline_rows_that_are_not_the_kinds_rows() -> None:
    order = np.array([2, 0, 1, 3])
    at = np.array([0, 3])  # the table rows of the kinds: joined rows 2 and 3
    assert placing.rows_of_kinds_placed(at, order, np.array([2, 3])) is not None
    assert placing.rows_of_kinds_placed(at, order, np.array([1, 3])) is None  # another row
    assert placing.rows_of_kinds_placed(at, order, np.array([3])) is None  # fewer rows
    assert placing.rows_of_kinds_placed(at, order, np.array([0, 1])) is None  # each below the rows searched


def test_rows_by_start_among_many_equal_starts() -> None:
    """One long run of equal starts (every row ties): each row found in as many halvings as the run needs."""
    m = 5000
    starts = np.zeros(m, dtype=np.int64)
    starts[::3] = 7
    order = np.argsort(starts, kind="stable")
    few = np.array([0, 1, 2, 2999, 3000, 4998, 4999], dtype=np.int64)
    np.testing.assert_array_equal(
        placing.placed_rows(few, starts[few], starts[order], order), _direct_placement(order, few)
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=5), st.data())
def test_records_taken_in_table_order_equal_a_direct_placement(sizes: list[int], data: st.DataObject) -> None:
    m = sum(sizes)
    starts = np.array(data.draw(st.lists(st.integers(0, 9), min_size=m, max_size=m)))
    rows = sorted(data.draw(st.sets(st.integers(0, m - 1))))
    values = np.arange(len(rows), dtype=np.float64) + 0.5
    parts, listed = _parts(sizes, rows, values)
    order = np.argsort(starts, kind="stable")
    kept, at = placing.placed(placing.record_slots(listed, m), order)
    records = placing.records_taken(parts, kept, ("value", "pair"))
    by_table_row, want_at = _direct_placement(order, listed)
    np.testing.assert_array_equal(at, want_at)
    np.testing.assert_array_equal(records["value"], values[by_table_row])
    np.testing.assert_array_equal(records["pair"], np.column_stack([values, -values])[by_table_row])
    for key in ("value", "pair"):  # each joined array dropped
        with pytest.raises(KeyError):
            parts.joined(key)


_IDS = st.sampled_from([1.0, 2.0, 3.0, 0.0, -0.0, -4.0, 2.5, 2.0**62, 2.0**63, 1e300, -np.inf, np.nan])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_IDS.filter(lambda v: not np.isnan(v)), st.integers(0, 4)), max_size=12),
    st.lists(_IDS, max_size=40),
    st.booleans(),
)
def test_launch_pid_is_the_first_launchs_in_table_order(
    launches: list[tuple[float, int]], correlation: list[float], ascending: bool
) -> None:
    """Launches in table order (no NaN id: prepare keeps only launches with one); the lookup through int64
    (integer ids) or floats (others) against a direct search; launches_by_id equal where no id repeats."""
    records = {
        "launch_correlation": np.array([c for c, _ in launches], dtype=np.float64),
        "launch_pid": np.array([float(p) for _, p in launches]),
    }
    index = placing.sorted_launches(records)
    needles = np.array(sorted(correlation) if ascending else correlation, dtype=np.float64)
    got = placing.launch_pid(index, needles)
    for value, found in zip(needles, got, strict=True):
        first = next((p for c, p in launches if c == value), None)  # NaN equals nothing
        assert (np.isnan(found) and first is None) or found == first
    by_id = placing.launches_by_id(records["launch_correlation"], records["launch_pid"])
    ids = [c for c, _ in launches]
    if len(set(ids)) < len(ids):  # -0.0 == 0.0: one id
        assert by_id is None
    else:
        assert by_id is not None
        np.testing.assert_array_equal(by_id[0], index[0])
        np.testing.assert_array_equal(by_id[1], index[1])
        np.testing.assert_array_equal(placing.launch_pid(by_id, needles), got)


def test_launch_pid_walks_many_ascending_integer_ids() -> None:
    """Enough needles for the compiled walk (intervals.search_sorted), with ids absent, fractional and NaN."""
    rng = np.random.default_rng(5)
    ids = np.unique(rng.integers(0, 400_000, 60_000)).astype(np.float64)
    pids = rng.integers(1, 9, ids.size).astype(np.float64)
    needles = np.sort(rng.integers(-10, 400_010, 80_000)).astype(np.float64)
    needles[::7] += 0.5
    needles[::11] = np.nan
    got = placing.launch_pid((ids, pids), needles)
    pos = np.clip(np.searchsorted(ids, needles), 0, ids.size - 1)
    want = np.where(ids[pos] == needles, pids[pos], np.nan)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "ids",
    [
        [],
        [0.0],
        [1.0, 2.0, -3.0],
        [-0.0, 5.0],
        [1.5],
        [np.nan],
        [2.0**62, 2.0**63 - 1024],
        [2.0**63],
        [-(2.0**63)],
        [1e300],
        [-np.inf],
    ],
)
def test_integer_ids_are_the_ids_int64_holds_exactly(ids: list[float]) -> None:
    values = np.array(ids, dtype=np.float64)
    got = placing.integer_ids(values)
    exact = all(v == int(v) and -(2**63) <= int(v) < 2**63 for v in ids if np.isfinite(v)) and all(
        np.isfinite(ids)
    )
    if not exact:
        assert got is None
    else:
        assert got is not None
        assert got.tolist() == [int(v) for v in ids]
