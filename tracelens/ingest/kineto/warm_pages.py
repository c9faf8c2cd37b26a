"""Fresh pages faulted in by a scan worker while it waits for blocks, for the read's big arrays to take.

Why: the 406 MB tile's load faults in ~44K fresh pages (~1-1.5 us each on a ballooned VM), most of them while both
cores are busy (the row chunks' columns in the blocks phase, the table build's arrays in finish). The one scan
worker waits for blocks ~6 ms before the first (the main thread maps the ring and inflates it), ~7 ms more while
the ring's later buffers are mapped, and a few ms later on. Pages it faults in then and hands to the page cache
(memory.donate_pages: the cache of memory.reusing_array_pages, open in the load) are taken by the next big arrays
instead of fresh ones: their faults move from busy cores to an idle one. The pages are ones those arrays map anyway
(the cache serves big arrays before any fresh page), so the read's peak memory does not rise while the warmed
total stays below what its big arrays take (~150 MB at the 406 MB tile)."""

from __future__ import annotations

import mmap
import threading

import numpy as np

from ...memory import donate_pages

# Pages faulted in per job: a worker runs one job at a time between checks for a block (~1 ms at ~1 us a page).
WARM_STEP_BYTES = 4 * 2**20


class PageWarmer:
    """A :class:`.shared_steps.SharedSteps` idle job: each call faults in WARM_STEP_BYTES of fresh pages and
    donates them to the page cache; False once ``total`` bytes are donated or the cache takes none (no scope
    open, no handler, an old kernel: nothing is warmed in vain after the first step)."""

    def __init__(self, total: int) -> None:
        self.left = total
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        with self._lock:
            if self.left <= 0:
                return False
            self.left -= WARM_STEP_BYTES
        buffer = mmap.mmap(-1, WARM_STEP_BYTES)
        try:
            pages = np.frombuffer(buffer, np.uint8)
            pages[:: mmap.PAGESIZE] = 0  # one write a page faults it in (numpy releases the GIL)
            del pages
            moved = donate_pages(buffer)
        finally:
            buffer.close()
        return moved > 0 and self.left > 0
