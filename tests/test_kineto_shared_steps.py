"""SharedSteps (the Kineto reader's blocks: scanned on a worker, made into columns by whichever thread is free):
results in submit order, each item's second step on its first step's result, errors raised in the item's turn,
first steps only on workers, and close dropping what has not started."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tracelens.ingest.kineto.shared_steps import SharedSteps


def _run(workers: int, items: list[int], first_delay: float = 0.0, second_delay: float = 0.0) -> dict:
    main = threading.get_ident()
    firsts: list[int] = []
    seconds: list[tuple[int, bool]] = []

    def first(value: int) -> int:
        firsts.append(threading.get_ident())
        time.sleep(first_delay)
        return value * 10

    def second(value: int) -> tuple[int, int]:
        seconds.append((value, threading.get_ident() == main))
        time.sleep(second_delay)
        return value, value + 1

    pool = ThreadPoolExecutor(workers)
    steps = SharedSteps(pool, workers, first, second)
    results = []
    try:
        for item in items:
            steps.submit(item)
            while len(steps) > 2:
                results.append(steps.next_result())
        while len(steps):
            results.append(steps.next_result())
    finally:
        steps.close()
        pool.shutdown(wait=True)
    return {"results": results, "firsts": firsts, "seconds": seconds, "main": main}


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("items", [[], [7], list(range(40))])
def test_results_in_order_each_second_on_its_first(workers: int, items: list[int]) -> None:
    seen = _run(workers, items)
    assert seen["results"] == [(10 * i, 10 * i + 1) for i in items]
    assert sorted(v for v, _ in seen["seconds"]) == sorted(10 * i for i in items)  # each second step once
    assert seen["main"] not in seen["firsts"]  # first steps on the workers only


def test_the_waiting_thread_takes_second_steps() -> None:
    # slow second steps and a worker busy with first steps: the waiting (main) thread runs some second steps
    seen = _run(1, list(range(12)), first_delay=0.002, second_delay=0.01)
    assert seen["results"] == [(10 * i, 10 * i + 1) for i in range(12)]
    assert any(on_main for _, on_main in seen["seconds"])


@pytest.mark.parametrize("failing_step", ["first", "second"])
def test_an_error_is_raised_in_its_items_turn(failing_step: str) -> None:
    def first(value: int) -> int:
        if failing_step == "first" and value == 3:
            raise ValueError("bad block 3")
        return value

    def second(value: int) -> int:
        if failing_step == "second" and value == 3:
            raise ValueError("bad block 3")
        return value

    pool = ThreadPoolExecutor(2)
    steps = SharedSteps(pool, 2, first, second)
    for item in range(6):
        steps.submit(item)
    got = [steps.next_result() for _ in range(3)]
    assert got == [0, 1, 2]
    with pytest.raises(ValueError, match="bad block 3"):
        steps.next_result()
    assert [steps.next_result() for _ in range(2)] == [4, 5]
    steps.close()
    pool.shutdown(wait=True)


def test_close_drops_steps_not_started() -> None:
    started: list[int] = []
    release = threading.Event()

    def first(value: int) -> int:
        started.append(value)
        release.wait(5)
        return value

    pool = ThreadPoolExecutor(1)
    steps = SharedSteps(pool, 1, first, lambda v: v)
    for item in range(5):
        steps.submit(item)
    while not started:
        time.sleep(0.001)
    steps.close()
    release.set()
    pool.shutdown(wait=True)  # the workers end: nothing left waits for them
    assert started == [0]
    assert len(steps) == 0
