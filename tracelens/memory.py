"""Handing freed memory back to the operating system between the big steps of a load or an analysis.

Both allocators behind the arrays keep what is freed for reuse: glibc's heap keeps freed blocks below its mmap
threshold (arrays up to 32 MB), and Arrow's pool (mimalloc or jemalloc) keeps freed pages of every thread that
allocated them (the fetch and gather threads included). Between steps that free hundreds of megabytes and steps
that allocate as much in other sizes or other threads, that memory stays resident and adds to the peak: after
loading the 41M-row Nsight benchmark export, several hundred MB of the process's resident set was such memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable


def release_free_memory() -> None:
    """Return the memory the C library and Arrow's pool hold free to the OS (each a no-op where unavailable)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()
