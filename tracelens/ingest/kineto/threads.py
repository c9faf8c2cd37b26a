"""The threads a read may use, and the executors that run its work."""

from __future__ import annotations

import contextvars
import os
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


def executor(threads: int) -> Executor:
    return _ContextPool(threads) if threads > 1 else Inline()


def pool(threads: int) -> Executor:
    """A pool of ``threads`` threads, one included (beside the submitting thread, which has other work)."""
    return _ContextPool(threads)
