"""Fetching an Nsight Systems export's event tables in parallel, each turned into rows as soon as it arrives.

The Arrow fetch releases the GIL, so several tables are read at once (one connection per thread); the reading
thread builds each table's :class:`.columns.Part` while the others are still being fetched. Host tables come
first (NVTX, the biggest, leading, in rowid chunks fetched and compacted in parallel). Their nesting depth is
left to the store, which computes it when the column is first read (no analysis reads it).
"""

from __future__ import annotations

import os
import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from ...memory import release_free_memory
from .columns import Part
from .database import Database, rowid_bounds
from .nvtx import join_nvtx_chunks, nvtx_chunk, nvtx_chunk_queries
from .queries import HOST_TABLES, TABLE_NVTX

# A builder takes the fetched table out of a one-item list: an object passed as an argument stays referenced
# by the caller until the call returns, and the NVTX builder frees its batch halfway.
Builder = Callable[[list[pa.Table]], Part | None]


def fetch_parts(
    db: Database, queries: dict[str, tuple[str, list[str]]], builders: dict[str, Builder]
) -> tuple[list[Part], dict[str, int]]:
    """Every queried table's part (tables without rows left out; host tables' parts marked ``host``) and the
    row count of each table."""
    order = sorted(queries, key=lambda name: (name not in HOST_TABLES, name != TABLE_NVTX))
    workers = max(2, min(4, os.cpu_count() or 1))
    # (table, query) per fetch: NVTX_EVENTS in rowid chunks (at least one per worker), the others whole
    tasks = [
        (name, sql)
        for name in order
        for sql in (
            nvtx_chunk_queries(db, queries[name][0], workers) if name == TABLE_NVTX else [queries[name][0]]
        )
    ]
    # Biggest fetches first (cells: rows x columns), so that the last ones to finish are small and both
    # cores stay busy to the end (a 5M-row kernel table fetched last kept one core busy alone for seconds).
    cells = {name: _rows(db, name) * len(queries[name][1]) for name in order}
    nvtx_chunks = max(1, sum(1 for n, _ in tasks if n == TABLE_NVTX))
    tasks.sort(key=lambda task: -cells[task[0]] / (nvtx_chunks if task[0] == TABLE_NVTX else 1))
    chunks_left = {name: sum(1 for n, _ in tasks if n == name) for name in order}
    row_counts: dict[str, int] = {}
    built: dict[str, Part | None] = {}
    # Each fetched table goes through a queue, not a Future's result: a finished Future keeps its result
    # alive as long as the Future is referenced, which held every raw table (NVTX text included) until
    # the last one was read.
    arrived: queue.Queue[tuple[str, int, list[pa.Table], BaseException | None]] = queue.Queue()

    def fetch(at: int, name: str, sql: str) -> None:
        try:
            names = queries[name][1]
            table = (
                nvtx_chunk(db, sql, names) if name == TABLE_NVTX else db.arrow(sql, names).combine_chunks()
            )
            arrived.put((name, at, [table], None))
            del table
        except BaseException as err:  # handed to the reading thread, which raises it
            arrived.put((name, at, [], err))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fetch, at, name, sql) for at, (name, sql) in enumerate(tasks)]
        pending: dict[str, dict[int, pa.Table]] = {}
        try:
            for _ in tasks:
                name, at, box, error = arrived.get()
                if error is not None:
                    raise error
                pending.setdefault(name, {})[at] = box.pop()
                chunks_left[name] -= 1
                if chunks_left[name]:
                    continue
                chunks = pending.pop(name)
                box = [join_nvtx_chunks([chunks.pop(i) for i in sorted(chunks)])]
                del chunks
                row_counts[name] = box[0].num_rows
                part = built[name] = builders[name](box)  # the part keeps copies of the columns it uses
                if part is not None:
                    part.host = name in HOST_TABLES
                del part
                release_free_memory()  # the fetched table's buffers, freed by this thread and the fetching one
        except BaseException:
            for future in futures:  # one failed table fails the read: do not wait for the others
                future.cancel()
            raise
    parts = [p for name in order if (p := built[name]) is not None and p.n]
    del built
    return parts, row_counts


def _rows(db: Database, table: str) -> int:
    """About how many rows a table has, from its rowid bounds."""
    bounds = rowid_bounds(db.small, table)
    return bounds[1] - bounds[0] + 1 if bounds else 0
