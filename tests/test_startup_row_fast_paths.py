"""The row passes of analyses/startup.py against the code they replaced (kept below as reference copies), on
hypothesis-generated traces and inputs:

- host categories: kinds by comparison and int8 arithmetic, names tested on the dictionary's candidates
  (``names.host_category_codes``) against the reference copy of its earlier code;
- the candidate names (``names.candidate_names``): a superset of every name a predicate accepts;
- rows of a few names by comparison (``names.rows_named``) against a gather of the table;
- the busy overlap of a few intervals (``_busy_overlap``) against ``overlap_with_union`` with the merged union;
- the first row of each (thread, name) pair (``startup_first.first_of_each``) against pandas' ``duplicated``;
- ``one_time_work`` as a whole (every field of OneTime) against the reference copy of its earlier compute.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import grouping, startup, startup_first
from tracelens.analyses.columns import (
    DeviceBusy,
    device_busy,
    event_columns,
    thread_key,
)
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.names import (
    CPU,
    HOST_CATEGORY_PRIORITY,
    INPUT,
    LAUNCH,
    SYNC,
    candidate_names,
    code_bits,
    code_mask,
    dictionary_bits,
    is_allocation,
    is_blocking_sync,
    is_compile_name,
    is_graph_launch,
    is_input,
    is_kernel_launch,
    is_one_time_api,
    is_one_time_overhead,
    is_warmup_name,
    names_in_use,
    rows_named,
)
from tracelens.analyses.startup import (
    _COMPILE_KINDS,
    _FIRST_STEP_KINDS,
    _WARMUP_KINDS,
    ALLOCATION,
    FIRST_API,
    FIRST_CALL,
    FIRST_CALL_FACTOR,
    FIRST_CALL_MIN_NS,
    FIRST_STEP,
    LONG_LAUNCH,
    LONG_LAUNCH_NS,
    NAME,
    SLOW_FIRST_STEP,
    OneTime,
    _first_api_calls,
)
from tracelens.analyses.startup_first import grouped_first_rows
from tracelens.analyses.step_arrays import step_window_arrays
from tracelens.trace import (
    ALL_KINDS,
    ANNOTATION,
    CPU_OP,
    DRIVER,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    STEP,
    Trace,
)

# ---- reference copies: the code as it was before the row passes were cut ------------------------------------


def ref_long_launches(trace: Trace, min_ns: int = LONG_LAUNCH_NS) -> np.ndarray:
    pairs = launch_pairs(trace)
    cols = event_columns(trace)
    launches = code_mask(
        pairs["launch_name"], cols.names, lambda n: is_kernel_launch(n) and not is_graph_launch(n)
    )
    long = pairs[pairs["matched"] & launches & (pairs["launch_end"] - pairs["launch_start"] >= min_ns)]
    found = []
    for device, busy in device_busy(trace).items():
        on = long[long["device"] == device]
        start, end = on["launch_start"], on["launch_end"]
        idle = intervals.overlap_with_union(start, end, busy.gap_starts, busy.gap_ends)
        idle = idle + np.clip(np.minimum(end, busy.first_start_ns) - start, 0, None)
        found.append(on["launch_row"][2 * idle >= end - start])
    return np.unique(np.concatenate(found)) if found else np.empty(0, np.int64)


def ref_idle_share(trace: Trace, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    busy = list(device_busy(trace).values())
    if not busy:
        return np.ones(start.size)
    bs, be = intervals.merge(
        np.concatenate([b.busy_starts for b in busy]), np.concatenate([b.busy_ends for b in busy])
    )
    length = np.maximum(end - start, 1)
    return (end - start - intervals.overlap_with_union(start, end, bs, be)) / length


def ref_first_api_calls(trace: Trace, api: np.ndarray, blocking: np.ndarray):
    cols = event_columns(trace)
    rows = np.flatnonzero(api)
    rows = rows[~blocking[rows] & (cols.name[rows] >= 0) & (cols.tid[rows] >= 0)]
    if rows.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    start = cols.start[rows]
    at, median = startup._long_first_calls(cols.pid[rows], cols.name[rows], start, cols.end[rows] - start)
    found = rows[at]
    idle = ref_idle_share(trace, cols.start[found], cols.end[found]) >= 0.5
    excess = np.round(cols.end[found] - cols.start[found] - median).astype(np.int64)
    return found[idle], excess[idle], median[idle]


def ref_first_calls(trace: Trace, candidates: np.ndarray, sync_rows: np.ndarray):
    cols = event_columns(trace)
    rows = np.flatnonzero(candidates & (cols.name >= 0) & (cols.tid >= 0))
    if rows.size == 0:
        return np.empty(0, np.int64), np.empty(0)
    thread = thread_key(cols.pid[rows], cols.tid[rows])
    start = cols.start[rows]
    duration = cols.end[rows] - start
    firsts, medians = grouped_first_rows(thread, cols.name[rows], start, duration, FIRST_CALL_MIN_NS)
    if firsts.size == 0:
        return np.empty(0, np.int64), np.empty(0)
    first_rows = rows[firsts]
    threads = thread[firsts]
    own = duration[firsts].copy()
    starts = cols.start[first_rows]
    ends = cols.end[first_rows]
    sync_keys = thread_key(cols.pid[sync_rows], cols.tid[sync_rows])
    for key in np.unique(threads):
        mine = threads == key
        on_thread = sync_rows[sync_keys == key]
        us, ue = intervals.merge(cols.start[on_thread], cols.end[on_thread])
        own[mine] -= intervals.overlap_with_union(starts[mine], ends[mine], us, ue)
    keep = (own >= FIRST_CALL_MIN_NS) & (own >= FIRST_CALL_FACTOR * medians)
    return first_rows[keep], medians[keep]


def ref_one_time_work(trace: Trace, base: np.ndarray | None = None) -> OneTime:
    """one_time_work's compute as it was (full-row masks, code_bits over the names in use, pandas duplicated);
    ``base``: the host categories where given (the benchmark passes the memoized ones, as the code read them)."""
    cols = event_columns(trace)
    names = cols.names
    reason = np.full(cols.kind.size, -1, np.int8)
    host = cols.tid >= 0

    def flag(mask: np.ndarray, code: int) -> None:
        rows = np.flatnonzero(mask) if mask.dtype == bool else mask
        rows = rows[host[rows] & (reason[rows] < 0)]
        reason[rows] = code

    api = cols.of_kind(RUNTIME, DRIVER)
    rules = (
        (is_one_time_api, (RUNTIME, DRIVER)),
        (is_compile_name, _COMPILE_KINDS),
        (is_warmup_name, _WARMUP_KINDS),
        (is_one_time_overhead, (OVERHEAD,)),
        (is_allocation, (RUNTIME, DRIVER)),
    )
    by_kind = np.zeros(len(ALL_KINDS) + 1, np.uint8)
    for bit, (_, kinds) in enumerate(rules):
        by_kind[[ALL_KINDS.index(k) for k in kinds]] |= 1 << bit
    row_bits = code_bits(cols.name, names, tuple(rule for rule, _ in rules))[cols.name]
    row_bits &= by_kind[cols.kind]
    flag(np.flatnonzero(row_bits & 0b1111), NAME)
    allocation = (row_bits & 0b10000) != 0
    flag(ref_long_launches(trace), LONG_LAUNCH)

    if base is None:
        base = ref_host_category_codes(cols.kind, cols.name, cols.names)
    sync_rows = np.flatnonzero(base == HOST_CATEGORY_PRIORITY.index(SYNC))
    input_ranges = cols.of_kind(ANNOTATION) & (base == HOST_CATEGORY_PRIORITY.index(INPUT))
    first_rows, medians = ref_first_calls(trace, cols.of_kind(CPU_OP) | input_ranges, sync_rows)
    by_row = np.argsort(first_rows)
    reason[first_rows[reason[first_rows] < 0]] = FIRST_CALL

    steps = step_window_arrays(trace)
    first_step_ns = later_step_median = None
    slow_first = False
    warmup_end = None
    if len(steps) >= 3:
        durations = steps.end - steps.start
        step_start, step_end = int(steps.start[0]), int(steps.end[0])
        first_step_ns = int(durations[0])
        later_step_median = float(np.median(durations[1:-1]))
        slow_first = (
            first_step_ns >= SLOW_FIRST_STEP * later_step_median
            and first_step_ns - later_step_median >= FIRST_CALL_MIN_NS
        )
        if slow_first:
            in_first = (cols.start >= step_start) & (cols.start < step_end)
            in_later = cols.start >= int(steps.start[1])
            seen_later = np.zeros(len(names) + 1, bool)
            seen_later[cols.name[in_later & (cols.name >= 0)]] = True
            only_first = (
                cols.of_kind(*_FIRST_STEP_KINDS) & in_first & (cols.name >= 0) & ~seen_later[cols.name]
            )
            flag(only_first, FIRST_STEP)
            flag(allocation & in_first, ALLOCATION)
            warmup_end = step_end
    elif len(steps) < 2 and reason.max(initial=-1) >= 0:
        warmup_end = int(cols.end[reason >= 0].max())
        flag(allocation & (cols.start < warmup_end), ALLOCATION)
    alloc_rows = np.flatnonzero(allocation & host)
    keys = pd.DataFrame(
        {"thread": thread_key(cols.pid[alloc_rows], cols.tid[alloc_rows]), "name": cols.name[alloc_rows]}
    )
    first_of_name = alloc_rows[~keys.duplicated().to_numpy()]
    first_of_name = first_of_name[cols.end[first_of_name] - cols.start[first_of_name] >= FIRST_CALL_MIN_NS]
    reason[first_of_name[reason[first_of_name] < 0]] = ALLOCATION
    blocking = base == HOST_CATEGORY_PRIORITY.index(SYNC)
    at_api = np.flatnonzero(api)
    blocking[at_api] |= code_mask(cols.name[at_api], names, is_blocking_sync)
    api_rows, api_excess, api_medians = ref_first_api_calls(trace, api, blocking)
    unflagged = reason[api_rows] < 0
    api_rows, api_excess, api_medians = api_rows[unflagged], api_excess[unflagged], api_medians[unflagged]
    reason[api_rows] = FIRST_API
    return OneTime(
        reason,
        first_rows[by_row],
        np.asarray(medians, np.float64)[by_row],
        first_step_ns,
        later_step_median,
        bool(slow_first),
        warmup_end,
        api_rows,
        api_excess,
        api_medians,
    )


# ---- generated traces ------------------------------------------------------------------------------------------

US = 1_000
# Names per kind: ones each rule takes (one-time APIs, allocations, syncs, compile words, warm-up, module loading,
# input waits), launches, plain names, and names only a non-ASCII or case-folding path could match.
API_NAMES = [
    "cudaLaunchKernel",
    "cudaLaunchKernel_v7000",
    "cuLaunchKernel",
    "cudaGraphLaunch",
    "cudaMalloc",
    "cudaFree",
    "cudaEventCreateWithFlags_v3020",
    "cuMemAlloc_v2",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cuInit",
    "cuModuleLoadData",
    "cublasCreate_v2",
    "cudaFuncGetAttributes",
    "cudaStreamIsCapturing",
    "cudaEventRecord",
]
OP_NAMES = [
    "aten::mm",
    "aten::add",
    "aten::copy_",
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "torch.compile",
    "CompiledFunction",
    "Torch-Compiled Region",
    "inductor_do_bench_using_profiling",
    "autotune_select",
    "İnit compile",
]
RANGE_NAMES = [
    "forward",
    "backward",
    "warmup",
    "Warm_Up",
    "WarmUp step",
    "tracelens/data",
    "IteratorGetNext",
    "XlaCompile",
    "dynamo_timed",
    "COMPILE_MODEL",
    "compilé",
    "data",
]
OVERHEAD_NAMES = ["CUDA module load", "Context Creation", "function LOAD", "profiler overhead"]
KERNEL_NAMES = ["k0", "k1", "ncclKernel_AllReduce"]


@st.composite
def traces(draw: st.DrawFn) -> list[dict]:
    rows: list[dict] = []
    corr = [100]
    n = draw(st.integers(1, 40))
    for _ in range(n):
        kind = draw(
            st.sampled_from(["runtime", "driver", "cpu_op", "annotation", "python", "overhead", "kernel"])
        )
        start = draw(st.integers(0, 40_000)) * US
        duration = draw(st.sampled_from([1, 5, 20, 150, 1_200, 3_000, 12_000])) * US
        pid = draw(st.integers(1, 2))
        tid = draw(st.sampled_from([7, 8, None]))
        if kind == "kernel":
            corr[0] += 1
            device = draw(st.integers(0, 1))
            rows.append(
                {
                    "kind": "kernel",
                    "name": draw(st.sampled_from(KERNEL_NAMES)),
                    "start_ns": start,
                    "end_ns": start + duration,
                    "device": device,
                    "stream": 7,
                    "pid": pid,
                    "correlation_id": corr[0],
                }
            )
            if draw(st.booleans()):  # its launch, just before it
                launch = draw(st.integers(1, 3_000)) * US
                rows.append(
                    {
                        "kind": "runtime",
                        "name": draw(
                            st.sampled_from(["cudaLaunchKernel", "cuLaunchKernel", "cudaGraphLaunch"])
                        ),
                        "start_ns": max(start - launch, 0),
                        "end_ns": start,
                        "pid": pid,
                        "tid": 7,
                        "correlation_id": corr[0],
                    }
                )
            continue
        pool = {
            "runtime": API_NAMES,
            "driver": API_NAMES,
            "cpu_op": OP_NAMES,
            "python": OP_NAMES,
            "annotation": RANGE_NAMES,
            "overhead": OVERHEAD_NAMES,
        }[kind]
        rows.append(
            {
                "kind": kind,
                "name": draw(st.sampled_from(pool)) if draw(st.integers(0, 9)) else None,
                "start_ns": start,
                "end_ns": start + duration,
                "pid": pid,
                "tid": tid,
            }
        )
    # repeated calls (a first call and its later instances), and steps (a slow first one or not)
    for name, kind in draw(
        st.lists(
            st.tuples(st.sampled_from(API_NAMES + OP_NAMES), st.sampled_from(["runtime", "cpu_op"])),
            max_size=4,
        )
    ):
        first = draw(st.sampled_from([5, 200, 2_000, 20_000])) * US
        t = draw(st.integers(0, 1_000)) * US
        for i in range(draw(st.integers(2, 6))):
            d = first if i == 0 else draw(st.sampled_from([2, 10, 30])) * US
            rows.append({"kind": kind, "name": name, "start_ns": t, "end_ns": t + d, "pid": 1, "tid": 7})
            t += d + draw(st.integers(1, 3_000)) * US
    n_steps = draw(st.integers(0, 5))
    t = 0
    for i in range(n_steps):
        d = draw(st.sampled_from([3_000, 10_000])) * US
        rows.append(
            {
                "kind": "step",
                "name": f"ProfilerStep#{i}",
                "start_ns": t,
                "end_ns": t + d,
                "pid": 1,
                "tid": 7,
                "step": i,
            }
        )
        t += d
    rows.sort(key=lambda r: r["start_ns"])  # host rows in start order, as every reader writes them
    return rows


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


@settings(max_examples=150, deadline=None, database=None)
@given(traces(), st.sampled_from([(0.0, 5), (0.0, 1 << 22), (2.0, 1 << 22)]))
def test_one_time_work_equals_the_reference(rows: list[dict], lasting_path: tuple[float, int]) -> None:
    # the long rows of the first_call rule found from every row's duration (in chunks of 5 rows, or at once) or
    # from the candidate rows' (a share above 1: never the whole table)
    trace = Trace.from_rows(rows)
    saved = startup_first._WHOLE_TABLE_SHARE, startup_first._CHUNK_ROWS
    startup_first._WHOLE_TABLE_SHARE, startup_first._CHUNK_ROWS = lasting_path
    try:
        got = startup.one_time_work(trace)
    finally:
        startup_first._WHOLE_TABLE_SHARE, startup_first._CHUNK_ROWS = saved
    want = ref_one_time_work(Trace.from_rows(rows))
    assert got.reason.dtype == want.reason.dtype
    assert _same(got.reason, want.reason)
    assert _same(got.first_call_rows, want.first_call_rows)
    assert _same(got.first_call_medians, want.first_call_medians)
    assert (got.first_step_ns, got.later_step_median_ns, got.slow_first_step, got.warmup_end_ns) == (
        want.first_step_ns,
        want.later_step_median_ns,
        want.slow_first_step,
        want.warmup_end_ns,
    )
    assert _same(got.first_api_rows, want.first_api_rows)
    assert _same(got.first_api_excess, want.first_api_excess)
    assert _same(got.first_api_medians, want.first_api_medians)


def ref_host_category_codes(kind: np.ndarray, name: np.ndarray, names: np.ndarray) -> np.ndarray:
    """names.host_category_codes before the candidate-name path (the reference copy)."""

    def kinds_table(*wanted: str) -> np.ndarray:
        lookup = np.zeros(len(ALL_KINDS) + 1, bool)  # the extra slot is kind -1 (unknown)
        lookup[[ALL_KINDS.index(k) for k in wanted]] = True
        return lookup

    launch = HOST_CATEGORY_PRIORITY.index(LAUNCH)
    # cpu and launch by kind, in one gather of a per-kind table; the name rules then at the rows they change
    by_kind = np.full(len(ALL_KINDS) + 1, -1, np.int8)
    by_kind[kinds_table(CPU_OP, PYTHON)] = HOST_CATEGORY_PRIORITY.index(CPU)
    by_kind[kinds_table(RUNTIME, DRIVER)] = launch
    out = by_kind[kind]
    # Only the API calls' names are tested as syncs (a few dozen, not every NVTX text of the trace).
    api_rows = np.flatnonzero(out == launch)
    sync_rows = api_rows[code_mask(name[api_rows], names, is_blocking_sync)]
    del api_rows
    input_names = np.zeros(len(names) + 1, bool)  # code -1 picks the last slot
    used = names_in_use(name, len(names))
    input_names[used] = np.fromiter((is_input(str(names[i])) for i in used), dtype=bool, count=used.size)
    if input_names.any():  # (none in most traces: no row read)
        rows = np.flatnonzero(input_names[name])
        out[rows[kinds_table(RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION, STEP)[kind[rows]]]] = (
            HOST_CATEGORY_PRIORITY.index(INPUT)
        )
    out[sync_rows] = HOST_CATEGORY_PRIORITY.index(SYNC)  # after input: a sync is never input
    return out


@settings(max_examples=150, deadline=None, database=None)
@given(traces())
def test_host_categories_equal_host_category_codes(rows: list[dict]) -> None:
    trace = Trace.from_rows(rows)
    cols = event_columns(trace)
    got = startup.host_categories(trace)
    want = ref_host_category_codes(cols.kind, cols.name, cols.names)
    assert got.dtype == want.dtype == np.int8
    assert got.tolist() == want.tolist()


PREDICATES = (
    is_input,
    is_blocking_sync,
    is_one_time_api,
    is_compile_name,
    is_warmup_name,
    is_one_time_overhead,
    is_allocation,
)
TRICKY = (
    API_NAMES
    + OP_NAMES
    + RANGE_NAMES
    + OVERHEAD_NAMES
    + [
        "hipMalloc",
        "hipDeviceSynchronize_v2",
        "ncclCommInitRank",
        "rcclCommInitAll",
        "miopenCreate",
        "rocblas_create_handle",
        "cufftPlan1d",
        "MODULE LOAD",
        "Function Load",
        "CONTEXT INIT",
        "dataloader.py(12): __next__",
        "Iterator::Model",
        "AUTOTUNING",
        "K\u212aelvin compile",  # Kelvin sign: lower() gives an ASCII k
        "\u0130nit",  # dotted capital I: lower() gives two characters
        "",
    ]
)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.one_of(st.sampled_from(TRICKY), st.text(max_size=30)), max_size=25))
def test_candidate_names_hold_every_name_a_predicate_accepts(names: list[str]) -> None:
    dictionary = np.array(names, dtype=object)
    candidates = set(candidate_names(dictionary).tolist())
    for i, name in enumerate(names):
        if any(p(name) for p in PREDICATES):
            assert i in candidates, name
    bits = dictionary_bits(dictionary, PREDICATES)
    want = code_bits(np.arange(len(names)), dictionary, PREDICATES)
    assert bits.tolist() == want.tolist()


def test_candidate_names_of_a_dictionary_that_is_not_all_strings() -> None:
    dictionary = np.array(["cudaMalloc", 3, None, "forward"], dtype=object)
    assert dictionary_bits(dictionary, (is_allocation,)).tolist() == [1, 0, 0, 0, 0]


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.lists(st.integers(-1, 9), min_size=1, max_size=60),
    st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_rows_named_equals_the_gather(codes: list[int], set_codes: list[bool]) -> None:
    name = np.array(codes, np.int32)
    table = np.append(np.array(set_codes, bool), False)
    got = rows_named(name, table)
    if not table.any():
        assert got is None
    else:
        assert got.tolist() == table[name].tolist()


@st.composite
def busy_and_queries(draw: st.DrawFn) -> tuple[list[DeviceBusy], np.ndarray, np.ndarray]:
    busy = []
    for device in range(draw(st.integers(1, 3))):
        pairs = draw(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 15)), min_size=1, max_size=15))
        s, e = intervals.merge(
            np.array([p[0] for p in pairs], np.int64), np.array([p[0] + p[1] for p in pairs], np.int64)
        )
        busy.append(DeviceBusy(device, s, e, int(s[0]), int(e[-1])))
    queries = draw(st.lists(st.tuples(st.integers(-10, 220), st.integers(-5, 80)), max_size=12))
    start = np.array([q[0] for q in queries], np.int64)
    return busy, start, start + np.array([q[1] for q in queries], np.int64)


@pytest.mark.parametrize("few_pieces", [0, 4096])
@settings(max_examples=150, deadline=None, database=None)
@given(case=busy_and_queries())
def test_busy_overlap_equals_the_overlap_with_the_merged_union(
    case: tuple[list[DeviceBusy], np.ndarray, np.ndarray], few_pieces: int
) -> None:
    busy, start, end = case
    union = intervals.merge(
        np.concatenate([b.busy_starts for b in busy]), np.concatenate([b.busy_ends for b in busy])
    )
    want = intervals.overlap_with_union(start, end, *union)
    saved = startup._FEW_PIECES
    startup._FEW_PIECES = few_pieces  # 0: the merged union past a quarter of the busy intervals
    try:
        got = startup._busy_overlap(busy, start, end)
    finally:
        startup._FEW_PIECES = saved
    assert got.dtype == np.int64
    assert got.tolist() == want.tolist()


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 4)), max_size=40))
def test_first_of_each_equals_pandas_duplicated(pairs: list[tuple[int, int]]) -> None:
    keys = np.array([p[0] for p in pairs], np.int64)
    name = np.array([p[1] for p in pairs], np.int32)
    want = np.flatnonzero(~pd.DataFrame({"thread": keys, "name": name}).duplicated().to_numpy())
    assert startup_first.first_of_each(keys, name).tolist() == want.tolist()


def test_first_api_calls_take_rows_or_a_mask() -> None:
    rows = [
        {
            "kind": "runtime",
            "name": "cudaFuncGetAttributes",
            "start_ns": 0,
            "end_ns": 2_000_000,
            "pid": 1,
            "tid": 7,
        },
        *(
            {
                "kind": "runtime",
                "name": "cudaFuncGetAttributes",
                "start_ns": t,
                "end_ns": t + 5_000,
                "pid": 1,
                "tid": 7,
            }
            for t in range(3_000_000, 4_000_000, 100_000)
        ),
    ]
    trace = Trace.from_rows(rows)
    cols = event_columns(trace)
    api = cols.of_kind(RUNTIME, DRIVER)
    blocking = np.zeros(api.size, bool)
    by_mask = _first_api_calls(trace, api, blocking)
    by_rows = _first_api_calls(trace, np.flatnonzero(api), blocking)
    assert by_mask[0].tolist() == by_rows[0].tolist() == [0]  # the first call, 2 ms against 5 us later
    assert by_mask[1].tolist() == by_rows[1].tolist() == [1_995_000]


def test_reference_flags_what_the_rules_say() -> None:
    # The reference copy is itself checked on a hand-made case: a module-loading overhead row, a long first op.
    rows = [
        {"kind": "overhead", "name": "CUDA module load", "start_ns": 0, "end_ns": 1_000, "pid": 1, "tid": 7},
        {"kind": "cpu_op", "name": "aten::mm", "start_ns": 2_000, "end_ns": 3_002_000, "pid": 1, "tid": 7},
        {
            "kind": "cpu_op",
            "name": "aten::mm",
            "start_ns": 4_000_000,
            "end_ns": 4_010_000,
            "pid": 1,
            "tid": 7,
        },
    ]
    want = ref_one_time_work(Trace.from_rows(rows))
    assert want.reason.tolist() == [NAME, FIRST_CALL, -1]
    assert startup.one_time_work(Trace.from_rows(rows)).reason.tolist() == [NAME, FIRST_CALL, -1]


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(-5, 2**40)), max_size=50))
def test_medians_of_few_groups_equal_the_two_middle_values(pairs: list[tuple[int, int]]) -> None:
    # one selection per group (the middle value below taken as the largest before it) against a full sort
    group = np.array([p[0] for p in pairs], np.int8)
    values = np.array([p[1] for p in pairs], np.int64)
    medians, counts = grouping.medians_of(group, values, 8)
    for g in range(8):
        mine = np.sort(values[group == g])
        assert counts[g] == mine.size
        if mine.size == 0:
            assert np.isnan(medians[g])
        else:
            want = (float(mine[(mine.size - 1) // 2]) + float(mine[mine.size // 2])) / 2
            assert medians[g] == want
