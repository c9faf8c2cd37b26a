"""The join of GPU ops to their launch calls by correlation id (:mod:`.launch`'s ``launch_pairs`` and
``launch_calls``): the calls sorted by (id, driver after runtime, row), the first per id, and each op's id searched
among them. Where the ids, the driver flag and the rows fit in 63 bits together, each call is one packed int64
key: one ``np.sort`` of plain integers, and the ops searched among the sorted keys as they are.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import intervals
from ..trace import ALL_KINDS, DRIVER, GPU_ACTIVITY_KINDS, RUNTIME
from ..values import plain_ints

try:  # the compiled packing and join (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

# Calls are sorted as one packed int64 each, (id, driver flag, row) in this many bits, where they fit; packed and
# unpacked this many calls at a time.
PACKED_BITS = 63
PACK_BLOCK = 1 << 20


def _sorted_keys(
    ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray | None, row_bits: int, shift: int
) -> np.ndarray:
    """The calls' packed keys ``id << shift | driver << row_bits | row``, sorted (``is_driver`` None: no driver
    call, no driver bit)."""
    key = np.left_shift(ids, shift, dtype=np.int64)
    for lo in range(0, key.size, PACK_BLOCK):  # a block at a time: no int64 temporaries of every call
        part = key[lo : lo + PACK_BLOCK]
        if is_driver is not None:
            part |= is_driver[lo : lo + PACK_BLOCK].astype(np.int64) << row_bits
        part |= rows[lo : lo + PACK_BLOCK]
    # calls in row order carry their ids mostly ascending (threads interleaving now and then): a stable sort
    # (timsort) takes those runs as they are (0.2 against 3 ms for the 521K calls of the 406 MB Kineto tile); the
    # same integers in the same order as the default sort, which is kept for keys in no such order
    key.sort(kind="stable" if _mostly_ascending(key) else None)
    return key


# Keys with at most one descent per this many are sorted by the stable sort.
_DESCENT_SHARE = 64


def _mostly_ascending(key: np.ndarray) -> bool:
    """Whether fewer than one neighbour pair in _DESCENT_SHARE descends (counted a block at a time, stopping once
    past that)."""
    limit, descents = key.size // _DESCENT_SHARE, 0
    for lo in range(0, key.size - 1, PACK_BLOCK):  # a loop over blocks of keys
        stop = min(lo + PACK_BLOCK, key.size - 1)
        descents += int(np.count_nonzero(key[lo + 1 : stop + 1] < key[lo:stop]))
        if descents > limit:
            return False
    return True


def sorted_calls(
    ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The calls (ids >= 0, rows ascending) sorted by (id, driver after runtime, row), one per id: (ids, rows
    (int64), whether every id was once). Where the ids, the driver flag and the rows fit in 63 bits together (the
    rows take only the bits their count needs: 26 for the 41M rows of a training export, whose ids pass 2^31), they
    are sorted as one packed int64 each (np.sort, not a stable argsort and two gathers by its order)."""
    driver = bool(is_driver.any())
    row_bits = max(int(rows[-1]).bit_length(), 1) if rows.size else 1
    shift = row_bits + 1 if driver else row_bits
    if ids.size and int(ids.max()).bit_length() + shift <= PACKED_BITS:
        key = _sorted_keys(ids, rows, is_driver if driver else None, row_bits, shift)
        ids = np.empty(key.size, ids.dtype)
        for lo in range(0, key.size, PACK_BLOCK):
            ids[lo : lo + PACK_BLOCK] = key[lo : lo + PACK_BLOCK] >> shift
        key &= (1 << row_bits) - 1
        rows = key
    else:
        # Rows are in start order, so a stable sort on (corr, is_driver) keeps the earliest first (no driver call:
        # on corr alone).
        order = np.argsort(ids.astype(np.int64) * 2 + is_driver if driver else ids, kind="stable")
        ids, rows = ids[order], rows[order].astype(np.int64, copy=False)
    first = np.ones(ids.size, bool)
    first[1:] = ids[1:] != ids[:-1]
    if first.all():  # every id once (an Nsight export): no selection of the 8.8M calls
        return ids, rows, True
    return ids[first], rows[first], False


def match_calls(
    op_corr: np.ndarray, ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(per GPU op of id ``op_corr``, whether a call carries its id; the event row (int64) of each matched op's
    launch call: the first call of the id by (driver after runtime, row); whether every call id was once), for
    the calls (``ids`` >= 0, their ``rows`` ascending, ``is_driver``) as :func:`sorted_calls` orders them.

    Where the ids, the driver flag and the rows fit in 63 bits together, the packed keys are sorted and the ops
    searched among them as they are (``id << shift``: the first key of the id): no unpacking of the sorted ids
    and rows into two arrays of every call (8.8M on the x1512 export), only the matched ops' rows read out."""
    driver = bool(is_driver.any())
    row_bits = max(int(rows[-1]).bit_length(), 1) if rows.size else 1
    shift = row_bits + 1 if driver else row_bits
    top = int(ids.max()) + 1 if ids.size else 0  # an op id above every call's: searched as this one
    if ids.size == 0 or top.bit_length() + shift > PACKED_BITS:
        call_corr, call_rows, unique = sorted_calls(ids, rows, is_driver)
        # the ops' ids mostly ascend (ops in start order): each searched from the previous one's place
        idx = np.minimum(intervals.search_near(call_corr, op_corr), max(call_corr.size - 1, 0))
        matched = (
            (op_corr >= 0) & (call_corr.size > 0) & (call_corr[idx] == op_corr if call_corr.size else False)
        )
        return matched, call_rows[idx[matched]], unique
    key = _sorted_keys(ids, rows, is_driver if driver else None, row_bits, shift)
    # two neighbours share an id where their keys differ in the row and driver bits only
    unique = True
    for lo in range(0, key.size - 1, PACK_BLOCK):
        stop = min(lo + PACK_BLOCK, key.size - 1)
        differ = key[lo:stop] ^ key[lo + 1 : stop + 1]
        differ >>= shift
        if not differ.all():
            unique = False
            break
    if not unique:  # the first call of each id only (not on an Nsight export)
        first = np.ones(key.size, bool)
        first[1:] = (key[1:] ^ key[:-1]) >> shift != 0
        key = key[first]
        del first
    # the ops' ids mostly ascend (ops in start order): each searched from the previous one's place
    if op_corr.size and (int(op_corr.max()) + 1).bit_length() + shift <= PACKED_BITS:
        needle = np.left_shift(op_corr, shift, dtype=np.int64)  # (no id so wide that it overflows: one pass)
    else:
        needle = np.minimum(op_corr, top, dtype=np.int64)
        needle <<= shift
    idx = intervals.search_near(key, needle)
    np.minimum(idx, key.size - 1, out=idx)
    # the keys found, into the search keys' array (read no more): no other int64 array of the ops
    found = np.take(key, idx, out=needle)
    del needle
    found >>= shift
    matched = found == op_corr
    matched &= op_corr >= 0
    del found
    call_rows = key[idx[matched]]
    call_rows &= (1 << row_bits) - 1
    return matched, call_rows, unique


def launch_rows(
    op_corr: np.ndarray, ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray, row_type: type
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(per GPU op of id ``op_corr``, whether a call carries its id; per GPU op, the event row (``row_type``) of its
    launch call, -1 where unmatched; whether every call id was once): :func:`match_calls`' join with its matched
    rows set in an array of every op.

    Where built and the packed keys fit, by two compiled passes around numpy's sort (``_kernel_stats``): the keys
    packed in one pass (their descents counted for the sort's choice), and one walk over the sorted keys (are two
    neighbours of one id?) and one over the ops (each op's id searched from the previous op's place) writing the
    matched flags and rows: on the 406 MB Kineto tile's 521K calls and 207K ops, for a dozen numpy passes and the
    scatter of the matched rows (~11 -> ~3 ms). Else match_calls' numpy path (the reference)."""
    joined = _compiled_launch_rows(op_corr, ids, rows, is_driver, row_type)
    if joined is not None:
        return joined
    matched, call_rows, unique = match_calls(op_corr, ids, rows, is_driver)
    out: np.ndarray = np.full(op_corr.size, -1, row_type)
    out[np.flatnonzero(matched)] = call_rows
    return matched, out, unique


def _compiled_launch_rows(
    op_corr: np.ndarray, ids: np.ndarray, rows: np.ndarray, is_driver: np.ndarray, row_type: type
) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """:func:`launch_rows` by the compiled passes; None where they are absent, the arrays are not plain integers
    (and bools) or the packed keys do not fit in PACKED_BITS."""
    if _compiled is None or not hasattr(_compiled, "join_sorted_keys") or ids.size == 0:
        return None
    if not (
        plain_ints(op_corr, (4, 8))
        and plain_ints(ids, (4, 8))
        and plain_ints(rows, (4, 8))
        and isinstance(is_driver, np.ndarray)
        and is_driver.dtype == bool
        and is_driver.ndim == 1
        and is_driver.flags.c_contiguous
        and np.dtype(row_type) in (np.dtype(np.int32), np.dtype(np.int64))
    ):
        return None
    driver = bool(is_driver.any())
    row_bits = max(int(rows[-1]).bit_length(), 1)
    shift = row_bits + 1 if driver else row_bits
    if (int(ids.max()) + 1).bit_length() + shift > PACKED_BITS or int(ids.min()) < 0:
        return None
    key = np.empty(ids.size, np.int64)
    descents = _compiled.pack_call_keys(ids, rows, is_driver if driver else None, row_bits, shift, key)
    # mostly ascending (threads interleaving now and then): the stable sort (timsort) takes the runs as they are
    key.sort(kind="stable" if descents <= key.size // _DESCENT_SHARE else None)
    matched = np.empty(op_corr.size, bool)
    launch_row: np.ndarray = np.empty(op_corr.size, row_type)
    unique, _ = _compiled.join_sorted_keys(key, shift, row_bits, op_corr, matched, launch_row)
    return matched, launch_row, bool(unique)


_GPU_KINDS = np.zeros(len(ALL_KINDS), np.uint8)
_GPU_KINDS[[ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS]] = 1

# The byte widths of (carrying rows, their ids, GPU rows, the ids written) the compiled split is built for (the
# Kineto tile's int32 rows and int64 ids: 7.4 -> ~3 ms against reading each width per row).
SPLIT_WIDTHS = frozenset({(4, 8, 4, 4), (4, 4, 4, 4), (4, 8, 4, 8), (8, 8, 8, 8)})


class KeyedCalls(NamedTuple):
    """The rows carrying a correlation id split, the calls' keys packed and sorted (:func:`keyed_calls`)."""

    op_ids: (
        np.ndarray | None
    )  # the GPU ops' ids; None where the GPU ops among the carrying rows are not exactly gpu's
    call_ids: np.ndarray  # every carrying call's id (-1 where null), in row order
    api_rows: int  # the table's runtime and driver rows
    keys: np.ndarray  # the calls with an id: id << shift | driver << row_bits | row, sorted
    shift: int
    row_bits: int

    def join(self, op_corr: np.ndarray, row_type: type) -> tuple[np.ndarray, np.ndarray, bool]:
        """:func:`launch_rows` of the GPU ops of ids ``op_corr``, from the sorted keys."""
        matched = np.empty(op_corr.size, bool)
        launch_row: np.ndarray = np.empty(op_corr.size, row_type)
        unique, _ = _compiled.join_sorted_keys(
            self.keys, self.shift, self.row_bits, op_corr, matched, launch_row
        )
        return matched, launch_row, bool(unique)


def keyed_calls(
    kind: np.ndarray, carrying: np.ndarray, ids: np.ndarray, gpu: np.ndarray, id_type: type
) -> KeyedCalls | None:
    """The rows ``carrying`` a correlation id (ascending; ``ids`` theirs, -1 where null) told apart, GPU ops (their
    ids as ``id_type``) from runtime and driver calls (``kind``: the event rows' kind codes), as
    ``id_split.split_id_rows`` does, and the calls' keys packed and sorted for :meth:`KeyedCalls.join`; by one
    compiled pass (``_kernel_stats.split_call_keys``) for id_split's two and the packing of the calls' ids, rows
    and driver flags (arrays of every call no longer written). None where the pass is absent, the arrays are not
    plain integers, the keys do not fit in PACKED_BITS or the carrying rows hold more calls than they would beside
    the GPU ops ``gpu`` (or their widths are not SPLIT_WIDTHS'): launch_pairs then splits and joins as before."""
    if _compiled is None or not hasattr(_compiled, "split_call_keys") or carrying.size == 0:
        return None
    if not (
        plain_ints(kind, (1,))
        and plain_ints(carrying, (4, 8))
        and plain_ints(ids, (4, 8))
        and plain_ints(gpu, (4, 8))
        and (carrying.itemsize, ids.itemsize, gpu.itemsize, np.dtype(id_type).itemsize) in SPLIT_WIDTHS
    ):
        return None
    row_bits = max(int(carrying[-1]).bit_length(), 1)
    shift = row_bits + 1  # a driver bit whether or not a driver call is there
    top = 2**31 if np.dtype(id_type) == np.dtype(np.int32) else int(ids.max()) + 1
    if top.bit_length() + shift > PACKED_BITS:
        return None
    calls = carrying.size - gpu.size  # every carrying row a GPU op of gpu or a call (else None below)
    if calls < 0:
        return None
    op_ids: np.ndarray = np.empty(gpu.size + 1, id_type)
    call_ids: np.ndarray = np.empty(calls + 1, id_type)
    keys = np.empty(calls + 1, np.int64)
    split = _compiled.split_call_keys(
        carrying,
        kind,
        ids,
        _GPU_KINDS,
        ALL_KINDS.index(RUNTIME),
        ALL_KINDS.index(DRIVER),
        gpu,
        row_bits,
        shift,
        op_ids,
        call_ids,
        keys,
    )
    if split is None:
        return None
    _, found_calls, keyed, same, runtimes, drivers, descents = split
    keys = keys[:keyed]
    # mostly ascending (threads interleaving now and then): the stable sort (timsort) takes the runs as they are
    keys.sort(kind="stable" if descents <= keys.size // _DESCENT_SHARE else None)
    return KeyedCalls(
        op_ids[: gpu.size] if same else None,
        call_ids[:found_calls],
        runtimes + drivers,
        keys,
        shift,
        row_bits,
    )
