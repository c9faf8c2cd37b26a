"""Handing freed memory back to the operating system between the big steps of a load or an analysis, and
reusing the pages of freed big arrays within a step.

Both allocators behind the arrays keep what is freed for reuse: glibc's heap keeps freed blocks below its mmap
threshold (arrays up to 32 MB), and Arrow's pool (mimalloc or jemalloc) keeps freed pages of every thread that
allocated them (the fetch and gather threads included). Between steps that free hundreds of megabytes and steps
that allocate as much in other sizes or other threads, that memory stays resident and adds to the peak: after
loading the 41M-row Nsight benchmark export, several hundred MB of the process's resident set was such memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any


def release_free_memory() -> None:
    """Return the memory the C library and Arrow's pool hold free to the OS (each a no-op where unavailable)."""
    if _ARRAY_PAGES is not None:
        _ARRAY_PAGES.flush()  # first: the cache holds pages numpy freed
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        # glibc by its soname first: ctypes.util.find_library imports subprocess (~5 ms of every load)
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        from ctypes.util import find_library

        try:
            libc = ctypes.CDLL(find_library("c") or "libc.so.6")
        except OSError:
            return None
    return getattr(libc, "malloc_trim", None)


_MALLOC_TRIM = _malloc_trim()


@contextlib.contextmanager
def reusing_array_pages() -> Iterator[None]:
    """Within: numpy arrays of 4 MiB or more allocated in this context (and in threads started from a copy of
    it) take the pages of big arrays freed before, instead of fresh pages the kernel must fault in and zero.

    An analysis allocates and frees event-sized temporaries again and again; on the 41M-row benchmark export
    the kernel's page clearing was a fifth of analyze's CPU. Big arrays get fresh pages only once the cache is
    empty, so the cache never adds to the big arrays' own peak; it adds what other allocations (Arrow, small
    arrays) take while it holds pages (measured: none at x1512, +150 MiB or 2.7% at x1000, whose replay mixes
    them). :func:`release_free_memory` (after each section) and the end of the last scope unmap it. A no-op where the compiled handler is absent (no C
    compiler at install), on other platforms than Linux, where another numpy memory handler is set, or with
    ``TRACELENS_ARRAY_PAGES=0``."""
    module, api = _ARRAY_PAGES, _numpy_api()
    if module is None or api is None or os.environ.get("TRACELENS_ARRAY_PAGES", "1") == "0":
        yield
        return
    try:
        replaced = module.swap(api, True)
    except RuntimeError:
        yield
        return
    module.enable(1)
    try:
        yield
    finally:
        module.restore(api, replaced)
        module.enable(-1)


def array_pages_counters() -> dict[str, int] | None:
    """The page handler's counters (allocations, reused and fresh bytes, ...); None where it is absent."""
    return None if _ARRAY_PAGES is None else dict(_ARRAY_PAGES.counters())


def _array_pages() -> ModuleType | None:
    try:
        from . import _array_pages
    except ImportError:
        return None
    return _array_pages if _array_pages.available() else None


def _numpy_api() -> Any:
    """numpy's C-API capsule (the handler calls its PyDataMem_SetHandler), or None."""
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            module = __import__(name, fromlist=["_ARRAY_API"])
        except ImportError:
            continue
        return getattr(module, "_ARRAY_API", None)
    return None


_ARRAY_PAGES = _array_pages()
