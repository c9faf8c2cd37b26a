"""The Kineto reader's thread pools (kineto/threads.py): tasks run in a copy of the submitting thread's context
(numpy's memory handler of memory.reusing_array_pages is a context variable), as the inline executor's do."""

from __future__ import annotations

import contextvars
import os
import sys
import threading

import pytest

from tracelens.ingest.kineto.threads import YIELD_NICENESS, executor

_SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


def test_pool_tasks_see_the_submitters_context() -> None:
    for threads in (1, 2):
        pool = executor(threads)
        try:
            token = _SEEN.set(f"set before submit ({threads})")
            first = pool.submit(_SEEN.get)
            _SEEN.reset(token)
            later = pool.submit(_SEEN.get)
            assert first.result() == f"set before submit ({threads})"
            assert later.result() == "unset"  # the context at submit, not the thread's first one
        finally:
            pool.shutdown(wait=True)


def test_a_task_changing_its_context_leaves_the_submitters() -> None:
    pool = executor(2)
    try:
        assert pool.submit(_SEEN.set, "inside").result() is not None
        assert _SEEN.get() == "unset"
    finally:
        pool.shutdown(wait=True)


def _niceness() -> int:
    thread = threading.get_native_id()
    return os.getpriority(os.PRIO_PROCESS, thread)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_a_yielding_pools_threads_run_niced_below_the_submitter() -> None:
    before = _niceness()
    pool = executor(2, yielding=True)
    try:
        seen = {pool.submit(_niceness).result() for _ in range(8)}
    finally:
        pool.shutdown(wait=True)
    assert seen == {min(before + YIELD_NICENESS, 19)}
    assert _niceness() == before  # the submitting thread keeps its priority
    plain = executor(2)
    try:
        assert plain.submit(_niceness).result() == before
    finally:
        plain.shutdown(wait=True)


def test_a_one_thread_budget_runs_inline_at_the_callers_priority() -> None:
    before = _niceness() if sys.platform.startswith("linux") else None
    pool = executor(1, yielding=True)
    assert pool.submit(lambda: 1 + 1).result() == 2
    if before is not None:
        assert _niceness() == before
