"""The pid and tid columns of an Nsight export's event store, as one small code a row per thread.

nsys reads both off a row's global thread id (``globalTid``: pid and tid are two 24-bit fields of it), so an
export's tens of millions of rows carry a handful of (pid, tid) pairs. The store holds each row's pair as an int8
code (int16 beyond 127 pairs) into a table of the pairs' pid and tid values (:class:`~tracelens.trace.CodedColumn`,
pid and tid sharing the codes): a byte a row instead of the eight of two int32 columns (280 MiB less at 41M rows,
through the rest of the load and the whole analysis). Codes follow the pairs' order as
``analyses.columns.thread_key`` orders them (pid, then tid as unsigned; a null read as -1), so that grouping rows by
code groups them as by that key.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...trace import CodedColumn, code_lookup
from .columns import Part

# Beyond this many (pid, tid) pairs the columns stay plain int32 arrays (the int16 codes' limit).
MAX_THREADS = 2**15 - 1
_BLOCK = 1 << 22  # rows of a part read at a time: an int64 key per row of a block, not of the whole part
_FEW = 8  # up to this many pairs a row's code is counted by comparisons, not looked up by hash


def thread_columns(
    parts: list[Part], rank: np.ndarray, offsets: np.ndarray, total: int
) -> tuple[CodedColumn, CodedColumn] | None:
    """The pid and tid columns in table order (``rank``: each part row's table row; ``offsets``: where each part's
    rows begin among the parts concatenated), each a CodedColumn over one shared array of codes; the parts' pid and
    tid columns popped. None where no part has either, a value is negative, or there are more than
    :data:`MAX_THREADS` pairs: the parts are left as they were."""
    if not any(p.columns.get(name) is not None for p in parts for name in ("pid", "tid")):
        return None
    for p in parts:
        for name in ("pid", "tid"):
            values = p.columns.get(name)
            if values is not None and not _non_negative_ints(values):
                return None
    codes = np.empty(total, np.int8)  # widened to int16 once a 128th pair is met
    known = np.empty(0, np.int64)  # the pairs' keys met so far, in the order met (a code each)
    for i, p in enumerate(parts):
        pid, tid = p.columns.get("pid"), p.columns.get("tid")
        for lo in range(0, p.n, _BLOCK):  # a loop over blocks of a part's rows
            hi = min(lo + _BLOCK, p.n)
            key = _keys(pid, lo, hi) << 32
            key ^= _keys(tid, lo, hi) & 0xFFFFFFFF
            # one hash pass: each row's index among the block's distinct keys, and those keys
            encoded = pc.dictionary_encode(pa.array(key))
            del key
            distinct = encoded.dictionary.to_numpy()
            new = distinct[~np.isin(distinct, known)]
            if new.size:
                known = np.concatenate([known, np.sort(new)])
                if known.size > MAX_THREADS:
                    return None
                if known.size > np.iinfo(np.int8).max and codes.dtype == np.int8:
                    codes = codes.astype(np.int16)
            code_of_distinct = _codes_of(distinct, known).astype(codes.dtype, copy=False)
            indices = encoded.indices.to_numpy()
            del encoded
            codes[rank[offsets[i] + lo : offsets[i] + hi]] = code_of_distinct[indices]
            del indices
    for p in parts:
        p.columns.pop("pid", None)
        p.columns.pop("tid", None)
    order = np.argsort(known, kind="stable")  # codes in key order: code j is the j-th smallest key
    if not np.array_equal(order, np.arange(known.size)):
        remap = np.empty(known.size, codes.dtype)
        remap[order] = np.arange(known.size, dtype=codes.dtype)
        codes = code_lookup(remap, codes)
    keys = known[order]
    pid_values = keys >> 32
    tid_values = (keys & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return (
        CodedColumn(codes, pa.array(pid_values.astype(np.int32), pa.int32(), mask=pid_values < 0)),
        CodedColumn(codes, pa.array(tid_values, pa.int32(), mask=tid_values < 0)),
    )


def _non_negative_ints(values: pa.Array | pa.ChunkedArray) -> bool:
    """Whether every value is a non-negative integer (nulls aside): a -1 then stands for a null alone."""
    if not pa.types.is_integer(values.type):
        return False
    low = pc.min(values).as_py()
    return low is None or low >= 0


def _keys(values: pa.Array | pa.ChunkedArray | None, lo: int, hi: int) -> np.ndarray:
    """Rows ``lo:hi`` of a part's pid or tid column as int64, a null (or no column) as -1."""
    if values is None:
        return np.full(hi - lo, -1, np.int64)
    block = values.slice(lo, hi - lo)
    if isinstance(block, pa.ChunkedArray):
        block = block.combine_chunks()
    if block.null_count:
        block = block.fill_null(-1)
    return block.to_numpy(zero_copy_only=False).astype(np.int64)


def _codes_of(key: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Each key's position in ``known`` (every key is there): by a comparison per pair where there are a few,
    by hash otherwise."""
    if known.size <= _FEW:
        out = np.zeros(key.size, np.int16)
        for code in range(1, known.size):  # a loop over a few pairs
            out[key == known[code]] = code
        return out
    return pc.index_in(pa.array(key), value_set=pa.array(known)).to_numpy().astype(np.int16)
