"""``read``: the file decompressed in blocks, each decoded by an engine (worker threads for the scanner), the
blocks' columns joined in file order."""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from ...errors import InputError, not_found
from ...memory import raise_heap_thresholds
from ...progress import progress_bar
from ...trace import Trace
from . import native
from .msgspec_engine import block_columns, decode_events, decode_header, decode_rest
from .named_kinds import NameFlags, ready_block
from .native import CHUNK_SLOTS, prepared_block, reserve_rows, scan_document, scan_raw
from .prepare import prepare_block
from .row_chunks import in_chunks, row_chunks
from .shared_steps import SharedSteps
from .split import EventsText, split_stream
from .stream_order import cut_impossible_ends, drop_untimed_gpu_ops
from .table import Columns
from .threads import pool, thread_budget

# The largest block: the ring the main thread inflates into holds in-flight + 1 blocks (3 on 2 cores), and a ring
# that stays in the cache is written (inflate) and read (scan) faster and faults in fewer pages. Measured on the
# 406 MB tile, 2 cores (in-process loads, medians): 16 MiB blocks (80 MiB ring) 0.88 s CPU, of it 0.22 s the
# main thread's inflate + cut; 8 MiB 0.85 s and 0.20 s; 6 MiB the same as 8; below 6 MiB the blocks' fixed
# costs (scan setup, per-block steps, adding) take back what the cache gives. With 8 MiB blocks and twice as
# many in flight as workers the two shares end together: the main thread waited 12 ms for the workers in all,
# and the workers' last blocks ended 13 ms after the last piece was cut (one worker only: +40% wall).
BLOCK_BYTES = 8 * 2**20


# Blocks are scanned by this many threads at once, and a trace smaller than workers x BLOCK_BYTES is cut in
# smaller blocks so that every worker has several.
MAX_WORKERS = 4
# The cores left to the main thread where it inflates a gzipped file (serial, ~80% of the blocks phase busy): with
# as many scan workers as cores, three threads shared 2 cores and the main thread got ~2/3 of one while the
# workers waited for its blocks. Measured on the 406 MB tile, 2 cores, same process, loads alternating (8 each,
# four runs): one worker 0.385-0.426 s wall / 0.599-0.660 s CPU against two workers' 0.392-0.433 / 0.638-0.696 s;
# on a busy machine 0.570 / 0.664 against 0.653 / 0.680 s; 35 MB tile 0.057 / 0.079 against 0.061 / 0.086 s.
# (Fewer blocks in flight too: the ring is 3 buffers instead of 5, 16 MiB less to map.) Not for a plain JSON
# file, which the main thread only reads: there two workers (520 MB tile: 0.51 s against one worker's 0.63 s).
SCAN_THREADS_SPARE = 1
MIN_BLOCK_BYTES = 2 * 2**20
NATIVE_BLOCKS_PER_WORKER = 4


def read(path: Path, **options: Any) -> Trace:
    """Read a Kineto trace (``.json`` or ``.json.gz``; a ``{"traceEvents": [...]}`` object or a bare list).

    ``engine``: "auto" (the native scanner when it was built, else msgspec), "native" or "msgspec". Both
    give the same table.
    """
    with _no_gc():
        return _read(Path(path), options)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while reading: what the read allocates is freed by reference
    counting, and its many container allocations (per-block dicts, lists of names) would set off ~60
    collections (~13 ms at 406 MB). Enabled again after (unless it was off before), also when the read fails."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read(path: Path, options: dict[str, Any]) -> Trace:
    if not path.is_file():
        raise not_found(path) if not path.exists() else InputError("not a file", path=path)
    size = path.stat().st_size
    if size == 0:
        raise InputError("file is empty", path=path)
    json_bytes = _json_size(path, size)
    engine = choose_engine(options.get("engine", "auto"))
    threads = min(MAX_WORKERS, thread_budget()) if engine == "native" else 1
    # Blocks small enough that every thread gets several: the first scan starts after a short inflate, and
    # the last block's scan (the part nothing overlaps) is short. Measured at 15 MiB on 2 cores, ~2 MiB
    # blocks were the fastest of 1, 2, 4 and 8 blocks.
    per_block = json_bytes // (NATIVE_BLOCKS_PER_WORKER * threads) + 1
    block_bytes = min(BLOCK_BYTES, max(MIN_BLOCK_BYTES, per_block)) if threads > 1 else BLOCK_BYTES
    # Where this thread inflates the file, the scan workers leave it a core of its own (SCAN_THREADS_SPARE); a
    # plain JSON file is only read here, and the scan is all the work. With a budget of one thread the blocks
    # are scanned in this one (0 workers).
    spare = SCAN_THREADS_SPARE if _gzipped(path) else 0
    workers = max(1, threads - spare) if threads > 1 else 0
    # The workers' per-block buffers (hundreds of KB to MB, freed block after block) reused in their heaps from the
    # first block on, instead of fresh mappings until a freed one raises glibc's thresholds (memory.py; in base
    # the last block's copy did that, by the file's size): a fresh process's read of the 406 MB tile 4-9K faults
    # fewer in the blocks phase, 1-4K in finish. A no-op where they are higher already (a process that read before).
    raise_heap_thresholds(BLOCK_BYTES)
    columns = Columns(path)
    document: dict[str, Any] = {}
    _add_blocks(columns, document, path, engine, json_bytes, size, block_bytes, workers)
    # ends a stream's order rules out (a lost end timestamp) cut, with a warning: stream_order.py (not looked for
    # where the build found the GPU ops' ends ascending and no op was dropped)
    built = columns.finish(document)
    trace = drop_untimed_gpu_ops(built)
    return cut_impossible_ends(trace, trace is built and columns.gpu_op_ends_ascending)


def _add_blocks(
    columns: Columns,
    document: dict[str, Any],
    path: Path,
    engine: str,
    json_bytes: int,
    size: int,
    block_bytes: int,
    workers: int,
) -> None:
    """The file's blocks read and added to ``columns``, its other fields to ``document``. (A function of its own:
    the last blocks' columns it held are freed before the table build, with the chunks they are slices of.)"""
    with (
        progress_bar(f"reading {path.name}", total=size) as progress,
        row_chunks(json_bytes),  # (set before the workers start: their tasks run in copies of this context)
        _BlockDecoder(path, engine, workers, columns.name_flags) as decoder,
    ):
        # The blocks are inflated into a ring of buffers one longer than the blocks in flight: a block's buffer
        # is read into again only after its scan is done (the decoder holds at most `in_flight` blocks).
        buffers = decoder.in_flight + 1
        for kind, payload, shift in split_stream(path, progress, block_bytes, buffers):
            if kind == "events":
                for block in decoder.submit(payload, shift):
                    columns.add(block)
            elif kind == "header":
                document.update(decode_header(payload, path, shift))
            else:  # the rest: last events and any keys after them, or a whole document
                # Read here while the workers finish the blocks in flight (the scanner releases the GIL), not
                # after them, when the other core would be idle; added after them, in file order. Where the
                # rest is broken, a broken block before it is reported first, as when read in order.
                try:
                    block, meta = _rest(payload, path, shift, engine)
                except InputError:
                    for block in decoder.drain():
                        columns.add(block)
                    raise
                for done in decoder.drain():
                    columns.add(done)
                # (its rows after the others' in the chunks: row_chunks.py)
                columns.add(in_chunks(block, CHUNK_SLOTS))
                document.update(meta)


def _rest(payload: bytes, path: Path, shift: int, engine: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The last piece of the document (see :func:`split_stream`): its block columns, made ready
    (prepare_block), and the document's other fields."""
    scanned = scan_document(payload) if engine == "native" else None
    if scanned is None:
        events, meta = decode_rest(payload, path, shift)
        block = block_columns(events)
        del events
        if engine == "native":
            block["counts"]["msgspec_blocks"] = 1
    else:
        block, meta = scanned
    return prepare_block(block), meta


def choose_engine(requested: str) -> str:
    """The engine that reads the blocks: "native" or "msgspec"."""
    if requested not in ("auto", "native", "msgspec"):
        raise ValueError(f"unknown Kineto engine {requested!r} (auto, native or msgspec)")
    if requested == "native" and native.scanner() is None:
        raise ValueError(
            "the native Kineto scanner was not built (no C compiler at install time): "
            "use engine='auto' or 'msgspec'"
        )
    if requested == "auto":
        return "native" if native.scanner() is not None else "msgspec"
    return requested


def _gzipped(path: Path) -> bool:
    with open(path, "rb") as raw:
        return raw.read(2) == b"\x1f\x8b"


def _json_size(path: Path, size: int) -> int:
    """The trace's uncompressed size: the file's, or for gzip the trailer's ISIZE (the size modulo 2**32,
    so at least the compressed size). Only used to choose a block size."""
    with open(path, "rb") as raw:
        if raw.read(2) != b"\x1f\x8b" or size < 20:
            return size
        raw.seek(-4, os.SEEK_END)
        return max(size, int.from_bytes(raw.read(4), "little"))


class _BlockDecoder:
    """Turns the event blocks cut by :func:`split_stream` into block columns, in file order.

    With the native scanner, blocks are scanned by worker threads (it releases the GIL while it parses),
    with at most ``2 x workers`` blocks in flight, so memory stays a few blocks above the columns; with a
    budget of one thread they are scanned in this one. A block the scanner declines goes to msgspec, which
    reads anything. With the msgspec engine each block is decoded by msgspec as it comes.

    A block is read in two steps (:class:`.shared_steps.SharedSteps`): the scan, on a worker; then its columns
    (the scanner's prepare pass, the names' steps), on whichever thread is free first: this one while it waits
    for its oldest block, or a worker with no block to scan. Measured on the 406 MB tile, 2 cores (one worker):
    the worker did both steps, 0.24 s of CPU against this thread's 0.18 s, and was the blocks phase's pace.
    """

    def __init__(self, path: Path, engine: str, workers: int, flags: NameFlags | None = None) -> None:
        self.path = path
        self.flags = flags  # (the names' flags of the table the blocks go to: see _columns)
        self.engine = engine
        self.workers = workers  # scan threads (0: blocks scanned in this thread)
        # Up to twice as many blocks queued as workers run: this thread keeps inflating the next blocks while
        # the workers scan instead of waiting on the oldest (measured at 15 MiB on 2 cores: ~5 ms of ~65).
        self.in_flight = 2 * max(
            1, workers
        )  # also bounds the blocks not yet done (their buffers are reused after)
        self.pool: Executor | None = None
        self.steps: SharedSteps | None = None
        if engine != "msgspec" and workers:
            self.pool = pool(workers)
            self.steps = SharedSteps(self.pool, workers, self._scan, self._columns)

    def __enter__(self) -> _BlockDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.steps is not None:
            self.steps.close()
        if self.pool is not None:
            self.pool.shutdown(wait=True)

    def submit(self, payload: EventsText, shift: int) -> Iterator[dict[str, Any]]:
        """Queue one block (``shift``: see :func:`split_stream`); yield the blocks that are done, oldest first."""
        if self.steps is None:  # msgspec, or a budget of one thread: the block read here, now
            yield self._msgspec(payload, shift) if self.engine == "msgspec" else self._decode(payload, shift)
            return
        self.steps.submit((payload, shift))
        while len(self.steps) > self.in_flight:
            yield self.steps.next_result()

    def drain(self) -> Iterator[dict[str, Any]]:
        while self.steps is not None and len(self.steps):
            yield self.steps.next_result()

    def _msgspec(self, payload: EventsText, shift: int) -> dict[str, Any]:
        block = block_columns(decode_events(payload.joined(), self.path, shift))
        block["counts"]["msgspec_blocks"] = 1
        return block

    def _decode(self, payload: EventsText, shift: int) -> dict[str, Any]:
        return self._columns(self._scan((payload, shift)))

    def _scan(self, piece: tuple[EventsText, int]) -> tuple[bool, dict[str, Any]]:
        """The first step (reads the block's text): (True, the scanner's output), or (False, msgspec's block
        columns) where the scanner declines the block (invalid JSON, a field of another type): msgspec reads
        anything or says where the JSON is broken."""
        payload, shift = piece
        scanned = scan_raw(payload.pieces())
        if scanned is None:
            return False, self._msgspec(payload, shift)
        # the block's row slots taken here, as its scan ends: in file order where one worker scans (row_chunks.py)
        return True, reserve_rows(scanned, len(payload.tail) + payload.stop - payload.start)

    def _columns(self, read: tuple[bool, dict[str, Any]]) -> dict[str, Any]:
        """The second step: the block's row columns made ready (prepare.prepare_block, then the steps its names
        decide: named_kinds.ready_block), while the other blocks are read."""
        scanned, columns = read
        block = prepared_block(columns) if scanned else prepare_block(columns)
        return block if self.flags is None else ready_block(block, self.flags)
