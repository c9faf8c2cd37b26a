"""Cutting the decompressed byte stream into pieces the engines decode: a header, blocks of complete events
(cut at Kineto's event separator, or at the last top-level comma the scanner finds in other layouts), and the
document's rest."""

from __future__ import annotations

import mmap
import re
from codecs import BOM_UTF8
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...memory import donate_pages, huge_pages_pay, page_buffer
from ..compression import GZIP_ERRORS, gzip_inflater, gzip_reader
from . import native

# Kineto's writer puts each event at two spaces of indentation: "  {", ..., "  },". A newline cannot
# occur inside a JSON string, so this byte sequence only ever sits between two top-level events.
_EVENT_SEPARATOR = b"\n  },\n  {"
_SEPARATOR_KEEP = len(b"\n  }")  # bytes of the separator that end the previous event
_SEPARATOR_SKIP = len(b"\n  },")  # where the next event's text begins


# --- splitting the byte stream into decodable pieces -------------------------------------------------


class _Ring:
    """Buffers that blocks are inflated into, reused in turn: a block that a yielded events piece refers to
    keeps its buffer (:meth:`keep`) until ``count - 1`` more have been kept; any other block's buffer is read
    into again at once (its bytes were copied). A buffer has find/rfind, slicing and the buffer interface the
    cutting needs (:func:`memory.page_buffer`: in huge pages where the page policy says they pay)."""

    def __init__(self, count: int, size: int) -> None:
        self.count, self.size = count, size
        self.buffers: list[bytearray | mmap.mmap] = []
        self.turn = 0
        self.huge_pages = huge_pages_pay()

    def next(self) -> bytearray | mmap.mmap:
        slot = self.turn % self.count
        if slot == len(self.buffers):
            self.buffers.append(page_buffer(self.size, self.huge_pages))
        return self.buffers[slot]

    def keep(self) -> None:
        self.turn += 1

    def donate(self) -> None:
        """Once no piece refers to the buffers any more: their pages go to the big arrays the table build
        maps next (:func:`memory.donate_pages`), not back to the kernel."""
        for buffer in self.buffers:
            donate_pages(buffer)
        self.buffers = []


def _blocks(path: Path, progress: Any, block_bytes: int, ring: _Ring | None) -> Iterator[Any]:
    """The file's (inflated) bytes in blocks of ``block_bytes``, the last one shorter: with a ring, each full
    block is the ring's next buffer (the last, short one a bytes copy), so that the ~400 MB of a large trace are
    not written to fresh pages block after block; without, each block is a new bytes object."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        if ring is None:
            stream = gzip_reader(raw) if gzipped else raw

            def read() -> Any:
                return stream.read(block_bytes)

        else:
            stream = gzip_inflater(raw) if gzipped else raw

            def read() -> Any:
                buffer = ring.next()
                filled = _fill(stream, buffer)
                return buffer if filled == block_bytes else bytes(memoryview(buffer)[:filled])

        done = 0
        first = True
        while True:
            try:
                block = read()
            except GZIP_ERRORS as err:
                raise InputError(f"truncated or corrupt gzip data ({err})", path=path) from None
            if not block:
                return
            if first:
                first = False
                if block[: len(BOM_UTF8)] == BOM_UTF8:
                    # a byte-order mark before the JSON text (RFC 8259 lets a parser ignore it): the text begins
                    # after it; this first block is copied once (not a ring buffer any more)
                    block = bytes(block[len(BOM_UTF8) :])
            position = raw.tell()
            progress.advance(position - done)
            done = position
            yield block


def _fill(stream: Any, buffer: Any) -> int:
    """Reads into ``buffer`` until it is full or the stream ends (a raw reader's readinto may return less);
    the bytes read."""
    with memoryview(buffer) as view:
        filled = 0
        while filled < len(view):
            count = stream.readinto(view[filled:])
            if not count:
                break
            filled += count
        return filled


_NOT_SPACE = re.compile(rb"[^ \t\r\n]")


def _events_array_start(buf: bytes, path: Path) -> tuple[str, int] | None:
    """Where the event list begins: ("list", offset after '['), ("object", offset of the traceEvents key),
    ("whole", 0) when the document must be decoded in one piece, None when more bytes are needed."""
    first = _NOT_SPACE.search(buf)  # not buf.lstrip(): that copies the whole block
    if first is None:
        return None
    head = buf[first.start() : first.start() + 1]
    if head == b"[":
        return "list", first.start() + 1
    if head != b"{":
        raise InputError("not JSON (does not start with '{' or '[')", path=path)
    key = buf.find(b'"traceEvents"')
    if key < 0:
        return None
    i = key + len(b'"traceEvents"')
    rest = buf[i : i + 64].lstrip()
    if not rest or (rest[:1] == b":" and not rest[1:].strip()):
        return None  # the block ends inside `"traceEvents": [`: wait for the next
    if rest[:1] != b":" or rest[1:].lstrip()[:1] != b"[":
        return "whole", 0
    return "object", key


_HEADER_LIMIT = 256 * 2**20  # no "traceEvents": [ in this many bytes: decode the document in one piece


class EventsText:
    """The complete events of one block, as the JSON list ``[`` + ``tail`` + ``block[start:stop]`` + ``]``,
    where ``tail`` is the unfinished last event of the previous block. Left unjoined: the native scanner
    reads the block in place, and only msgspec needs the list as one bytes object."""

    __slots__ = ("block", "start", "stop", "tail")

    def __init__(self, tail: bytes, block: bytes, start: int, stop: int) -> None:
        self.tail, self.block, self.start, self.stop = tail, block, start, stop

    def joined(self) -> bytes:
        return b"".join((b"[", self.tail, memoryview(self.block)[self.start : self.stop], b"]"))

    def pieces(self) -> tuple[bytes | memoryview, ...]:
        """Bare comma-separated event sequences, in order: the event the tail begins (the only bytes
        copied), then the rest of the block in place."""
        body = memoryview(self.block)[self.start : self.stop]
        if not self.tail:
            return (body,)
        end = self.block.find(_EVENT_SEPARATOR, self.start, self.stop)
        if end < 0:
            return (self.tail + body,)
        return (
            self.tail + body[: end - self.start + _SEPARATOR_KEEP],
            body[end - self.start + _SEPARATOR_SKIP :],
        )


def split_stream(
    path: Path, progress: Any, block_bytes: int, buffers: int = 0
) -> Iterator[tuple[str, Any, int]]:
    """Yield ("header", bytes, shift), ("events", EventsText, shift) ..., then ("rest", bytes, shift).

    Blocks in Kineto's layout are cut at its event separator and not copied here; only the unfinished last
    event of a block (``tail``) is carried over to the next. Blocks in any other layout (minified,
    re-indented, a bare list) are cut at the last top-level comma between two events, found by the native
    scanner's structural pass; there the tail and the block are joined first. ``shift`` maps a byte offset
    in the JSON list of a piece to one in the file's JSON text (offset + shift), so that a decoding error can
    say where in the file it is.

    ``buffers`` > 0: the blocks are inflated into that many buffers reused in turn (:class:`_Ring`); an
    "events" piece may then refer to a buffer that is read into again once ``buffers - 1`` more events pieces
    have been yielded, so the caller must be done with each piece by then. The header and the rest are bytes.
    """
    tail = b""
    mode: str | None = None  # None until the start of the event list is found
    # Other layouts are cut with the scanner (when built); an "event" longer than this is not one: the
    # rest is then kept whole and decoded in one piece (invalid JSON, reported there).
    cut_any_layout = native.scanner() is not None
    kineto_layout = True  # until a block shows no Kineto separator
    tail_limit = 4 * block_bytes
    held: list[bytes] = []  # "whole" mode: the document in blocks, joined once at the end
    consumed = 0  # bytes of JSON text read before the current block
    ring = _Ring(buffers, block_bytes) if buffers > 0 else None
    for block in _blocks(path, progress, block_bytes, ring):
        origin = consumed  # where block[0] lies in the JSON text
        consumed += len(block)
        start = 0  # where this block's events begin in it
        if mode == "whole":
            held.append(bytes(block))  # kept to the end: not a view of a reused buffer
            continue
        if mode is None:
            # Everything so far, from the first byte of the file: the block itself (read in place, not copied)
            # when the start of the event list is in the first block, as in every Kineto file.
            if tail:
                block = tail = tail + block
            found = _events_array_start(block, path)
            if found is None or found[0] == "whole":
                tail = bytes(block)  # kept: not a view of a reused buffer
                if found is not None or len(tail) > _HEADER_LIMIT:
                    mode, held, tail = "whole", [tail], b""
                continue
            mode, offset = found
            if mode == "object":
                yield "header", bytes(block[:offset]) + b'"traceEvents": []}', 0
                start = block.find(b"[", offset) + 1
            else:
                start = offset
            origin, tail = 0, b""  # block: the whole file so far; its events begin at `start`
        cut = block.rfind(_EVENT_SEPARATOR, start) if kineto_layout else -1
        if cut < 0 and cut_any_layout:
            data = tail + memoryview(block)[start:]
            comma = native.scanner().last_event_boundary(data)
            if comma > 0:
                kineto_layout = False
                yield "events", EventsText(b"", data, 0, comma), origin + start - len(tail) - 1
                tail = data[comma + 1 :]
                continue
            cut_any_layout = len(data) <= tail_limit
        if cut < 0 or (cut == start and not tail):
            tail += block[start:]
            continue
        # payload[1] is the tail's first byte, which lies len(tail) bytes before block[start]
        if ring is not None and block is ring.buffers[ring.turn % ring.count]:
            ring.keep()  # the piece refers to this buffer
        yield "events", EventsText(tail, block, start, cut + _SEPARATOR_KEEP), origin + start - len(tail) - 1
        tail = block[cut + _SEPARATOR_SKIP :]
    tail_origin = consumed - len(tail)
    if mode == "object":
        prefix = b'{"traceEvents": ['
        yield "rest", prefix + tail, tail_origin - len(prefix)
    elif mode == "list":
        yield "rest", b"[" + tail, tail_origin - 1
    else:
        held.append(tail)
        yield "rest", b"".join(held), 0
    if ring is not None:  # the caller asked for more after the rest: it is done with every events piece
        ring.donate()
