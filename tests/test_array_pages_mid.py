"""The page cache's mid-size arrays and what a release keeps (memory.reusing_array_pages, memory.release_free_memory;
benchmarks/results/kflt15.md): arrays from 1 MiB on are served by the cache for a trace of 1M rows or more, a split block's 2 MiB tail serves the
next 1-2 MiB array, the cached pages survive a release that keeps them (the CLI's read end) and go with one that
does not, and a 1-2 MiB array that takes dirty pages holds what numpy promises."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens import memory

pytestmark = pytest.mark.skipif(memory._ARRAY_PAGES is None, reason="the page handler is not compiled here")

MiB = 1 << 20


def counters() -> dict[str, int]:
    found = memory.array_pages_counters()
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("rows", "smallest"),
    [(memory.MID_ARRAYS_MIN_ROWS, MiB), (memory.MID_ARRAYS_MIN_ROWS - 1, 4 * MiB), (None, 4 * MiB)],
)
def test_the_smallest_array_served_follows_the_trace_s_rows(rows: int | None, smallest: int) -> None:
    with memory.reusing_array_pages(rows):
        start = counters()
        below = np.ones(smallest - 1, np.uint8)
        assert counters()["allocations"] == start["allocations"]  # numpy's default handler
        served = np.ones(smallest, np.uint8)
        assert counters()["allocations"] == start["allocations"] + 1
        del below, served
    with memory.reusing_array_pages():  # put back: 4 MiB
        start = counters()
        kept = np.ones(4 * MiB - 1, np.uint8)
        assert counters()["allocations"] == start["allocations"]
        del kept


def test_arrays_from_one_mib_on_are_served_by_the_cache() -> None:
    with memory.reusing_array_pages(memory.MID_ARRAYS_MIN_ROWS):
        start = counters()
        below = np.ones(MiB - 1, np.uint8)
        assert counters()["allocations"] == start["allocations"]  # numpy's default handler
        served = np.ones(MiB, np.uint8)
        assert counters()["allocations"] == start["allocations"] + 1
        assert below.sum() == MiB - 1 and served.sum() == MiB
        del below, served


def test_a_split_tail_serves_the_next_mid_size_array_and_zeros_stay_zero() -> None:
    with memory.reusing_array_pages(memory.MID_ARRAYS_MIN_ROWS):
        dirty = np.full(6 * MiB, 0xFF, np.uint8)
        del dirty
        start = counters()
        first = np.zeros(3 * MiB, np.uint8)  # 4 MiB of the 6: the 2 MiB tail stays cached
        second = np.zeros(MiB + 1, np.uint8)  # takes the tail
        after = counters()
        assert after["fresh_bytes"] == start["fresh_bytes"]
        assert after["reused_bytes"] - start["reused_bytes"] == 6 * MiB
        assert not first.any() and not second.any()  # dirty pages cleared for calloc
        empty = np.empty(0, np.uint8)
        one = np.zeros(1, np.uint8)
        assert empty.size == 0 and one[0] == 0
        del first, second


def test_a_release_keeping_cached_pages_leaves_them_for_the_next_arrays() -> None:
    with memory.reusing_array_pages():
        freed = np.ones(8 * MiB, np.uint8)
        del freed
        assert counters()["cached_bytes"] == 8 * MiB
        memory.release_free_memory(cached_pages=False)  # the read's end inside the CLI's scope
        assert counters()["cached_bytes"] == 8 * MiB
        start = counters()
        taken = np.zeros(8 * MiB, np.uint8)
        assert counters()["fresh_bytes"] == start["fresh_bytes"] and not taken.any()
        del taken
        memory.release_free_memory()  # a section's release on a big trace
        assert counters()["cached_bytes"] == 0
    assert counters()["cached_bytes"] == 0
