"""GPU ops whose recorded end lies past the end of a later op on their own stream: cut at that op's start.

A CUDA/HIP stream runs its ops one after the other, so an op cannot still be running when a later op of its
stream has started and finished. Kineto traces nevertheless carry such ends now and then: a CUPTI record whose
end timestamp was lost (written as 0, which Kineto's writer turned into a huge or negative duration until
pytorch/kineto#646 guarded it) or a clock glitch; a real SGLang trace of 55,423 kernels had 7 ops seconds long
that held 62% of the summed GPU time (AMD-AGI/Hyperloom#1116). Left in, one such op covers the rest of the
window: a 3.4 s kernel in a 4 ms inference trace made its GPU "busy 100%" and the diagnosis `none`.

Rule (docs/formats/kineto.md, "Time"): per (device, stream), GPU ops (kernel, memcpy, memset) in order of their
start; where an op's end is later than the end of the next op on its stream, its end becomes the next op's start
(the latest it can have ended), and the trace gets a warning saying how many were cut and how much recorded time
went. Ops that only overlap the next one (programmatic dependent launch lets a kernel start before its
predecessor ends) are left as they are. None of the real traces has an op outlasting a later op of its stream,
or any overlap on one stream at all.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...arrow_read import arrow_filled
from ...trace import KERNEL, MEMCPY, MEMSET, Trace
from ...units import fmt_ns

GPU_OP_KINDS = (KERNEL, MEMCPY, MEMSET)


# A trace whose other times are absolute (Unix µs, ~1.6e15) and whose GPU ops include some at ts 0 with dur 0:
# those carry no time at all (pytorch/kineto#109: "more than 1 thousand" kernels written "ts": 0, "dur": 0 in a
# 2021 ResNet-50 trace). Left in, they put the time origin at the Unix epoch: "unexplained_idle lost 1610366576 s".
# An absolute time is one past this many ns (~11.6 days after the epoch; relative times with baseTimeNanoseconds
# are ns since the profiler started).
ABSOLUTE_NS = 10**15


def gpu_op_codes(kind: pa.DictionaryArray) -> np.ndarray:
    """Whether each code of the ``kind`` column's dictionary is a GPU op's (GPU_OP_KINDS), with a last slot, False,
    which a null kind's -1 takes: looked up per row (a gather; np.isin sorts its input)."""
    is_op = np.zeros(len(kind.dictionary) + 1, bool)
    is_op[[i for i in range(len(kind.dictionary)) if kind.dictionary[i].as_py() in GPU_OP_KINDS]] = True
    return is_op


def ends_ascending(end: np.ndarray, op_rows: np.ndarray) -> bool:
    """Whether the ends of the GPU ops (at ``op_rows``: every GPU op's row, ascending) never decrease in row order:
    then no op ends after a later op ends, of its stream or any other, and :func:`cut_impossible_ends` has nothing
    to cut (its first pass finds exactly this). The Kineto table build knows the ops' rows without a pass over
    the kinds, and asks this there (a gather of the ops' ends) instead of that pass over every row after it."""
    ends = np.take(end, op_rows)
    return bool((ends[1:] >= ends[:-1]).all())


def drop_untimed_gpu_ops(trace: Trace) -> Trace:
    """``trace`` without its GPU ops (kernel, memcpy, memset) at absolute time 0 with no duration, where the rest of
    its rows are absolute times (see ABSOLUTE_NS), with a warning; ``trace`` itself where it has none."""
    store = trace.store
    kind = store.columns.get("kind")
    if trace.metadata.time_origin_ns != 0 or not isinstance(kind, pa.DictionaryArray) or store.num_rows < 2:
        return trace  # (the origin is the earliest start: such ops would have put it at 0)
    start, end = store.numpy("start_ns"), store.numpy("end_ns")
    if int(start[-1]) < ABSOLUTE_NS:
        return trace
    untimed = (start == 0) & (end == 0) & gpu_op_codes(kind)[arrow_filled(kind.indices, -1)]
    count = int(untimed.sum())
    if count == 0:
        return trace
    kept = ~untimed
    table = trace.events.filter(pa.array(kept))
    origin = int(start[kept].min())
    table = table.set_column(
        table.schema.get_field_index("start_ns"), "start_ns", pa.array(start[kept] - origin, pa.int64())
    )
    table = table.set_column(
        table.schema.get_field_index("end_ns"), "end_ns", pa.array(end[kept] - origin, pa.int64())
    )
    metadata = trace.metadata
    metadata.time_origin_ns += origin
    ops = f"{count:,} GPU ops" if count != 1 else "1 GPU op"
    metadata.warnings.append(
        f"{ops} carried no time (ts 0 and dur 0 among absolute timestamps: a lost CUPTI record, pytorch/kineto#109) "
        "and were left out"
    )
    return Trace(table, trace.devices, metadata)


# Rows read per chunk by the first pass (no table-long temporaries: the load's peak memory is not raised).
CHUNK_ROWS = 1 << 18


def cut_impossible_ends(trace: Trace, ends_known_ascending: bool = False) -> Trace:
    """``trace`` with the ends of the GPU ops that outlast a later op of their stream cut (module docstring), and
    a warning in its metadata; ``trace`` itself where there is none (the usual case, found by one pass, or known
    before: ``ends_known_ascending``, :func:`ends_ascending` of this trace's ops)."""
    if ends_known_ascending:
        return trace
    store = trace.store
    kind = store.columns.get("kind")
    if not isinstance(kind, pa.DictionaryArray) or not store.has("end_ns"):
        return trace
    # (scalars and arrow_filled: pyarrow's to_numpy/to_pylist import pandas, ~30 MB the load does not need)
    is_op = gpu_op_codes(kind)
    if not is_op.any():
        return trace
    codes = arrow_filled(kind.indices, -1)
    start = store.numpy("start_ns")
    end = store.numpy("end_ns")
    # First, one pass in the table's row order (by start), a chunk at a time, for any GPU op, of any stream, that
    # ends after one starting after it ends: none in most traces, and then no sort. (Equal starts are never cut
    # below, whatever their order.)
    latest, found = np.iinfo(np.int64).min, False
    for lo in range(0, codes.size, CHUNK_ROWS):  # a loop over chunks of rows
        e = end[lo : lo + CHUNK_ROWS][is_op[codes[lo : lo + CHUNK_ROWS]]]
        if e.size == 0:
            continue
        running = np.maximum.accumulate(e)
        if bool((latest > e).any()) or bool((running[:-1] > e[1:]).any()):
            found = True
            break
        latest = max(latest, int(running[-1]))
    if not found:
        return trace
    rows = np.flatnonzero(is_op[codes])
    op_start, op_end = start[rows], end[rows]
    device = store.numpy("device")[rows]
    stream = store.numpy("stream")[rows]
    order = np.lexsort((op_end, op_start, stream, device))
    s, e = op_start[order], op_end[order]
    same = (device[order][1:] == device[order][:-1]) & (stream[order][1:] == stream[order][:-1])
    cut = np.flatnonzero(same & (e[:-1] > e[1:]))
    if cut.size == 0:
        return trace
    new_end = end.copy()
    at = rows[order[cut]]
    new_end[at] = s[cut + 1]
    dropped = int((e[cut] - s[cut + 1]).sum())
    longest = int(cut[np.argmax(e[cut] - s[cut])])
    name = store.take("name", rows[order[longest : longest + 1]]).to_pylist()[0]
    events = store.with_columns({"end_ns": pa.array(new_end, pa.int64())})
    events.kernel_rows = store.kernel_rows  # (the rows are the same)
    ops = f"{cut.size} GPU ops" if cut.size != 1 else "1 GPU op"
    warning = (
        f"{ops} ended after a later op of the same stream had ended (a stream runs its ops in order: a lost or "
        f"corrupt end timestamp); each end was cut to the next op's start, dropping {fmt_ns(dropped)} of recorded "
        f"time (the longest: “{name}”, recorded as {fmt_ns(int(e[longest] - s[longest]))})"
    )
    trace.metadata.warnings.append(warning)
    return Trace(events, trace.devices, trace.metadata)
