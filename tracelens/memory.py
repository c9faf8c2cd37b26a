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
import glob
import mmap
import os
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any


def release_free_memory(cached_pages: bool = True, behind: bool = False) -> None:
    """Return the memory the C library and Arrow's pool hold free to the OS (each a no-op where unavailable), and
    the pages of freed big arrays (:func:`reusing_array_pages`) unless ``cached_pages`` is False: those go back
    anyway when the last reusing scope closes, and a caller that keeps one open across steps (the CLI, across the
    read and the analysis) gives them to the next step's arrays instead of fresh pages.

    ``behind``: the C library's trim, and the cached pages where no reusing scope is open any more (one closed
    with ``unmap_at_end=False``), are done by a thread of their own, so that the caller goes on at once (the end of
    a load: ~6 ms of the kernel freeing pages, on one core, after the 406 MB Kineto tile); the memory is back a
    few ms later. It was resident before: the peak does not change. :func:`settle_released` waits for it."""
    if behind and _ARRAY_PAGES is not None:
        _ARRAY_PAGES.release_behind(_MALLOC_TRIM is not None)  # unmaps, then trims glibc's heaps
    else:
        if cached_pages and _ARRAY_PAGES is not None:
            _ARRAY_PAGES.flush()  # first: the cache holds pages numpy freed
        if _MALLOC_TRIM is not None:
            _MALLOC_TRIM(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


def settle_released() -> None:
    """Waits until what :func:`release_free_memory` handed to a thread of its own (``behind``) is back."""
    if _ARRAY_PAGES is not None:
        _ARRAY_PAGES.settle()


def _libc() -> ctypes.CDLL | None:
    try:
        # glibc by its soname first: ctypes.util.find_library imports subprocess (~5 ms of every load)
        return ctypes.CDLL("libc.so.6")
    except OSError:
        from ctypes.util import find_library

        try:
            return ctypes.CDLL(find_library("c") or "libc.so.6")
        except OSError:
            return None


_LIBC = _libc()
_MALLOC_TRIM: Callable[[int], int] | None = getattr(_LIBC, "malloc_trim", None)


def raise_heap_thresholds(size: int) -> bool:
    """Raises glibc's dynamic mmap threshold to about ``size`` (at most 32 MiB) and its trim threshold to twice that,
    where they are lower, as glibc itself does when the program frees a mapped block of that size: one untouched
    ``malloc`` + ``free`` (a map and an unmap, no page faulted). Both stay dynamic (they only ever rise); an
    explicit ``mallopt`` would fix them for the rest of the process.

    Why: below the mmap threshold (128 KiB at start) a block comes from the thread's heap and its pages are reused
    when it is freed; above it, every block is a fresh mapping whose pages the kernel faults in and zeroes, and the
    trim threshold hands heap tops back to be faulted in again. A Kineto read's workers allocate and free each
    block's scan buffers (hundreds of KB to MB): in a fresh process, until some freed block had raised the
    thresholds (e.g. the copy of the file's last block), each took fresh pages (the 406 MB tile's first read: 5-13K
    more faults, by thread timing). Returns whether the thresholds could be raised (glibc only)."""
    if _MALLOC is None or _FREE is None or size <= 0:
        return False
    # (the block's header and page rounding kept within the maximum)
    block = _MALLOC(min(size, _MMAP_THRESHOLD_MAX - 2 * mmap.PAGESIZE))
    if not block:
        return False
    _FREE(block)
    return True


# glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: a larger freed block raises nothing
_MMAP_THRESHOLD_MAX = 32 << 20
_MALLOC: Callable[[int], int | None] | None = None
_FREE: Callable[[int], None] | None = None
if _MALLOC_TRIM is not None and getattr(_LIBC, "gnu_get_libc_version", None) is not None:  # glibc's malloc
    _malloc, _free = _LIBC.malloc, _LIBC.free  # type: ignore[union-attr]
    _malloc.restype, _malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    _free.restype, _free.argtypes = None, [ctypes.c_void_p]
    _MALLOC, _FREE = _malloc, _free


def huge_pages_pay() -> bool:
    """The page policy: whether new memory should come in transparent huge pages (2 MiB) rather than 4 KiB pages.

    Huge pages pay everywhere (a fault per 2 MiB instead of 512) except on a virtual machine that hands free huge
    pages back to its host (virtio-balloon free page reporting, :func:`host_reclaims_free_pages`): such a host
    takes back every free 2 MiB block the guest reports, so a fresh huge page is faulted in twice, by the guest
    and by the host: 2.0 s of system time per GiB here, against 0.33 s in 4 KiB pages (0.13 s for a huge page not
    yet reported). ``TRACELENS_HUGE_PAGES=1`` / ``0`` forces the answer.

    Both users follow it: :func:`small_pages` (everything a load or an analysis maps) and :func:`page_buffer`
    (buffers asked for huge pages explicitly: the Kineto reader's inflate ring)."""
    forced = os.environ.get("TRACELENS_HUGE_PAGES")
    if forced in ("0", "1"):
        return forced == "1"
    return not host_reclaims_free_pages()


def page_buffer(size: int, huge: bool) -> bytearray | mmap.mmap:
    """A zeroed buffer of ``size`` bytes that is written again and again (a ring of them, reused in turn: the
    Kineto reader inflates a trace's blocks into one), with find/rfind, slicing and the buffer interface: an
    anonymous mapping, freed with its last reference as a bytearray is.

    Its pages are faulted in by the first write: ``huge`` (:func:`huge_pages_pay`'s answer, asked once per ring)
    advises transparent huge pages (a few dozen faults for a 40 MiB ring instead of ~10k, ~40 ms of CPU at 80
    MiB); else the 4 KiB pages are mapped in one call (MAP_POPULATE: 15% less CPU than ~10k separate faults,
    measured). Below 2 MiB, or where anonymous mappings are unavailable, a bytearray."""
    if size < _HUGE_PAGE or not hasattr(mmap, "MAP_ANONYMOUS"):
        return bytearray(size)
    advise = getattr(mmap, "MADV_HUGEPAGE", None) if huge else None
    populate = 0 if huge else getattr(mmap, "MAP_POPULATE", 0)
    try:
        buffer = mmap.mmap(
            -1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate
        )  # private: not shmem
        if advise is not None:
            buffer.madvise(advise)
    except (OSError, ValueError):  # no anonymous mappings or no madvise here: a heap buffer
        return bytearray(size)
    return buffer


_HUGE_PAGE = 2 * 2**20


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Within: the process's new memory comes in 4 KiB pages, not transparent huge pages, where they do not pay
    (:func:`huge_pages_pay`: a virtual machine whose balloon reports free memory to its host).

    Why process-wide: a load or an analysis maps and unmaps event-sized buffers again and again (numpy, Arrow's
    pool), whose allocators advise huge pages themselves: the 41M-row benchmark export's analyze took 14-16 GiB
    of fresh huge pages, at ~2 s of system time per GiB on such a host.

    While the outermost scope is open (Linux's PR_SET_THP_DISABLE, put back after): memory already mapped keeps
    its pages. A no-op elsewhere and where huge pages pay (``TRACELENS_HUGE_PAGES=1`` forces that;
    ``TRACELENS_HUGE_PAGES=0`` forces small pages)."""
    global _thp_scopes, _thp_before
    with _thp_lock:
        if _thp_scopes == 0:
            _thp_before = None if huge_pages_pay() else _disable_huge_pages()
        _thp_scopes += 1
    try:
        yield
    finally:
        with _thp_lock:
            _thp_scopes -= 1
            if _thp_scopes == 0 and _thp_before is not None and _prctl is not None:
                _prctl(_PR_SET_THP_DISABLE, _thp_before, 0, 0, 0)
                _thp_before = None


_PR_SET_THP_DISABLE, _PR_GET_THP_DISABLE = 41, 42
_prctl: Callable[..., int] | None = (
    getattr(_LIBC, "prctl", None) if sys.platform.startswith("linux") else None
)
if _prctl is not None:  # int option, then four unsigned longs: the kernel refuses garbage in unused ones
    _prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4  # type: ignore[attr-defined]
    _prctl.restype = ctypes.c_int  # type: ignore[attr-defined]
_thp_lock = threading.Lock()
_thp_scopes = 0
_thp_before: int | None = None  # the process's flag before the outermost scope, None when not changed


def _disable_huge_pages() -> int | None:
    """Sets the process's no-huge-pages flag; returns the one before, or None when it could not be set."""
    if _prctl is None:
        return None
    before = _prctl(_PR_GET_THP_DISABLE, 0, 0, 0, 0)
    if before < 0 or _prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
        return None
    return before


def host_reclaims_free_pages() -> bool:
    """Whether a virtio balloon reports this machine's free memory to its host (feature bit 5, REPORTING)."""
    for path in glob.glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*/features"):
        try:
            with open(path) as fh:
                if fh.read(6)[5:6] == "1":  # one character per feature bit, bit 0 first
                    return True
        except OSError:
            continue
    return False


# The smallest array the page cache serves within a scope given ``rows`` (reusing_array_pages): from 1 MiB where a
# byte per row is that much (the masks: 1.5 MB at the 406 MB Kineto tile's 1.5M events), so that the masks and
# every wider event-sized array share one cache that both section threads reuse; glibc's per-thread heaps held
# them before, where what one thread freed could not serve the other, and glibc trimmed and refaulted its heap
# tops (25K of that trace's 196K page faults, and its peak 34 MiB higher). On smaller traces the cache's boundary
# would cut through the event-sized arrays (at 136K events the int64 columns, 1.04 MiB, in the cache, the masks
# and int32 columns in glibc's heaps: each holds what the other could have reused, peak +6%), so there it stays
# at 4 MiB, as in a read (whose scope does not say its rows; benchmarks/results/kflt15.md).
MID_ARRAYS_MIN_ROWS = 1 << 20
MID_ARRAY_BYTES = 1 << 20
BIG_ARRAY_BYTES = 4 << 20


@contextlib.contextmanager
def reusing_array_pages(rows: int | None = None, unmap_at_end: bool = True) -> Iterator[None]:
    """Within: numpy arrays of 4 MiB or more allocated in this context (and in threads started from a copy of
    it) take the pages of big arrays freed before, instead of fresh pages the kernel must fault in and zero;
    given the ``rows`` of the trace at work, from 1 MiB from :data:`MID_ARRAYS_MIN_ROWS` rows on (the size
    before is put back at the scope's end).

    An analysis allocates and frees event-sized temporaries again and again; on the 41M-row benchmark export
    the kernel's page clearing was a fifth of analyze's CPU. Big arrays get fresh pages only once the cache is
    empty, so the cache never adds to the big arrays' own peak; it adds what other allocations (Arrow, small
    arrays) take while it holds pages (measured: none at x1512, +150 MiB or 2.7% at x1000, whose replay mixes
    them). :func:`release_free_memory` (after each section) and the end of the last scope unmap it (not with
    ``unmap_at_end=False``: the caller's ``release_free_memory(behind=True)`` then does). A no-op where the compiled handler is absent (no C
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
    smallest = None
    if rows is not None:
        smallest = MID_ARRAY_BYTES if rows >= MID_ARRAYS_MIN_ROWS else BIG_ARRAY_BYTES
        smallest = module.set_min_big(smallest)  # the one before, put back after
    try:
        yield
    finally:
        if smallest is not None:
            module.set_min_big(smallest)
        module.restore(api, replaced)
        if unmap_at_end:
            module.enable(-1)
        else:
            module.leave()


def donate_pages(buffer: Any) -> int:
    """Hands the pages of a :func:`page_buffer` no longer needed to the big arrays (:func:`reusing_array_pages`,
    while a scope is open): they take them instead of fresh pages the kernel faults in and zeroes (the Kineto
    reader's 40 MiB inflate ring, freed just before the table build maps ~140 MB of arrays). The buffer stays
    usable, with zero pages; returns the bytes moved (0: none, e.g. a bytearray, no scope open or no handler)."""
    if _ARRAY_PAGES is None or not isinstance(buffer, mmap.mmap) or buffer.closed:
        return 0
    moved: int = _ARRAY_PAGES.donate(buffer)
    return moved


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
