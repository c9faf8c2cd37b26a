"""The native scanner's fast paths at the end of a block: Kineto's events (CPU ops, runtime calls, kernels,
copies, flows, as the profiler writes them) cut at every byte. Every cut must be read as msgspec reads it: a
whole number of events gives msgspec's columns, any other cut is declined (msgspec fails on it). And no read
may pass the cut: each cut is scanned where it ends right before a page that cannot be read (Linux; a read
past it stops the process), and as a view into the whole text (a read past the cut would see the text that
follows). The keys read in Kineto's member order (one compare with the comma, the key and its colon, the
value's first byte after it unchecked) and the ids read with their length predicted are the reads most
exposed to a block's end."""

from __future__ import annotations

import ctypes
import mmap
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
import pytest
from test_kineto_native import assert_same_block, needs_scanner, reference

from tracelens.ingest.kineto import native as native_engine

_EVENTS = [
    '"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: DivBackward1","pid":1102,'
    '"tid":1262,"ts":1712195497316362.0,"dur":63.813,"args":{"External id":6350469,"Sequence number":18456,'
    '"Fwd thread id":1,"Ev Idx":0}',
    '"ph":"X","cat":"cpu_op","name":"aten::div","pid":1102,"tid":1262,"ts":1712195497316371.8,"dur":49.743,'
    '"args":{"External id":6350471,"Ev Idx":2}',
    '"ph":"f","id":6348421,"pid":1102,"tid":1262,"ts":1712195497316368.8,"cat":"fwdbwd","name":"fwdbwd","bp":"e"',
    '"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1102,"tid":1102,"ts":1712195495518588.0,'
    '"dur":5.364,"args":{"External id":1870,"cbid":211,"correlation":140696}',
    '"ph":"s","id":140696,"pid":1102,"tid":1102,"ts":1712195495518588.0,"cat":"ac2g","name":"ac2g"',
    '"ph":"X","cat":"kernel","name":"void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>'
    '(cudnn::bn_fw_tr_1C11_args<float>)","pid":0,"tid":7,"ts":1712195495537802.0,"dur":58.463,'
    '"args":{"External id":1873,"queued":0,"device":0,"context":1,"stream":7,"correlation":140748,'
    '"registers per thread":40,"shared memory":8336,"blocks per SM":25.6,"warps per SM":409.600006,'
    '"grid":[2048,1,1],"block":[512,1,1],"est. achieved occupancy %":75}',
    '"ph":"f","id":140748,"pid":0,"tid":7,"ts":1712195495537802.0,"cat":"ac2g","name":"ac2g","bp":"e"',
    '"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,'
    '"ts":1712195495537900.5,"dur":1.5,"args":{"External id":1880,"device":0,"context":1,"stream":7,'
    '"correlation":140750,"bytes":4096,"memory bandwidth (GB/s)":2.7}',
]


def _events_text(events: list[str]) -> str:
    """The events as a block holds them in Kineto's layout (kineto.split cuts a block into these)."""
    return ",\n".join("{\n    " + e + "\n  }" for e in events)


@contextmanager
def _before_a_guard_page(size: int) -> Iterator[ctypes.Array[ctypes.c_char] | None]:
    """size bytes that end right before a page mapped without read access (None where that cannot be
    made here)."""
    if not sys.platform.startswith("linux"):
        yield None
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    page = mmap.PAGESIZE
    length = (size // page + 2) * page
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    address = libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        yield None
        return
    try:
        guard = address + length - page
        if libc.mprotect(guard, page, 0) != 0:  # PROT_NONE
            yield None
            return
        yield (ctypes.c_char * size).from_address(guard - size)
    finally:
        libc.munmap(address, length)


def _guarded_cuts(data: bytes, cuts: range) -> Iterator[tuple[int, memoryview]]:
    """Each cut of data as a view into the whole, and (where a guard page can be made) again as the
    bytes right before it."""
    whole = memoryview(data)
    with _before_a_guard_page(len(data)) as region:
        for cut in cuts:
            yield cut, whole[:cut]
            if region is not None:
                ctypes.memmove(ctypes.addressof(region) + len(data) - cut, data, cut)
                yield cut, memoryview(region).cast("B")[len(data) - cut :]


def _event_ends(text: str) -> set[int]:
    ends, at = set(), 0
    while (at := text.find("\n  }", at)) >= 0:
        at += 4
        ends.add(at)
    return ends


@needs_scanner
@pytest.mark.parametrize("last", range(len(_EVENTS)))
def test_every_cut_of_a_block_is_read_as_msgspec_reads_it(last: int) -> None:
    # every event of the list before the one cut, twice (the second time with its lengths predicted), then
    # the cut one; cuts from the start of the second round on
    events = _EVENTS + _EVENTS[: last + 1]
    text = _events_text(events)
    data = text.encode()
    ends = _event_ends(text)
    first_cut = len(_events_text(_EVENTS)) - 1
    for cut, piece in _guarded_cuts(data, range(first_cut, len(data) + 1)):
        assert len(piece) == cut and bytes(piece) == data[:cut]
        got = native_engine.scan_block_columns((piece,))
        if cut in ends:
            assert got is not None, cut
            assert_same_block(got, reference(b"[" + data[:cut] + b"]"))
            continue
        try:
            want = reference(b"[" + data[:cut] + b"]")
        except msgspec.DecodeError:
            assert got is None, (cut, data[cut - 20 : cut])
            continue
        assert got is not None, cut  # (a cut msgspec reads: trailing whitespace after an event)
        assert_same_block(got, want)
