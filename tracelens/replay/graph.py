"""The trace's dependency graph: host calls in program order, GPU ops in stream order, launches and waits.

Every host API call (runtime/driver row, outermost on its thread) and every GPU op (kernel, memcpy, memset)
contributes two *points*, its start and its end. Points sit on *chains*: one per host thread (start0, end0,
start1, end1, ...) and one per (device, stream). A point's time is

    t = max(t of the previous point on its chain + lag, every cross edge's source t + its lag, anchor)

- host chain: a call's start follows the previous call's end by the host time between them (``gap``, the
  host's own work); its end follows its start by its duration;
- stream chain: an op's start follows the previous op's end on the stream; its end = start + duration;
- launch edge: an op's start follows its launch call's start (correlation id; a graph launch feeds each of
  its ops; a call nested inside another call feeds through the outer call, offset by where it started);
- event edge: an op issued on a stream after a ``cudaStreamWaitEvent`` follows the op the event recorded;
- wait edge: a blocking call's end follows the end of what it waits for: an explicit synchronize waits for
  the last op launched before it on every stream of its device (its stream only, where the trace records a
  stream sync); a synchronous copy (a ``cudaMemcpy``-style call, or any copy from or to pageable host memory)
  waits for its own copy; a launch the trace shows blocked on a full command buffer (an Nsight overhead row
  inside the call) waits for the *start* of the op that released it (queue_waits.py): its end follows the GPU
  taking queued work, not a fixed host cost;
- collective edge: the kernels of one collective on the devices that take part (NCCL/RCCL kernels matched as
  run/crossrank.py matches them across ranks: the same kernel name, the same ordinal among that name's kernels
  on each device, present on every device that runs that name) end together: each participant's end follows
  every other participant's start by its own transfer time (its recorded end - the last participant's start),
  and its chain lag (its duration) becomes that transfer time, so a participant that starts early waits for
  the last one and no longer than that;
- wake edge: a host thread idle for a while (and each thread's first call) resumes after the latest point
  another thread recorded in that time.

Lags come from the recording: the edge that set a point's time (the latest of its sources) keeps the
recorded delay (a launch's own latency, an op's own gap behind its stream predecessor, a sync's own wake-up);
the others get the device's typical value of that edge kind (capped by the recorded delay; a queue wait's typical
return is the median of the queue waits', apart from the syncs' and copies'), so replaying the
graph unchanged puts every point back where it was recorded, and what it cannot order (a start before its
launch, an op overlapping its stream predecessor, a sync ending before what it waits for) shows up as
replay error. Anchors: a chain's first point with no cross edge, and a GPU op whose launch call the trace
lacks, keep their recorded time (nothing is known about what issued them).

``build`` makes the points, chains and the five edge kinds in one pass over the per-call and per-op arrays; the
parts it hands those arrays to are modules beside this one: the host calls, their points and the ops' launch calls
(host_calls.py), the calls' name rules (call_names.py), the typical lags (typical_lags.py), the event waits and
the synchronizations' waits with the launch order and recorded synchronizations they share (wait_edges.py), the
launches blocked on a full command buffer (queue_waits.py), the collectives (collective_edges.py) and the wake-ups (wake_edges.py). What they all read, ``NONE`` and the point
kinds, is points.py (re-exported here, where the graph's users import them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import intervals
from ..analyses.columns import event_columns
from ..analyses.launch import launch_pairs
from ..analyses.names import is_collective_kernel, is_graph_launch
from ..analyses.startup import one_time_work
from ..analyses.sync import framework_waits
from ..trace import DRIVER, GPU_ACTIVITY_KINDS, MEMCPY, RUNTIME, STEP, Trace
from ..values import dense_codes
from .call_names import call_rules, lower_is, text_mask
from .collective_edges import collective_edges, collective_ids
from .host_calls import host_points, launch_calls, plausible_launch
from .name_tests import names_mask
from .points import GPU_END as GPU_END
from .points import GPU_START as GPU_START
from .points import HOST_END as HOST_END
from .points import HOST_START as HOST_START
from .points import NONE as NONE
from .points import kind_code
from .points import point_index_type as point_index_type
from .points import unique_ints as unique_ints
from .queue_waits import queue_waits
from .typical_lags import DEFAULT_SYNC_OWN_NS, DEFAULT_WAKE_NS, typical_lags
from .wait_edges import LaunchOrder, SyncRows, copies_ahead, event_waits, sync_waits
from .wake_edges import wake_edges


@dataclass
class Graph:
    """Points (arrays indexed by point), chains and cross edges; see the module docstring.

    Per point: ``time`` (recorded), ``chain``, ``kind``, ``lag`` (after the chain predecessor; ignored on a chain's
    first point), ``anchor`` (a lower bound that is not an edge: the recorded time of anchored points, else NONE),
    ``row`` (the event row; ``chain`` and ``row`` int32 where they fit). Points of a chain are stored contiguously
    in chain order, chains one after another. Cross edges: ``edge_src`` -> ``edge_dst`` with ``edge_lag``,
    ``edge_is_wait`` (a blocking call's end on what it waits for; else a launch; :meth:`queue_wait_edges` tells the
    queue waits among them).
    Per host call ``c`` (``call_*``): its start point is ``2c`` of the host points, i.e. ``call_start[c]``.
    Per GPU op ``o`` (``op_*``): start/end points, ``op_launch_call`` (-1 unlaunched), duration, copy facts.
    """

    time: np.ndarray
    chain: np.ndarray
    kind: np.ndarray
    lag: np.ndarray
    anchor: np.ndarray
    row: np.ndarray
    chain_first: np.ndarray  # bool per point: first point of its chain
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_lag: np.ndarray
    edge_is_wait: np.ndarray
    edge_is_wake: np.ndarray  # host -> host: an idle thread resumes after another thread's point
    # GPU start -> GPU end: a collective's participant ends after the others start
    edge_is_collective: np.ndarray
    # the edge's lag at its kind's typical value (model replay; wake edges: as recorded)
    edge_typical: np.ndarray
    # host calls
    call_start: np.ndarray
    call_end: np.ndarray
    call_row: np.ndarray
    call_thread: np.ndarray  # thread code
    call_name: np.ndarray  # name code
    call_waits: np.ndarray  # bool: has wait edges of an explicit host wait (a sync, a blocking copy)
    # bool: a launch the trace shows blocked on a full command buffer (has queue wait edges, from GPU op starts)
    call_queued: np.ndarray
    call_waited: np.ndarray  # bool: recorded end was set by what it waits for (an explicit or a queue wait)
    call_is_sync: np.ndarray  # an explicit synchronize (not a copy)
    call_is_marker: np.ndarray  # a step marker's start (a zero-length point, not a call)
    thread_keys: np.ndarray  # thread code -> thread_key(pid, tid)
    # GPU ops
    op_start: np.ndarray
    op_end: np.ndarray
    op_row: np.ndarray
    op_device: np.ndarray
    op_launch_call: np.ndarray
    op_is_kernel: np.ndarray
    op_is_copy: np.ndarray
    op_graph: np.ndarray  # bool: launched by a graph launch
    op_bytes: np.ndarray
    op_collective: np.ndarray  # per op: its matched collective's id (-1: not a collective, or unmatched)
    # per op: the typical stream gap of its device (held per op, not per point: read at the ops' starts only)
    op_stream_typical: np.ndarray
    # typical lags per device (dict device -> ns), for remedies that change which edge binds
    typical: dict[str, dict[int, int]] = field(default_factory=dict)
    call_copy_ahead: np.ndarray | None = None  # bool per call, or None: wait_edges.copies_ahead

    @property
    def size(self) -> int:
        return int(self.time.size)

    def at_typical_lags(self) -> Graph:
        """The graph with every launch latency, stream gap and wake-up at its device's typical (median) value
        instead of each one's recorded delay: the model replay that ``replay_error.model_*`` checks."""
        return replace(self, lag=self.lag_at_typical_stream_gaps(), edge_lag=self.edge_typical.copy())

    def lag_at_typical_stream_gaps(self) -> np.ndarray:
        """A copy of ``lag`` with each queued op's start (a GPU start that is not its chain's first point) at its
        device's typical stream gap: written at the ops' starts only, no pass over every point."""
        lag = self.lag.copy()
        queued = ~self.chain_first[self.op_start]
        lag[self.op_start[queued]] = self.op_stream_typical[queued]
        return lag

    def queue_wait_edges(self) -> np.ndarray:
        """Per edge, a queue wait (a launch blocked on a full command buffer <- the op start that released it): in
        the graph :func:`build` makes, the only wait edges that leave an op's start (the others leave an op's end;
        the communication remedy's re-sourced waits aside, which nothing reads this of)."""
        return self.edge_is_wait & (self.kind[self.edge_src] == GPU_START)

    def with_changes(self, **arrays: Any) -> Graph:
        """A copy with some arrays replaced (the others shared: remedies never write in place)."""
        return replace(self, **arrays)


def _in_sorted(sorted_values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Per value of ``query``: whether it is one of ``sorted_values`` (ascending, distinct)."""
    if sorted_values.size == 0:
        return np.zeros(query.shape, bool)
    at = np.searchsorted(sorted_values, query)
    np.minimum(at, sorted_values.size - 1, out=at)
    return sorted_values[at] == query


def stream_codes(op_dev: np.ndarray, op_stream: np.ndarray) -> np.ndarray:
    """Each op's (device, stream) code: its rank among the ops' distinct (device, stream) pairs (dense_codes of
    the packed pair); all 0 without packing or searching where the ops run on one device and one stream."""
    if (
        op_dev.size
        and int(op_dev.min()) == int(op_dev.max())
        and int(op_stream.min()) == int(op_stream.max())
    ):
        return np.zeros(op_dev.size, np.intp)  # (dense_codes' codes of one value)
    return dense_codes(op_dev * (2**32) + (op_stream.astype(np.int64, copy=False) & 0xFFFFFFFF))[0]


def lex_ascending(major: np.ndarray, middle: np.ndarray, minor: np.ndarray) -> bool:
    """Whether the rows are in (major, middle, minor) order already, ties allowed: then the stable
    ``np.lexsort((minor, middle, major))`` is the identity."""
    if major.size < 2:
        return True
    m0, m1 = major[:-1], major[1:]
    if not (m1 >= m0).all():
        return False
    d0, d1, n0, n1 = middle[:-1], middle[1:], minor[:-1], minor[1:]
    if (m1 > m0).any():  # several majors: each pair's middle and minor compared only within a major
        return bool(((m1 > m0) | (d1 > d0) | ((d1 == d0) & (n1 >= n0))).all())
    # (one major, as one stream's ops: the middle keys ascend strictly, or ties broken by the minor)
    up = d1 > d0
    return bool(up.all() or (up | ((d1 == d0) & (n1 >= n0))).all())


def point_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The event rows of the graph's points, ascending: (host API rows, step markers, JAX's waits (sync.framework_waits:
    syncs to call_rules) on a known thread; the GPU ops with a device, in launch_pairs' order), two points each."""
    cols, waits = event_columns(trace), framework_waits(trace)
    api = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER, STEP) & (cols.tid >= 0))
    return (np.union1d(api, waits[cols.tid[waits] >= 0]) if waits.size else api), _gpu_rows(trace)


def build(trace: Trace, rows: tuple[np.ndarray, np.ndarray] | None = None) -> Graph:
    """The dependency graph of a trace (see the module docstring); ``rows``: its :func:`point_rows` where the
    caller found them already."""
    cols = event_columns(trace)
    pairs = launch_pairs(trace)

    # --- host calls: outermost runtime/driver rows on a known thread, per thread in time order
    # Step markers join their thread's chain as zero-length points at their start, so that a step's start
    # moves with the host work before its first call (an input wait before it, say).
    api, op_row = point_rows(trace) if rows is None else rows
    del rows
    n_ops = len(pairs)
    # the calls and their points (the host part of the point arrays, made whole here: the GPU part is written
    # into them through views below, no parts joined into a copy at the end); the calls' starts and ends are views
    # of the points' times
    host = host_points(cols, api, n_ops)
    hosts, thread_keys = host.calls, host.thread_keys
    call_row, call_thread, cs, ce = hosts.call_row, hosts.call_thread, hosts.call_start, hosts.call_end
    n_calls = call_row.size
    n_host = 2 * n_calls

    # --- GPU ops (launch_pairs order), launches resolved to outer calls
    # (the streams as they are: compared and read at a few ops only, no int64 copy)
    op_dev, op_stream = pairs["device"].astype(np.int64), pairs["stream"]
    # (gathered anew on each read: no copy of them where they are int64 already)
    os_, oe = pairs["start"].astype(np.int64, copy=False), pairs["end"].astype(np.int64, copy=False)
    launch_row = pairs["launch_row"]
    # (launch rows mostly ascend: intervals.search_sorted walks them where its compiled helper is built)
    at = intervals.search_sorted(api, launch_row) if api.size else np.zeros(n_ops, np.int64)
    np.minimum(at, max(api.size - 1, 0), out=at)
    found = (launch_row >= 0) & (api.size > 0)
    if api.size:
        found &= api[at] == launch_row
    found &= plausible_launch(cols, op_row, pairs, found, oe)
    # each op's launch call, the call's start (its own row's: found, the api row at ``at`` is the launch row) and
    # its offset in its outer call (that start - the call's)
    op_launch_call, op_launch_start, op_offset = launch_calls(
        found, at, launch_row, hosts.call_of, cols.start, host.time[:n_host], call_start_step=2
    )
    names = cols.names
    op_graph = found & names_mask(lambda: pairs["launch_name"], n_ops, names, is_graph_launch)
    op_is_copy = np.zeros(n_ops, bool)
    copy_rows = cols.kind[op_row] == kind_code(MEMCPY)
    op_is_copy[copy_rows] = True
    op_bytes = pairs["bytes"].astype(np.int64)
    pageable = np.zeros(n_ops, bool)
    if copy_rows.any():
        idx = np.flatnonzero(copy_rows)
        is_pageable = lower_is("pageable")
        pageable[idx] = text_mask(trace.take("src_kind", op_row[idx]), is_pageable) | text_mask(
            trace.take("dst_kind", op_row[idx]), is_pageable
        )

    # a launch from inside one-time work (see o_one_time below), read while the launch rows are at hand
    # (by a search among the one-time rows, ascending and few: no mask of every event row made and gathered)
    one_time = one_time_work(trace).rows
    op_one_time = (
        found
        & (
            _in_sorted(one_time, np.maximum(launch_row, 0))
            | _in_sorted(one_time, call_row[np.maximum(op_launch_call, 0)])
        )
        if n_calls and one_time.size
        else np.zeros(n_ops, bool)
    )
    del one_time
    call_is_marker = host.call_is_marker
    # the per-row arrays of the host calls end here
    del api, hosts, at, found, launch_row

    # --- points: host chains first (thread order, written above), then stream chains ((device, stream) order),
    # written through views (``gpu_*``)
    time, lag, anchor, chain, row = host.time, host.lag, host.anchor, host.chain, host.row
    kind, chain_first, first_call = host.kind, host.chain_first, host.first_call
    del host
    host_lag, gpu_lag = lag[:n_host], lag[n_host:]
    host_anchor, gpu_anchor = anchor[:n_host], anchor[n_host:]
    gpu_time, gpu_chain, gpu_row, gpu_first = (
        time[n_host:],
        chain[n_host:],
        row[n_host:],
        chain_first[n_host:],
    )
    # (each temporary below is let go once read: the arrays made after it take its memory, not fresh pages)

    n_threads = int(thread_keys.size)
    stream_code = stream_codes(op_dev, op_stream)
    # the ops by (stream, start, end); where launch_pairs gives them in that order already (one stream's ops by
    # start, as a rank's trace mostly has them) the order is the identity, held as a slice: each ordered array
    # below is then a view of its op array (no lexsort, no op-sized gathers)
    op_order: np.ndarray | slice = (
        slice(None) if lex_ascending(stream_code, os_, oe) else np.lexsort((oe, os_, stream_code))
    )
    o_stream = stream_code[op_order]
    o_s, o_e = os_[op_order], oe[op_order]
    op_first = np.ones(n_ops, bool)
    op_first[1:] = o_stream[1:] != o_stream[:-1]
    base = 2 * n_calls
    # each op's start point (its rank in op_order, doubled, after the host points) and end point; an op's rank is
    # read back from its start point where needed (the event edges below): no rank array
    if isinstance(op_order, slice):
        op_start_pt = np.arange(base, base + 2 * n_ops, 2)
    else:
        op_start_pt = np.empty(n_ops, np.int64)
        op_start_pt[op_order] = np.arange(base, base + 2 * n_ops, 2)
    op_end_pt = op_start_pt + 1
    gpu_time[0::2], gpu_time[1::2] = o_s, o_e
    np.add(o_stream, n_threads, out=gpu_chain[0::2], casting="unsafe")
    gpu_chain[1::2] = gpu_chain[0::2]
    kind[n_host::2], kind[n_host + 1 :: 2] = GPU_START, GPU_END
    gpu_row[0::2] = op_row[op_order]
    gpu_row[1::2] = gpu_row[0::2]
    gpu_first[0::2] = op_first
    del o_stream
    stream_prev_end = np.full(n_ops, NONE, np.int64)
    stream_prev_end[1:] = o_e[:-1]
    stream_prev_end[op_first] = NONE
    # launch residual and stream residual of each op (ordered), which binds
    o_launch_start = op_launch_start[op_order]
    launched = o_launch_start > NONE
    launch_res = np.where(launched, o_s - o_launch_start, 0)
    stream_res = np.where(op_first, 0, o_s - stream_prev_end)
    # stream waits on events: the op that an event recorded -> the first op issued on the waiting stream after
    # the cudaStreamWaitEvent call (ordered op indices; -1 none)
    # the name rules of the calls, each distinct name tested once for all four: explicit syncs, synchronous
    # copies (wait edges below), stream waits and event records (event edges)
    launches = LaunchOrder(op_launch_call, os_, op_launch_start, stream_code)
    syncs = SyncRows(cols)
    call_names = cols.name[call_row]
    is_sync, sync_copy_name, stream_waits, event_records = call_rules(call_names, names)
    e_src_op, e_dst_op = event_waits(
        cols,
        stream_waits,
        event_records,
        call_row,
        call_thread,
        cs,
        names,
        op_launch_call,
        op_dev,
        op_stream,
        launches,
        syncs,
    )
    e_src, e_dst = (op_start_pt[e_src_op] - base) // 2, (op_start_pt[e_dst_op] - base) // 2
    event_ready = np.full(n_ops, NONE, np.int64)
    np.maximum.at(event_ready, e_dst, o_e[e_src])
    event_binds = (event_ready > np.where(launched, o_launch_start, NONE)) & (event_ready > stream_prev_end)
    launch_binds = launched & ~event_binds & (op_first | (o_launch_start >= stream_prev_end))
    del e_src_op, e_dst_op, stream_prev_end, o_launch_start
    # A launch from inside one-time work (a first launch that loads its module, analyses/startup.py) waits for
    # that work, not for the launch path: it keeps its recorded latency in the model replay and stays out of
    # the device's median (on the 3-op RTX 3080 export two module-loading launches of 17 ms set the median).
    o_one_time = op_one_time[op_order]
    steady = launch_binds & ~o_one_time
    queued = ~op_first & ~launch_binds & ~event_binds
    # (the compressed lags: clipped at 0 by typical_lags in place, no second op-sized copy of each)
    launch_typ, stream_typ, typ_launch, typ_stream = typical_lags(
        op_dev, op_order, launch_res[steady], steady, stream_res[queued], queued
    )
    del op_one_time, steady, queued, op_first
    np.subtract(o_e, o_s, out=gpu_lag[1::2])
    if typ_stream.strides == (
        0,
    ):  # one value seen at every op (one device): that read-only view, in any order
        op_stream_typical = typ_stream
    else:
        op_stream_typical = np.empty(n_ops, np.int64)
        op_stream_typical[op_order] = typ_stream
    # each op's start: its stream gap (>= 0), at most the typical one where a launch or an event binds (in place)
    np.maximum(stream_res, 0, out=stream_res)
    gpu_lag[0::2] = stream_res
    del stream_res
    np.minimum(gpu_lag[0::2], typ_stream, out=gpu_lag[0::2], where=launch_binds | event_binds)
    # event edges: the binding one keeps its recorded delay, the others a queued gap at most
    event_res = o_s[e_dst] - o_e[e_src]
    binds_here = event_binds[e_dst] & (o_e[e_src] == event_ready[e_dst])
    v_typical = typ_stream[e_dst]
    v_lag = np.where(binds_here, np.maximum(event_res, 0), np.clip(event_res, 0, v_typical))
    v_src, v_dst = base + 2 * e_src + 1, base + 2 * e_dst
    del event_ready, event_binds, event_res, binds_here, typ_stream
    # anchors: unlaunched ops keep their recorded start
    # (written in place: no op- or call-sized array from np.where)
    gpu_anchor[0::2] = o_s
    np.copyto(gpu_anchor[0::2], NONE, where=launched)
    gpu_anchor[1::2] = NONE
    del launched

    # --- collective edges (ordered op indices)
    # (the ops' names gathered from the event rows only where some name of the trace is a collective kernel's)
    is_collective = names_mask(lambda: pairs["name"], n_ops, names, is_collective_kernel)
    if is_collective.any():
        is_collective &= pairs["is_kernel"].astype(bool)
    if is_collective.any():
        op_collective = collective_ids(is_collective, pairs["name"].astype(np.int64), op_dev, os_, oe)
        o_collective = op_collective[op_order]
    else:  # none (most traces): -1 at every op, a read-only view in any order (no op-sized arrays)
        op_collective = o_collective = np.broadcast_to(np.int64(-1), n_ops)
    del is_collective, oe
    c_src_op, c_dst_op, c_transfer = collective_edges(o_collective, o_s, o_e)
    c_src, c_dst = base + 2 * c_src_op, base + 2 * c_dst_op + 1
    members = np.flatnonzero(o_collective >= 0)
    if members.size:
        last_start = np.full(int(o_collective.max()) + 1, NONE, np.int64)
        np.maximum.at(last_start, o_collective[members], o_s[members])
        gpu_lag[2 * members + 1] = o_e[members] - last_start[o_collective[members]]
    c_lag = c_transfer
    del o_s, o_e, o_collective

    # --- launch edges
    o_call = op_launch_call[op_order]
    o_offset = op_offset[op_order]
    has = o_call >= 0
    # (every op launched, as in most traces: the ordered arrays read whole, as views, no compressed copies)
    every = bool(has.all())
    launched_ones = slice(None) if every else has
    l_src = 2 * o_call[launched_ones]
    l_dst = np.arange(base, base + 2 * n_ops, 2) if every else base + 2 * np.flatnonzero(has)
    offset, residual = o_offset[launched_ones], np.maximum(launch_res[launched_ones], 0)
    typ = typ_launch[launched_ones]
    l_lag = offset + np.where(launch_binds[launched_ones], residual, np.minimum(typ, residual))
    l_typical = np.where(o_one_time[launched_ones], l_lag, offset + typ)
    del op_order, op_offset, o_call, o_offset, has, launch_binds, launch_res, o_one_time, typ_launch
    del offset, residual, typ

    # --- wait edges: explicit syncs -> last op launched before on each stream of the device; blocking copies
    # -> their own copy
    w_src_parts, w_dst_parts = [], []
    # blocking copies
    blocking_copy = op_is_copy & (op_launch_call >= 0)
    blocking_copy &= (pageable | sync_copy_name[np.maximum(op_launch_call, 0)]) if n_calls else False
    call_copy_ahead = copies_ahead(blocking_copy, op_launch_call, ce, os_)  # (no wait edge of theirs)
    w_src_parts.append(op_end_pt[blocking_copy])
    n_copy_waits = int(blocking_copy.sum())
    w_dst_parts.append(2 * op_launch_call[blocking_copy] + 1)
    # explicit syncs: the device of the last launch on the same thread before the call
    sync_calls = np.flatnonzero(is_sync)
    if sync_calls.size and n_ops:
        sync_waits(
            (w_src_parts, w_dst_parts),
            cols,
            sync_calls,
            (call_row, call_thread, cs, ce),
            (op_dev, op_stream, op_end_pt),
            launches,
            syncs,
        )
    # launches blocked on a full command buffer -> the op start that released each block (the last wait edges)
    q_op, q_call, q_blocked = queue_waits(
        cols, (call_thread, thread_keys, cs, ce, call_is_marker), (op_dev, os_), launches
    )
    n_queue_waits = int(q_op.size)
    w_src_parts.append(op_start_pt[q_op])
    w_dst_parts.append(2 * q_call + 1)
    w_src = np.concatenate(w_src_parts).astype(np.int64) if w_src_parts else np.zeros(0, np.int64)
    w_dst = np.concatenate(w_dst_parts).astype(np.int64) if w_dst_parts else np.zeros(0, np.int64)
    # (the ops' streams, starts and launch starts, their stream codes and launch orders are not read past here)
    del launches, w_src_parts, w_dst_parts, pageable, blocking_copy, sync_calls
    del os_, op_stream, op_launch_start, stream_code

    # --- wake edges: a host thread that sat idle (no framework op or Python frame of its own) resumes after
    # the latest point another thread recorded in that time (PyTorch's autograd thread after the main thread)
    k_src, k_dst, k_lag = wake_edges(cols, cs, ce, call_thread, thread_keys, first_call, host_lag)
    host_anchor[k_dst] = NONE  # a thread's first call woken by another thread moves with it

    # which wait binds: the latest awaited point (an op's end; a queue wait's releasing op's start), and only if it
    # came after the call started
    call_waits = np.zeros(n_calls, bool)
    call_queued = np.zeros(n_calls, bool)
    call_waited = np.zeros(n_calls, bool)
    w_lag = np.zeros(w_src.size, np.int64)
    w_typical = np.zeros(w_src.size, np.int64)
    wake_typ, queue_typ, own_typ = DEFAULT_WAKE_NS, DEFAULT_WAKE_NS, DEFAULT_SYNC_OWN_NS
    if w_src.size:
        dst_call = (w_dst - 1) // 2
        ready = time[w_src]
        is_queue = np.arange(w_src.size) >= w_src.size - n_queue_waits
        # the latest awaited point per waiting call (among those calls only: no call-sized array)
        waiting, at_waiting = unique_ints(dst_call, return_inverse=True)
        latest = np.full(waiting.size, NONE, np.int64)
        np.maximum.at(latest, at_waiting, ready)
        call_waits[dst_call[~is_queue]] = True
        call_queued[dst_call[is_queue]] = True
        waited = latest > cs[waiting]
        call_waited[waiting[waited]] = True
        residual = ce[dst_call] - ready
        binds = (ready == latest[at_waiting]) & waited[at_waiting]
        # the typical return after what a call waited for: the syncs' and copies' apart from the queue waits' (a
        # launch resuming once the GPU took queued work), each the median of its binding waits
        sync_binds, queue_binds = binds & ~is_queue, binds & is_queue
        if sync_binds.any():
            wake_typ = int(np.median(np.maximum(residual[sync_binds], 0)))
        if queue_binds.any():
            queue_typ = int(np.median(np.maximum(residual[queue_binds], 0)))
        w_typical = np.where(is_queue, queue_typ, wake_typ)
        # A copy call may return before its own copy ends (pageable host-to-device: once the last chunk is
        # staged): that lead is kept; a synchronize ending before what it waits for is an inconsistency (clipped,
        # so it shows as replay error).
        own_copy = np.arange(w_src.size) < n_copy_waits
        w_lag = np.where(
            binds, np.where(own_copy, residual, np.maximum(residual, 0)), np.clip(residual, 0, w_typical)
        )
        explicit_waited = call_waits & call_waited
        not_waited = call_waits & ~call_waited
        if not_waited.any():
            own_typ = int(np.median(ce[not_waited] - cs[not_waited]))
        # a call whose end an explicit wait set: its own cost is the typical cost of one that did not wait
        # (host_lag[1::2] holds ce - cs: lowered in place where the call waited)
        np.minimum(host_lag[1::2], own_typ, out=host_lag[1::2], where=explicit_waited)
        # a blocked launch whose end a queue wait set: its own cost is its time outside its blocks
        if n_queue_waits:
            blocked = np.bincount(q_call, weights=q_blocked, minlength=n_calls).astype(np.int64)
            outside = np.maximum(ce - cs - blocked, 0)
            np.minimum(host_lag[1::2], outside, out=host_lag[1::2], where=call_queued & call_waited)
    del q_op, q_call, q_blocked

    # the edges, kind by kind: launch, event, wait, wake, collective (each kind's parts let go once joined: the
    # next joined array takes their pages)
    n_l, n_v, n_w, n_k, n_c = l_src.size, v_src.size, w_src.size, k_src.size, c_src.size
    edge_src = np.concatenate([l_src, v_src, w_src, k_src, c_src]).astype(np.int64, copy=False)
    del l_src, v_src
    edge_dst = np.concatenate([l_dst, v_dst, w_dst, k_dst, c_dst]).astype(np.int64, copy=False)
    del l_dst, v_dst
    edge_lag = np.concatenate([l_lag, v_lag, w_lag, k_lag, c_lag]).astype(np.int64, copy=False)
    del l_lag, v_lag
    edge_typical = np.concatenate([l_typical, v_typical, w_typical, k_lag, c_lag]).astype(
        np.int64, copy=False
    )
    del l_typical, v_typical
    graph = Graph(
        time=time,
        chain=chain,
        kind=kind,
        lag=lag,
        anchor=anchor,
        row=row,
        chain_first=chain_first,
        edge_src=edge_src,
        edge_dst=edge_dst,
        edge_lag=edge_lag,
        edge_is_wait=np.concatenate(
            [np.zeros(n_l + n_v, bool), np.ones(n_w, bool), np.zeros(n_k + n_c, bool)]
        ),
        edge_is_wake=np.concatenate(
            [np.zeros(n_l + n_v + n_w, bool), np.ones(n_k, bool), np.zeros(n_c, bool)]
        ),
        edge_is_collective=np.concatenate([np.zeros(n_l + n_v + n_w + n_k, bool), np.ones(n_c, bool)]),
        edge_typical=edge_typical,
        # (point indices: int32 where the host points fit, as the chains and rows)
        call_start=np.arange(0, n_host, 2, dtype=np.int32 if n_host < 2**31 else np.int64),
        call_end=np.arange(1, n_host, 2, dtype=np.int32 if n_host < 2**31 else np.int64),
        # (views of the host points' rows and chains: int32 where those are)
        call_row=call_row,
        call_thread=call_thread,
        call_name=call_names,
        call_waits=call_waits,
        call_queued=call_queued,
        call_waited=call_waited,
        call_is_sync=is_sync,
        call_is_marker=call_is_marker,
        call_copy_ahead=call_copy_ahead,
        thread_keys=thread_keys,
        op_start=op_start_pt,
        op_end=op_end_pt,
        op_row=op_row,
        op_device=op_dev,
        op_launch_call=op_launch_call,
        op_is_kernel=pairs["is_kernel"].astype(bool),
        op_is_copy=op_is_copy,
        op_graph=op_graph,
        op_bytes=op_bytes,
        op_collective=op_collective,
        op_stream_typical=op_stream_typical,
        typical={
            "launch": launch_typ,
            "stream": stream_typ,
            "wake": {-1: wake_typ},
            "queue_wake": {-1: queue_typ},
            "sync_own": {-1: own_typ},
        },
    )
    return graph


def _gpu_rows(trace: Trace) -> np.ndarray:
    """Event rows of the GPU ops, in launch_pairs' order (kernel/memcpy/memset rows with a device)."""
    cols = event_columns(trace)
    return np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0)).astype(np.int64, copy=False)
