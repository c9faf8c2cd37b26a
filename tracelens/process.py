"""The CLI's process: set up before a command runs and ended after it.

- One OpenBLAS thread (:func:`one_blas_thread`). numpy loads OpenBLAS, which starts a thread per core as numpy is
  imported, and each of those threads spins (``blas_thread_server``, perf) for ~0.1 s of CPU before it sleeps.
  tracelens does no linear algebra, so that CPU is waste: 0.26 against 0.16 s of user CPU for a whole ``analyze`` of
  the demo trace, 0.80 against 0.71 s for the 406 MB Kineto tile, on 2 cores (wall unchanged there: the spinning
  thread used the idle core during the imports). With one BLAS thread nothing spins. OpenBLAS reads the setting
  once, when numpy is imported, so it is set before that; a program the CLI runs for the user (``tracelens
  record``) gets the user's environment back (:func:`user_environment`).
- Warnings as one line on stderr (:func:`show_warning`), and the end without the interpreter's teardown
  (:func:`exit_at_once`).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

import click

BLAS_THREADS = "OPENBLAS_NUM_THREADS"
_set_here = False


def one_blas_thread() -> bool:
    """Ask OpenBLAS for one thread, where numpy is not imported yet and the user set nothing; returns whether it
    was set here."""
    global _set_here
    if "numpy" in sys.modules or BLAS_THREADS in os.environ:
        return False
    os.environ[BLAS_THREADS] = "1"
    _set_here = True
    return True


def user_environment() -> dict[str, str]:
    """The environment for a program run on the user's behalf: this process's, without what :func:`one_blas_thread`
    set."""
    env = dict(os.environ)
    if _set_here and env.get(BLAS_THREADS) == "1":
        del env[BLAS_THREADS]
    return env


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning raised while the program runs (a reader's, naming the file and what it made of it) as one line on
    stderr, like every other message: Python's own display adds the source file and line of tracelens's code."""
    click.echo(f"tracelens: warning: {message}", err=True)


def exit_at_once(status: int) -> None:
    """End the process with ``status`` now: the exit functions run (``atexit``: coverage, logging, finalizers) and
    stdout and stderr flushed first, then ``os._exit``, which skips the interpreter's teardown: freeing every module
    and object one by one, 25-30 ms of wall and CPU whatever the trace (~5% of the demo trace's whole process),
    where the OS drops the process's memory at once. tracelens has closed its files by then. Returns (the normal
    exit follows) where a thread other than this one is alive (the interpreter would wait for it) or a flush
    fails (a closed pipe: the normal exit reports it as before)."""
    if threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # the normal exit meets it again and handles it as it did
        return
    atexit._run_exitfuncs()  # each once: the interpreter does not run them again
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)
