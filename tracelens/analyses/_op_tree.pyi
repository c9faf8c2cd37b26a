# Type stub of the compiled op-tree pass (_op_tree.c; optional: absent when no C compiler was found at install
# time, then ops/tree.py searches with numpy).
from typing import Any

OP_TREE_ROWS: int
OP_TREE_START_ROWS: int
GROUP_ROWS_TIES: int

def op_tree(
    start: Any,
    end: Any,
    bounds: Any,
    t: Any,
    edges: Any,
    outer: Any,
    outermost: Any,
    innermost: Any,
    rows: Any = ...,
    starts_by_row: bool = ...,
) -> bool: ...
def group_rows(
    pid: Any,
    tid: Any,
    start: Any,
    rows: Any,
    candidates: Any,
    rows_out: Any,
    start_out: Any,
    bounds: Any,
    ties: Any = ...,
) -> int: ...
def names_of_kind(kind: Any, name: Any, code: int, seen: Any) -> bool: ...
def kind_rows(kind: Any, name: Any, tid: Any, tid_ok: Any, code: int, nvtx: Any, out: Any) -> int: ...
def group_rows_found(
    pid: Any,
    tid: Any,
    start: Any,
    rows: Any,
    rows_out: Any,
    start_out: Any,
    keys: Any,
    bounds: Any,
    found: Any,
    tie_positions: Any,
) -> int: ...
def classify_kind_rows(
    kind: Any,
    code: int,
    pid: Any,
    tid: Any,
    start: Any,
    row_code: Any,
    keys: Any,
    bounds: Any,
    next: Any,
    found: Any,
) -> int: ...
def place_kind_rows(row_code: Any, next: Any, rows_out: Any, tie_positions: Any) -> int: ...
def place_rows(found: Any, rows: Any, at: Any, into: Any) -> bool: ...
def launch_groups(keys: Any, pid: Any, tid: Any, t: Any, at: Any, t_out: Any, edges: Any) -> int: ...
def row_thread_codes(pid: Any, tid: Any, rows: Any, codes: Any, keys: Any, found: Any) -> int: ...
def covered_times(
    first: Any, last: Any, union_starts: Any, union_ends: Any, cover_first: Any, cover_last: Any, steps: Any
) -> bool: ...
def time_span(a: Any, b: Any) -> tuple[int, int]: ...
def launched_calls(
    kind: Any, code_a: int, code_b: int, call_corr: Any, wanted: Any, rows_out: Any, corr_out: Any
) -> int: ...
def call_columns(kind: Any, code_a: int, code_b: int, *outputs: Any) -> int: ...
