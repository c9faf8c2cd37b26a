# Type stub of the compiled SQLite page walker (_sqlite_pages.c; optional: absent when no C compiler was found at
# install time). tracelens/ingest/nsys/pages.py is its one caller.
from collections.abc import Sequence
from typing import Any

MODE_INT: int
MODE_TEXT: int
MODE_CAST: int
MODE_ROWID: int
MODE_DICT: int
OK: int
DECLINE: int
CORRUPT: int

def scan(
    path: str,
    page_size: int,
    reserved: int,
    page_count: int,
    root: int,
    columns: Sequence[tuple[int, int, int]],
    lo: int | None,
    hi: int | None,
    capacity: int,
) -> tuple[int, int, list[tuple[Any, ...]]]: ...
