"""The Kineto reader's thread pools (kineto/threads.py): tasks run in a copy of the submitting thread's context
(numpy's memory handler of memory.reusing_array_pages is a context variable), as the inline executor's do."""

from __future__ import annotations

import contextvars

from tracelens.ingest.kineto.threads import executor

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
