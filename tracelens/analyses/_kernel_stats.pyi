# Type stub of the compiled passes of _kernel_stats.c (optional: absent when no C compiler was found at install time,
# then kernels.py groups with pandas and call_join.launch_rows joins by numpy).
from typing import Any

def group_moments(
    codes: Any, values: Any, count: Any, total: Any, lo: Any, hi: Any, mean: Any, m2: Any
) -> None: ...
def pack_call_keys(ids: Any, rows: Any, is_driver: Any, row_bits: int, shift: int, out: Any) -> int: ...
def join_sorted_keys(
    key: Any, shift: int, row_bits: int, op_ids: Any, out_matched: Any, out_rows: Any
) -> tuple[bool, int]: ...
def first_rule_scans(
    kind: Any,
    category: Any,
    name: Any,
    pid: Any,
    tid: Any,
    start: Any,
    end: Any,
    allowed: Any,
    categories: int,
    min_call: int,
    min_api: int,
) -> tuple[tuple[list[int] | None, bool], tuple[list[int] | None, bool]]: ...
def split_call_keys(
    rows: Any,
    kind: Any,
    ids: Any,
    gpu_kinds: Any,
    runtime: int,
    driver: int,
    gpu: Any,
    row_bits: int,
    shift: int,
    out_op_ids: Any,
    out_call_ids: Any,
    out_keys: Any,
) -> tuple[int, int, int, bool, int, int, int] | None: ...
def long_matched(rows: Any, matched: Any, start: Any, end: Any, min_ns: int, out: Any) -> int: ...
def stream_depth(
    codes: Any, launch_end: Any, gpu_end: Any, order: Any, out_max: Any, out_first: Any, out_last: Any
) -> bool: ...
def launch_threads(ops: Any, rows: Any, pid: Any, tid: Any, out_pid: Any, out_tid: Any) -> int: ...
def late_launch(
    op_start: Any,
    op_pos: Any,
    matched: Any,
    launch_row: Any,
    end: Any,
    gap_starts: Any,
    gap_ends: Any,
    out: Any,
) -> bool: ...
