"""The numpy memory handler that reuses freed big arrays' pages during an analysis (memory.reusing_array_pages,
tracelens/_array_pages.c): arrays hold what numpy promises (zeros are zero, resizes keep their data), pages are
reused, the cache never makes the process larger than its live arrays, and analyses give the same documents."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import load, memory
from tracelens.analyses import analyze
from tracelens.analyses.schedule import run_sections

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name  # type: ignore[no-redef]

pytestmark = pytest.mark.skipif(memory._ARRAY_PAGES is None, reason="the page handler is not compiled here")

MiB = 1 << 20
HANDLER = "tracelens_array_pages"


@contextlib.contextmanager
def small_threshold() -> Iterator[None]:
    """Arrays from 64 KiB on go to the handler, so small tests exercise it."""
    module = memory._ARRAY_PAGES
    assert module is not None
    before = module.set_min_big(64 * 1024)
    try:
        yield
    finally:
        module.set_min_big(before)


def counters() -> dict[str, int]:
    found = memory.array_pages_counters()
    assert found is not None
    return found


def test_the_scope_sets_the_handler_and_restores_the_one_before() -> None:
    before = get_handler_name()
    assert before != HANDLER
    with memory.reusing_array_pages():
        assert get_handler_name() == HANDLER
        with memory.reusing_array_pages():
            assert get_handler_name() == HANDLER
        assert get_handler_name() == HANDLER  # the inner scope restored the outer one's handler
    assert get_handler_name() == before
    with pytest.raises(KeyError), memory.reusing_array_pages():
        raise KeyError("boom")
    assert get_handler_name() == before
    assert counters()["cached_bytes"] == 0  # the last scope's end unmapped the cache


def test_the_environment_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACELENS_ARRAY_PAGES", "0")
    with memory.reusing_array_pages():
        assert get_handler_name() != HANDLER


def test_a_freed_array_s_pages_serve_the_next_and_zeros_stay_zero() -> None:
    start = counters()
    with memory.reusing_array_pages():
        dirty = np.full(8 * MiB // 8, -1, np.int64)
        del dirty
        zeros = np.zeros(8 * MiB // 8, np.int64)  # takes the dirty pages: the handler must clear them
        assert not zeros.any()
        after = counters()
        assert after["reused_bytes"] - start["reused_bytes"] >= 8 * MiB
        assert after["fresh_bytes"] - start["fresh_bytes"] == 8 * MiB  # only the first array's pages
        del zeros


def test_a_big_block_is_split_and_small_blocks_are_gathered() -> None:
    start = counters()
    with memory.reusing_array_pages():
        big = np.ones(32 * MiB, np.uint8)
        del big
        part = np.zeros(8 * MiB, np.uint8)  # best fit: the first 8 MiB; the other 24 stay cached
        assert np.count_nonzero(part) == 0
        assert counters()["splits"] > start["splits"]
        rest = np.zeros(24 * MiB, np.uint8)
        assert np.count_nonzero(rest) == 0
        assert counters()["fresh_bytes"] - start["fresh_bytes"] == 32 * MiB
        part[:] = 5
        rest[:] = 6
        del part, rest
        joined = np.zeros(30 * MiB, np.uint8)  # no cached block is big enough: both are moved into one range
        assert np.count_nonzero(joined) == 0
        assert counters()["moves"] - start["moves"] >= 2
        joined[:] = 9
        assert joined.min() == joined.max() == 9  # no temporaries: they would take pages of their own
        del joined
    end = counters()
    assert end["fresh_bytes"] - start["fresh_bytes"] == 32 * MiB
    assert end["fresh_while_cached"] == start["fresh_while_cached"]
    assert end["cached_bytes"] == 0


def test_an_array_outliving_the_scope_is_unmapped_when_freed() -> None:
    with memory.reusing_array_pages():
        kept = np.ones(6 * MiB, np.uint8)
    before = counters()
    del kept
    after = counters()
    assert after["cached_bytes"] == 0
    assert after["unmapped_bytes"] - before["unmapped_bytes"] == 6 * MiB


def test_a_donated_mapping_s_pages_serve_the_next_arrays() -> None:
    """memory.donate_pages: a page_buffer's pages move into the cache (whole 2 MiB multiples, only while a scope
    is open); the buffer stays usable (zero pages); arrays that take them hold what numpy promises."""
    import mmap

    assert memory.donate_pages(bytearray(8 * MiB)) == 0  # not a mapping
    outside = memory.page_buffer(8 * MiB, False)
    assert memory.donate_pages(outside) == 0  # no scope open: nothing moves
    start = counters()
    with memory.reusing_array_pages():
        ring = memory.page_buffer(9 * MiB, False)
        assert isinstance(ring, mmap.mmap)
        ring[:] = b"x" * len(ring)
        assert memory.donate_pages(ring) == 8 * MiB  # the 2 MiB multiple; the last MiB stays
        assert ring[: 8 * MiB].count(b"\0") == 8 * MiB and ring[8 * MiB :] == b"x" * MiB
        ring[:4] = b"abcd"  # still the buffer's own memory
        assert ring[:4] == b"abcd"
        assert counters()["cached_bytes"] == 8 * MiB
        zeros = np.zeros(6 * MiB, np.uint8)  # the donated pages, cleared
        taken = np.empty(2 * MiB, np.uint8)
        assert not zeros.any()
        taken[:] = 7
        zeros[:] = 3
        assert taken.min() == 7 and zeros.max() == 3
        after = counters()
        assert after["fresh_bytes"] == start["fresh_bytes"]
        assert after["donated_bytes"] - start["donated_bytes"] == 8 * MiB
        ring.close()
        assert taken.min() == 7 and zeros.max() == 3  # unmapping the buffer leaves the moved pages
        del zeros, taken
    assert counters()["cached_bytes"] == 0
    outside.close()


def test_release_free_memory_unmaps_the_cache() -> None:
    with memory.reusing_array_pages():
        freed = np.ones(10 * MiB, np.uint8)
        del freed
        assert counters()["cached_bytes"] == 10 * MiB
        memory.release_free_memory()
        assert counters()["cached_bytes"] == 0


def test_threads_started_by_the_sections_use_the_handler() -> None:
    with memory.reusing_array_pages():
        names = run_sections(["a", "b", "c"], lambda key: get_handler_name(), threads=2)
    assert set(names.values()) == {HANDLER}


# A program of allocations, frees and resizes over live arrays of many sizes; after each step every live array
# must hold its own bytes (a pattern per array), zeros must be zero, and the cache must never have mapped fresh
# pages while it held some (the bound on the process's size).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("zeros"), st.integers(0, 3 * MiB)),
        st.tuples(st.just("empty"), st.integers(0, 3 * MiB)),
        st.tuples(st.just("free"), st.integers(0, 30)),
        st.tuples(st.just("resize"), st.tuples(st.integers(0, 30), st.integers(1, 3 * MiB))),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(program=steps)
def test_arrays_keep_their_bytes_under_any_program(program: list) -> None:
    start = counters()
    with small_threshold(), memory.reusing_array_pages():
        live: list[tuple[np.ndarray, int]] = []
        for n, (op, arg) in enumerate(program):
            pattern = n % 250 + 1
            if op == "zeros":
                array = np.zeros(arg, np.uint8)
                assert not array.any()
                array[:] = pattern
                live.append((array, pattern))
            elif op == "empty":
                array = np.empty(arg, np.uint8)
                array[:] = pattern
                live.append((array, pattern))
            elif op == "free" and live:
                live.pop(arg % len(live))
            elif op == "resize" and live:
                index, size = arg
                array, old_pattern = live[index % len(live)]
                kept = min(array.size, size)
                array.resize(size, refcheck=False)  # realloc: the first bytes stay, the rest is zero
                assert (array[:kept] == old_pattern).all()
                assert not array[kept:].any()
                array[:] = pattern
                live[index % len(live)] = (array, pattern)
            for array, expected in live:
                assert (array == expected).all()
        del live
    end = counters()
    assert end["fresh_while_cached"] == start["fresh_while_cached"]
    assert end["cached_bytes"] == 0


def test_analyses_give_the_same_document_with_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(__file__).parent.parent / "fixtures/gpu/pytorch_tiny-kernels_cuda.pt.trace.json.gz"
    trace = load(path)
    monkeypatch.setenv("TRACELENS_ARRAY_PAGES", "0")
    without = json.dumps(analyze(trace), sort_keys=True, default=str)
    monkeypatch.setenv("TRACELENS_ARRAY_PAGES", "1")
    start = counters()
    with small_threshold():
        with_pages = json.dumps(analyze(load(path)), sort_keys=True, default=str)
    assert counters()["allocations"] > start["allocations"]  # the handler served arrays of this analysis
    assert with_pages == without


def test_a_forked_child_allocates_big_arrays() -> None:
    """A process forked inside a scope (multiprocessing's default start method on Linux) can still take big
    arrays: the handler's lock starts unlocked in the child."""
    import os

    with memory.reusing_array_pages():
        freed = np.ones(6 * MiB, np.uint8)
        del freed
        pid = os.fork()
        if pid == 0:  # the child: a big array from the inherited cache, then exit without cleanup
            array = np.zeros(6 * MiB, np.uint8)
            os._exit(0 if np.count_nonzero(array) == 0 else 1)
        _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
