# Type stub of the compiled search of ascending needles (_merge_search.c; optional: absent when no C compiler was
# found at install time, then intervals.search_sorted searches with numpy).
from typing import Any

def first_seen(keys: Any, codes: Any, first_rows: Any) -> int: ...
def search_ascending(haystack: Any, needles: Any, out: Any, right: bool) -> None: ...
def search_near(haystack: Any, needles: Any, out: Any, right: bool) -> None: ...
def merge_runs(
    values: list[Any],
    positions: list[Any],
    bases: list[int],
    out_values: Any,
    out_rank: Any,
    out_base: int,
    origin: int,
) -> None: ...
def cut_levels(
    start: Any,
    end: Any,
    rows: Any,
    category: Any,
    thread: Any,
    chosen: Any,
    levels: int,
    window_starts: Any,
    window_ends: Any,
) -> tuple[Any, tuple[int, ...]] | None: ...
def take_level(cut: Any, level: int) -> tuple[Any, Any, Any]: ...
def complement_pieces(
    starts: Any,
    ends: Any,
    windows: Any,
    window_starts: Any,
    window_ends: Any,
    out_starts: Any,
    out_ends: Any,
) -> int: ...
def level_coverage(
    start: Any,
    end: Any,
    rows: Any,
    category: Any,
    thread: Any,
    chosen: Any,
    levels: int,
    window_starts: Any,
    window_ends: Any,
    out: Any,
) -> bool: ...
def long_group_firsts(
    rows: Any,
    kind: Any,
    category: Any,
    name: Any,
    pid: Any,
    tid: Any,
    start: Any,
    end: Any,
    allowed: Any,
    categories: int,
    by_thread: int,
    min_first: int,
) -> tuple[list[int] | None, int]: ...
def id_rows(
    rows: Any,
    kind: Any,
    ids: Any,
    gpu_kinds: Any,
    runtime: int,
    driver: int,
    gpu: Any,
    out_op_ids: Any,
    out_ids: Any,
    out_rows: Any,
    out_is_driver: Any,
) -> Any: ...
def busy_intervals(
    kind: Any, device: Any, start: Any, end: Any, gpu_kinds: Any
) -> tuple[Any, list[Any]] | None: ...
def busy_take(held: Any, q: int, out_starts: Any, out_ends: Any) -> None: ...
def busy_handover(held: Any, q: int) -> tuple[Any, Any]: ...
def union_cover(
    a_starts: Any,
    a_ends: Any,
    a_windows: Any,
    b_starts: Any,
    b_ends: Any,
    b_windows: Any,
    which: Any,
    which_slot: Any,
    totals: Any,
    window_starts: Any,
    window_ends: Any,
    out_starts: Any,
    out_ends: Any,
) -> int: ...
def measure_before(
    starts: Any, ends: Any, minus_starts: Any, minus_ends: Any, queries: Any, inverse: bool, out: Any
) -> int: ...
def clipped_totals(
    starts: Any,
    ends: Any,
    windows: Any,
    minus_starts: Any,
    minus_ends: Any,
    clip_starts: Any,
    clip_ends: Any,
    inside: bool,
    which: Any,
    which_slot: Any,
    totals: Any,
) -> bool: ...
def union_taken(
    a_starts: Any, a_ends: Any, a_windows: Any, b_starts: Any, b_ends: Any, b_windows: Any
) -> tuple[Any, Any, Any]: ...
def union_cover_taken(
    a_starts: Any,
    a_ends: Any,
    a_windows: Any,
    b_starts: Any,
    b_ends: Any,
    b_windows: Any,
    which: Any,
    which_slot: Any,
    totals: Any,
    window_starts: Any,
    window_ends: Any,
) -> tuple[Any, Any] | None: ...
