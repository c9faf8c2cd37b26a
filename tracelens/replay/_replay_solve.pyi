# Type stub of the compiled replay solver (_replay_solve.c; optional: absent when no C compiler was found at
# install time, then engine.solve uses the numpy batches).
from typing import Any

def solve_sorted_edges(
    order: Any,
    chain_first: Any,
    lag: Any,
    anchor: Any,
    recorded: Any,
    e_pos: Any,
    e_src: Any,
    e_lag: Any,
    e_stale: Any,
    out: Any,
    e_order: Any = ...,
) -> tuple[int, ...]: ...
def schedule_keys(
    time: Any,
    gpu: Any,
    chain_first: Any,
    boundary_time: Any,
    boundary_point: Any,
    boundary_rank: Any,
    edge_src: Any,
    edge_dst: Any,
    key: Any,
    min_rounds: int,
    rounds: int,
) -> int: ...
def order_by_key(key: Any, low: int, span: int, order: Any, position: Any) -> None: ...
def edges_by_position(
    position: Any,
    key: Any,
    edge_src: Any,
    edge_dst: Any,
    e_order: Any,
    e_pos: Any,
    e_src: Any,
    e_stale: Any,
) -> None: ...
def critical_walk(
    t: Any,
    lag: Any,
    chain_first: Any,
    edge_src: Any,
    edge_dst: Any,
    edge_lag: Any,
    start: int,
    bottoms: Any,
    tops: Any,
    head_sources: Any,
) -> int: ...
def running_at(starts: Any, ends: Any, t: Any, out: Any) -> None: ...
def order_by_chains(key: Any, heads: Any, order: Any, position: Any) -> int: ...
def union_overlap(mask: Any, start: Any, end: Any, lo: Any, hi: Any, out: Any) -> int: ...
def host_calls(
    rows: Any,
    thread: Any,
    start: Any,
    end: Any,
    kind: Any,
    call_of: Any,
    offset: Any,
    call_row: Any,
    call_thread: Any,
    call_start: Any,
    call_end: Any,
    marker_kind: int,
    n_threads: int,
) -> int: ...
def thread_union_overlap(
    kind: Any,
    own_kind: Any,
    tid: Any,
    pid: Any,
    start: Any,
    end: Any,
    keys: Any,
    gap_from: Any,
    lo: Any,
    hi: Any,
    out: Any,
) -> int: ...
def launched_steps(step_of: Any, op_launch_call: Any, call_start: Any, op_start: Any, op_end: Any) -> int: ...
def worked_step_span(step_of: Any, skip: Any) -> tuple[int, int]: ...
def path_sums(
    t: Any,
    kind: Any,
    row: Any,
    waited: Any,
    event_kind: Any,
    event_name: Any,
    collective: Any,
    kinds: Any,
    step_of: Any,
    lo: Any,
    hi: Any,
    head: Any,
    by: Any,
    steps: Any,
    step_counts: Any,
    kernels: Any,
    host_calls: Any,
) -> int: ...
def stretch_range(values: Any, lo: Any, hi: Any) -> tuple[int, int]: ...
def thread_runs_at(rows: Any, pid: Any, tid: Any, heads: Any) -> int: ...
def host_calls_by_runs(
    rows: Any,
    heads: Any,
    run_thread: Any,
    start: Any,
    end: Any,
    kind: Any,
    call_of: Any,
    call_row: Any,
    call_thread: Any,
    call_start: Any,
    call_end: Any,
    marker_kind: int,
    n_threads: int,
) -> int: ...
def host_points_by_runs(
    rows: Any,
    heads: Any,
    run_thread: Any,
    start: Any,
    end: Any,
    kind: Any,
    call_of: Any,
    call_row: Any,
    call_thread: Any,
    call_start: Any,
    call_end: Any,
    marker_kind: int,
    n_threads: int,
    time: Any,
    lag: Any,
    anchor: Any,
    chain: Any,
    row: Any,
    point_kind: Any,
    chain_first: Any,
    is_marker: Any,
    start_kind: int,
    end_kind: int,
) -> int: ...
def launch_calls(
    found: Any,
    at: Any,
    launch_row: Any,
    call_of: Any,
    start: Any,
    call_start: Any,
    none: int,
    op_launch_call: Any,
    op_launch_start: Any,
    op_offset: Any,
    step: int = ...,
) -> None: ...
def slot_sums(
    category: Any,
    base: Any,
    name: Any,
    start: Any,
    end: Any,
    flagged: Any,
    count: Any,
    total: Any,
    lo: int,
) -> int: ...
def reaching_rows(start: Any, end: Any, mask: Any, union_start: Any, union_end: Any, out: Any) -> int: ...
def launch_regions(
    op_launch_call: Any,
    call_start: Any,
    chain: Any,
    step_of: Any,
    call_waits: Any,
    seen: Any,
    out: Any,
    bounds: Any,
) -> int: ...
def op_fill(
    op_row: Any,
    kernel_rows: Any,
    kernel_config: Any,
    name: Any,
    excluded: Any,
    config_fill: Any,
    config_finite: Any,
    op_start: Any,
    op_end: Any,
    time: Any,
    fill: Any,
    under: Any,
    recorded: Any,
    counts: Any,
) -> int: ...
