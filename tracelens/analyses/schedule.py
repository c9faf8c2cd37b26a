"""Running the analysis sections on two threads.

Most of a section's time is numpy work on arrays of millions of values (sorts, searches, gathers, reductions),
which releases the GIL, so two sections running at once use both cores of a small machine. Two limits keep
that safe and the document unchanged:

- Sections are pure functions of the trace (their shared derived values are computed once, under a lock, by
  :func:`.columns.memo`), so the order they run in does not change what they return.
- Each section has a memory *weight* (``Section.weight``: its measured added peak, in bytes per event), and two
  sections run at once only while their weights' sum stays within :data:`PAIR_BUDGET`, so analyze's peak
  memory is bounded by the worst pair the budget admits, not by the two biggest sections at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

# More threads would add a section's working arrays to the peak memory each, for little more speed: the
# numpy calls that dominate are memory-bound.
MAX_THREADS = 2

# The most the weights (bytes of added peak per event, ``Section.weight``) of the sections running at once may
# sum to. 60 admits what the earlier rule (a big section beside a small one, never two big ones) admitted at
# the benchmark export's size (attribution 44 + sync 15), plus the pairs of the leaner big sections (launch 23,
# ranges 21, memcpy 12, communication 18, ops 25; occupancy 36 beside the lighter of them); not attribution
# beside another big one, nor occupancy beside ops. benchmarks/results/section_peaks.md has the figures.
PAIR_BUDGET = 60.0


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


def run_sections(
    order: Sequence[str],
    compute: Callable[[str], Any],
    *,
    threads: int,
    weights: Mapping[str, float] | None = None,
    budget: float = PAIR_BUDGET,
) -> dict[str, Any]:
    """``{key: compute(key)}`` for every key of ``order``, on up to ``threads`` threads.

    A free thread takes the first key of ``order`` not yet started that may run now: one whose weight (0 where
    ``weights`` has none) plus the weights of the keys running stays within ``budget``, or any key while none
    runs (so a key heavier than the budget runs alone, and every key runs). ``order`` is the priority: put the
    longest heavy work first. With one thread the keys run in ``order`` on the calling thread. If computations
    fail, no new key starts, the running ones finish, and the error of the failed key that comes first in
    ``order`` is raised.
    """
    if threads <= 1 or len(order) <= 1:
        return {key: compute(key) for key in order}
    weight = {key: float((weights or {}).get(key, 0.0)) for key in order}
    pending = list(order)
    running: set[str] = set()
    results: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}
    changed = threading.Condition()

    def next_key() -> str | None:
        """The key to start now (called holding ``changed``); None: nothing may start yet."""
        if not running:
            return pending[0]
        room = budget - sum(weight[key] for key in running)
        return next((key for key in pending if weight[key] <= room), None)

    def worker() -> None:
        while True:
            with changed:
                while True:
                    if not pending or errors:
                        return
                    key = next_key()
                    if key is not None:
                        break
                    changed.wait()
                pending.remove(key)
                running.add(key)
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
