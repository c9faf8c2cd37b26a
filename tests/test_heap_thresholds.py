"""memory.raise_heap_thresholds: glibc's dynamic mmap threshold raised by one untouched malloc + free (checked in
fresh processes, where the threshold is still glibc's 128 KiB start: a 4 MiB block is then a mapping of its own)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from tracelens import memory

# In a fresh process: whether a 4 MiB malloc after the call (raised or not) is a mapping of its own (mallinfo2's
# hblks, glibc >= 2.33), and the call's answer.
_CHILD = r"""
import ctypes, sys
from tracelens import memory
libc = ctypes.CDLL("libc.so.6")
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
raised = memory.raise_heap_thresholds(int(sys.argv[1])) if int(sys.argv[1]) else None
before = libc.mallinfo2().hblks
block = libc.malloc(4 << 20)
mapped = libc.mallinfo2().hblks - before
libc.free(block)
print(raised, mapped)
"""


def _child(size: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(size)], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _glibc_with_mallinfo2() -> bool:
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return hasattr(libc, "mallinfo2") and hasattr(libc, "gnu_get_libc_version")


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="glibc >= 2.33 only")
def test_raised_threshold_serves_a_4_mib_block_from_the_heap() -> None:
    assert _child(0) == "None 1"  # glibc's start: 4 MiB is a mapping
    assert _child(8 << 20) == "True 0"  # raised to 8 MiB: from the heap
    assert _child(2 << 20) == "True 1"  # raised to 2 MiB only: still a mapping
    assert _child(64 << 20) == "True 0"  # capped at glibc's 32 MiB maximum, not ignored


def test_nothing_to_raise() -> None:
    assert memory.raise_heap_thresholds(0) is False
    assert memory.raise_heap_thresholds(-1) is False
