"""The scan worker's idle job (SharedSteps ``idle``: reader's PageWarmer faulting in pages for the page cache while it
waits for blocks): results unchanged and in order whatever the job does (runs, raises, ends), the warmer bounded
and stopping where the cache takes nothing, and the load's table equal with and without it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tracelens import load
from tracelens.ingest.kineto import reader, row_chunks
from tracelens.ingest.kineto.native import scanner
from tracelens.ingest.kineto.shared_steps import SharedSteps
from tracelens.ingest.kineto.warm_pages import WARM_STEP_BYTES, PageWarmer
from tracelens.memory import reusing_array_pages

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _results(items: list[int], idle: object) -> list[int]:
    pool = ThreadPoolExecutor(1)
    steps = SharedSteps(pool, 1, lambda v: v * 10, lambda v: v + 1, idle)  # type: ignore[arg-type]
    out = []
    try:
        for item in items:
            steps.submit(item)
            while len(steps) > 2:
                out.append(steps.next_result())
        while len(steps):
            out.append(steps.next_result())
    finally:
        steps.close()
        pool.shutdown(wait=True)
    return out


@pytest.mark.parametrize("items", [[], [1], list(range(50))])
def test_results_in_order_with_an_idle_job_that_runs_ends_or_raises(items: list[int]) -> None:
    expected = [v * 10 + 1 for v in items]
    calls = {"n": 0}
    lock = threading.Lock()

    def bounded() -> bool:
        with lock:
            calls["n"] += 1
            return calls["n"] < 5

    def raising() -> bool:
        raise RuntimeError("idle job failed")

    assert _results(items, None) == expected
    assert _results(items, bounded) == expected
    assert calls["n"] <= 5  # ended when it said so
    assert _results(items, raising) == expected  # an idle job's error drops the job, not the steps
    assert (
        _results(items, lambda: True) == expected
    )  # one that never ends: steps still go first, close ends it


def test_the_warmer_stops_after_its_total_and_where_no_cache_takes_pages() -> None:
    outside = PageWarmer(8 * WARM_STEP_BYTES)
    assert outside() is False  # no scope open: the cache takes nothing, no more steps
    with reusing_array_pages():
        warmer = PageWarmer(2 * WARM_STEP_BYTES)
        steps = 0
        while warmer() and steps < 10:
            steps += 1
        assert steps <= 2 and warmer.left <= 0
        assert warmer() is False


@pytest.mark.skipif(scanner() is None, reason="the native scanner is not built")
def test_a_read_with_warmed_pages_gives_the_table_of_one_without(monkeypatch: pytest.MonkeyPatch) -> None:
    path = FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz"
    monkeypatch.setattr(row_chunks, "MIN_JSON_BYTES", 0)  # chunks (and so the warmer) for a small file
    monkeypatch.setattr(reader, "BLOCK_BYTES", 64 * 1024)  # many blocks
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 64 * 1024)
    monkeypatch.setattr(reader, "thread_budget", lambda: 2)  # one scan worker beside this thread (gzip)
    monkeypatch.setattr(reader, "WARM_BYTES", 0)
    without = load(path, engine="native")
    monkeypatch.setattr(reader, "WARM_BYTES", 64 * 2**20)
    made: list[PageWarmer] = []
    monkeypatch.setattr(reader, "PageWarmer", lambda total: made.append(PageWarmer(total)) or made[-1])
    warmed = load(path, engine="native")
    assert made  # a warmer for the worker (whether it ran depends on when the blocks came)
    assert warmed.events.equals(without.events) and warmed.devices.equals(without.devices)
    assert warmed.metadata == without.metadata
