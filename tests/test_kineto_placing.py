"""kineto/placing.py: the records of some rows (GPU, op, launch fields) put in table order while the order is
still being computed, and the launch lookup by correlation id, against direct computations."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import placing


def _parts(sizes: list[int], rows: list[int], values: np.ndarray) -> tuple[list[dict], np.ndarray]:
    """Blocks of ``sizes`` rows, with one record (``values`` in order) per listed joined row; the listed
    joined rows in block order."""
    parts, offset, listed = [], 0, []
    chosen = set(rows)
    for size in sizes:
        local = [r - offset for r in range(offset, offset + size) if r in chosen]
        listed += [offset + r for r in local]
        value = values[len(listed) - len(local) : len(listed)]
        parts.append({"value": value, "pair": np.column_stack([value, -value])})
        offset += size
    return parts, np.array(listed, dtype=np.int64)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=5), st.data())
def test_records_in_table_order_equal_a_direct_placement(sizes: list[int], data: st.DataObject) -> None:
    m = sum(sizes)
    starts = np.array(data.draw(st.lists(st.integers(0, 9), min_size=m, max_size=m)))
    rows = sorted(data.draw(st.sets(st.integers(0, m - 1))))
    values = np.arange(len(rows), dtype=np.float64) + 0.5
    parts, listed = _parts(sizes, rows, values)
    order = np.argsort(starts, kind="stable")
    with ThreadPoolExecutor(1) as pool:  # the order still being computed when the records are joined
        ordering = pool.submit(np.argsort, starts, kind="stable")
        at, records = placing.records_in_table_order(parts, listed, ordering, m, ("value", "pair"))
    position = np.empty(m, dtype=np.int64)
    position[order] = np.arange(m)  # each joined row's table row
    by_table_row = np.argsort(position[listed])
    np.testing.assert_array_equal(at, position[listed][by_table_row])
    np.testing.assert_array_equal(records["value"], values[by_table_row])
    np.testing.assert_array_equal(records["pair"], np.column_stack([values, -values])[by_table_row])
    assert all("value" not in p and "pair" not in p for p in parts)  # each block's arrays dropped


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0, np.nan]), st.integers(0, 4)), max_size=12),
    st.lists(st.sampled_from([1.0, 2.0, 3.0, 4.0, np.nan]), max_size=8),
)
def test_launch_pid_is_the_first_launchs_in_table_order(
    launches: list[tuple[float, int]], correlation: list[float]
) -> None:
    m = len(launches)
    parts = [
        {
            "launch_correlation": np.array([c for c, _ in launches], dtype=np.float64),
            "launch_pid": np.array([float(p) for _, p in launches]),
        }
    ]
    ordering: Future[np.ndarray] = Future()
    ordering.set_result(np.arange(m))  # the launches are in table order already
    index = placing.launch_index(parts, np.arange(m), ordering, m)
    got = placing.launch_pid(index, np.array(correlation, dtype=np.float64))
    for value, found in zip(correlation, got, strict=True):
        first = next((p for c, p in launches if c == value), None)  # NaN equals nothing
        assert (np.isnan(found) and first is None) or found == first
