"""One computation started on a second thread beside the calling one (:func:`start_beside`).

Why: at the start of ``analyze`` both section threads first ask for the event columns (:func:`.columns.event_columns`);
one builds them while the other waits for them (~27 ms on the 406 MB Kineto tile, on the sections' critical path).
Their reads are numpy casts and Arrow kernels that release the GIL, so the waiting core can take one of them.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

from .schedule import usable_threads


def start_beside(compute: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``compute()`` on a new thread (in a copy of the caller's context: its thread limit, numpy's memory
    handler) and return the call that waits for it and gives its value (or raises its error). Where the sections may
    use one thread only (:func:`.schedule.usable_threads`), ``compute()`` runs here and now, on the calling thread."""
    if usable_threads() <= 1:
        value = compute()
        return lambda: value
    done: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(compute())
        except BaseException as err:  # raised by the caller's wait
            failed.append(err)

    thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
    thread.start()

    def wait() -> Any:
        thread.join()
        if failed:
            raise failed[0]
        return done[0]

    return wait
