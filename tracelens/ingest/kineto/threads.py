"""The threads a read may use, and the executors that run its work."""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa


def thread_budget() -> int:
    """Threads this reader may use: the cores, or fewer when Arrow was told so (``pyarrow.set_cpu_count``,
    as the multi-rank workers do: one core each, already busy)."""
    return max(1, min(os.cpu_count() or 1, pa.cpu_count()))


class Inline(Executor):
    """An executor that runs each task at once in the calling thread (when only one thread may be used)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:  # re-raised by future.result(), as a pool would
            future.set_exception(err)
        return future


class _ContextPool(ThreadPoolExecutor):
    """A thread pool whose tasks run in a copy of the submitting thread's context (taken at submit): numpy's
    memory handler (memory.reusing_array_pages) holds in them too."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def executor(threads: int, yielding: bool = False) -> Executor:
    """A pool of ``threads`` (or :class:`Inline` for one). ``yielding``: its threads run at a lower priority
    than the submitting thread (:func:`yield_to_submitter`)."""
    if threads <= 1:
        return Inline()
    return _ContextPool(threads, initializer=yield_to_submitter if yielding else None)


# How far a yielding pool's threads are niced below the thread that feeds them (Linux nice steps; CFS weights
# 1024 against 110 at 10, so the feeder gets a core whenever it can run).
YIELD_NICENESS = 10


def yield_to_submitter() -> None:
    """Lowers the calling thread's priority by :data:`YIELD_NICENESS` (Linux only: elsewhere the call would set
    the whole process's). For the Kineto reader's scan workers: on 2 cores the main thread (inflate and cut,
    serial) and two workers compete for the cores, and the main thread, the one the blocks phase waits for, lost
    ~0.05 s a load waiting to run (its run-queue wait in /proc's schedstat); the workers' scans, queued ahead,
    catch up once it waits. A thread's niceness cannot be raised again unprivileged, so only for a pool's own
    threads, which end with it. A no-op where the priority cannot be changed."""
    if not sys.platform.startswith("linux"):
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + YIELD_NICENESS)
    except OSError:
        pass
