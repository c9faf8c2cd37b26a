"""The memory policy of a load (memory.small_pages, memory.reusing_array_pages around the reader): the process's
huge-page flag and numpy's handler are set inside and put back after, and the trace read is the same with and
without them."""

from __future__ import annotations

import ctypes
import mmap
import sys
from pathlib import Path
from typing import Any

import pytest

import tracelens.ingest.nsys as nsys_reader
from tracelens import load, memory

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name  # type: ignore[no-redef]

FIXTURES = Path(__file__).parent.parent / "fixtures"
NSYS = FIXTURES / "nsys/handmade_nsys2026.sqlite"
KINETO = FIXTURES / "gpu/pytorch_tiny-kernels_cuda.pt.trace.json.gz"
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or memory._prctl is None, reason="PR_SET_THP_DISABLE is Linux's"
)


def huge_pages_off() -> int:
    """The process's PR_GET_THP_DISABLE flag (1: no transparent huge pages)."""
    libc = ctypes.CDLL("libc.so.6")
    return int(
        libc.prctl(
            ctypes.c_int(42), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )
    )


@linux_only
def test_forced_small_pages_set_the_flag_inside_and_restore_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "0")
    assert huge_pages_off() == 0
    with memory.small_pages():
        assert huge_pages_off() == 1
        with memory.small_pages():
            assert huge_pages_off() == 1
        assert huge_pages_off() == 1  # the inner scope leaves the outer one's setting
    assert huge_pages_off() == 0
    with pytest.raises(KeyError), memory.small_pages():
        raise KeyError("boom")
    assert huge_pages_off() == 0


@linux_only
def test_a_flag_set_before_is_left_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "0")
    libc = ctypes.CDLL("libc.so.6")
    args = [ctypes.c_ulong(0)] * 3
    assert libc.prctl(ctypes.c_int(41), ctypes.c_ulong(1), *args) == 0
    try:
        with memory.small_pages():
            assert huge_pages_off() == 1
        assert huge_pages_off() == 1
    finally:
        libc.prctl(ctypes.c_int(41), ctypes.c_ulong(0), *args)


@linux_only
def test_the_environment_keeps_huge_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "1")
    with memory.small_pages():
        assert huge_pages_off() == 0


def test_without_a_reporting_host_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACELENS_HUGE_PAGES", raising=False)
    monkeypatch.setattr(memory, "host_reclaims_free_pages", lambda: False)
    called: list[Any] = []
    monkeypatch.setattr(memory, "_disable_huge_pages", lambda: called.append(1))
    with memory.small_pages():
        pass
    assert not called


def test_the_host_check_reads_the_balloon_s_reporting_bit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    device = tmp_path / "virtio_balloon/virtio3"
    device.mkdir(parents=True)
    (device / "features").write_text("0110010000000000\n")  # bits 1, 2 and 5 (REPORTING)
    pattern = str(tmp_path / "virtio_balloon/virtio*/features")
    real_glob = memory.glob.glob
    monkeypatch.setattr(memory.glob, "glob", lambda _: real_glob(pattern))
    assert memory.host_reclaims_free_pages()
    (device / "features").write_text("0110000000000000\n")
    assert not memory.host_reclaims_free_pages()
    (device / "features").unlink()
    assert not memory.host_reclaims_free_pages()


@linux_only
@pytest.mark.skipif(memory._ARRAY_PAGES is None, reason="the page handler is not compiled here")
def test_the_reader_runs_inside_the_policy_and_the_process_gets_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "0")
    seen: list[tuple[str | None, int]] = []
    read = nsys_reader.read

    def recording_read(*args: Any, **kwargs: Any) -> Any:
        seen.append((get_handler_name(), huge_pages_off()))
        return read(*args, **kwargs)

    monkeypatch.setattr(nsys_reader, "read", recording_read)
    before = get_handler_name()
    load(NSYS)
    assert seen == [("tracelens_array_pages", 1)]
    assert get_handler_name() == before
    assert huge_pages_off() == 0
    assert memory.array_pages_counters()["cached_bytes"] == 0  # type: ignore[index]


@pytest.mark.parametrize("path", [NSYS, KINETO], ids=["nsys", "kineto"])
def test_a_load_reads_the_same_trace_with_and_without_the_policy(
    monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "1")
    monkeypatch.setenv("TRACELENS_ARRAY_PAGES", "0")
    without = load(path)
    monkeypatch.setenv("TRACELENS_HUGE_PAGES", "0")
    monkeypatch.setenv("TRACELENS_ARRAY_PAGES", "1")
    module = memory._ARRAY_PAGES
    # small arrays go through the handler too
    before = module.set_min_big(64 * 1024) if module is not None else 0
    try:
        with_policy = load(path)
    finally:
        if module is not None:
            module.set_min_big(before)
    assert with_policy.events.equals(without.events)
    assert with_policy.metadata == without.metadata


@pytest.mark.parametrize(
    ("forced", "balloon", "expected"),
    [
        (None, False, True),  # huge pages pay by default
        (None, True, False),  # not where the host takes reported free pages back
        ("1", True, True),  # the environment forces them on
        ("0", False, False),  # or off
        ("", True, False),  # another value: the host decides
        ("yes", False, True),
    ],
)
def test_the_page_policy(
    monkeypatch: pytest.MonkeyPatch, forced: str | None, balloon: bool, expected: bool
) -> None:
    if forced is None:
        monkeypatch.delenv("TRACELENS_HUGE_PAGES", raising=False)
    else:
        monkeypatch.setenv("TRACELENS_HUGE_PAGES", forced)
    monkeypatch.setattr(memory, "host_reclaims_free_pages", lambda: balloon)
    assert memory.huge_pages_pay() is expected
    # small_pages applies the same answer to the whole process
    called: list[int] = []
    monkeypatch.setattr(memory, "_disable_huge_pages", lambda: called.append(1))
    with memory.small_pages():
        pass
    assert called == ([] if expected else [1])


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping holding ``address`` (/proc/self/smaps)."""
    flags: list[str] = []
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            low, high = (int(x, 16) for x in head.split("-"))
            inside = low <= address < high
        elif inside and line.startswith("VmFlags:"):
            flags = line.split()[1:]
    return flags


@linux_only
@pytest.mark.parametrize("huge", [True, False])
def test_page_buffers_ask_huge_pages_only_where_they_pay(huge: bool) -> None:
    buffer = memory.page_buffer(4 << 20, huge)
    if not isinstance(buffer, mmap.mmap):  # no anonymous mappings or no transparent huge pages in this kernel
        pytest.skip("page_buffer fell back to a heap buffer here")
    address = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    flags = _vm_flags(address)
    assert flags, "the buffer is an anonymous mapping"
    assert ("hg" in flags) is huge  # MADV_HUGEPAGE
    assert bytes(buffer[:16]) == bytes(16)
    assert isinstance(memory.page_buffer(1 << 20, huge), bytearray)  # below 2 MiB: a heap buffer
