"""Plain-Python reference computations the tests compare tracelens against.

Deliberately independent of ``tracelens.intervals`` (no numpy, no shared code): one sort and one merge.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of half-open [start, end) intervals; an end before its start counts as the start
    (the timeline table clamps such events to zero length)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        e = max(e, s)
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def sqlite_rows(path: Path, sql: str) -> list[tuple]:
    """``sql`` run on the SQLite file ``path`` by the standard library's sqlite3 (read-only), text as its bytes:
    the reference the page walker's tables are checked against."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = bytes
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()
