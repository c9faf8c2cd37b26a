"""memory.page_buffer's 4 KiB-page buffers mapped in by MADV_POPULATE_WRITE through ctypes (the GIL released),
else by MAP_POPULATE as before: either way a zeroed, writable buffer of the size asked, its pages already
mapped (writing it faults none in)."""

from __future__ import annotations

import mmap
import resource

import pytest

from tracelens import memory


def _faults_writing(buffer: mmap.mmap | bytearray) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with memoryview(buffer) as view:
        for at in range(0, len(view), mmap.PAGESIZE):  # one byte a page: no temporaries faulted in
            view[at] = 1
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _check(buffer: mmap.mmap | bytearray, size: int) -> None:
    assert len(buffer) == size
    assert (
        bytes(buffer[:4096]) == bytes(min(size, 4096))
        and buffer[-1] == 0
        and buffer.rfind(b"\x00", 0) == size - 1
    )


@pytest.mark.skipif(not hasattr(mmap, "MAP_ANONYMOUS"), reason="no anonymous mappings")
def test_populated_buffer_is_zeroed_sized_and_mapped() -> None:
    size = 4 << 20
    buffer = memory.page_buffer(size, huge=False)
    assert isinstance(buffer, mmap.mmap)
    _check(buffer, size)
    # its 1024 pages are in already (a few faults allowed: the test's own temporaries)
    assert _faults_writing(buffer) < 64
    assert buffer[0] == 1 and buffer[mmap.PAGESIZE] == 1


@pytest.mark.skipif(not hasattr(mmap, "MAP_POPULATE"), reason="no MAP_POPULATE")
def test_without_madvise_populate_the_buffer_is_mapped_with_map_populate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kernel before 5.14 answers MADV_POPULATE_WRITE with EINVAL: the untouched mapping is made again with
    MAP_POPULATE; where there is no madvise at all, MAP_POPULATE at once."""
    calls: list[int] = []

    def refusing(address: int, length: int, advice: int) -> int:
        calls.append(advice)
        return -1

    size = 3 << 20
    for stand_in in (refusing, None):
        monkeypatch.setattr(memory, "_MADVISE", stand_in)
        buffer = memory.page_buffer(size, huge=False)
        assert isinstance(buffer, mmap.mmap)
        _check(buffer, size)
        assert _faults_writing(buffer) < 64
    assert calls == [memory._MADV_POPULATE_WRITE]


def test_huge_and_small_buffers_are_unchanged() -> None:
    """Huge-page buffers are advised, not populated; below 2 MiB a bytearray."""
    small = memory.page_buffer(100, huge=False)
    assert isinstance(small, bytearray)
    _check(small, 100)
    huge = memory.page_buffer(4 << 20, huge=True)
    _check(huge, 4 << 20)
