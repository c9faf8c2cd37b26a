"""The page cache unmapped behind (memory.release_free_memory(behind=True), _array_pages.c release_behind): the
cache's blocks leave it at once and a thread of its own unmaps them (then trims glibc's heaps), so a load returns
without waiting for the kernel; the memory is back once settled, and an open scope keeps its cache."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tracelens import load, memory

pytestmark = pytest.mark.skipif(memory._ARRAY_PAGES is None, reason="the page handler is not compiled here")

MiB = 1 << 20
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def counters() -> dict[str, int]:
    found = memory.array_pages_counters()
    assert found is not None
    return found


def resident_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_scope_left_without_unmapping_keeps_its_cache_until_released_behind() -> None:
    before = counters()
    with memory.reusing_array_pages(unmap_at_end=False):
        block = np.ones(64 * MiB, np.uint8)  # touched: resident
        del block
    assert counters()["cached_bytes"] == 64 * MiB  # the scope's end left it
    resident = resident_bytes()
    memory.release_free_memory(cached_pages=False, behind=True)
    after = counters()
    assert after["cached_bytes"] == 0  # out of the cache at once
    assert after["unmapped_bytes"] - before["unmapped_bytes"] == 64 * MiB
    memory.settle_released()
    assert resident - resident_bytes() >= 60 * MiB  # and unmapped once settled


def test_an_open_scope_keeps_its_cache_when_released_behind() -> None:
    with memory.reusing_array_pages():
        block = np.ones(8 * MiB, np.uint8)
        del block
        memory.release_free_memory(cached_pages=False, behind=True)
        memory.settle_released()
        assert counters()["cached_bytes"] == 8 * MiB
        start = counters()
        again = np.zeros(8 * MiB, np.uint8)  # takes the cached pages, zeroed
        assert counters()["reused_bytes"] - start["reused_bytes"] == 8 * MiB
        assert np.count_nonzero(again) == 0
        del again
    assert counters()["cached_bytes"] == 0


def test_released_behind_with_nothing_cached_and_settled_twice() -> None:
    memory.release_free_memory(behind=True)
    memory.release_free_memory(behind=True)
    memory.settle_released()
    memory.settle_released()
    assert counters()["cached_bytes"] == 0


def test_a_fork_after_a_release_behind_works() -> None:
    with memory.reusing_array_pages(unmap_at_end=False):
        block = np.ones(16 * MiB, np.uint8)
        del block  # freed into the cache
    memory.release_free_memory(cached_pages=False, behind=True)
    pid = os.fork()  # waits for the unmapping thread first
    if pid == 0:
        os._exit(0 if memory.array_pages_counters()["cached_bytes"] == 0 else 1)  # type: ignore[index]
    assert os.waitpid(pid, 0)[1] == 0


def test_a_load_leaves_nothing_cached() -> None:
    trace = load(FIXTURES / "demo.pt.trace.json.gz")
    assert trace.num_events > 0
    assert counters()["cached_bytes"] == 0  # handed over as the load returned
    memory.settle_released()


def test_a_failed_load_leaves_nothing_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracelens.errors import InputError
    from tracelens.ingest.kineto import reader

    def read_then_fail(path: Path, options: dict[str, object]) -> None:
        block = np.ones(16 * MiB, np.uint8)  # a big array freed into the read's page cache
        del block
        raise InputError("broken on purpose", path=path)

    monkeypatch.setattr(reader, "_read", read_then_fail)
    trace = tmp_path / "broken.pt.trace.json"
    trace.write_text('{"traceEvents": []}')
    with pytest.raises(InputError):
        load(trace)
    assert counters()["cached_bytes"] == 0  # handed back although the read failed
    memory.settle_released()
