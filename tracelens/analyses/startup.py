"""One-time work inside the GPU window: the host rows that make up the `startup` category and cause.

A profile that starts with the program often spends most of its GPU window on work that happens once:
CUDA context creation and lazy module loading, cuDNN/cuBLAS handle creation and autotuning, torch.compile /
XLA / tf.function compilation, the first iteration's memory allocations. None of it is what the steady
state costs, so its idle time must not be blamed on launch overhead or the input pipeline.

Rules (docs/analyses.md, "startup"), each a reason code on the rows it flags:
    name        one-time by name wherever it appears: context/module/library set-up calls
                (names.ONE_TIME_API_PATTERN); compile/autotune words in op, range and API names
                (names.COMPILE_WORDS); user ranges and steps named warm-up; nsys module-loading overhead rows
    long_launch a kernel-launch call lasting >= LONG_LAUNCH_NS during which its GPU was idle (in a gap, or
                before its first op) for at least half the call: enqueueing takes microseconds, so milliseconds on an idle GPU mean the driver
                loaded or JIT-compiled the kernel's module on first use (a call blocked on a full launch
                queue also lasts milliseconds, but its GPU is busy)
    first_call  the first instance of a framework op name (or of an input-wait range, e.g. the DataLoader's
                `__next__`) on a thread, when its time outside blocking syncs is >= FIRST_CALL_MIN_NS and
                >= FIRST_CALL_FACTOR x the median of its later instances (cuDNN/cuBLAS initialization and
                autotuning, torch.compile's first call, DataLoader worker start, a cold first batch). API calls are left to the rules above and below: a first API call that waits for the
                GPU would look the same. Python frames are left out: one name (`_call_impl`) serves every module.
    first_step  with >= 3 steps and a first step that is slow (>= SLOW_FIRST_STEP x the median of the steps
                between it and the last, which is often cut short by the profiler, and >= FIRST_CALL_MIN_NS
                longer): rows inside the first step whose name never occurs in a later step (graph tracing,
                iterator creation, one-time set-up)
    allocation  memory allocation/free and stream/event creation calls (names.ALLOCATION_PATTERN) inside the
                warm-up window: the first step when it is slow, else (fewer than 2 steps) up to the end of
                the last row flagged by the rules above; and anywhere, the first call of each such API on a
                thread when it lasts >= FIRST_CALL_MIN_NS (a caching allocator's first growth, e.g. the
                pinned buffer of the first `.item()`)
    first_api   the first call of an API name in its process (any runtime/driver call but blocking syncs and
                synchronous copies) lasting >= FIRST_CALL_FACTOR x the median of the name's later calls there
                and >= FIRST_API_MIN_NS longer, with the GPUs idle (in a gap, or before their first op) for at
                least half the call: one-time work inside an API call (context creation on a first call, lazy
                module or function loading in a first launch, a first allocation growing the pool). Its
                one-time part is the excess over that median (``OneTime.first_api_excess``): the what-if's
                startup remedy removes that much and keeps the call's typical cost and the work it launches
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any

import numpy as np

from .. import intervals
from ..trace import ALL_KINDS, ANNOTATION, CPU_OP, DRIVER, OVERHEAD, PYTHON, RUNTIME, STEP, Trace
from .columns import DeviceBusy, device_busy, event_columns, memo, thread_key
from .first_scan import allowed_table
from .frame_free import group_numbers, sort_order
from .grouping import sum_per_slot
from .kinds import kind_mask
from .long_launches import long_launches
from .names import (
    HOST_CATEGORY_PRIORITY,
    INPUT,
    SYNC,
    dictionary_bits,
    host_category_codes,
    is_allocation,
    is_compile_name,
    is_one_time_api,
    is_one_time_overhead,
    is_warmup_name,
    rows_named,
)
from .startup_first import (
    FirstRowTest,
    Scan,
    first_of_each,
    first_rule_scans,
    long_first_rows,
    names_lasting,
)
from .step_arrays import step_window_arrays

LONG_LAUNCH_NS = 1_000_000
FIRST_CALL_MIN_NS = 1_000_000
FIRST_CALL_FACTOR = 10.0
# A first API call this much longer than its name's later median holds one-time work: API calls take
# microseconds, so a tenth of a millisecond more on an idle GPU is the driver setting something up.
FIRST_API_MIN_NS = 100_000
SLOW_FIRST_STEP = 1.5
TOP_ITEMS = 10

REASONS = ("name", "long_launch", "first_call", "first_step", "allocation", "first_api")
NAME, LONG_LAUNCH, FIRST_CALL, FIRST_STEP, ALLOCATION, FIRST_API = range(len(REASONS))

# Kinds each rule looks at. Python frames are left out of the compile words (torch.compile's steady-state
# wrapper is a Python function named `compile_wrapper`); only user ranges and steps count for warm-up
# (TensorFlow op names carry the model's scopes, e.g. a learning-rate `WarmUp` run every step).
_COMPILE_KINDS = (CPU_OP, ANNOTATION, STEP, RUNTIME, DRIVER)
_WARMUP_KINDS = (ANNOTATION, STEP)
_FIRST_STEP_KINDS = (RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION)


@dataclass
class OneTime:
    """Rows flagged as one-time work and why.

    Built from ``reason_per_row`` (int8 per event row: index into REASONS, -1 = not one-time), kept as the
    flagged rows and their reasons (few rows: not a byte per event row held from the attribution to the
    diagnosis); ``reason`` and ``mask`` give the arrays over the whole event table again."""

    reason_per_row: InitVar[np.ndarray]
    first_call_rows: np.ndarray  # sorted event rows of first calls (few: not an array over every row)
    first_call_medians: np.ndarray  # the median of each one's later instances
    first_step_ns: int | None  # duration of the first step (None with fewer than 2 steps)
    later_step_median_ns: float | None
    slow_first_step: bool
    warmup_end_ns: int | None  # end of the warm-up window allocations are counted in
    first_api_rows: np.ndarray  # sorted event rows of first API calls with one-time work inside (first_api)
    first_api_excess: np.ndarray  # each one's duration - the median of its name's later calls (ns)
    first_api_medians: np.ndarray  # that median
    rows: np.ndarray = field(init=False)  # the flagged event rows, ascending
    reasons: np.ndarray = field(init=False)  # int8: each one's index into REASONS
    event_rows: int = field(init=False)  # the number of event rows

    def __post_init__(self, reason_per_row: np.ndarray) -> None:
        self.rows = np.flatnonzero(reason_per_row >= 0)
        self.reasons = reason_per_row[self.rows]
        self.event_rows = int(reason_per_row.size)

    @property
    def reason(self) -> np.ndarray:
        """int8 per event row: index into REASONS, -1 = not one-time (a new array on each read)."""
        out = np.full(self.event_rows, -1, np.int8)
        out[self.rows] = self.reasons
        return out

    @property
    def mask(self) -> np.ndarray:
        """Per event row: one-time work (a new array on each read)."""
        out = np.zeros(self.event_rows, bool)
        out[self.rows] = True
        return out

    def later_median_ns(self, rows: np.ndarray) -> np.ndarray:
        """The median of later instances at each of ``rows`` (NaN where the row is not a first call or a first
        API call)."""
        out = np.full(len(rows), np.nan)
        if self.first_call_rows.size:
            at = np.minimum(np.searchsorted(self.first_call_rows, rows), self.first_call_rows.size - 1)
            hit = self.first_call_rows[at] == rows
            out[hit] = self.first_call_medians[at[hit]]
        if self.first_api_rows.size:
            at = np.minimum(np.searchsorted(self.first_api_rows, rows), self.first_api_rows.size - 1)
            hit = self.first_api_rows[at] == rows
            out[hit] = self.first_api_medians[at[hit]]
        return out

    def excess_ns(self, rows: np.ndarray) -> np.ndarray:
        """The one-time part (first_api excess) at each of ``rows`` (-1 where the row is not a first API call)."""
        out = np.full(len(rows), -1, np.int64)
        if self.first_api_rows.size:
            at = np.minimum(np.searchsorted(self.first_api_rows, rows), self.first_api_rows.size - 1)
            hit = self.first_api_rows[at] == rows
            out[hit] = self.first_api_excess[at[hit]]
        return out


def _idle_share(trace: Trace, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval, the share of it during which no GPU ran anything (in a gap of every device's busy time, or
    before the device's first op; 1 without GPU activity)."""
    busy = list(device_busy(trace).values())
    if not busy:
        return np.ones(start.size)
    length = np.maximum(end - start, 1)
    return (end - start - _busy_overlap(busy, start, end)) / length


# Clipped busy pieces up to this many (plus a quarter of all the busy intervals) are merged per interval.
_FEW_PIECES = 4096


def _busy_overlap(busy: list[DeviceBusy], start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval, the time inside the union of the devices' busy intervals (``intervals.overlap_with_union``
    with the merged union of them all). The intervals asked about are few (first API calls): the devices' busy
    intervals that overlap each are clipped to it and merged per interval, not every device's intervals merged
    into one union (a sort of every GPU op's busy interval)."""
    start = np.asarray(start, np.int64)
    end = np.asarray(end, np.int64)
    if start.size == 0:
        return np.zeros(0, np.int64)
    total = sum(b.busy_starts.size for b in busy)
    if bool((end >= start).all()):
        first = [np.searchsorted(b.busy_ends, start, side="right") for b in busy]  # the first ending after it
        stop = [
            np.searchsorted(b.busy_starts, end, side="left") for b in busy
        ]  # those starting before its end
        counts = [np.maximum(s - f, 0) for f, s in zip(first, stop, strict=True)]
        spans = (
            end - start + 1
        )  # each interval's own stretch of a line, one apart: merged pieces never join two
        offset = np.cumsum(spans) - spans
        if sum(int(c.sum()) for c in counts) <= total // 4 + _FEW_PIECES and int(spans.sum()) < 2**62:
            piece_starts, piece_ends = [], []
            for b, f, c in zip(busy, first, counts, strict=True):  # a loop over devices
                which = np.repeat(np.arange(start.size), c)
                at = np.arange(which.size) - np.repeat(np.cumsum(c) - c, c) + np.repeat(f, c)
                shift = offset[which] - start[which]
                piece_starts.append(np.maximum(b.busy_starts[at], start[which]) + shift)
                piece_ends.append(np.minimum(b.busy_ends[at], end[which]) + shift)
            merged_starts, merged_ends = intervals.merge(
                np.concatenate(piece_starts), np.concatenate(piece_ends)
            )
            covered = np.zeros(merged_starts.size + 1, np.int64)
            np.cumsum(merged_ends - merged_starts, out=covered[1:])
            bounds = np.searchsorted(merged_starts, np.append(offset, offset[-1] + spans[-1]))
            return covered[bounds[1:]] - covered[bounds[:-1]]
    union_starts, union_ends = intervals.merge(
        np.concatenate([b.busy_starts for b in busy]), np.concatenate([b.busy_ends for b in busy])
    )
    return intervals.overlap_with_union(start, end, union_starts, union_ends)


def _long_first_calls(
    outer: np.ndarray,
    inner: np.ndarray,
    start: np.ndarray,
    duration: np.ndarray,
    keep: FirstRowTest | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(positions, medians): the rows that are the first of their (outer, inner) group (in start order, ties in
    row order) and last >= FIRST_CALL_FACTOR x the median of the group's later rows and >= FIRST_API_MIN_NS more
    than it (a group without later rows has no median), with that median; positions ascending. ``keep``: a test of
    the first rows made before the medians are taken (``startup_first.long_first_rows``).

    A first row under FIRST_API_MIN_NS cannot exceed a median of durations (never negative) by that much, so only
    the groups whose first row is that long (usually none) have their later rows' median taken."""
    min_first = FIRST_API_MIN_NS if duration.size and int(duration.min()) >= 0 else np.iinfo(np.int64).min
    firsts, median = long_first_rows(outer, inner, start, duration, min_first, keep)
    long = (duration[firsts] >= FIRST_CALL_FACTOR * median) & (duration[firsts] - median >= FIRST_API_MIN_NS)
    return firsts[long], median[long]


def _first_api_calls(
    trace: Trace, api: np.ndarray, blocking: np.ndarray | None, api_names: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, excess over the later median, that median) of the first API calls that hold one-time work (rule
    first_api), by row. ``api``: the runtime and driver calls (a boolean per row, or their rows ascending);
    ``blocking``: a boolean per row, read at those rows (blocking calls are left out), or None where the caller
    gives the calls that take part only (:func:`_api_candidates`); ``api_names``: the name codes at the rows of
    ``api`` where the caller has them."""
    cols = event_columns(trace)
    rows = np.flatnonzero(api) if api.dtype == bool else api  # the other tests at the API rows only
    name = cols.name[rows] if api_names is None else api_names
    if blocking is not None:
        keep = ~blocking[rows] & (name >= 0) & (cols.tid[rows] >= 0)
        rows, name = np.compress(keep, rows), np.compress(keep, name)  # np.compress: faster than a mask index
        del keep
    if rows.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    start = cols.start[rows]
    duration = cols.end[rows]
    duration -= start  # in place: one array of the calls' durations, not two

    # a call the GPU kept busy may be waiting for it (an implicit sync, a full launch queue): not one-time work;
    # tested on the long first calls before their names' later medians are taken (none pass on the x1512 export:
    # no median of its 5M later calls taken)
    def idle(at: np.ndarray) -> np.ndarray:
        found = rows[at]
        passed: np.ndarray = _idle_share(trace, cols.start[found], cols.end[found]) >= 0.5
        return passed

    at, median = _long_first_calls(cols.pid[rows], name, start, duration, idle)
    del start, duration
    found = rows[at]
    excess = np.round(cols.end[found] - cols.start[found] - median).astype(np.int64)
    return found, excess, median


def _api_candidates(
    trace: Trace, rows: np.ndarray, names: np.ndarray, base: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The API calls (``rows`` ascending, their name codes ``names``) the first_api rule looks at: named, on a
    thread, and not blocking (host category ``base`` sync), as :func:`_first_api_calls` picks them."""
    cols = event_columns(trace)
    keep = (base[rows] != HOST_CATEGORY_PRIORITY.index(SYNC)) & (names >= 0) & (cols.tid[rows] >= 0)
    return np.compress(keep, rows), np.compress(keep, names)


# The first rules' candidates for the compiled pass (first_scan): framework ops and input-wait ranges (first_call);
# API calls but blocking syncs (first_api)
_FIRST_CALL_TABLE = allowed_table((CPU_OP, ANNOTATION), {ANNOTATION: (HOST_CATEGORY_PRIORITY.index(INPUT),)})
_FIRST_API_TABLE = allowed_table(
    (RUNTIME, DRIVER),
    {
        k: [c for c in range(-1, len(HOST_CATEGORY_PRIORITY)) if c != HOST_CATEGORY_PRIORITY.index(SYNC)]
        for k in (RUNTIME, DRIVER)
    },
)


def _no_first_api(trace: Trace, scanned: Scan) -> bool:
    """Whether the first_api rule flags no call, known from the compiled pass (``scanned``: first_rule_scans' answer
    for it): no process's first call of a name (calls as :func:`_api_candidates` picks them) lasts FIRST_API_MIN_NS
    with the GPUs idle for half of it; False where the pass does not tell (absent, declined, an API call ending
    before it starts: the rule's threshold is then another)."""
    cols = event_columns(trace)
    if scanned is None or scanned[1]:
        return False
    firsts = scanned[0]
    return firsts.size == 0 or not bool(
        (_idle_share(trace, cols.start[firsts], cols.end[firsts]) >= 0.5).any()
    )


def _first_calls(trace: Trace, candidates: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first-call rows, median of their later instances) among the candidate rows (``base``: host_categories,
    whose sync code marks the blocking syncs discounted)."""
    cols = event_columns(trace)
    rows = np.flatnonzero(candidates)
    name = cols.name[rows]
    # only the names with a row lasting FIRST_CALL_MIN_NS can have a first call that long (as in long_first_rows):
    # the rows of the other names (most, often all) dropped before their threads and times are read
    lasting = names_lasting(cols, candidates, rows, FIRST_CALL_MIN_NS)
    if not lasting.any():
        return np.empty(0, np.int64), np.empty(0)
    picked = rows_named(name, lasting)
    assert picked is not None
    if not picked.all():
        rows, name = np.compress(picked, rows), np.compress(picked, name)
    del picked
    tid = cols.tid[rows]  # read once at the rows
    keep = (name >= 0) & (tid >= 0)
    if not keep.all():
        rows, name, tid = np.compress(keep, rows), np.compress(keep, name), np.compress(keep, tid)
    if rows.size == 0:
        return np.empty(0, np.int64), np.empty(0)
    pid = cols.pid[rows]
    # rows of one process (the usual profile) tell their threads apart by the thread id alone: no thread key
    # built for every row (the grouping, not the keys' values, decides the first rows and the medians)
    thread = tid if int(pid.min()) == int(pid.max()) else thread_key(pid, tid)
    del pid, tid
    start = cols.start[rows]
    duration = cols.end[rows] - start
    # the later instances of the names whose first call is long enough only (few groups): their medians
    firsts, medians = long_first_rows(thread, name, start, duration, FIRST_CALL_MIN_NS)
    if firsts.size == 0:
        return np.empty(0, np.int64), np.empty(0)
    first_rows = rows[firsts]
    threads = thread_key(cols.pid[first_rows], cols.tid[first_rows])
    # Time spent waiting in a blocking sync inside the call is the GPU's, not one-time work.
    own = duration[firsts].copy()
    starts = cols.start[first_rows]
    ends = cols.end[first_rows]
    sync_rows = np.flatnonzero(base == HOST_CATEGORY_PRIORITY.index(SYNC))
    sync_keys = thread_key(cols.pid[sync_rows], cols.tid[sync_rows])
    for key in np.unique(threads):  # a loop over threads, not events
        mine = threads == key
        on_thread = sync_rows[sync_keys == key]
        us, ue = intervals.merge(cols.start[on_thread], cols.end[on_thread])
        own[mine] -= intervals.overlap_with_union(starts[mine], ends[mine], us, ue)
    keep = (own >= FIRST_CALL_MIN_NS) & (own >= FIRST_CALL_FACTOR * medians)
    return first_rows[keep], medians[keep]


def host_categories(trace: Trace) -> np.ndarray:
    """``host_category_codes`` of every event row, computed once per trace (read only: copy to change it)."""

    def compute() -> np.ndarray:
        cols = event_columns(trace)
        codes = host_category_codes(cols.kind, cols.name, cols.names)
        codes.flags.writeable = False
        return codes

    return memo(trace, "host_categories", compute)


# The name rules (one bit each in dictionary_bits) and the kinds each looks at; the first four flag NAME.
_NAME_RULES = (
    (is_one_time_api, (RUNTIME, DRIVER)),
    (is_compile_name, _COMPILE_KINDS),
    (is_warmup_name, _WARMUP_KINDS),
    (is_one_time_overhead, (OVERHEAD,)),
    (is_allocation, (RUNTIME, DRIVER)),
)
_NAME_RULE_KINDS = np.zeros(len(ALL_KINDS) + 1, np.uint8)  # the extra slot is kind -1 (unknown)
for _bit, (_, _kinds) in enumerate(_NAME_RULES):
    _NAME_RULE_KINDS[[ALL_KINDS.index(k) for k in _kinds]] |= 1 << _bit
del _bit, _kinds


def one_time_work(trace: Trace) -> OneTime:
    """Every host row that is one-time work, with its reason (memoized per trace)."""

    def compute() -> OneTime:
        cols = event_columns(trace)
        names = cols.names
        reason = np.full(cols.kind.size, -1, np.int8)

        def flag(mask: np.ndarray, code: int) -> None:
            """Give ``code`` to the host rows of ``mask`` (a boolean per row, or ascending rows) not flagged yet:
            tested at those rows, not by three more passes over every row."""
            rows = np.flatnonzero(mask) if mask.dtype == bool else mask
            rows = rows[(cols.tid[rows] >= 0) & (reason[rows] < 0)]  # host rows: tested at the rows only
            reason[rows] = code

        api: list[np.ndarray] = []  # the API rows and their names, read once where asked (often never)

        def api_calls() -> tuple[np.ndarray, np.ndarray]:
            if not api:
                rows = np.flatnonzero(kind_mask(cols.kind, (RUNTIME, DRIVER)))
                api[:] = [rows, cols.name[rows]]
            return api[0], api[1]

        # The five name rules: each candidate name of the dictionary tested once, the rows with a name that
        # passes one found (by comparisons where those are few names: often none), each such row's name bits
        # kept where its kind takes part in the rule (one-time API names on API calls, compile words on ops,
        # ranges, steps and calls, warm-up on ranges and steps, module loading on overhead rows, allocations on
        # API calls)
        bits = dictionary_bits(names, tuple(rule for rule, _ in _NAME_RULES))
        named = rows_named(cols.name, (bits & 0b1111) != 0)  # the four name rules
        if named is not None:
            rows = np.flatnonzero(named)
            del named
            flag(rows[(bits[cols.name[rows]] & _NAME_RULE_KINDS[cols.kind[rows]] & 0b1111) != 0], NAME)
        # allocation calls: API rows (ascending) with an allocation name, tested at the API rows only (their
        # names read once, for the first_api rule too); none without an allocation name in the dictionary
        alloc_all = np.empty(0, np.int64)
        if ((bits[:-1] & 0b10000) != 0).any():
            api_rows, api_names = api_calls()
            allocation = rows_named(api_names, (bits & 0b10000) != 0)
            assert allocation is not None  # an allocation name is in the dictionary
            alloc_all = api_rows[np.flatnonzero(allocation)]
        flag(long_launches(trace, LONG_LAUNCH_NS), LONG_LAUNCH)

        base = host_categories(trace)
        # no group's first row long enough (usually): no first call (nor first API call), by one compiled pass
        scanned, api_scanned = first_rule_scans(
            cols,
            base,
            _FIRST_CALL_TABLE,
            _FIRST_API_TABLE,
            FIRST_CALL_MIN_NS,
            FIRST_API_MIN_NS,
            lambda: api_calls()[0],
        )
        if scanned is not None and scanned[0].size == 0:
            first_rows, medians = np.empty(0, np.int64), np.empty(0)
        else:
            candidates = kind_mask(cols.kind, (CPU_OP,))
            candidates |= kind_mask(cols.kind, (ANNOTATION,)) & (base == HOST_CATEGORY_PRIORITY.index(INPUT))
            first_rows, medians = _first_calls(trace, candidates, base)
            del candidates
        by_row = np.argsort(first_rows)
        reason[first_rows[reason[first_rows] < 0]] = FIRST_CALL

        steps = step_window_arrays(trace)
        first_step_ns = later_step_median = None
        slow_first = False
        warmup_end = None
        if len(steps) >= 3:
            step_starts, step_ends = steps.start, steps.end
            durations = step_ends - step_starts
            step_start, step_end = int(step_starts[0]), int(step_ends[0])
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
                flag(alloc_all[in_first[alloc_all]], ALLOCATION)
                warmup_end = step_end
        elif len(steps) < 2 and reason.max(initial=-1) >= 0:
            warmup_end = int(cols.end[reason >= 0].max())
            flag(alloc_all[cols.start[alloc_all] < warmup_end], ALLOCATION)
        alloc_rows = alloc_all[cols.tid[alloc_all] >= 0]
        # the first call of each allocation name on each thread (rows are in start order)
        first_of_name = alloc_rows[
            first_of_each(thread_key(cols.pid[alloc_rows], cols.tid[alloc_rows]), cols.name[alloc_rows])
        ]
        first_of_name = first_of_name[
            cols.end[first_of_name] - cols.start[first_of_name] >= FIRST_CALL_MIN_NS
        ]
        reason[first_of_name[reason[first_of_name] < 0]] = ALLOCATION
        # first_api takes API calls but blocking ones: at API rows the sync category is the blocking-sync name
        # test (host_category_codes gives it to exactly those). The calls that take part are picked here, their
        # rows and names replacing all the calls' (no table-long mask of the blocking calls, and the 8.8M calls of
        # a training export not held twice).
        if _no_first_api(trace, api_scanned):
            api_rows, api_excess, api_medians = np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
        else:
            api_rows, api_names = _api_candidates(trace, *api_calls(), base)
            api_rows, api_excess, api_medians = _first_api_calls(trace, api_rows, None, api_names)
            del api_names
        api.clear()
        unflagged = reason[api_rows] < 0  # a row another rule flagged is one-time as a whole
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

    return memo(trace, "one_time_work", compute)


def device_items(
    trace: Trace, busy: DeviceBusy, thread_mask: np.ndarray, limit: int = TOP_ITEMS
) -> list[dict[str, Any]]:
    """The one-time rows on the given threads grouped by (name, reason), largest GPU idle time first.

    ``thread_mask`` is a boolean per event row (rows on the device's feeding threads). A group's ``idle_ns`` is
    the device's gap time inside the union of its rows (nested rows of one name count once); different groups
    can cover the same instants (an op and the call inside it).
    """
    work = one_time_work(trace)
    on_threads = thread_mask[work.rows]  # the flagged rows (few) tested, not every row
    rows, reasons = work.rows[on_threads], work.reasons[on_threads]
    if rows.size == 0:
        return []
    cols = event_columns(trace)
    summed = intervals.overlap_with_union(cols.start[rows], cols.end[rows], busy.gap_starts, busy.gap_ends)
    idle = np.flatnonzero(summed > 0)
    if idle.size == 0:
        return []
    rows, reasons, summed = rows[idle], reasons[idle], summed[idle]
    names = cols.name[rows]
    host = (cols.end[rows] - cols.start[rows]).astype(np.int64)
    median = work.later_median_ns(rows)
    # groupby(["name", "reason"], sort=False).agg(count, summed, host_ns, later_median_ns=max): groups in order of
    # first appearance
    group = group_numbers([names, reasons])
    groups = int(group.max()) + 1
    first = np.unique(group, return_index=True)[1]
    count = np.bincount(group, minlength=groups)
    summed_by = sum_per_slot(group, summed.astype(np.int64), groups)
    host_by = sum_per_slot(group, host, groups)
    known = ~np.isnan(median)
    later = np.full(groups, -np.inf)
    np.maximum.at(later, group[known], median[known])  # max skipping NaN: NaN where the group has none
    later[np.bincount(group[known], minlength=groups) == 0] = np.nan
    # The summed overlap bounds the union's from above: exact unions for the largest groups only.
    # (sort_values(["summed", "name"], ascending=[False, True]).head(3 * limit))
    top = sort_order([summed_by, names[first]], [False, True])[: 3 * limit]
    out: list[dict[str, Any]] = []
    for g in top.tolist():  # at most 3 x limit groups
        members = rows[group == g]
        union = intervals.merge(cols.start[members], cols.end[members])
        idle_ns = int(intervals.overlap_with_union(*union, busy.gap_starts, busy.gap_ends).sum())
        out.append(
            {
                "name": str(cols.names[names[first[g]]]),
                "reason": REASONS[reasons[first[g]]],
                "count": int(count[g]),
                "host_ns": int(host_by[g]),
                "idle_ns": idle_ns,
                "later_median_ns": None if np.isnan(later[g]) else float(later[g]),
            }
        )
    out.sort(key=lambda item: (-item["idle_ns"], item["name"]))
    return out[:limit]
