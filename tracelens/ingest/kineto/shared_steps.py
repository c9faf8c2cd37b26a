"""Items made in two steps by worker threads and the thread that waits for them: the first step on a worker, the
second on whichever thread is free first (a worker with no first step waiting, or the consumer while it waits
for its oldest item); results in the order submitted.

Why: the Kineto reader's blocks are scanned (first step) and then made into columns (second step). With one scan
worker beside the inflating main thread (2 cores), the worker did both steps and was the blocks phase's longer
share while the main thread waited for it; now the main thread takes the second step of blocks already scanned
while it waits, and the worker takes it only when it has no block to scan, so the two shares even out whatever
the machine (benchmarks/results/kld13.md)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any


class _Item:
    __slots__ = ("value", "error", "done")

    def __init__(self, value: Any) -> None:
        self.value = value  # the input, then the first step's result, then the second's
        self.error: BaseException | None = None
        self.done = False


class SharedSteps:
    """``workers`` threads of ``pool`` run ``first`` on each submitted value, then ``second`` on its result where
    no first step is waiting; :meth:`next_result` gives the oldest item's ``second`` result (or raises what either
    step raised), running waiting second steps meanwhile."""

    def __init__(
        self, pool: Executor, workers: int, first: Callable[[Any], Any], second: Callable[[Any], Any]
    ) -> None:
        self._first, self._second = first, second
        self._lock = threading.Condition()
        self._firsts: deque[_Item] = deque()  # submitted, not started
        self._seconds: deque[_Item] = deque()  # first step done, second not started
        self._order: deque[_Item] = deque()  # submitted, not yet returned by next_result
        self._closed = False
        for _ in range(workers):
            pool.submit(self._work)

    def __len__(self) -> int:
        """Items submitted and not yet returned."""
        return len(self._order)

    def submit(self, value: Any) -> None:
        item = _Item(value)
        self._order.append(item)
        with self._lock:
            self._firsts.append(item)
            self._lock.notify_all()

    def next_result(self) -> Any:
        """The oldest item's result (raises its error); second steps of any item run here while it is not done."""
        item = self._order.popleft()
        while True:
            with self._lock:
                if item.done:
                    break
                if not self._seconds:
                    self._lock.wait()
                    continue
                job = self._seconds.popleft()
            self._run(job, second=True)
        if item.error is not None:
            raise item.error
        return item.value

    def close(self) -> None:
        """Steps not started are dropped; the workers end after the steps they run (wait for them on the pool)."""
        with self._lock:
            self._closed = True
            self._firsts.clear()
            self._seconds.clear()
            self._lock.notify_all()
        self._order.clear()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not (self._firsts or self._seconds or self._closed):
                    self._lock.wait()
                if self._firsts:  # a first step before any second: only workers run first steps
                    item, second = self._firsts.popleft(), False
                elif self._seconds:
                    item, second = self._seconds.popleft(), True
                else:
                    return
            self._run(item, second)

    def _run(self, item: _Item, second: bool) -> None:
        try:
            value = (self._second if second else self._first)(item.value)
        except BaseException as err:  # raised by next_result, in the item's turn
            item.error, item.value = err, None
            done = True
        else:
            item.value = value
            done = second
        with self._lock:
            if done:
                item.done = True
            elif not self._closed:
                self._seconds.append(item)
            self._lock.notify_all()
