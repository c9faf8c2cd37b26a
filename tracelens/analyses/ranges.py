"""NVTX ranges and annotations: CPU time, and the GPU work launched inside them.

Definitions (docs/analyses.md, "ranges"), per range instance (a row of kind `annotation`), then summed per name:
    cpu_ns          = end - start
    launched ops    = GPU ops whose launch call (correlation_id join) starts inside [start, end) on the same
                      thread (pid, tid) — the rule of nsys's nvtx_gpu_proj_trace
    gpu_op_ns       = summed durations of the launched ops
    projected span  = [first launched op start, last launched op end); projected_ns = its length
    gpu_idle_ns     = projected_ns - the device busy union inside the projected span (every op on the
                      device counts as busy; a range launching onto several devices uses their joint union)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals
from ..trace import ALL_KINDS, ANNOTATION, Trace
from ..values import distinct
from . import columns
from .blocks import count_of_kind
from .columns import EventColumns, device_busy, event_columns, thread_key, thread_time_positions
from .grouping import cut_in_chunks, rows_by_thread, sum_per_slot, thread_chunks
from .label_sums import largest_first, sums_by_label
from .launch import launch_pairs
from .launch_cover import covered_before_pair, covered_times, time_span, union_prefix
from .names import NO_NAME, name_template
from .sync import row_thread_codes

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

NAME_LIMIT = 200


def _per_launch(trace: Trace) -> dict[str, np.ndarray]:
    """GPU ops grouped by their launch call (a graph launch may enqueue many ops): one array per column (pid,
    tid, t, op_ns, first, last, dev_min, dev_max, ops), one value per launch call."""
    pairs = launch_pairs(trace)
    m = pairs[pairs["matched"]]
    m = m[np.argsort(m["correlation_id"], kind="stable")]
    cid = m["correlation_id"]
    if cid.size == 0:
        return {
            k: np.zeros(0, np.int64)
            for k in ("pid", "tid", "t", "op_ns", "first", "last", "dev_min", "dev_max", "ops")
        }
    group = np.flatnonzero(np.r_[True, cid[1:] != cid[:-1]])  # first row of each launch call
    start, end, dev = m["start"], m["end"], m["device"]
    if group.size == cid.size:  # one op per launch call (no graph launches): the ops' own values
        return {
            "pid": m["pid"],
            "tid": m["tid"],
            "t": m["launch_start"],
            "op_ns": end - start,
            "first": start,
            "last": end,
            "dev_min": dev,
            "dev_max": dev,
            "ops": np.ones(cid.size, np.int64),
        }
    return {
        "pid": m["pid"][group],
        "tid": m["tid"][group],
        "t": m["launch_start"][group],
        "op_ns": np.add.reduceat(end - start, group),
        "first": np.minimum.reduceat(start, group),
        "last": np.maximum.reduceat(end, group),
        "dev_min": np.minimum.reduceat(dev, group),
        "dev_max": np.maximum.reduceat(dev, group),
        "ops": np.diff(np.r_[group, cid.size]),
    }


def _one_op_launches(pairs: Any) -> np.ndarray | None:
    """The positions of the matched GPU ops in the launch pairs, sorted by correlation id (stable), where no two
    share a launch call (one op per call: no graph launch); None otherwise."""
    matched = np.flatnonzero(pairs["matched"])
    cid = pairs["correlation_id"][matched]
    if cid.size < 2 or bool((cid[1:] > cid[:-1]).all()):  # ascending ids (a Kineto export's): no sort
        return matched
    order = np.argsort(cid, kind="stable")
    cid = cid[order]
    if cid.size > 1 and bool((cid[1:] == cid[:-1]).any()):
        return None
    return matched[order]


def _slice_reduce(
    ufunc: np.ufunc, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, empty: int
) -> np.ndarray:
    """ufunc-reduce values[lo_i:hi_i] for every i (``empty`` where the slice is empty); ufunc is idempotent
    (minimum, maximum).

    A sparse table built one level at a time: level k holds the reduction of every window of 2^k values, and a
    slice of length L is the reduction of its first and last windows of 2^floor(log2 L). O(n log n) time and
    O(n) memory whatever the slices; reducing each slice directly costs the sum of their lengths, which nested
    ranges (an outer range covering every launch) make quadratic.
    """
    return _slice_reduce_each([(ufunc, values, empty)], lo, hi)[0]


def _slice_reduce_each(
    reductions: list[tuple[np.ufunc, np.ndarray, int]], lo: np.ndarray, hi: np.ndarray
) -> list[np.ndarray]:
    """:func:`_slice_reduce` of several (ufunc, values, empty) over the same slices: the slices are grouped by
    level once (one sort of their levels, not a scan of every slice per level and reduction)."""
    outs = [np.full(lo.size, empty, dtype=values.dtype) for _, values, empty in reductions]
    length = hi - lo
    has = length > 0
    if not has.any():
        return outs
    level = np.full(lo.size, -1, np.int8)  # -1: empty; floor(log2 L) below 63 otherwise
    level[has] = np.floor(np.log2(length[has])).astype(np.int8)
    by_level = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[by_level], np.arange(int(level.max()) + 2))
    size = reductions[0][1].size
    tables = [values.copy() for _, values, _ in reductions]
    k = 0
    while True:
        sel = by_level[bounds[k] : bounds[k + 1]]
        if sel.size:
            for (ufunc, _, _), table, out in zip(reductions, tables, outs, strict=True):
                out[sel] = ufunc(table[lo[sel]], table[hi[sel] - (1 << k)])
        if (1 << (k + 1)) > size or k + 1 >= bounds.size - 1:
            break
        width = 1 << k
        # Windows of 2^(k+1) from two windows of 2^k; the tail keeps windows that would run past the end
        # (never read: a slice only reads windows that fit inside it).
        for (ufunc, _, _), table in zip(reductions, tables, strict=True):
            table[:-width] = ufunc(table[:-width], table[width:])
        k += 1
    return outs


def _sorted_searchsorted(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """``np.searchsorted(haystack, needles, side="left")`` for a sorted haystack. Needles in ascending order (the
    starts of ranges in thread and start order) are counted the other way round: each haystack value in the
    needles' span is placed among the needles, and a running count of them gives each needle's position; a
    few haystack values searched in many needles, not every needle in the haystack."""
    if needles.size < 2 or not (needles[1:] >= needles[:-1]).all():
        return np.searchsorted(haystack, needles, side="left")
    if intervals.walks(haystack, needles):  # the compiled walk through both
        return intervals.search_sorted(haystack, needles)
    first = int(np.searchsorted(haystack, needles[0], side="left"))
    stop = int(np.searchsorted(haystack, needles[-1], side="left"))
    # haystack[first:stop] holds the values in [needles[0], needles[-1]); slot[k]: the needles below
    # haystack[first + k] number it, so that the needles [slot[k - 1], slot[k]) have first + k values below them
    # (one np.repeat writing each answer, not a count per needle and its running sum)
    slot = np.searchsorted(needles, haystack[first:stop], side="right")
    steps = np.diff(slot, prepend=0, append=needles.size)
    return np.repeat(np.arange(first, stop + 1, dtype=np.int64), steps)


# Launches stepped over one at a time past a range's first before a binary search for its last (see _bounds_of).
LAUNCH_STEPS = 2

# Ranges are measured this many at a time: a training export holds tens of millions of NVTX ranges, and each
# needs a dozen int64 intermediates. (2^21 held ~35 MiB more at x400 for no less CPU; 2^19 saved no more.)
CHUNK_RANGES = 1 << 20


COVER_CHUNK = 1 << 18  # launches whose covered times are found at once (a dozen int64 intermediates each)


class _Launches:
    """Launch calls sorted by (thread, time), with running sums, shared by every chunk of ranges.

    A (thread, time) pair is packed into one int64, thread code x span + time, so that one sorted array and a
    binary search find each range's launches; ranges are packed a chunk at a time. A span too long to pack
    (about 1e4 threads over 5 days) takes thread_time_positions' rank path for every range at once.
    """

    def __init__(self, trace: Trace, rows: np.ndarray | None) -> None:
        """``rows``: the ranges' event rows, in the order they are measured; None where they come a chunk at a
        time (:meth:`run_bounds`), which needs ``packed`` (else nothing is built past it: give the rows)."""
        cols = event_columns(trace)
        pairs = launch_pairs(trace)
        # One op per launch call (no graph launches): the launches are the matched GPU ops, read from the pairs'
        # columns at their positions once sorted (no per-launch copy of every column first, no op count of 1
        # each); otherwise each launch call's ops reduced (_per_launch).
        one_op = _one_op_launches(pairs)
        launches: dict[str, np.ndarray] = {}
        # each launch's thread as its rank among the sorted thread keys, read at the pairs' rows by the compiled
        # pass where it applies (no pid, tid and key gathered per launch, no distinct keys sorted and searched)
        coded = None
        launch_keys: np.ndarray | None
        if one_op is None:
            launches = _per_launch(trace)
            launch_keys = thread_key(launches["pid"], launches["tid"])
            launch_t = launches["t"].astype(np.int64)  # a copy: shifted in place below
        else:
            coded = row_thread_codes(pairs["pid"], pairs["tid"], one_op) if one_op.size else None
            launch_keys = (
                None if coded is not None else thread_key(pairs["pid"][one_op], pairs["tid"][one_op])
            )
            launch_t = pairs["launch_start"][one_op].astype(np.int64, copy=False)
        self.rows = rows
        self._covered_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.empty = launch_t.size == 0 or (rows is not None and rows.size == 0)
        if self.empty:
            return
        if coded is not None:
            self.threads = coded[1]
        else:
            assert launch_keys is not None
            self.threads = np.sort(distinct(launch_keys))
        # Bounds of every time packed (launches, range starts and ends): the whole table's earliest start and
        # latest end hold the ranges' (one pass each over a column, no gather of every range's times).
        low, high = time_span(cols.start, cols.end)
        self.lo = min(int(launch_t.min()), low)
        self.width = max(int(launch_t.max()), high) - self.lo + 2
        self.packed = len(self.threads) * self.width < columns.PACKED_KEY_LIMIT
        if rows is None and not self.packed:
            return
        if self.packed:
            if coded is not None:
                self.key = coded[0].astype(np.int64)
            else:
                assert launch_keys is not None
                self.key = np.searchsorted(self.threads, launch_keys)
            self.key *= self.width
            launch_t -= self.lo  # a fresh array here (gathered above)
            self.key += launch_t
        else:
            if coded is not None:
                launch_keys = self.threads[coded[0]]
            assert launch_keys is not None
            self.key, self.range_start, self.range_end = thread_time_positions(
                [
                    (launch_keys, [launch_t]),
                    (thread_key(cols.pid[rows], cols.tid[rows]), [cols.start[rows], cols.end[rows]]),
                ]
            )
        del launch_keys, launch_t, coded
        order = np.argsort(self.key, kind="stable")
        # key_end[i] = key[i], and past the last launch a maximum; key is a view of it, not a second copy
        self.key_end = np.empty(order.size + 1, np.int64)
        self.key_end[:-1] = self.key[order]
        self.key_end[-1] = np.iinfo(np.int64).max
        self.key = self.key_end[:-1]
        count = np.int32 if order.size < 2**31 else np.int64
        # the columns read from here on (the thread and launch time are in the key); devices in their own small
        # integers, running counts in int32 where they fit
        self.csum_ns = np.zeros(order.size + 1, np.int64)
        if one_op is not None:
            at = one_op[order]
            del order, one_op
            self.first = pairs["start"][at].astype(np.int64, copy=False)
            self.last = pairs["end"][at].astype(np.int64, copy=False)
            # every launch on one device, and one op each: no running count of either
            self.dev_min = self.dev_max = pairs["device"][at]
            del at
            np.cumsum(self.last - self.first, out=self.csum_ns[1:])
            self.csum_ops: np.ndarray | None = None
            self.csum_multi: np.ndarray | None = None
        else:
            launches = {
                k: launches[k][order].astype(np.int64, copy=False) for k in ("op_ns", "ops", "first", "last")
            } | {k: launches[k][order] for k in ("dev_min", "dev_max")}
            del order
            np.cumsum(launches["op_ns"], out=self.csum_ns[1:])
            self.csum_ops = np.concatenate([[0], np.cumsum(launches["ops"])])
            self.first = launches["first"]
            self.last = launches["last"]
            self.dev_min = launches["dev_min"]
            # A range's launches are all on one device when none of them spans several and none after the first
            # changes device: two running counts instead of a min and a max over each range's launches.
            self.dev_max = launches["dev_max"]
            del launches
            self.csum_multi = np.zeros(self.first.size + 1, count)
            np.cumsum(self.dev_min != self.dev_max, dtype=count, out=self.csum_multi[1:])
        self.csum_change = np.zeros(self.first.size + 1, count)
        changes = self.dev_min[1:] != self.dev_min[:-1]
        if (
            changes.any()
        ):  # else all zeros as allocated (every launch on one device: no running count to take)
            np.cumsum(changes, dtype=count, out=self.csum_change[2:])

    def op_counts(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The GPU ops of the launches [lo, hi) (one per launch call without graph launches)."""
        return hi - lo if self.csum_ops is None else self.csum_ops[hi] - self.csum_ops[lo]

    def _positions(self, cols: EventColumns, at: slice) -> tuple[np.ndarray, np.ndarray]:
        """Packed (thread, start) and (thread, end) of the ranges ``at``; -1 for both on a thread that launched
        nothing (no launch lies between)."""
        if not self.packed:
            return self.range_start[at], self.range_end[at]
        mine = self.rows[at]  # type: ignore[index]  # packed: the ranges were picked
        keys = thread_key(cols.pid[mine], cols.tid[mine])
        code = np.minimum(np.searchsorted(self.threads, keys), self.threads.size - 1)
        known = self.threads[code] == keys
        base = code * self.width - self.lo
        start, end = base + cols.start[mine], base + cols.end[mine]
        unknown = np.flatnonzero(~known)  # an index, not a chunk-long mask, for the few such ranges
        start[unknown] = -1
        end[unknown] = -1
        return start, end

    def measure(self, trace: Trace, at: slice) -> dict[str, np.ndarray]:
        """ops, gpu_op_ns, proj_start, proj_end, gpu_idle_ns of the ranges ``at`` (positions in ``rows``)."""
        lo, hi = self.bounds(trace, at)
        out = {"ops": self.op_counts(lo, hi), "gpu_op_ns": self.csum_ns[hi] - self.csum_ns[lo]}
        launching, span = self.spans(trace, lo, hi)
        for key, values in span.items():
            out[key] = np.zeros(lo.size, np.int64)
            out[key][launching] = values
        return out

    def bounds(self, trace: Trace, at: slice) -> tuple[np.ndarray, np.ndarray]:
        """For each range ``at``, its launches: positions [lo, hi) in the sorted launches."""
        return self._bounds_of(*self._positions(event_columns(trace), at))

    def run_bounds(
        self,
        start: np.ndarray,
        end: np.ndarray,
        run_keys: np.ndarray,
        run_lengths: np.ndarray,
        at: slice | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`bounds` of the ranges ``at`` when they are in thread order: ``start`` and ``end`` their times
        (fresh arrays, packed in place), ``run_lengths`` how many of them each thread of ``run_keys`` holds. The
        thread's place is found once per thread, not per range."""
        if not self.packed:
            assert at is not None  # the rows were given: their packed times are held
            return self._bounds_of(self.range_start[at], self.range_end[at])
        code = np.searchsorted(self.threads, run_keys)
        known = self.threads[np.minimum(code, self.threads.size - 1)] == run_keys
        shift = np.repeat(np.where(known, code * self.width - self.lo, 0), run_lengths)
        start += shift
        end += shift
        del shift
        if not known.all():
            # A thread that launched nothing: its ranges sit where its launches would start, both ends, so that
            # none lies between and the starts stay in order (a sorted search).
            unknown = np.flatnonzero(np.repeat(~known, run_lengths))
            place = np.repeat(code * self.width, run_lengths)[unknown]
            start[unknown] = place
            end[unknown] = place
        return self._bounds_of(start, end)

    def _bounds_of(self, range_start: np.ndarray, range_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = _sorted_searchsorted(self.key, range_start)
        # A range whose first launch at or after its start lies at or after its end launched nothing: hi = lo
        # without a binary search; most ranges of a training export are such (their ends are not in order, and
        # a search of unordered needles in millions of launches misses the cache).
        hi = lo.copy()
        further = np.flatnonzero((self.key_end[lo] < range_end) | (range_end < range_start))
        # A range that launches something mostly holds one launch or a few: hi is the first launch at or after
        # its end, so the next few launches past lo are tried before a binary search (not for a range ending
        # before it starts, whose hi may lie below lo).
        forward = range_end[further] >= range_start[further]
        step = further[forward]
        searched = [further[~forward]]
        at, step_ends = lo[step] + 1, range_end[step]
        for _ in range(LAUNCH_STEPS):  # a loop over a few steps, not over ranges
            if not step.size:
                break
            found = self.key_end[at] >= step_ends  # key_end[n] is the int64 maximum: at never passes n
            hi[step[found]] = at[found]
            left = np.flatnonzero(~found)
            step, at, step_ends = step[left], at[left] + 1, step_ends[left]
        searched.append(step)
        rest = np.concatenate(searched)
        hi[rest] = intervals.search_near(self.key, range_end[rest])  # ends in thread order: mostly ascending
        return lo, hi

    def spans(self, trace: Trace, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(the positions of the ranges that launch something, their proj_start, proj_end and gpu_idle_ns): the
        others have none (zeros), and are most ranges of a training export, so nothing below touches them."""
        launching = np.flatnonzero(hi > lo)
        return launching, self.spans_of(trace, lo[launching], hi[launching])

    def _covered(self, trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per launch call, the busy time of its device before its first op's start and before its last op's
        end (``intervals.covered_before`` on the device's busy union), and a running count of the places where
        the launches' first or last op times step back; computed once for every chunk.

        Covered time is non-decreasing in time, so over a range's launches on one device the minimum of the
        first values is the value at the earliest start and the maximum of the last values the value at the
        latest end: a range's busy overlap is their difference, with no search per range. A launch spanning
        several devices (never read: its ranges take the joint union) or on a device without activity (its
        ranges' idle time is 0, as the op times themselves then cancel) keeps its own times."""
        if self._covered_cache is None:
            busy = device_busy(trace)
            # every launch on one device (no graph launches: dev_min is dev_max), the one with activity: the
            # compiled walk writes all three at once
            found = None
            if len(busy) == 1 and self.dev_min is self.dev_max and int(self.csum_change[-1]) == 0:
                dev, one = next(iter(busy.items()))
                if int(self.dev_min[0]) == dev:
                    found = covered_times(
                        self.first, self.last, one.busy_starts, one.busy_ends, self.csum_change.dtype
                    )
            if found is not None:
                self._covered_cache = found
                return found
            cover_first, cover_last = self.first.copy(), self.last.copy()
            # a launch on one device (every launch, without graph launches: the same array twice) takes its
            # device's covered times, a chunk of the device's launches at a time
            single = self.dev_min is self.dev_max or bool((self.dev_min == self.dev_max).all())
            for dev, b in busy.items():  # a loop over devices
                on_dev = self.dev_min == dev
                if not single:
                    on_dev &= self.dev_min == self.dev_max
                sel = np.flatnonzero(on_dev)
                del on_dev
                prefix = union_prefix(b.busy_starts, b.busy_ends)
                for at in range(0, sel.size, COVER_CHUNK):  # a loop over chunks of launches
                    part = sel[at : at + COVER_CHUNK]
                    cover_first[part], cover_last[part] = covered_before_pair(
                        self.first[part], self.last[part], b.busy_starts, b.busy_ends, prefix
                    )
                del sel, prefix
            # Launches in thread and launch order mostly run their ops in that order: where a range's launches'
            # first and last op times never step back, its earliest start is its first launch's and its latest
            # end its last launch's (and so for the covered times on one device).
            step_back = self.first[1:] < self.first[:-1]
            step_back |= self.last[1:] < self.last[:-1]
            steps = np.zeros(self.first.size, self.csum_change.dtype)
            np.cumsum(step_back, dtype=steps.dtype, out=steps[1:])
            self._covered_cache = (cover_first, cover_last, steps)
        return self._covered_cache

    def spans_of(self, trace: Trace, lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
        """proj_start, proj_end and gpu_idle_ns of ranges that each launch something (hi > lo)."""
        if lo.size == 0:
            return {k: np.zeros(0, np.int64) for k in ("proj_start", "proj_end", "gpu_idle_ns")}
        cover_first, cover_last, steps = self._covered(trace)
        # Ranges whose launches' op times run in order (those with one launch call among them, most of the
        # others): the first launch's start and the last launch's end. The rest reduce over their launches with
        # sparse tables over the window of launches they cover (ranges of one thread in start order cover a
        # window of the launches sorted by thread and time).
        final = hi - 1
        first, last = self.first[lo], self.last[final]
        busy_first, busy_last = cover_first[lo], cover_last[final]
        unordered = np.flatnonzero(steps[final] != steps[lo])
        del final
        if unordered.size:
            u_lo, u_hi = lo[unordered], hi[unordered]
            win = slice(int(u_lo.min()), int(u_hi.max()))
            reduced = _slice_reduce_each(
                [
                    (np.minimum, self.first[win], 0),
                    (np.maximum, self.last[win], 0),
                    (np.minimum, cover_first[win], 0),
                    (np.maximum, cover_last[win], 0),
                ],
                u_lo - win.start,
                u_hi - win.start,
            )
            for out, values in zip((first, last, busy_first, busy_last), reduced, strict=True):
                out[unordered] = values
            del u_lo, u_hi, reduced
        n = self.dev_min.size
        one_device = self.csum_change[hi] == self.csum_change[np.minimum(lo + 1, n)]
        if self.csum_multi is not None:  # some launch spans several devices
            one_device &= self.csum_multi[hi] == self.csum_multi[lo]
        idle = last - first
        busy_last -= busy_first
        idle -= busy_last
        del busy_first, busy_last
        mixed = np.flatnonzero(~one_device)
        if mixed.size:
            busy = device_busy(trace)
            us, ue = intervals.merge(
                np.concatenate([b.busy_starts for b in busy.values()]),
                np.concatenate([b.busy_ends for b in busy.values()]),
            )
            idle[mixed] = (last[mixed] - first[mixed]) - _overlap_in_window(first[mixed], last[mixed], us, ue)
        return {"proj_start": first, "proj_end": last, "gpu_idle_ns": idle}


def _overlap_in_window(
    starts: np.ndarray, ends: np.ndarray, union_starts: np.ndarray, union_ends: np.ndarray
) -> np.ndarray:
    """``intervals.overlap_with_union`` on the part of the union between the earliest and the latest of the
    times given (a chunk of ranges of one thread spans a fraction of the trace): the union intervals outside it
    overlap none of the intervals, and the searches and running sums then cover the window only."""
    if starts.size == 0 or union_starts.size == 0:
        return intervals.overlap_with_union(starts, ends, union_starts, union_ends)
    earliest = min(int(starts.min()), int(ends.min()))
    latest = max(int(starts.max()), int(ends.max()))
    # the first union interval ending after the earliest time, and the first starting at or after the latest
    a = int(np.searchsorted(union_ends, earliest, side="right"))
    z = int(np.searchsorted(union_starts, latest, side="left"))
    return intervals.overlap_with_union(starts, ends, union_starts[a:z], union_ends[a:z])


def _zero_measures(n: int) -> dict[str, np.ndarray]:
    return {k: np.zeros(n, np.int64) for k in ("ops", "gpu_op_ns", "proj_start", "proj_end", "gpu_idle_ns")}


def range_instances(trace: Trace) -> pd.DataFrame:
    """Every annotation row with its launched GPU work and projected span."""
    import pandas as pd

    cols = event_columns(trace)
    rows = np.flatnonzero(cols.of_kind(ANNOTATION))
    out = pd.DataFrame(
        {
            "name": cols.name[rows],
            "start": cols.start[rows],
            "end": cols.end[rows],
            "pid": cols.pid[rows],
            "tid": cols.tid[rows],
        }
    )
    launches = _Launches(trace, rows)
    measured = _zero_measures(rows.size) if launches.empty else launches.measure(trace, slice(None))
    for key, values in measured.items():
        out[key] = values
    return out


def range_summary(trace: Trace, limit: int = NAME_LIMIT) -> dict[str, Any]:
    cols = event_columns(trace)
    code = ALL_KINDS.index(ANNOTATION)
    count = count_of_kind(cols.kind, code)
    if count == 0:
        return {"count": 0, "names": 0, "texts": 0, "ranges": []}
    # By thread, then start (the table's order): each chunk of ranges then covers one window of the launches.
    # Where the (thread, time) pairs pack, the chunks come from a scan of the table a block at a time
    # (grouping.thread_chunks: no row array of every range); otherwise every range's packed times are built
    # first, from the rows in thread order.
    launches = _Launches(trace, None)
    if launches.empty or launches.packed:
        chunks = thread_chunks(cols, code, count, CHUNK_RANGES)
    else:
        rows, run_keys, run_lengths = rows_by_thread(cols, cols.kind == code)
        launches = _Launches(trace, rows)
        chunks = cut_in_chunks(rows, run_keys, run_lengths, CHUNK_RANGES)
        del rows
    # Sums per name code (slot 0: the null name), added a chunk at a time.
    fields = ("n", "cpu_ns", "ops", "gpu_op_ns", "projected_ns", "gpu_idle_ns", "with_gpu")
    size = len(cols.names) + 1
    totals = {field: np.zeros(size, np.int64) for field in fields}
    for mine, run_keys, in_chunk, at in chunks:  # a loop over chunks of ranges
        # intp, as np.bincount reads it: no cast in each count below
        slot = np.add(cols.name[mine], 1, dtype=np.intp)
        totals["n"] += np.bincount(slot, minlength=size)
        start, end = cols.start[mine], cols.end[mine]
        del mine
        totals["cpu_ns"] += sum_per_slot(slot, end - start, size)
        if launches.empty:
            continue
        lo, hi = launches.run_bounds(start, end, run_keys, in_chunk, at)
        del start, end
        # Only the ranges with hi != lo add GPU figures (most ranges of a training export launch nothing): the
        # ones that launch something, and a range ending before it starts with launches in between, whose
        # (negative) op sums count as they always have.
        moved = np.flatnonzero(hi != lo)
        lo, hi, slot = lo[moved], hi[moved], slot[moved]
        del moved
        totals["ops"] += sum_per_slot(slot, launches.op_counts(lo, hi), size)
        totals["gpu_op_ns"] += sum_per_slot(slot, launches.csum_ns[hi] - launches.csum_ns[lo], size)
        # Every launch call has at least one op: the ranges that launch something are those with ops > 0.
        launching = np.flatnonzero(hi > lo)
        if launching.size < lo.size:
            lo, hi, slot = lo[launching], hi[launching], slot[launching]
        del launching
        totals["with_gpu"] += np.bincount(slot, minlength=size)
        span = launches.spans_of(trace, lo, hi)
        del lo, hi
        totals["projected_ns"] += sum_per_slot(slot, span["proj_end"] - span["proj_start"], size)
        totals["gpu_idle_ns"] += sum_per_slot(slot, span["gpu_idle_ns"], size)
        del span, slot
    names = cols.names
    used = np.flatnonzero(totals["n"])
    # Instances of one thing share a template name (emit_nvtx's "aten::mm, op_id = 5", "ProfilerStep#3"):
    # one row per template, with the number of distinct texts it groups. A loop over distinct names.
    # A range recorded without a name (an NVTX range with neither text nor textId: a null name, or an empty one)
    # is listed as NO_NAME, not as a blank row.
    labels = [(name_template(str(names[c - 1])) if c > 0 else "") or NO_NAME for c in used]
    label, agg = sums_by_label(labels, {field: values[used] for field, values in totals.items()})
    out = [
        {
            "name": label[r],
            "count": int(agg["n"][r]),
            "texts": int(agg["texts"][r]),
            "cpu_ns": int(agg["cpu_ns"][r]),
            "gpu_ops": int(agg["ops"][r]),
            "gpu_op_ns": int(agg["gpu_op_ns"][r]),
            "projected_ns": int(agg["projected_ns"][r]),
            "gpu_idle_ns": int(agg["gpu_idle_ns"][r]),
            "instances_with_gpu": int(agg["with_gpu"][r]),
        }
        for r in largest_first(agg["cpu_ns"], label)[:limit]
    ]
    return {"count": count, "names": int(label.size), "texts": int(used.size), "ranges": out}


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    return range_summary(trace)
