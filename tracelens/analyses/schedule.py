"""Running the analysis sections on two threads.

Most of a section's time is numpy work on arrays of millions of values (sorts, searches, gathers, reductions),
which releases the GIL, so two sections running at once use both cores of a small machine. Two limits keep
that safe and the document unchanged:

- Sections are pure functions of the trace (their shared derived values are computed once, under a lock, by
  :func:`.columns.memo`), so the order they run in does not change what they return.
- An *exclusive* section (one whose working arrays are the size of the event table: see ``Section.exclusive``)
  never runs beside another exclusive one, so analyze's peak memory is that of one big section plus a small
  one, not two big ones; except the pairs named (``analyses.EXCLUSIVE_PAIRS``), whose peak together was
  measured to fit.

A key may split its own work into tasks (:func:`run_beside`): the calling thread runs them in order, and the run's
other worker takes them only once it has no key of its own to start, so the split adds no thread beside two busy
ones.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

# More threads would add a section's working arrays to the peak memory each, for little more speed: the
# numpy calls that dominate are memory-bound.
MAX_THREADS = 2


# Set by analyze(threads=...) for the work it runs on its own thread (the diagnosis's causes).
_THREADS: contextvars.ContextVar[int | None] = contextvars.ContextVar("tracelens_threads", default=None)


def usable_threads() -> int:
    """Threads the sections may use: as :func:`threads_limit` set, else the cores this process may run on, at
    most :data:`MAX_THREADS`."""
    chosen = _THREADS.get()
    if chosen is not None:
        return max(1, chosen)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


@contextlib.contextmanager
def threads_limit(threads: int | None) -> Iterator[None]:
    """Within the block, :func:`usable_threads` on this thread is ``threads`` (None: unchanged)."""
    token = _THREADS.set(threads) if threads is not None else None
    try:
        yield
    finally:
        if token is not None:
            _THREADS.reset(token)


class _IdleWorkers:
    """Work offered to the workers of a :func:`run_sections` that have nothing of their own to start: the tasks of
    :func:`run_beside` calls made by the keys running on the other workers (each entry a no-argument callable)."""

    def __init__(self, changed: threading.Condition) -> None:
        self.changed = changed  # the run's condition: guards ``offered`` too
        self.offered: deque[Callable[[], object]] = deque()


# The idle workers of the run_sections whose worker computes the current key (None outside one).
_IDLE: contextvars.ContextVar[_IdleWorkers | None] = contextvars.ContextVar(
    "tracelens_idle_workers", default=None
)


class LastReaders:
    """Which shared derived values no section still to run reads, as sections finish.

    ``readers``: per value (its :func:`.derived.memo_family`), the sections that read it; ``keys``: the sections
    of this run. :meth:`finished` returns the values whose last reader in the run has just finished, except
    after the run's last section: then the values stay (dropping them would lower no peak of the run, and a
    caller that goes on with the trace, as ``annotate`` does, would compute them again). Values without a reader
    in the run are never returned (not computed, or computed by a reader the table does not name: kept)."""

    def __init__(self, readers: Mapping[str, Collection[str]], keys: Collection[str]) -> None:
        run = set(keys)
        waiting = {family: set(sections) & run for family, sections in readers.items()}
        self._waiting = {family: sections for family, sections in waiting.items() if sections}
        self._left = len(run)
        self._lock = threading.Lock()  # sections finish on two threads

    def finished(self, section: str) -> list[str]:
        """The values ``section`` was the last reader of (each returned once; none after the last section)."""
        with self._lock:
            self._left -= 1
            done = []
            for family, waiting in self._waiting.items():
                if section in waiting:
                    waiting.discard(section)
                    if not waiting:
                        done.append(family)
            for family in done:
                del self._waiting[family]
            return done if self._left > 0 else []


def run_sections(
    order: Sequence[str],
    compute: Callable[[str], Any],
    *,
    threads: int,
    exclusive: Collection[str] = (),
    pairs: Collection[frozenset[str]] = (),
) -> dict[str, Any]:
    """``{key: compute(key)}`` for every key of ``order``, on up to ``threads`` threads.

    A free thread takes the first key of ``order`` not yet started that may run now (an exclusive key only
    while no other exclusive key runs, or only ones it forms one of ``pairs`` with), so ``order`` is the
    priority: put the longest exclusive work first.
    With one thread the keys run in ``order`` on the calling thread. If computations fail, no new key starts,
    the running ones finish, and the error of the failed key that comes first in ``order`` is raised.
    """
    if threads <= 1 or len(order) <= 1:
        return {key: compute(key) for key in order}
    exclusive = frozenset(exclusive)
    allowed = frozenset(pairs)
    pending = list(order)
    running: set[str] = set()
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}
    changed = threading.Condition()
    idle = _IdleWorkers(changed)

    def next_key() -> str | None:
        """The key to start now (called holding ``changed``); None: nothing may start yet."""
        busy_exclusive = running & exclusive
        for key in pending:
            if key not in exclusive or all(frozenset((key, other)) in allowed for other in busy_exclusive):
                return key
        return None

    def worker() -> None:
        # this thread's context (a copy): the keys it computes may offer their tasks (run_beside)
        _IDLE.set(idle)
        while True:
            with changed:
                while True:
                    if errors:
                        return
                    key = next_key() if pending else None
                    if key is not None:
                        break
                    if idle.offered:  # nothing of the run may start now: a task another key offered
                        break
                    if not pending and not running:
                        return
                    changed.wait()
                if key is None:
                    task = idle.offered.popleft()
                else:
                    pending.remove(key)
                    running.add(key)
            if key is None:
                task()  # records its own outcome (run_beside)
                continue
            try:
                value = compute(key)
            except BaseException as err:  # handed to the calling thread, which raises it
                with changed:
                    errors[key] = err
            else:
                with changed:
                    results[key] = value
            finally:
                with changed:
                    running.discard(key)
                    changed.notify_all()

    # Each thread runs in a copy of the caller's context: its thread limit and numpy's memory handler
    # (memory.reusing_array_pages) hold there too.
    workers = [
        threading.Thread(
            target=contextvars.copy_context().run, args=(worker,), name=f"tracelens-section-{i}", daemon=True
        )
        for i in range(threads)
    ]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if errors:
        raise errors[next(key for key in order if key in errors)]
    return {key: results[key] for key in order}


def run_beside(order: Sequence[str], compute: Callable[[str], Any]) -> dict[str, Any]:
    """``{key: compute(key)}`` for every key of ``order``, taken in order by the calling thread and, inside a key of
    :func:`run_sections`, by the run's workers that have nothing of their own to start (each task in a copy of the
    caller's context); outside one, on :func:`usable_threads` threads as :func:`run_sections` runs them.

    Why: a key that splits its work into tasks for a second thread paid for it (each thread's working arrays in
    fresh pages, both competing for memory bandwidth) while the run's other worker kept the second core busy with
    keys of its own; so the second core takes the tasks only once it is idle. If tasks fail, no new task starts,
    the running ones finish, and the error of the failed key that comes first in ``order`` is raised."""
    idle = _IDLE.get()
    if idle is None or len(order) <= 1:
        return run_sections(order, compute, threads=usable_threads())
    todo = deque(order)
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}
    done = threading.Condition()
    running = 0

    def run_next() -> bool:
        """Computes the next key not yet started; False when none is left (or a task failed)."""
        nonlocal running
        with done:
            if not todo or errors:
                return False
            key = todo.popleft()
            running += 1
        try:
            value = compute(key)
        except BaseException as err:  # raised by the calling thread
            with done:
                errors[key] = err
        else:
            with done:
                results[key] = value
        finally:
            with done:
                running -= 1
                done.notify_all()
        return True

    offered = [partial(contextvars.copy_context().run, run_next) for _ in range(len(order) - 1)]
    with idle.changed:
        idle.offered.extend(offered)
        idle.changed.notify_all()
    while run_next():
        pass
    with idle.changed:  # the offers no idle worker took: nothing left for them
        mine = set(map(id, offered))
        idle.offered = deque(task for task in idle.offered if id(task) not in mine)
    with done:
        while running:
            done.wait()
    if errors:
        raise errors[next(key for key in order if key in errors)]
    return {key: results[key] for key in order}
