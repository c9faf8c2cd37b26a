"""The launches a trace shows blocked on a full command buffer, as waits on the GPU: the replay graph's queue waits.

The driver queues the work each launch enqueues in a command buffer; when that buffer is full, the launch call
blocks until the GPU takes queued work. CUPTI records each such block as an overhead record of kind
``CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL`` carrying the correlation id of the API call it sits in (Nsight:
table CUPTI_ACTIVITY_KIND_OVERHEAD, named "Command Buffer Full"); tracelens reads it as a host row of kind
``overhead`` on the call's thread, inside the call, which is how it is matched to its call here (no correlation id
is read for overhead rows). A Kineto trace puts its overhead events on a profiler lane of their own (pid -1),
inside no host call, and xplane records none: no queue waits there.

A blocked call waits for the GPU op whose start released it: the latest op start on the call's device at or
before the block's end, taken only where it lies inside the block (an op the GPU started while the call was
blocked; else nothing in the trace says what released it, and the call keeps its time as host work). The start,
not the end: the GPU frees queue space as it takes the next command, and on the one shared export with such rows
(``h100x2_fastvideo_window``: 198 blocks, 912 ms) each block ends 0.03-101 µs after the latest op start on its
device (median 3.5 µs) but 0.1-103 µs after the latest op end (median 7.9 µs). The call's device: that of the ops
it launched, else of the last op its thread launched before it, else of the next one.
"""

from __future__ import annotations

import re

import numpy as np

from ..analyses.columns import EventColumns, thread_key, thread_time_positions
from ..analyses.names import code_mask
from ..trace import ALL_KINDS, OVERHEAD
from .wait_edges import LaunchOrder

# the overhead rows of a full command buffer (CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: Nsight's
# ENUM_CUPTI_OVERHEAD_TYPE text "Command buffer full (CUDA)", its StringIds name "Command Buffer Full")
_COMMAND_BUFFER_FULL = re.compile(r"(?i)command buffer full")


def is_command_buffer_full(name: str) -> bool:
    return bool(_COMMAND_BUFFER_FULL.search(name))


def queue_waits(
    cols: EventColumns,
    calls: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ops: tuple[np.ndarray, np.ndarray],
    launches: LaunchOrder,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the releasing op of each block (op index), the blocked call, the block's duration), one per command-buffer
    block matched to a call and a releasing op. ``calls``: the calls' threads, thread keys (per thread code), starts,
    ends and marker flags (markers are no calls); ``ops``: the ops' devices and starts (launch_pairs order)."""
    call_thread, thread_keys, cs, ce, is_marker = calls
    op_dev, op_start = ops
    empty = np.zeros(0, np.int64)
    if cs.size == 0 or op_dev.size == 0:
        return empty, empty, empty
    # the overhead rows (a comparison of the kind codes: most traces have none, and then nothing more is read)
    rows = np.flatnonzero(cols.kind == ALL_KINDS.index(OVERHEAD))
    if rows.size:
        rows = rows[cols.tid[rows] >= 0]
    if rows.size:
        rows = rows[code_mask(cols.name[rows], cols.names, is_command_buffer_full)]
    if rows.size == 0:
        return empty, empty, empty
    rs, re_ = cols.start[rows].astype(np.int64), cols.end[rows].astype(np.int64)
    # the call holding each row: the last call starting at or before it on its thread, if it ends at or after it
    # (the calls are outermost, so they do not overlap on a thread)
    row_keys = thread_key(cols.pid[rows], cols.tid[rows])
    held = _holding_calls(call_thread, thread_keys, cs, ce, is_marker, row_keys, rs, re_)
    if held is None:
        held = _holding_calls_by_positions(call_thread, thread_keys, cs, ce, is_marker, row_keys, rs, re_)
    inside, call = held
    # the call's device: its own launch's, else its thread's last launch before it, else its next one
    device = launches.device_before(call, call_thread, op_dev, after=True)
    inside &= device >= 0
    # the releasing op: the latest op start on that device at or before the block's end, inside the block
    release = np.full(rows.size, -1, np.int64)
    for dev in np.unique(device[inside]):  # a loop over devices
        mine = np.flatnonzero(inside & (device == dev))
        members = np.flatnonzero(op_dev == dev)
        members = members[np.argsort(op_start[members], kind="stable")]
        starts = op_start[members]
        k = np.searchsorted(starts, re_[mine], side="right") - 1
        hit = k >= 0
        hit[hit] = starts[k[hit]] >= rs[mine[hit]]
        release[mine[hit]] = members[k[hit]]
    found = release >= 0
    return release[found], call[found].astype(np.int64), (re_ - rs)[found]


def _holding_calls_by_positions(
    call_thread: np.ndarray,
    thread_keys: np.ndarray,
    cs: np.ndarray,
    ce: np.ndarray,
    is_marker: np.ndarray,
    row_keys: np.ndarray,
    rs: np.ndarray,
    re_: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(per row: whether a call holds it, that call or another valid call index): the calls (markers aside) and the
    rows as positions ordered by thread, then time, and a search of the rows among the calls (arrays of every
    call: the path where the calls are not stored thread by thread in time order, and the reference)."""
    candidates = np.flatnonzero(~is_marker)
    p_cs, p_ce, p_rs, p_re = thread_time_positions(
        [
            (thread_keys[call_thread[candidates]], [cs[candidates], ce[candidates]]),
            (row_keys, [rs, re_]),
        ]
    )
    order = np.argsort(p_cs, kind="stable")
    j = np.searchsorted(p_cs[order], p_rs, side="right") - 1
    inside = j >= 0
    at = order[np.maximum(j, 0)]
    inside &= p_ce[at] >= p_re
    return inside, candidates[at]


def _holding_calls(
    call_thread: np.ndarray,
    thread_keys: np.ndarray,
    cs: np.ndarray,
    ce: np.ndarray,
    is_marker: np.ndarray,
    row_keys: np.ndarray,
    rs: np.ndarray,
    re_: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_holding_calls_by_positions` where the calls are stored thread by thread (codes ascending, the keys
    ``thread_keys`` ascending) in start order, as the graph holds them: each row searched among its own thread's
    calls only (a loop over the threads that have rows: few), no array of every call (the positions' were ~10 of
    them, ~400 MiB at the graph build's peak on the x1000 Nsight export). None where the calls are not so stored."""
    if thread_keys.size > 1 and not bool((thread_keys[1:] > thread_keys[:-1]).all()):
        return None
    if cs.size > 1 and not bool(
        (
            (call_thread[1:] > call_thread[:-1])
            | ((call_thread[1:] == call_thread[:-1]) & (cs[1:] >= cs[:-1]))
        ).all()
    ):
        return None
    inside = np.zeros(rs.size, bool)
    call = np.zeros(rs.size, np.int64)  # (a valid call where none holds the row, as the reference gives one)
    code = np.minimum(np.searchsorted(thread_keys, row_keys), max(thread_keys.size - 1, 0))
    known = thread_keys[code] == row_keys if thread_keys.size else np.zeros(rs.size, bool)
    for c in np.unique(code[known]).tolist():  # a loop over the threads with rows
        mine = np.flatnonzero(known & (code == c))
        lo, hi = int(np.searchsorted(call_thread, c, "left")), int(np.searchsorted(call_thread, c, "right"))
        # (the thread's calls but its markers, by start: of equal starts the later call is found, as the stable
        # sort of the reference finds it; without markers the thread's starts are searched as they are)
        if is_marker[lo:hi].all():  # (no call on the thread: none holds its rows)
            continue
        if is_marker[lo:hi].any():
            calls = lo + np.flatnonzero(~is_marker[lo:hi])
            j = np.searchsorted(cs[calls], rs[mine], side="right") - 1
            held = calls[np.maximum(j, 0)]
        else:
            j = np.searchsorted(cs[lo:hi], rs[mine], side="right") - 1
            held = lo + np.maximum(j, 0)
        hit = j >= 0
        hit &= ce[held] >= re_[mine]
        inside[mine] = hit
        call[mine] = held
    return inside, call
