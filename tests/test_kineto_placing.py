"""kineto/placing.py: the records of some rows (GPU, op fields) put in table order (one shared mark array for
several sets), and the launch lookup by correlation id, against direct computations."""

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


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 30), st.data())
def test_shared_slots_place_each_set_as_its_own_slots_would(m: int, data: st.DataObject) -> None:
    starts = np.array(data.draw(st.lists(st.integers(0, 5), min_size=m, max_size=m)), dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    owner = data.draw(st.lists(st.integers(0, 2), min_size=m, max_size=m))  # 0: no set; 1, 2: a set
    sets = [np.array([r for r in range(m) if owner[r] == k], dtype=np.int64) for k in (1, 2)]
    slot = placing.shared_slots(sets, m)
    assert slot is not None
    placed = placing.placed_sets(slot, order, [rows.size for rows in sets])
    for rows, (kept, at) in zip(sets, placed, strict=True):
        want_kept, want_at = _direct_placement(order, rows)
        np.testing.assert_array_equal(kept, want_kept)
        np.testing.assert_array_equal(at, want_at)
        np.testing.assert_array_equal((kept, at), placing.placed(placing.record_slots(rows, m), order))


def test_shared_slots_decline_sets_that_share_a_row() -> None:
    assert placing.shared_slots([np.array([0, 2]), np.array([1, 2])], 4) is None
    assert placing.shared_slots([np.array([], dtype=np.int64), np.array([1, 2])], 4) is not None
    one = placing.shared_slots([np.array([3, 1])], 4)
    assert one is not None
    np.testing.assert_array_equal(one, [0, 2, 0, 1])


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
