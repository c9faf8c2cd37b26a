"""One computation started on a second thread beside the calling one (:func:`start_beside`).

Why: at the start of ``analyze`` both section threads first ask for the event columns (:func:`.columns.event_columns`);
one builds them while the other waits for them (~27 ms on the 406 MB Kineto tile, on the sections' critical path).
Their reads are numpy casts and Arrow kernels that release the GIL, so the waiting core can take one of them (and
numpy.ma's import: :func:`import_numpy_ma`).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

from .schedule import usable_threads


def start_beside(compute: Callable[[], Any], then: Callable[[], Any] | None = None) -> Callable[[], Any]:
    """Start ``compute()`` on a new thread (in a copy of the caller's context: its thread limit, numpy's memory
    handler) and return the call that waits for it and gives its value (or raises its error); ``then()`` (its value
    dropped) runs after it there, before the wait returns. Where the sections may use one thread only
    (:func:`.schedule.usable_threads`), ``compute()`` runs here and now, on the calling thread (``then`` not at all:
    nothing runs beside)."""
    if usable_threads() <= 1:
        value = compute()
        return lambda: value
    done: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(compute())
            if then is not None:
                then()
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


def import_numpy_ma() -> None:
    """Import numpy.ma (a no-op once imported). numpy's plain ``np.unique`` imports it on its first call (``_unique1d``
    asks ``np.ma.is_masked``): ~8 ms of Python (and a tokenizer regex compiled) on whichever section thread first
    calls one (the attribution's, the sections' critical thread, on the 406 MB Kineto tile), holding the GIL. Beside
    the event columns' reads (numpy and Arrow work that releases it), it costs the sections next to nothing."""
    import numpy.ma  # noqa: F401
