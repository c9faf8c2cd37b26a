"""One OpenBLAS thread in tracelens's own process, none forced on the programs it runs.

numpy loads OpenBLAS, which starts a thread per core as numpy is imported, and each of those threads spins
(``blas_thread_server``, perf) for ~0.1 s of CPU before it sleeps. tracelens does no linear algebra, so that
CPU is waste: 0.26 against 0.16 s of user CPU for a whole ``analyze`` of the demo trace, 0.80 against 0.71 s for
the 406 MB Kineto tile, on 2 cores (wall unchanged there: the spinning thread used the idle core during the
imports). With one BLAS thread nothing spins. OpenBLAS reads the setting once, when numpy is imported, so it
is set before that; a program the CLI runs for the user (``tracelens record``) gets the user's environment back.
"""

from __future__ import annotations

import os
import sys

VARIABLE = "OPENBLAS_NUM_THREADS"
_set_here = False


def one_thread() -> bool:
    """Ask OpenBLAS for one thread, where numpy is not imported yet and the user set nothing; returns whether it
    was set here."""
    global _set_here
    if "numpy" in sys.modules or VARIABLE in os.environ:
        return False
    os.environ[VARIABLE] = "1"
    _set_here = True
    return True


def user_environment() -> dict[str, str]:
    """The environment for a program run on the user's behalf: this process's, without what :func:`one_thread`
    set."""
    env = dict(os.environ)
    if _set_here and env.get(VARIABLE) == "1":
        del env[VARIABLE]
    return env
