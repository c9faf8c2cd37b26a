"""The stats of XSpace events that tracelens reads (all others are skipped without being decoded), decoded for
all events at once from the wire bytes into integer, float and string columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from . import wire
from .lines import LINE_HOST, LINE_STEPS, LINE_STREAM, LINE_XLA_OPS
from .names import lookup, metadata_ids, metadata_table, plane_keys, valid_flops

# Stats the reader needs from events (all others are skipped without being decoded).
_WANTED_STATS = (
    "correlation_id",
    "kernel_details",
    "memcpy_details",
    "memset_details",
    "step_num",
    "group_id",
    "step_name",
    "tf_op",
    "level 0",
    "hlo_op",
    "hlo_module",
    "flops",
    "tracelens",
)
_CODE = {name: i for i, name in enumerate(_WANTED_STATS)}
_STRING_STATS = frozenset(
    {
        "kernel_details",
        "memcpy_details",
        "memset_details",
        "step_name",
        "tf_op",
        "level 0",
        "hlo_op",
        "hlo_module",
    }
)
# The op a GPU op ran for, as the profiler records it on the stream-line event (docs/formats/xplane.md, "The op
# of each GPU op"):
# read on stream lines only (TF writes tf_op on host allocation events too).
OP_STATS = ("tf_op", "level 0", "hlo_op", "hlo_module")


class StatColumns:
    """The wanted stats of every event: integers (with a presence mask) and strings.

    Strings are kept as one Arrow array per stat plus, per event, its position there (-1 = absent),
    so that callers take only the rows they need.
    """

    def __init__(self, n_events: int) -> None:
        self.n = n_events
        self.ints: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.floats: dict[str, np.ndarray] = {}  # NaN where absent
        self.string_values: dict[str, tuple[np.ndarray, pa.Array]] = {}

    def int_column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        values = self.ints.get(name)
        if values is None:
            return np.zeros(self.n, np.int64), np.zeros(self.n, bool)
        return values

    def float_column(self, name: str) -> np.ndarray:
        values = self.floats.get(name)
        return np.full(self.n, np.nan) if values is None else values

    def has(self, name: str) -> np.ndarray:
        entry = self.string_values.get(name)
        return np.zeros(self.n, bool) if entry is None else entry[0] >= 0

    def strings(self, name: str, rows: np.ndarray) -> pa.Array:
        """The stat's string for each of ``rows`` (event indices), null where the event lacks it."""
        entry = self.string_values.get(name)
        if entry is None:
            return pa.nulls(len(rows), pa.string())
        where = entry[0][rows]
        return entry[1].take(pa.array(where, mask=where < 0))


def _wanted_stat_keys(planes: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted keys (:func:`.names.plane_keys`) of the stats the reader needs, their codes, and the id universe."""
    universe = metadata_ids(planes, "stat")
    plane_of, ids, wanted_codes = [], [], []
    for index, plane in enumerate(planes):
        for key, meta in plane.stat_metadata.items():
            if meta.name in _CODE:
                plane_of.append(index)
                ids.append(int(key))
                wanted_codes.append(_CODE[meta.name])
    wk = plane_keys(np.asarray(plane_of, np.int64), np.asarray(ids, np.int64), universe)
    order = np.argsort(wk)
    return wk[order], np.asarray(wanted_codes, np.int64)[order], universe


def wanted_stat_filter(event_plane: np.ndarray, line_kind: np.ndarray, planes: list[Any]) -> wire.StatFilter:
    """``(event index, stat metadata id) -> keep``: only the stats the reader needs pass."""
    all_ids = [int(k) for plane in planes for k in plane.stat_metadata.keys()]
    max_id = max(all_ids, default=0)
    dense = 0 <= min(all_ids, default=0) and max_id < 1 << 16
    if dense:  # stat metadata ids are small: a (plane, id) -> code table beats a sorted-key search
        table = np.full((max(len(planes), 1), max_id + 2), -1, np.int8)
        for index, plane in enumerate(planes):
            for key, meta in plane.stat_metadata.items():
                if meta.name in _CODE:
                    table[index, key] = _CODE[meta.name]
    else:
        wanted, codes, universe = _wanted_stat_keys(planes)

    def keep(owner: np.ndarray, mid: np.ndarray) -> np.ndarray:
        if dense:
            code = table[event_plane[owner], np.minimum(mid, np.uint64(max_id + 1)).astype(np.int64)]
        else:
            hit = lookup(wanted, plane_keys(event_plane[owner], mid, universe))
            code = np.where(hit >= 0, codes[np.maximum(hit, 0)], -1)
        useful = code >= 0
        # group_id is on most host events but needed only to number device "Steps" lines; the op stats only
        # on stream lines; flops on stream and XLA op lines
        group = np.flatnonzero(code == _CODE["group_id"])
        useful[group] = line_kind[owner[group]] == LINE_STEPS
        op = np.flatnonzero(np.isin(code, [_CODE[s] for s in OP_STATS]))
        useful[op] = line_kind[owner[op]] == LINE_STREAM
        flops = np.flatnonzero(code == _CODE["flops"])
        useful[flops] = np.isin(line_kind[owner[flops]], (LINE_STREAM, LINE_XLA_OPS))
        # tracelens=1: a tracelens.nvtx range (an annotation), on host lines
        ranges = np.flatnonzero(code == _CODE["tracelens"])
        useful[ranges] = line_kind[owner[ranges]] == LINE_HOST
        return useful

    return keep


def decode_stats(
    buf: np.ndarray,
    stat_event: np.ndarray,
    stat_start: np.ndarray,
    stat_len: np.ndarray,
    event_plane: np.ndarray,
    planes: list[Any],
    n_events: int,
) -> StatColumns:
    out = StatColumns(n_events)
    if stat_event.size == 0:
        return out
    # The metadata id is the first field of a canonically serialized XStat: read it directly, and walk
    # only the stats that do not start with it.
    first = buf[stat_start]
    canonical = (first == 0x08) & (stat_len > 1)
    stat_mid = np.zeros(stat_event.size, dtype=np.uint64)
    if canonical.any():
        stat_mid[canonical], _ = wire.read_varints(buf, stat_start[canonical] + 1)
    odd = np.flatnonzero(~canonical)
    if odd.size:
        fields = wire.walk(buf, stat_start[odd], stat_start[odd] + stat_len[odd], keep_fields=(1,))
        stat_mid[odd] = wire.last_value_per_message(fields, 1, odd.size)

    wk, wc, universe = _wanted_stat_keys(planes)
    if wk.size == 0:
        return out
    stat_plane = event_plane[stat_event]
    hit = lookup(wk, plane_keys(stat_plane, stat_mid, universe))
    keep = np.flatnonzero(hit >= 0)
    if keep.size == 0:
        return out
    codes = wc[hit[keep]]
    s_event, s_start, s_len, s_plane = stat_event[keep], stat_start[keep], stat_len[keep], stat_plane[keep]
    fields = wire.walk(buf, s_start, s_start + s_len)
    # A stat's value is its last non-metadata_id field (the oneof: last occurrence wins).
    value_sel = np.flatnonzero(fields.field != 1)
    msg = fields.message[value_sel]
    vfield = np.zeros(keep.size, np.int64)
    vvalue = np.zeros(keep.size, np.uint64)
    vstart = np.zeros(keep.size, np.int64)
    vlen = np.zeros(keep.size, np.int64)
    vfield[msg] = fields.field[value_sel]
    vvalue[msg] = fields.value[value_sel]
    vstart[msg] = fields.start[value_sel]
    vlen[msg] = fields.length[value_sel]

    stat_keys, stat_order, stat_names, _ = metadata_table(planes, "stat")
    stat_names_arr = pa.array(stat_names, pa.string())
    for name, code in _CODE.items():
        sel = np.flatnonzero(codes == code)
        if sel.size == 0:
            continue
        ev = s_event[sel]
        if name in _STRING_STATS:
            is_str = np.isin(vfield[sel], (5, 6))
            is_ref = vfield[sel] == 7
            parts: list[pa.Array] = []
            owners: list[np.ndarray] = []
            if is_str.any():
                idx = sel[is_str]
                offsets, data = wire.gather_strings(buf, vstart[idx], vlen[idx])
                parts.append(
                    pa.StringArray.from_buffers(
                        idx.size, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data.tobytes())
                    )
                    if offsets[-1] < 2**31
                    else pa.LargeStringArray.from_buffers(
                        idx.size, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())
                    ).cast(pa.string())
                )
                owners.append(ev[is_str])
                parts[-1] = _valid_utf8(parts[-1])
            if is_ref.any():
                idx = sel[is_ref]
                pos = lookup(stat_keys, plane_keys(s_plane[idx], vvalue[idx], universe))
                names_idx = np.where(pos >= 0, stat_order[np.maximum(pos, 0)], -1)
                parts.append(stat_names_arr.take(pa.array(names_idx, mask=names_idx < 0)))
                owners.append(ev[is_ref])
            if not parts:
                continue
            joined = pa.concat_arrays(parts)
            owner = np.concatenate(owners)
            where = np.full(n_events, -1, np.int64)
            where[owner] = np.arange(owner.size)
            out.string_values[name] = (where, joined)
        elif name == "flops":  # uint64, int64 or double
            values_f = np.full(n_events, np.nan)
            is_int = np.isin(vfield[sel], (3, 4))
            is_u64 = vfield[sel] == 3
            raw = vvalue[sel]
            values_f[ev[is_int & is_u64]] = raw[is_int & is_u64].astype(np.float64)
            values_f[ev[is_int & ~is_u64]] = raw[is_int & ~is_u64].view(np.int64).astype(np.float64)
            is_dbl = vfield[sel] == 2
            values_f[ev[is_dbl]] = raw[is_dbl].view(np.float64)
            out.floats[name] = valid_flops(values_f)
        else:
            is_int = np.isin(vfield[sel], (3, 4, 7))
            values = np.zeros(n_events, np.int64)
            present = np.zeros(n_events, bool)
            values[ev[is_int]] = vvalue[sel][is_int].view(np.int64)
            present[ev[is_int]] = True
            is_dbl = vfield[sel] == 2
            if is_dbl.any():
                # a whole number as a double: read where it is one within int64 (NaN, infinite or past 2^63 cast to
                # int64's minimum, with numpy's "invalid value encountered in cast" on stderr: no such id or step)
                doubles = vvalue[sel][is_dbl].view(np.float64)
                fits = np.isfinite(doubles) & (np.abs(doubles) < 2.0**63)
                values[ev[is_dbl][fits]] = doubles[fits].astype(np.int64)
                present[ev[is_dbl][fits]] = True
            out.ints[name] = (values, present)
    return out


def _valid_utf8(strings: pa.Array) -> pa.Array:
    """``strings`` (built from the file's bytes without a check) with invalid UTF-8 replaced by U+FFFD: a
    ``bytes_value`` stat, or a writer that broke the spec, would otherwise fail whoever reads the names."""
    try:
        strings.validate(full=True)
        return strings
    except pa.ArrowInvalid:
        raw = strings.cast(pa.binary()).to_pylist()
        return pa.array([None if v is None else v.decode("utf-8", "replace") for v in raw], pa.string())


# ----------------------------------------------------------------------------------- details strings
