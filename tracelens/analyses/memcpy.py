"""Memcpy overhead (the ``memcpy`` block): per direction, per device, host memory kind, sync/async, storms.

Definitions are in ``docs/memcpy.md``; the key ones:
  exposed_ns (device) = |union(copies)| - |union(copies) ∩ union(kernels)| on that device
  device_mean_*       = a per-device figure per GPU over the GPUs with activity, GPU-time weighted: Σ / n_eff
                        (docs/analyses.md; the plain mean where they share one window; never above the span)
  busy_share          = |union(copies of that kind)| / device busy time (union of kernel, memcpy, memset)
  achieved bandwidth  = Σ bytes / Σ duration over copies with duration > 0 and known bytes

The section stays one module on purpose (about 880 lines): the per-kind, per-device and launch-mode figures
share the coded copy columns built once at its top (kind, host memory class and launch mode as small integer
codes), which split modules would pass around or rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import intervals
from ..arrow_read import arrow_codes, arrow_floats, arrow_ints
from ..gpu_specs import links_of_device
from ..trace import ALL_KINDS, DRIVER, MEMCPY, RUNTIME, Trace
from ..values import is_member, sorted_distinct
from .blocks import rows_of_kind_at
from .columns import busy_gpu_equivalents, device_busy, event_columns, memo
from .copy_calls import launched_call_rows
from .launch import launch_pairs
from .masked_sums import count_where, sum_where
from .migrations import migration_rows
from .names import is_graph_launch, is_sync_copy, names_in_use

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

SMALL_COPY_BYTES = 64 * 1024
BURST_MAX_GAP_NS = 100_000  # small copies closer than this (end to next start) belong to one run
BURST_MIN_COPIES = 10  # a run of at least this many small copies is a burst
LARGEST_BURSTS = 5
LARGE_COPY_BYTES = 1024 * 1024  # copies at least this big are expected to approach link bandwidth
LOW_BANDWIDTH_FRACTION = 0.5
EXPOSED_SHARE_FINDING = 0.05  # exposed copy time above this share of the span is a finding
FLOOR_HEADROOM = 0.5  # overlap is no fix when it could hide less than this share of the exposed copy time

KIND_ORDER = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH")

# Host memory class of a copy, from its source and destination memory kinds.
PAGEABLE, PINNED, MANAGED, DEVICE_ONLY, UNKNOWN = "pageable", "pinned", "managed", "device", "unknown"
SYNC, ASYNC, GRAPH = "sync", "async", "graph"
# The classes as small integer codes inside the report (an int8 per copy, not a string object): positions here.
MEMORY_CLASSES = (PAGEABLE, PINNED, MANAGED, DEVICE_ONLY, UNKNOWN)
LAUNCH_MODES = (SYNC, ASYNC, GRAPH, UNKNOWN)


def _kind_sort_key(kind: str) -> tuple[int, str]:
    return (KIND_ORDER.index(kind), kind) if kind in KIND_ORDER else (len(KIND_ORDER), kind)


def _host_memory(src: pd.Series, dst: pd.Series) -> np.ndarray:
    """pageable if either side is pageable; else pinned; else managed; device when both sides are device
    memory (or arrays); unknown otherwise (missing kinds, or ROCm's "host" of unknown kind)."""
    return np.array(MEMORY_CLASSES, dtype=object)[_host_memory_codes(src, dst)]


def _host_memory_codes(src: pd.Series, dst: pd.Series) -> np.ndarray:
    """:func:`_host_memory` as positions in MEMORY_CLASSES (int8), of two frame columns."""
    import pandas as pd

    s_code, s_values = pd.factorize(src, use_na_sentinel=True)
    d_code, d_values = pd.factorize(dst, use_na_sentinel=True)
    return host_memory_codes(s_code, list(s_values), d_code, list(d_values))


def host_memory_codes(
    s_code: np.ndarray, s_values: list[Any], d_code: np.ndarray, d_values: list[Any]
) -> np.ndarray:
    """:func:`_host_memory` as positions in MEMORY_CLASSES (int8), of the source and destination kinds as codes
    (-1: null) into their distinct values."""
    # Classified once per distinct (source, destination) pair: a million copies have a handful.
    pair = (s_code.astype(np.int64) + 1) * (len(d_values) + 1) + (d_code + 1)
    pairs, inverse = _distinct_small(pair, (len(s_values) + 1) * (len(d_values) + 1))
    s_of = [None, *s_values]
    d_of = [None, *d_values]
    codes = np.array(
        [
            MEMORY_CLASSES.index(_memory_class(s_of[p // (len(d_values) + 1)], d_of[p % (len(d_values) + 1)]))
            for p in pairs.tolist()  # a loop over the distinct pairs
        ],
        np.int8,
    )
    return codes[inverse.reshape(-1)]


def _memory_class(src: Any, dst: Any) -> str:
    """:func:`_host_memory_of` of one pair (``astype("string").fillna("").str.lower()`` of each side)."""
    s = "" if src is None else str(src).lower()
    d = "" if dst is None else str(dst).lower()
    if "pageable" in (s, d):
        return PAGEABLE
    if "pinned" in (s, d):
        return PINNED
    if "managed" in (s, d):
        return MANAGED
    if s in ("device", "array") and d in ("device", "array"):
        return DEVICE_ONLY
    return UNKNOWN


def _distinct_small(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for values in [0, size) (a few thousand pair codes at most):
    a flag per possible value and a running count of them, two passes instead of a sort."""
    present = np.zeros(size, bool)
    present[values] = True
    distinct = np.flatnonzero(present)
    position = np.zeros(size, np.intp)
    position[distinct] = np.arange(distinct.size)
    return distinct, position[values]


def _host_memory_of(src: pd.Series, dst: pd.Series) -> np.ndarray:
    s = src.astype("string").fillna("").str.lower().to_numpy(dtype=object)
    d = dst.astype("string").fillna("").str.lower().to_numpy(dtype=object)
    out = np.full(len(s), UNKNOWN, dtype=object)
    on_device = np.isin(s, ["device", "array"]) & np.isin(d, ["device", "array"])
    out[on_device] = DEVICE_ONLY
    out[(s == "managed") | (d == "managed")] = MANAGED
    out[(s == "pinned") | (d == "pinned")] = PINNED
    out[(s == "pageable") | (d == "pageable")] = PAGEABLE
    return out


def _api_class(name: str) -> str:
    if is_sync_copy(name):
        return SYNC
    if "memcpy" in name.lower() and "async" in name.lower():
        return ASYNC
    if is_graph_launch(name):
        return GRAPH
    return UNKNOWN


def _launch_mode(trace: Trace, copies: pd.DataFrame) -> np.ndarray:
    """sync | async | graph | unknown per copy, from the launching runtime/driver call's name.

    The call is the host row with the same correlation_id (and pid when both sides know it); duplicate host
    rows for one correlation id (nsys backtrace rows) are collapsed first.
    """
    pid, corr = copies["pid"], copies["correlation_id"]
    codes = launch_mode_codes(
        trace,
        pid.fillna(0).to_numpy(np.int64),
        pid.notna().to_numpy(bool),
        corr.fillna(0).to_numpy(np.int64),
        corr.notna().to_numpy(bool),
    )
    return np.array(LAUNCH_MODES, dtype=object)[codes]


# A table of every id between the smallest and the largest wanted one replaces the binary search where it has at
# most this many slots per value tested (and at least this many in any case).
DENSE_IDS_PER_VALUE = 4
DENSE_IDS_MIN = 1 << 20


# Otherwise the wanted ids' low bits flag the values worth a binary search: this many slots per wanted id (a
# value not wanted lands on a flagged slot about once in this many), at most 2^MAX_HASH_BITS slots.
HASH_SLOTS_PER_ID = 32
MAX_HASH_BITS = 24
# Values tested at once (their int64 copy or low bits: 8 MB, not one per call of a training export).
MEMBER_BLOCK = 1 << 20


def member_ids(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``is_member(values, wanted)`` for integer ids (correlation ids: the copies' among every API call's), one
    gather per value instead of a binary search in the wanted ids: where the wanted ids span a range not much
    wider than the values tested, a table with a flag per id in that range; otherwise a table flagging the
    wanted ids' low bits, so that only the values on a flagged slot (the wanted ones and a few others) are
    searched."""
    values, wanted = np.asarray(values), np.asarray(wanted)
    if wanted.size == 0 or values.dtype.kind != "i" or wanted.dtype.kind != "i":
        return is_member(values, wanted)
    lo, hi = int(wanted.min()), int(wanted.max())
    if hi - lo > max(DENSE_IDS_PER_VALUE * values.size, DENSE_IDS_MIN):
        wanted = sorted_distinct(wanted)  # once, not once per block (as is_member would)
        bits = min(MAX_HASH_BITS, max(16, int(wanted.size * HASH_SLOTS_PER_ID).bit_length()))
        mask = (1 << bits) - 1
        flagged = np.zeros(mask + 1, bool)
        flagged[wanted & mask] = True
        out = np.zeros(values.shape, bool)
        for start in range(0, values.size, MEMBER_BLOCK):  # blocks of values: no low bits of them all at once
            part = values[start : start + MEMBER_BLOCK]
            candidates = np.flatnonzero(flagged[part & mask])
            found = part[candidates]
            # is_member's search in the sorted ids (the candidates in row order mostly ascend: a walk where built)
            at = intervals.search_sorted(wanted, found)
            at[at == wanted.size] = 0
            out[candidates + start] = wanted[at] == found
        return out
    # slot 0 and the last: the values below and above the range, never wanted
    table = np.zeros(hi - lo + 3, bool)
    table[wanted.astype(np.int64) - (lo - 1)] = True
    out = np.empty(values.shape, bool)
    for start in range(0, values.size, MEMBER_BLOCK):  # blocks of values: no int64 copy of them all
        at = values[start : start + MEMBER_BLOCK].astype(np.int64)
        at -= lo - 1
        np.clip(at, 0, hi - lo + 2, out=at)
        out[start : start + MEMBER_BLOCK] = table[at]
    return out


_CALL_CODES = tuple(sorted(ALL_KINDS.index(k) for k in (RUNTIME, DRIVER)))


def api_correlation(trace: Trace) -> np.ndarray:
    """The correlation ids of the runtime and driver calls in row order (``columns.api_calls``' shared value, -1
    where none), without the calls' row array where the value is held already (the launch pairs compute it)."""
    cols = event_columns(trace)

    def compute() -> np.ndarray:
        ids = cols.at("correlation_id", np.flatnonzero(cols.of_kind(RUNTIME, DRIVER)))
        ids.flags.writeable = False  # shared: read only
        return ids

    return memo(trace, "api_correlation", compute)


def launch_mode_codes(
    trace: Trace, pid: np.ndarray, has_pid: np.ndarray, corr: np.ndarray, has_corr: np.ndarray
) -> np.ndarray:
    """:func:`_launch_mode` as positions in LAUNCH_MODES (int8), of the copies' pids and correlation ids (int64,
    with whether each is set)."""
    unknown = LAUNCH_MODES.index(UNKNOWN)
    out = np.full(corr.size, unknown, dtype=np.int8)
    if not has_corr.any():
        return out
    cols = event_columns(trace)
    call_corr = api_correlation(trace)
    # Only the calls that launched a copy: a training trace has millions of other calls. Their rows are found
    # at their positions among the calls, a block of the table at a time (no row array of every call).
    found = launched_call_rows(cols.kind, _CALL_CODES, call_corr, corr[has_corr])  # one compiled walk
    if found is None:
        launched = np.flatnonzero(member_ids(call_corr, corr[has_corr]))
        calls = rows_of_kind_at(cols.kind, _CALL_CODES, launched)
        call_corr = call_corr[launched].astype(np.int64)
        del launched
    else:
        calls, call_corr = found
    if calls.size == 0:
        return out
    # Plain integer columns (pid 0 where unknown, with a flag; the mode as its index in MODES): the calls'
    # names are classified once per distinct name.
    call_pid, call_has_pid = arrow_ints(trace.take("pid", calls))
    mode = _launch_mode_of_names(cols.name[calls], cols.names)
    del calls
    # A copy API beats any other call on the same correlation id (driver rows under a runtime call).
    # (no reordered copy where they come in that order already: copy calls only, as in an Nsight export)
    other_call = mode == unknown
    if bool((other_call[1:] < other_call[:-1]).any()):
        order = np.argsort(other_call, kind="stable")
        call_pid, call_has_pid, call_corr, mode = (
            call_pid[order],
            call_has_pid[order],
            call_corr[order],
            mode[order],
        )
    del other_call
    # an unknown id matches no call (the calls' ids are copies' known ones)
    corr = np.where(has_corr, corr, np.iinfo(np.int64).min)
    row = np.arange(corr.size)
    m1 = _join_on_pid_arrays(
        row[has_pid],
        pid[has_pid],
        corr[has_pid],
        call_pid[call_has_pid],
        call_corr[call_has_pid],
        mode[call_has_pid],
    )
    # Without a pid on one side, the correlation id alone decides (never across two known, different pids).
    in_m1 = np.zeros(corr.size, bool)
    in_m1[m1[0]] = True
    out[m1[0]] = m1[1]
    no_pid = np.flatnonzero(~has_pid & has_corr)
    if no_pid.size:  # the first call with the copy's id
        hit, at = _first_match(call_corr, corr[no_pid])
        out[no_pid[hit]] = mode[at]
    if not call_has_pid.all():  # a copy with a pid no call with its id has: the first call without a pid
        unmatched = np.flatnonzero(has_pid & ~in_m1)
        pidless = np.flatnonzero(~call_has_pid)
        hit, at = _first_match(call_corr[pidless], corr[unmatched])
        out[unmatched[hit]] = mode[pidless[at]]
    return out


def _launch_mode_of_names(codes: np.ndarray, dictionary: np.ndarray) -> np.ndarray:
    """Each call's mode (int8 position in LAUNCH_MODES) from its name's dictionary code (-1: null, unknown), the
    name classified once per distinct name used (``names.code_map`` without its object arrays)."""
    lookup = np.full(len(dictionary) + 1, LAUNCH_MODES.index(UNKNOWN), np.int8)  # code -1 picks the last slot
    for i in names_in_use(codes, len(dictionary)):  # a loop over distinct names, not rows
        lookup[i] = LAUNCH_MODES.index(_api_class(str(dictionary[i])))
    return lookup[codes]


def _first_match(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the positions of the ``values`` found among ``keys``, each one's first position in ``keys``): an inner
    merge with ``keys`` deduplicated on their first occurrence."""
    distinct, first = np.unique(keys, return_index=True)
    if distinct.size == 0 or values.size == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    at = np.minimum(np.searchsorted(distinct, values), distinct.size - 1)
    hit = np.flatnonzero(distinct[at] == values)
    return hit, first[at[hit]]


def _join_on_pid(copies: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """:func:`_join_on_pid_arrays` of frames: (row, mode) of the ``copies`` (row, pid, correlation_id) that match
    a call (pid, correlation_id, mode)."""
    import pandas as pd

    row, mode = _join_on_pid_arrays(
        copies["row"].to_numpy(),
        copies["pid"].to_numpy(np.int64),
        copies["correlation_id"].to_numpy(np.int64),
        calls["pid"].to_numpy(np.int64),
        calls["correlation_id"].to_numpy(np.int64),
        calls["mode"].to_numpy(),
    )
    return pd.DataFrame({"row": row, "mode": mode})


def _join_on_pid_arrays(
    row: np.ndarray,
    c_pid: np.ndarray,
    c_corr: np.ndarray,
    h_pid: np.ndarray,
    h_corr: np.ndarray,
    h_mode: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(row, mode) of the copies (row, pid, correlation_id) that match a call (pid, correlation_id, mode) on
    both columns, the first such call deciding (``copies.merge(calls.drop_duplicates([pid, correlation_id]))``),
    by one sorted search of the pairs packed into one int64: as they are where they fit (a training export's
    million copies), as their dense codes otherwise."""
    no_id = np.iinfo(np.int64).min  # a copy's unknown id: matches no call
    mine = np.flatnonzero(c_corr != no_id)
    c_pid, c_corr = c_pid[mine], c_corr[mine]
    values = [a for a in (c_pid, c_corr, h_pid, h_corr) if a.size]
    width = max([int(a.max()) for a in (c_corr, h_corr) if a.size] + [0]) + 1
    pid_top = max([int(a.max()) for a in (c_pid, h_pid) if a.size] + [0])
    if min([int(a.min()) for a in values] + [0]) < 0 or (pid_top + 1) * width >= 2**62:
        # negative or wide ids: each column as dense codes of the two sides' values (the pairs then pack)
        pids, pid_code = np.unique(np.concatenate([c_pid, h_pid]), return_inverse=True)
        ids, id_code = np.unique(np.concatenate([c_corr, h_corr]), return_inverse=True)
        c_pid, h_pid = np.split(pid_code.reshape(-1).astype(np.int64), [c_pid.size])
        c_corr, h_corr = np.split(id_code.reshape(-1).astype(np.int64), [c_corr.size])
        width = max(ids.size, 1)
        del pids
    del values
    keys, first = np.unique(h_pid * width + h_corr, return_index=True)  # each pair's first call
    if keys.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int8)
    copy_key = c_pid * width + c_corr
    del c_pid, c_corr
    at = np.minimum(intervals.search_sorted(keys, copy_key), keys.size - 1)
    hit = np.flatnonzero(keys[at] == copy_key)
    return row[mine[hit]], h_mode[first[at[hit]]]


def _kind_codes(column: pd.Series) -> tuple[list[str], np.ndarray]:
    """:func:`kind_codes` of a frame column (categorical or not)."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        return kind_codes(column.cat.codes.to_numpy(), list(column.cat.categories))
    codes, values = pd.factorize(column, use_na_sentinel=True)
    return kind_codes(codes, list(values))


def kind_codes(codes: np.ndarray, values: list[Any]) -> tuple[list[str], np.ndarray]:
    """The copy kinds (codes into ``values``, -1: null) as (distinct labels, each copy's position among them): a
    null kind is UNKNOWN; the labels are the values as strings (``astype("string")``), found once per value."""
    texts = [*(UNKNOWN if v is None else str(v) for v in values), UNKNOWN]
    labels = list(dict.fromkeys(texts))
    lookup = np.array([labels.index(t) for t in texts], np.int16)
    return labels, lookup[codes]  # code -1 (null) picks the trailing UNKNOWN


def _bandwidth_stats(nbytes: np.ndarray, duration: np.ndarray) -> dict[str, Any]:
    """Aggregate and per-copy bandwidth (bytes/s) over copies with duration > 0 and known bytes."""
    ok = (duration > 0) & np.isfinite(nbytes)
    out: dict[str, Any] = {
        "measured_count": int(ok.sum()),
        "achieved_bytes_per_s": None,
        "p10_bytes_per_s": None,
        "p50_bytes_per_s": None,
        "p90_bytes_per_s": None,
        "max_bytes_per_s": None,
    }
    if not ok.any():
        return out
    per_copy = nbytes[ok] / duration[ok] * 1e9
    out["achieved_bytes_per_s"] = _achieved(nbytes, duration, ok)
    p10, p50, p90 = np.percentile(per_copy, [10, 50, 90])
    out.update(
        p10_bytes_per_s=float(p10),
        p50_bytes_per_s=float(p50),
        p90_bytes_per_s=float(p90),
        max_bytes_per_s=float(per_copy.max()),
    )
    return out


def _achieved(nbytes: np.ndarray, duration: np.ndarray, ok: np.ndarray | None = None) -> float | None:
    """``_bandwidth_stats``' aggregate bandwidth alone (no percentiles: the per-device tables read only this)."""
    if ok is None:
        ok = (duration > 0) & np.isfinite(nbytes)
        if not ok.any():
            return None
    return float(nbytes[ok].sum() / duration[ok].sum() * 1e9)


def _merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return intervals.merge(starts, ends)


# GPU ops read at once by _kernel_union (a few small masks and the kernels' times among them).
UNION_BLOCK_OPS = 1 << 20


def _kernel_union(
    device: np.ndarray,
    is_kernel: np.ndarray,
    times: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    dev: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``intervals.merge`` of the kernels of device ``dev`` among the GPU ops (their device, kernel flag, and
    ``times(at)``: the starts and ends of the GPU ops at positions ``at``, gathered there only), a block of ops at
    a time where the kernels come in start order: each block's union less its last interval is final (every later
    kernel starts at or after that last interval's start, past the others' ends), the last is merged with the next
    block. Out of order: one merge of them all."""
    count = 0
    for lo in range(0, device.size, UNION_BLOCK_OPS):  # a loop over blocks of ops
        mine = device[lo : lo + UNION_BLOCK_OPS] == dev
        mine &= is_kernel[lo : lo + UNION_BLOCK_OPS]
        count += int(np.count_nonzero(mine))
    out_s, out_e = np.empty(count, np.int64), np.empty(count, np.int64)
    done = 0
    carry: tuple[int, int] | None = None  # the last interval so far (it may still grow)
    for lo in range(0, device.size, UNION_BLOCK_OPS):  # a loop over blocks of ops
        at = slice(lo, lo + UNION_BLOCK_OPS)
        mine = device[at] == dev
        mine &= is_kernel[at]
        picked = np.flatnonzero(mine)
        picked += lo
        s, e = times(picked)
        del mine, picked
        if not s.size:
            continue
        if (s[1:] < s[:-1]).any() or (carry is not None and s[0] < carry[0]):
            return intervals.merge(*times(np.flatnonzero((device == dev) & is_kernel)))
        if carry is not None:
            s, e = np.concatenate([[carry[0]], s]), np.concatenate([[carry[1]], e])
        us, ue = intervals.merge(s, e)
        del s, e
        out_s[done : done + us.size - 1], out_e[done : done + us.size - 1] = us[:-1], ue[:-1]
        done += us.size - 1
        carry = (int(us[-1]), int(ue[-1]))
    if carry is not None:
        out_s[done], out_e[done] = carry
        done += 1
    if done < count // 2:  # much overlap: the union's own arrays, not views of the larger ones
        return out_s[:done].copy(), out_e[:done].copy()
    return out_s[:done], out_e[:done]


def device_kernel_union(trace: Trace, dev: int) -> tuple[np.ndarray, np.ndarray]:
    """The union of device ``dev``'s kernels (``intervals.merge`` of them), from the launch pairs' columns (one row
    per GPU op, shared: no row array of the kernels); shared by memcpy and communication (each device's once)."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        ops = launch_pairs(trace)

        def op_times(at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """The GPU ops' starts and ends at ``at`` (launch_pairs' columns gathered there only: no start and end
            column of every GPU op held)."""
            picked = ops[at]
            return picked["start"], picked["end"]

        return _kernel_union(ops["device"], ops["is_kernel"], op_times, dev)

    return memo(trace, f"kernel_union/{dev}", compute)


def _exposed(
    copy_s: np.ndarray, copy_e: np.ndarray, kernels: tuple[np.ndarray, np.ndarray]
) -> tuple[int, int]:
    """(union length of the copies, part of that union not covered by any kernel); ``kernels``: the device's
    kernels merged (``intervals.merge``), once for all its copy kinds."""
    us, ue = _merged(copy_s, copy_e)
    union = int((ue - us).sum())
    if us.size == 0:
        return 0, 0
    ks, ke = kernels
    covered = int(intervals.overlap_with_union(us, ue, ks, ke).sum())
    return union, union - covered


def _expected(kind: str, links: Any) -> tuple[float | None, str | None, str | None]:
    """Expected bandwidth of one direction: (bytes/s, link, source)."""
    if kind in ("HtoD", "DtoH"):
        return links.host_bytes_per_s, links.host_link, links.host_source
    if kind == "PtoP":
        return links.peer_bytes_per_s, links.peer_link, links.peer_source
    if kind == "DtoD" and links.memory_bytes_per_s:
        # A device-to-device copy reads and writes every byte: at most half the memory bandwidth.
        return links.memory_bytes_per_s / 2, "device memory (read + write)", links.memory_source
    return None, None, None


def _bursts(device: np.ndarray, starts: np.ndarray, ends: np.ndarray, nbytes: np.ndarray) -> dict[str, Any]:
    """Runs of small copies on one device separated by at most BURST_MAX_GAP_NS; bursts have >= MIN copies."""
    empty = {"burst_count": 0, "burst_copy_count": 0, "burst_ns": 0, "largest_bursts": []}
    if starts.size == 0:
        return empty
    order = np.lexsort((starts, device))
    dev, s, e, b = device[order], starts[order], ends[order], nbytes[order]
    new_run = np.ones(s.size, dtype=bool)
    device_starts = np.flatnonzero(np.r_[True, dev[1:] != dev[:-1]])
    for lo, hi in zip(
        device_starts, np.r_[device_starts[1:], s.size], strict=True
    ):  # one iteration per device
        running_end = np.maximum.accumulate(e[lo:hi])
        new_run[lo + 1 : hi] = s[lo + 1 : hi] - running_end[:-1] > BURST_MAX_GAP_NS
    run_id = np.cumsum(new_run) - 1
    counts = np.bincount(run_id)
    first = np.flatnonzero(new_run)
    run_start = s[first]
    run_end = np.maximum.reduceat(e, first)
    run_bytes = np.bincount(run_id, weights=np.nan_to_num(b))
    run_busy = np.bincount(run_id, weights=(e - s).astype(np.float64))
    is_burst = counts >= BURST_MIN_COPIES
    if not is_burst.any():
        return empty
    idx = np.flatnonzero(is_burst)
    biggest = idx[np.argsort(-counts[idx], kind="stable")][:LARGEST_BURSTS]
    return {
        "burst_count": int(is_burst.sum()),
        "burst_copy_count": int(counts[is_burst].sum()),
        "burst_ns": int(run_busy[is_burst].sum()),
        "largest_bursts": [
            {
                "device": int(dev[first[i]]),
                "start_ns": int(run_start[i]),
                "end_ns": int(run_end[i]),
                "count": int(counts[i]),
                "bytes": int(run_bytes[i]),
                "duration_ns": int(run_busy[i]),
            }
            for i in biggest
        ],
    }


def memcpy_report(trace: Trace) -> dict[str, Any]:
    """The ``memcpy`` block (see docs/memcpy.md)."""
    cols = event_columns(trace)
    copy_rows = np.flatnonzero(cols.kind == ALL_KINDS.index(MEMCPY))
    copy_rows = copy_rows[cols.device[copy_rows] >= 0]
    # The times and devices from the shared columns (set on every GPU op); the others, nullable, read from their
    # Arrow buffers (no frame: analyze runs without pandas).
    pid, has_pid = arrow_ints(trace.take("pid", copy_rows))
    corr, has_corr = arrow_ints(trace.take("correlation_id", copy_rows))
    # The launch mode first, its joins the biggest step: the per-copy arrays below are not yet held then.
    mode = launch_mode_codes(trace, pid, has_pid, corr, has_corr)
    del pid, has_pid, corr, has_corr
    labels, kind_code = kind_codes(*arrow_codes(trace.take("copy_kind", copy_rows)))
    nbytes = arrow_floats(trace.take("bytes", copy_rows))
    memory = host_memory_codes(
        *arrow_codes(trace.take("src_kind", copy_rows)), *arrow_codes(trace.take("dst_kind", copy_rows))
    )
    copy_count = int(copy_rows.size)
    device = cols.device[copy_rows].astype(np.int64)
    starts = cols.start[copy_rows].astype(np.int64, copy=False)
    ends = cols.end[copy_rows].astype(np.int64, copy=False)
    del copy_rows
    duration = ends - starts
    small = np.isfinite(nbytes) & (nbytes < SMALL_COPY_BYTES)
    # Each class as a mask once: the tables below count dozens of combinations over a million copies.
    is_mem = {c: memory == i for i, c in enumerate(MEMORY_CLASSES)}
    is_mode = {c: mode == i for i, c in enumerate(LAUNCH_MODES)}
    present = np.flatnonzero(np.bincount(kind_code, minlength=len(labels)))
    kind_mask = {labels[i]: kind_code == i for i in present}

    by_kind = []
    for kind in sorted(kind_mask, key=_kind_sort_key):
        m = kind_mask[kind]
        entry: dict[str, Any] = {
            "kind": kind,
            "count": count_where(m),
            "bytes": int(np.nansum(nbytes[m])),
            "duration_ns": int(sum_where(duration, m)),
            "pageable_count": count_where(m & is_mem[PAGEABLE]),
            "pageable_ns": int(sum_where(duration, m & is_mem[PAGEABLE])),
            "pinned_count": count_where(m & is_mem[PINNED]),
            "pinned_ns": int(sum_where(duration, m & is_mem[PINNED])),
            "managed_count": count_where(m & is_mem[MANAGED]),
            "unknown_memory_count": count_where(m & is_mem[UNKNOWN]),
            "sync_count": count_where(m & is_mode[SYNC]),
            "sync_ns": int(sum_where(duration, m & is_mode[SYNC])),
            "async_count": count_where(m & is_mode[ASYNC]),
            "async_ns": int(sum_where(duration, m & is_mode[ASYNC])),
            "graph_count": count_where(m & is_mode[GRAPH]),
            "unknown_launch_count": count_where(m & is_mode[UNKNOWN]),
            "zero_duration_count": count_where(duration[m] == 0),
            "unknown_bytes_count": count_where(~np.isfinite(nbytes[m])),
            "small_count": count_where(small[m]),
            "small_ns": int(sum_where(duration, m & small)),
            "device_mean_exposed_ns": 0.0,  # filled from the per-device pass below
        }
        entry.update(_bandwidth_stats(nbytes[m], duration[m]))
        by_kind.append(entry)
    kind_index = {e["kind"]: e for e in by_kind}

    per_device: list[dict[str, Any]] = []
    kernel_union: dict[int, int] = {}  # per device: the kernels' union length (what could hide its copies)
    busy_devices = device_busy(trace)
    gpus = (
        busy_gpu_equivalents(busy_devices) if busy_devices else 0.0
    )  # per GPU: Σ / n_eff (GPU-time weighted)
    for dev, device_activity in sorted(busy_devices.items()):
        busy, span = device_activity.busy_ns, device_activity.span_ns  # all GPU rows of the device
        dm = device == dev
        if not dm.any():
            continue
        # once per device, for every kind of copy
        kernel_busy = device_kernel_union(trace, dev)
        union, exposed = _exposed(starts[dm], ends[dm], kernel_busy)
        kernel_union[dev] = int((kernel_busy[1] - kernel_busy[0]).sum())
        info = trace.device_info(dev)
        links = links_of_device(info)
        dev_kinds = []
        for kind in sorted((labels[i] for i in np.unique(kind_code[dm])), key=_kind_sort_key):
            m = dm & kind_mask[kind]
            # m is within dm: the same count is the same copies (one kind on the device), the same union
            same = count_where(m) == count_where(dm)
            k_union, k_exposed = (union, exposed) if same else _exposed(starts[m], ends[m], kernel_busy)
            kind_index[kind]["device_mean_exposed_ns"] += k_exposed / gpus
            expected, link, source = _expected(kind, links)
            achieved = _achieved(nbytes[m], duration[m])
            large = m & np.isfinite(nbytes) & (nbytes >= LARGE_COPY_BYTES)
            large_bw = _achieved(nbytes[large], duration[large])
            dev_kinds.append(
                {
                    "kind": kind,
                    "count": count_where(m),
                    "bytes": int(np.nansum(nbytes[m])),
                    "duration_ns": int(sum_where(duration, m)),
                    "union_ns": k_union,
                    "exposed_ns": k_exposed,
                    "pageable_ns": int(sum_where(duration, m & is_mem[PAGEABLE])),
                    "pinned_ns": int(sum_where(duration, m & is_mem[PINNED])),
                    "sync_ns": int(sum_where(duration, m & is_mode[SYNC])),
                    "async_ns": int(sum_where(duration, m & is_mode[ASYNC])),
                    "busy_share": k_union / busy if busy > 0 else None,
                    "span_share": k_union / span if span > 0 else None,
                    "achieved_bytes_per_s": achieved,
                    "large_copy_count": count_where(large),
                    "unknown_bytes_count": count_where(m & ~np.isfinite(nbytes)),
                    "large_achieved_bytes_per_s": large_bw,
                    "expected_bytes_per_s": expected,
                    "expected_link": link,
                    "expected_source": source,
                    "achieved_fraction": achieved / expected if achieved is not None and expected else None,
                    "large_achieved_fraction": large_bw / expected
                    if large_bw is not None and expected
                    else None,
                }
            )
        per_device.append(
            {
                "device": dev,
                "name": info.get("name"),
                "count": count_where(dm),
                "bytes": int(np.nansum(nbytes[dm])),
                "duration_ns": int(sum_where(duration, dm)),
                "busy_ns": busy,
                "span_ns": span,
                "union_ns": union,
                "exposed_ns": exposed,
                "busy_share": union / busy if busy > 0 else None,
                "span_share": union / span if span > 0 else None,
                "exposed_span_share": exposed / span if span > 0 else None,
                "by_kind": dev_kinds,
            }
        )
        del kernel_busy  # before the next device's union is built

    host_copies = np.isin(kind_code, [i for i, k in enumerate(labels) if k in ("HtoD", "DtoH", "HtoH")])
    host_memory = {
        "pageable_count": count_where(is_mem[PAGEABLE]),
        "pinned_count": count_where(is_mem[PINNED]),
        "managed_count": count_where(is_mem[MANAGED]),
        "device_count": count_where(is_mem[DEVICE_ONLY]),
        "unknown_count": count_where(is_mem[UNKNOWN]),
        "host_copies_unknown_count": count_where(host_copies & is_mem[UNKNOWN]),
        "basis": "exact"
        if not (host_copies & is_mem[UNKNOWN]).any()
        else ("unknown" if (host_copies & is_mem[UNKNOWN]).all() else "partly unknown"),
    }
    launch = {
        "sync_count": count_where(is_mode[SYNC]),
        "async_count": count_where(is_mode[ASYNC]),
        "graph_count": count_where(is_mode[GRAPH]),
        "unknown_count": count_where(is_mode[UNKNOWN]),
        "async_pageable_count": count_where(is_mode[ASYNC] & is_mem[PAGEABLE]),
        "sync_ns": int(sum_where(duration, is_mode[SYNC])),
        "basis": "launching runtime/driver call name, joined on correlation_id",
    }
    small_block = {
        "threshold_bytes": SMALL_COPY_BYTES,
        "count": count_where(small),
        "bytes": int(np.nansum(nbytes[small])),
        "duration_ns": int(sum_where(duration, small)),
        "burst_min_copies": BURST_MIN_COPIES,
        "burst_max_gap_ns": BURST_MAX_GAP_NS,
    }
    small_block.update(_bursts(device[small], starts[small], ends[small], nbytes[small]))

    doc = {
        "count": int(copy_count),
        "bytes": int(np.nansum(nbytes)),
        "duration_ns": int(duration.sum()),
        # Device-means over the GPUs with activity, GPU-time weighted (Σ / n_eff; a GPU without copies counts 0): a
        # sum over GPUs could exceed every GPU's window.
        "device_mean_union_ns": sum(d["union_ns"] for d in per_device) / gpus if busy_devices else 0.0,
        "device_mean_exposed_ns": (sum(d["exposed_ns"] for d in per_device) / gpus if busy_devices else 0.0),
        "by_kind": by_kind,
        "per_device": per_device,
        "host_memory": host_memory,
        "launch": launch,
        "small_copies": small_block,
    }
    doc["findings"] = findings(doc, kernel_union)
    return doc


def overlap_headroom(union_ns: int, exposed_ns: int, kernel_union_ns: int) -> int:
    """The most exposed copy time that overlapping could still hide on one GPU: its kernel time not already
    beside the copies (kernel union less the part of it under the copy union, = union - exposed)."""
    return max(kernel_union_ns - (union_ns - exposed_ns), 0)


def copies_are_the_floor(union_ns: int, exposed_ns: int, kernel_union_ns: int) -> bool:
    """True when overlap cannot be the fix: the copies already run beside the kernels (on a side stream, the
    kernels inside their window), or there is too little kernel time left to hide them behind, so that
    overlapping would hide less than half the exposed time. The copy itself is then the floor."""
    return (
        exposed_ns > 0
        and overlap_headroom(union_ns, exposed_ns, kernel_union_ns) < FLOOR_HEADROOM * exposed_ns
    )


# The checks a memcpy section reports, each naming the remedy it calls for (a key of the one memcpy fix table,
# tracelens/analyses/diagnosis/memcpy.py FIXES, which also words each check for the renderers).
PAGEABLE_CHECK, ASYNC_PAGEABLE_CHECK, SYNC_CHECK = "memcpy_pageable", "memcpy_async_pageable", "memcpy_sync"
SMALL_STORM_CHECK, SMALL_DTOH_CHECK = "memcpy_small_storm", "memcpy_small_dtoh"
EXPOSED_CHECK, LOW_BANDWIDTH_CHECK = "memcpy_exposed", "memcpy_low_bandwidth"
CHECKS = (
    PAGEABLE_CHECK,
    ASYNC_PAGEABLE_CHECK,
    SYNC_CHECK,
    SMALL_STORM_CHECK,
    SMALL_DTOH_CHECK,
    EXPOSED_CHECK,
    LOW_BANDWIDTH_CHECK,
)


def findings(doc: dict[str, Any], kernel_union: dict[int, int]) -> list[dict[str, Any]]:
    """The memcpy checks that fire, as data: ``{id, evidence, remedy}`` (docs/memcpy.md). The sentence and the
    fix come from the diagnosis's memcpy cause (one fix table); the severity is the memcpy cause's."""
    out: list[dict[str, Any]] = []
    by_kind = {k["kind"]: k for k in doc["by_kind"]}
    pageable = sum(k["pageable_count"] for k in doc["by_kind"])
    if pageable:
        out.append(
            {
                "id": PAGEABLE_CHECK,
                "evidence": {
                    "pageable_count": pageable,
                    "by_kind": {k: v["pageable_count"] for k, v in by_kind.items() if v["pageable_count"]},
                },
                "remedy": "pin",
            }
        )
    launch = doc["launch"]
    if launch["async_pageable_count"]:
        out.append(
            {
                "id": ASYNC_PAGEABLE_CHECK,
                "evidence": {"async_pageable_count": launch["async_pageable_count"]},
                "remedy": "pin",
            }
        )
    if launch["sync_count"]:
        out.append(
            {
                "id": SYNC_CHECK,
                "evidence": {"sync_count": launch["sync_count"], "sync_ns": launch["sync_ns"]},
                "remedy": "async",
            }
        )
    small = doc["small_copies"]
    if small["burst_count"]:
        out.append(
            {
                "id": SMALL_STORM_CHECK,
                "evidence": {
                    k: small[k]
                    for k in ("threshold_bytes", "count", "duration_ns", "burst_count", "burst_copy_count")
                },
                "remedy": "batch",
            }
        )
    dtoh = by_kind.get("DtoH")
    if dtoh and dtoh["small_count"] >= BURST_MIN_COPIES:
        out.append(
            {
                "id": SMALL_DTOH_CHECK,
                "evidence": {"small_count": dtoh["small_count"], "small_ns": dtoh["small_ns"]},
                "remedy": "resident",
            }
        )
    for dev in doc["per_device"]:
        share = dev["exposed_span_share"]
        kernels = kernel_union.get(dev["device"], 0)
        headroom = overlap_headroom(dev["union_ns"], dev["exposed_ns"], kernels)
        floor = copies_are_the_floor(dev["union_ns"], dev["exposed_ns"], kernels)
        if share is not None and share >= EXPOSED_SHARE_FINDING:
            out.append(
                {
                    "id": EXPOSED_CHECK,
                    "evidence": {
                        "device": dev["device"],
                        "exposed_ns": dev["exposed_ns"],
                        "span_ns": dev["span_ns"],
                        "overlap_headroom_ns": headroom,
                    },
                    "remedy": "floor" if floor else "overlap",
                }
            )
        for k in dev["by_kind"]:
            frac = k["large_achieved_fraction"]
            if k["kind"] in ("HtoD", "DtoH") and frac is not None and frac < LOW_BANDWIDTH_FRACTION:
                # Pageable copies are slow by nature; pinned ones this slow point at the link or the host.
                pageable_kind = by_kind.get(k["kind"], {}).get("pageable_count", 0)
                out.append(
                    {
                        "id": LOW_BANDWIDTH_CHECK,
                        "evidence": {
                            "device": dev["device"],
                            "kind": k["kind"],
                            "min_bytes": LARGE_COPY_BYTES,
                            "achieved_bytes_per_s": k["large_achieved_bytes_per_s"],
                            "expected_bytes_per_s": k["expected_bytes_per_s"],
                            "expected_link": k["expected_link"],
                            "expected_source": k["expected_source"],
                        },
                        "remedy": "pin" if pageable_kind else "link",
                    }
                )
    return out


def section(trace: Trace, done: dict[str, Any]) -> dict[str, Any]:
    migration_rows(
        trace
    )  # shared (.migrations): computed while the copy kinds are read, held for their readers
    return memcpy_report(trace)
