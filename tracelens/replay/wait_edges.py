"""What the replay graph's waiting calls wait for: the op a ``cudaStreamWaitEvent`` makes the next op on its stream
wait for (:func:`event_waits`, the event edges), and the ops each explicit synchronize waits for
(:func:`sync_waits`, the wait edges), with the recorded synchronizations that name a call's stream. Both read the
launch order and the recorded synchronizations, found once for both (:class:`LaunchOrder`, :class:`SyncRows`)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..analyses.columns import EventColumns
from ..trace import GPU_SYNC
from .call_names import text_mask
from .points import NONE, unique_ints

SYNC_MATCH_SLACK_NS = 1_000_000  # a recorded synchronization within this of its call belongs to it


def copies_ahead(
    blocking_copy: np.ndarray, op_launch_call: np.ndarray, call_end: np.ndarray, op_start: np.ndarray
) -> np.ndarray:
    """Per call, whether it is a blocking-kind copy call (``blocking_copy``: per op, pageable or a synchronous copy
    name) that returned before its copy began; those ops are taken out of ``blocking_copy`` in place. A small
    pageable host-to-device copy returns once its data is staged and the DMA runs later: the call did not wait
    for it, so holds no wait edge (the edge's lead, longer than the copy, made the critical path run backwards
    through it: "on the host: 104.7%", sync_waits negative). The memcpy remedy's calls all the same (their copies
    become pinned)."""
    copies = np.flatnonzero(blocking_copy)
    ahead = copies[call_end[op_launch_call[copies]] < op_start[copies]]
    blocking_copy[ahead] = False
    calls = np.zeros(call_end.size, bool)
    calls[op_launch_call[ahead]] = True
    return calls


def sync_waits(
    parts: tuple[list[np.ndarray], list[np.ndarray]],
    cols: EventColumns,
    sync_calls: np.ndarray,
    calls: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ops: tuple[np.ndarray, np.ndarray, np.ndarray],
    launches: LaunchOrder,
    syncs: SyncRows,
) -> None:
    """The wait edges of the explicit synchronize calls ``sync_calls`` (ascending) appended to ``parts`` (source
    points, target points), a stream's at a time: each waits for the last op launched before it on every stream of
    its device (the device of the last launch on its thread before it), or on the stream the trace records it
    waited for. ``calls``: the calls' rows, threads, starts and ends; ``ops``: the ops' devices, streams and end
    points."""
    call_row, call_thread, cs, ce = calls
    op_dev, op_stream, op_end_pt = ops
    sync_dev = launches.device_before(sync_calls, call_thread, op_dev)
    # where the trace records the synchronization itself (Kineto cuda_sync, Nsight SYNCHRONIZATION rows sharing
    # the call's correlation id) a stream sync waits for that stream only
    recorded_dev, recorded_stream = _recorded_sync_targets(
        cols, call_row[sync_calls], cs[sync_calls], ce[sync_calls], syncs=syncs
    )
    recorded_dev = _stream_devices(recorded_dev, recorded_stream, sync_dev, op_dev, op_stream, launches)
    sync_dev = np.where(recorded_dev >= 0, recorded_dev, sync_dev)
    for members, issued in launches.streams:  # a loop over streams
        dev, stream = op_dev[members[0]], op_stream[members[0]]
        mine = np.flatnonzero((sync_dev == dev) & ((recorded_stream < 0) | (recorded_stream == stream)))
        k = np.searchsorted(issued, cs[sync_calls[mine]], side="left") - 1
        good = k >= 0
        parts[0].append(op_end_pt[members[k[good]]])
        parts[1].append(2 * sync_calls[mine[good]] + 1)


def _stream_devices(
    recorded_dev: np.ndarray,
    recorded_stream: np.ndarray,
    launch_dev: np.ndarray,
    op_dev: np.ndarray,
    op_stream: np.ndarray,
    launches: LaunchOrder,
) -> np.ndarray:
    """The device of each recorded stream sync: the recorded one where an op of the trace runs on that (device,
    stream); else the device of the call's thread's last launch where that device runs the stream; else the one
    device that runs it. CUPTI's synchronization record names the context and stream, not the device: Nsight's
    deviceId column beside them can be wrong (h100x2_fastvideo_window: 0 on every row, the 122 of context 2 too,
    whose 2,184 ops all run on device 1), which left the stream syncs of device 1 without any wait."""
    stream_sync = recorded_stream >= 0
    if not stream_sync.any():
        return recorded_dev
    pairs = np.array(
        [(op_dev[m[0]], op_stream[m[0]]) for m, _ in launches.streams], np.int64
    )  # (a few streams)
    if pairs.size == 0:
        return recorded_dev
    out = recorded_dev.copy()
    for i in np.flatnonzero(stream_sync):  # a loop over the stream syncs whose device is checked: few
        runs = pairs[pairs[:, 1] == recorded_stream[i], 0]
        if runs.size == 0 or recorded_dev[i] in runs:
            continue
        if launch_dev[i] in runs:
            out[i] = launch_dev[i]
        elif runs.size == 1:
            out[i] = runs[0]
    return out


class LaunchOrder:
    """What the event waits and the synchronizations both read, found once on first use: the launching ops by
    launch call (a stable sort), and each stream's ops by start with the latest time each can have been issued."""

    def __init__(
        self,
        op_launch_call: np.ndarray,
        op_start: np.ndarray,
        op_launch_start: np.ndarray,
        stream_code: np.ndarray,
    ) -> None:
        self.op_launch_call, self.op_start = op_launch_call, op_start
        self.op_launch_start, self.stream_code = op_launch_start, stream_code

    @cached_property
    def by_call(self) -> tuple[np.ndarray, np.ndarray]:
        """(launch calls ascending, their ops): the launching ops by launch call, in op order within a call."""
        # (one stable sort of every op: the unlaunched ones, call -1, first, then the launching ones as a stable
        # sort of those alone orders them; no arrays of the launching ops and their calls to sort)
        order = np.argsort(self.op_launch_call, kind="stable")
        launching = order[int(np.count_nonzero(self.op_launch_call < 0)) :]
        return self.op_launch_call[launching], launching

    def device_before(
        self, calls: np.ndarray, call_thread: np.ndarray, op_dev: np.ndarray, *, after: bool = False
    ) -> np.ndarray:
        """The device of the latest launching call at or before each of ``calls`` on its thread (``after``: else of
        the next one after it on its thread); -1 where its thread launched nothing there (or no op has a launch
        call). Calls are numbered in (thread, time) order."""
        lc_sorted, lo_sorted = self.by_call
        device = np.full(calls.size, -1, np.int64)
        if lo_sorted.size == 0:
            return device
        j = np.searchsorted(lc_sorted, calls, side="right") - 1
        ok = j >= 0
        ok[ok] = call_thread[lc_sorted[j[ok]]] == call_thread[calls[ok]]
        device[ok] = op_dev[lo_sorted[j[ok]]]
        if after:
            k = np.searchsorted(lc_sorted, calls, side="left")
            nxt = (device < 0) & (k < lc_sorted.size)
            nxt[nxt] = call_thread[lc_sorted[k[nxt]]] == call_thread[calls[nxt]]
            device[nxt] = op_dev[lo_sorted[k[nxt]]]
        return device

    @cached_property
    def streams(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per stream (by code): (its ops by start, the latest time each was issued: the least issue time of it and
        every op after it on the stream, an op's issue time being its launch call's start, an unlaunched op's own
        start). A stream runs its ops in the order they were issued, so an op was issued no later than any op after
        it; an unlaunched op's own start is only a bound (its launch lies before the trace), and where later ops'
        launches came before that start, so did its own (h100x2_fastvideo_window: 424 ms of work per device queued
        before the window, ahead of the copies launched in it; with the running max of the issue times instead, a
        sync waited for none of the copies launched before it, only for the last op that started before it, and
        the 428 ms it then waited read as its own cost)."""
        issue = np.where(self.op_launch_start > NONE, self.op_launch_start, self.op_start)
        codes = unique_ints(self.stream_code)
        out = []
        for code in codes:  # a loop over streams
            # (one stream: every op, no mask, search and gathers)
            one = codes.size == 1
            members = np.arange(self.stream_code.size) if one else np.flatnonzero(self.stream_code == code)
            starts = self.op_start if one else self.op_start[members]
            # (in start order already, as the ops' rows usually are: kept, no sort)
            in_order = bool((starts[1:] >= starts[:-1]).all())
            if not in_order:
                members = members[np.argsort(starts, kind="stable")]
            issued = (
                issue if one and in_order else issue[members]
            )  # (issue is not read again: written in place)
            backwards = issued[::-1]
            np.minimum.accumulate(backwards, out=backwards)
            out.append((members, issued))
        return out


def event_waits(
    cols: EventColumns,
    waits: np.ndarray,
    records: np.ndarray,
    call_row: np.ndarray,
    call_thread: np.ndarray,
    cs: np.ndarray,
    names: np.ndarray,
    op_launch_call: np.ndarray,
    op_dev: np.ndarray,
    op_stream: np.ndarray,
    launches: LaunchOrder,
    syncs: SyncRows,
) -> tuple[np.ndarray, np.ndarray]:
    """(event op, waiting op) per cudaStreamWaitEvent call that both resolve for (op indices). The event is the
    one the latest event-record call before the wait on the same thread recorded; its op, the last op that
    thread launched at or before that record call. The waiting stream is the one the trace records for the wait
    (gpu_sync row with its correlation id), else the stream of the next op the thread launches; the waiting op is
    the first op issued on that stream after the wait call. Waits within one stream are dropped."""
    empty = np.zeros(0, np.int64)
    if call_row.size == 0 or op_launch_call.size == 0:
        return empty, empty
    if waits.size == 0 or records.size == 0:
        return empty, empty
    lc_sorted, lo_sorted = launches.by_call
    if lc_sorted.size == 0:
        return empty, empty
    j = np.searchsorted(records, waits) - 1  # calls are numbered in (thread, time) order
    ok = j >= 0
    rec = records[np.maximum(j, 0)]
    ok &= call_thread[rec] == call_thread[waits]
    k = np.searchsorted(lc_sorted, rec, side="right") - 1
    ok &= k >= 0
    src = lo_sorted[np.maximum(k, 0)]
    ok &= call_thread[lc_sorted[np.maximum(k, 0)]] == call_thread[waits]
    # the waiting stream: recorded, else the next op this thread launches
    _, recorded_stream = _recorded_sync_targets(
        cols, call_row[waits], cs[waits], cs[waits], kinds=("stream_wait_event",), syncs=syncs
    )
    n = np.searchsorted(lc_sorted, waits, side="left")
    has_next = n < lc_sorted.size
    nxt = lo_sorted[np.minimum(n, lc_sorted.size - 1)]
    has_next &= call_thread[lc_sorted[np.minimum(n, lc_sorted.size - 1)]] == call_thread[waits]
    stream = np.where(recorded_stream >= 0, recorded_stream, np.where(has_next, op_stream[nxt], -1))
    device = op_dev[src]
    ok &= (stream >= 0) & ~((op_stream[src] == stream) & (op_dev[src] == device))
    dst = np.full(waits.size, -1, np.int64)
    for members, issued in launches.streams:  # a loop over streams
        mine = np.flatnonzero(ok & (device == op_dev[members[0]]) & (stream == op_stream[members[0]]))
        if mine.size == 0:
            continue
        at = np.searchsorted(issued, cs[waits[mine]], side="left")
        inside = at < members.size
        dst[mine[inside]] = members[at[inside]]
    ok &= dst >= 0
    return src[ok].astype(np.int64), dst[ok]


class SyncRows:
    """The trace's recorded synchronizations (gpu_sync rows with a correlation id), by correlation id: found once
    on first use, for the event waits and the synchronize calls both."""

    def __init__(self, cols: EventColumns) -> None:
        self.cols = cols

    @cached_property
    def by_correlation(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, their correlation ids), by correlation id (stable)."""
        cols = self.cols
        rows = np.flatnonzero(cols.of_kind(GPU_SYNC))
        if rows.size == 0:
            return rows, np.zeros(0, np.int64)
        sync_corr = cols.at("correlation_id", rows).astype(np.int64)
        keep = sync_corr >= 0
        rows, sync_corr = rows[keep], sync_corr[keep]
        order = np.argsort(sync_corr, kind="stable")
        return rows[order], sync_corr[order]


def _recorded_sync_targets(
    cols: EventColumns,
    call_rows: np.ndarray,
    call_start: np.ndarray,
    call_end: np.ndarray,
    kinds: tuple[str, ...] = ("stream_sync", "stream synchronize"),
    syncs: SyncRows | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(device, stream) each synchronize call waited for, from the gpu_sync row with its correlation id that
    overlaps it (stream -1: not a stream sync, or none recorded; device -1: none recorded)."""
    device = np.full(call_rows.size, -1, np.int64)
    stream = np.full(call_rows.size, -1, np.int64)
    if call_rows.size == 0:
        return device, stream
    rows, sync_corr = (syncs or SyncRows(cols)).by_correlation
    if rows.size == 0:  # (none with a correlation id: every call's targets stay unknown, as below)
        return device, stream
    call_corr = cols.at("correlation_id", np.sort(call_rows))
    call_corr = call_corr[np.argsort(np.argsort(call_rows))].astype(np.int64)  # back in the calls' order
    at = np.minimum(np.searchsorted(sync_corr, call_corr), max(sync_corr.size - 1, 0))
    hit = (call_corr >= 0) & (sync_corr.size > 0)
    if sync_corr.size:
        hit &= sync_corr[at] == call_corr
    row = rows[at[hit]] if sync_corr.size else np.zeros(0, np.int64)
    near = (cols.start[row] <= call_end[hit] + SYNC_MATCH_SLACK_NS) & (
        cols.end[row] >= call_start[hit] - SYNC_MATCH_SLACK_NS
    )
    idx = np.flatnonzero(hit)[near]
    row = row[near]
    device[idx] = cols.device[row]
    is_stream = (
        text_mask(cols.store.take("sync_kind", row), lambda word: word.lower() in kinds)
        if cols.store is not None
        else np.zeros(0, bool)
    )
    stream[idx[is_stream]] = cols.at("stream", row[is_stream])
    return device, stream
