"""TensorFlow / JAX profiler reader: XSpace protobuf (``<host>.xplane.pb``) and TensorBoard logdirs.

Format notes, what is read from which plane/line/stat, time rounding and quirks: ``docs/formats/xplane.md``.
Decoding uses the plain ``protobuf`` package with a descriptor built in code (:mod:`.xplane_schema`);
events are walked in bulk with numpy (:mod:`.xplane_wire`), never one Python object per event.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from ..trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    EVENT_SCHEMA,
    GPU_ANNOTATION,
    KERNEL,
    MEMCPY,
    MEMSET,
    OTHER,
    PYTHON,
    RUNTIME,
    STEP,
    Trace,
    TraceMetadata,
    build_devices,
    build_store,
    depth_column,
)
from ..values import int_or_none
from . import xplane_wire as wire
from .profiler_log import profiler_drops
from .tf_common import (
    COPY_KIND_LABELS,
    classify_host_name,
    copy_kind_code,
    detect_framework,
    discover,
    extract_int,
    kernel_columns,
    strip_version,
)
from .xplane_schema import protobuf_backend, xspace_class

HOST_PLANE = "/host:CPU"
TASK_ENV_PLANE = "Task Environment"
_GPU_PLANE = re.compile(r"^/device:GPU:(\d+)$")
_STREAM_LINE = re.compile(r"^Stream #(\d+)")
STEPS_LINE = "Steps"
# The HLO ops the profiler derives from the kernels of a GPU plane: read as ``gpu_annotation`` rows (never GPU
# activity), so that kernels inside an XLA collective op (all-reduce, all-gather, ...) count as collectives.
XLA_OP_LINES = frozenset({"XLA Ops", "Async XLA Ops"})
_STEP_NAME = re.compile(r"^(?:tracelens/step#|ProfilerStep#)(\d+)$")
# Lines the profiler derives from the stream lines (ops, modules, name scopes, steps): never GPU activity.
DERIVED_LINES = frozenset({
    "TensorFlow Ops", "TensorFlow Name Scope", "XLA Ops", "XLA Modules", "Steps", "Framework Ops",
    "Framework Name Scope", "Source code", "Launch Stats", "Async XLA Ops", "XLA TraceMe",
})

# Stats the reader needs from events (all others are skipped without being decoded).
_WANTED_STATS = ("correlation_id", "kernel_details", "memcpy_details", "memset_details", "step_num",
                 "group_id", "step_name", "tf_op", "level 0", "hlo_op", "hlo_module", "flops")
_CODE = {name: i for i, name in enumerate(_WANTED_STATS)}
_STRING_STATS = frozenset({"kernel_details", "memcpy_details", "memset_details", "step_name", "tf_op", "level 0",
                           "hlo_op", "hlo_module"})
# The op a GPU op ran for, as the profiler records it on the stream-line event (docs/formats/xplane.md, "The op
# of each GPU op"):
# read on stream lines only (TF writes tf_op on host allocation events too).
_OP_STATS = ("tf_op", "level 0", "hlo_op", "hlo_module")
# tf_op of a kernel of an XLA program that no TF op launched (JAX): no TF op, the HLO op names it.
_NO_TF_OP = ("", "XlaModule:")

_LINE_HOST, _LINE_STREAM, _LINE_STEPS, _LINE_XLA_OPS = 0, 1, 2, 3

KIND_LABELS = (OTHER, CPU_OP, DRIVER, RUNTIME, PYTHON, STEP, ANNOTATION, KERNEL, MEMCPY, MEMSET, GPU_ANNOTATION)
MEM_KIND_LABELS = ("pageable", "pinned", "device", "managed", "array")
_MEM_KIND = {"pageable": "pageable", "pinned": "pinned", "device": "device", "managed": "managed",
             "array": "array", "device_static": "device", "managed_static": "managed"}


# ------------------------------------------------------------------------------------------- decoding

def parse_xspace(data: bytes | memoryview, path: Path) -> Any:
    """Parse bytes as an XSpace (lite schema) or raise InputError naming the file."""
    from google.protobuf.message import DecodeError

    space = xspace_class(lite=True)()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        raise InputError("truncated or corrupt protobuf: not a readable XSpace (.xplane.pb)", path=path) from None
    names = [plane.name for plane in space.planes]
    if not any(n.startswith(("/host:", "/device:")) or n == TASK_ENV_PLANE for n in names):
        raise InputError("not a TensorFlow/JAX profiler XSpace (no /host: or /device: planes)", path=path)
    return space


def _stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(stat, kind)
    return stat_names.get(value, "") if kind == "ref_value" else value


def plane_stats(plane: Any) -> dict[str, Any]:
    """A plane's own stats by name (few per plane: device properties, profile times)."""
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    return {names.get(s.metadata_id, str(s.metadata_id)): _stat_value(s, names) for s in plane.stats}


@dataclass
class _Host:
    """One host's planes and where its rows go (pid = host ordinal, devices shifted by an offset)."""

    path: Path
    ordinal: int
    device_offset: int
    space: Any
    start_time_ns: int | None = None  # Task Environment profile_start_time (unix ns)
    planes: list[tuple[Any, int | None]] = field(default_factory=list)  # (plane, GPU index or None=host)
    data: Any = b""  # the file's bytes (events are located in them, not copied out one by one)
    buffer: np.ndarray | None = None  # the same bytes as uint8 plus wire.PAD zeros
    plane_index: list[int] = field(default_factory=list)  # each of ``planes``' position in space.planes


@dataclass
class _Lines:
    """Per selected line: owner plane (global index), kind, timestamp, tid/stream, host."""

    plane: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    timestamp_ns: list[int] = field(default_factory=list)
    ident: list[int] = field(default_factory=list)
    host: list[int] = field(default_factory=list)
    device: list[int] = field(default_factory=list)  # -1 on host lines
    events: list[Any] = field(default_factory=list)  # repeated-bytes containers
    where: list[tuple[int, int, int]] = field(default_factory=list)  # (host, plane in space, line in plane)


def _stream_id(line: Any) -> int:
    match = _STREAM_LINE.match(line.name) or _STREAM_LINE.match(line.display_name)
    return int(match.group(1)) if match else int(line.id)


def _select_lines(hosts: Sequence[_Host], planes: list[Any]) -> _Lines:
    lines = _Lines()
    for host_pos, host in enumerate(hosts):
        for (plane, gpu), in_space in zip(host.planes, host.plane_index, strict=True):
            plane_index = len(planes)
            planes.append(plane)
            for line_pos, line in enumerate(plane.lines):
                if gpu is None:
                    if line.name in DERIVED_LINES:
                        continue
                    kind, ident, device = _LINE_HOST, int(line.id), -1
                elif _STREAM_LINE.match(line.name) or _STREAM_LINE.match(line.display_name):
                    kind, ident, device = _LINE_STREAM, _stream_id(line), host.device_offset + gpu
                elif line.name == STEPS_LINE:
                    kind, ident, device = _LINE_STEPS, int(line.id), host.device_offset + gpu
                elif line.name in XLA_OP_LINES or line.display_name in XLA_OP_LINES:
                    kind, ident, device = _LINE_XLA_OPS, int(line.id), host.device_offset + gpu
                else:
                    continue  # derived lines (TensorFlow Ops, XLA Modules, ...) repeat stream activity
                lines.plane.append(plane_index)
                lines.kind.append(kind)
                lines.timestamp_ns.append(int(line.timestamp_ns))
                lines.ident.append(ident)
                lines.host.append(host.ordinal)
                lines.device.append(device)
                lines.events.append(line.events)
                lines.where.append((host_pos, in_space, line_pos))
    return lines


def _metadata_table(planes: list[Any], kind: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Sorted keys (plane << 32 | id) and names of every plane's event or stat metadata."""
    keys: list[int] = []
    names: list[str] = []
    for index, plane in enumerate(planes):
        table = plane.event_metadata if kind == "event" else plane.stat_metadata
        for key, meta in table.items():
            keys.append((index << 32) | (int(key) & 0xFFFFFFFF))
            names.append(meta.name)
    key_arr = np.asarray(keys, dtype=np.int64)
    order = np.argsort(key_arr, kind="stable")
    return key_arr[order], order, names


def _display_names(planes: list[Any]) -> list[str]:
    """Every plane's event metadata display name (its name when it has none), in ``_metadata_table`` order."""
    return [meta.display_name or meta.name for plane in planes for _, meta in plane.event_metadata.items()]


def _metadata_flops(planes: list[Any]) -> np.ndarray:
    """Every plane's event metadata ``flops`` stat (XLA ops: the HLO op's FLOPs, as the profiler's op metrics
    give them), NaN where absent, in ``_metadata_table`` order (a loop over metadata entries, not events)."""
    out: list[float] = []
    for plane in planes:
        ids = {int(k) for k, meta in plane.stat_metadata.items() if meta.name == "flops"}
        if not ids:
            out.extend([np.nan] * len(plane.event_metadata))
            continue
        for _, meta in plane.event_metadata.items():
            values = [_stat_value(st, {}) for st in meta.stats if st.metadata_id in ids]
            out.append(float(values[-1]) if values and isinstance(values[-1], (int, float)) else np.nan)
    return np.asarray(out, np.float64)


def _event_names(planes: list[Any], event_plane: np.ndarray, mid: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per event, an index into the returned names (every plane's event metadata, then "" for unknown ids)."""
    ev_keys, ev_order, ev_names = _metadata_table(planes, "event")
    unknown = len(ev_names)
    ids = ev_keys & 0xFFFFFFFF
    max_id = int(ids.max()) if ids.size else 0
    if 0 <= max_id < 1 << 20 and len(planes) * (max_id + 2) < 1 << 26 and (mid >= 0).all():
        # metadata ids are small and dense: one (plane, id) table lookup per event
        table = np.full((max(len(planes), 1), max_id + 2), unknown, np.int64)
        table[ev_keys >> 32, ids] = ev_order
        index = table[event_plane, np.minimum(mid, max_id + 1)]
    else:
        pos = _lookup(ev_keys, (event_plane.astype(np.int64) << 32) | (mid & 0xFFFFFFFF))
        index = np.where(pos >= 0, ev_order[np.maximum(pos, 0)], unknown)
    return index, ev_names + [""]


def _lookup(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each wanted key in ``sorted_keys``, -1 when absent."""
    if sorted_keys.size == 0:
        return np.full(wanted.size, -1, dtype=np.int64)
    pos = np.searchsorted(sorted_keys, wanted)
    pos = np.minimum(pos, sorted_keys.size - 1)
    return np.where(sorted_keys[pos] == wanted, pos, -1)


class _StatColumns:
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


def _wanted_stat_keys(planes: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (plane << 32 | stat metadata id) of the stats the reader needs, and their codes."""
    wanted_keys, wanted_codes = [], []
    for index, plane in enumerate(planes):
        for key, meta in plane.stat_metadata.items():
            if meta.name in _CODE:
                wanted_keys.append((index << 32) | (int(key) & 0xFFFFFFFF))
                wanted_codes.append(_CODE[meta.name])
    wk = np.asarray(wanted_keys, np.int64)
    order = np.argsort(wk)
    return wk[order], np.asarray(wanted_codes, np.int64)[order]


def _wanted_stat_filter(event_plane: np.ndarray, line_kind: np.ndarray, planes: list[Any]) -> wire.StatFilter:
    """``(event index, stat metadata id) -> keep``: only the stats the reader needs pass."""
    max_id = max((int(k) for plane in planes for k in plane.stat_metadata.keys()), default=0)
    dense = 0 <= max_id < 1 << 16
    if dense:  # stat metadata ids are small: a (plane, id) -> code table beats a sorted-key search
        table = np.full((max(len(planes), 1), max_id + 2), -1, np.int8)
        for index, plane in enumerate(planes):
            for key, meta in plane.stat_metadata.items():
                if meta.name in _CODE and key >= 0:
                    table[index, key] = _CODE[meta.name]
    else:
        wanted, codes = _wanted_stat_keys(planes)

    def keep(owner: np.ndarray, mid: np.ndarray) -> np.ndarray:
        if dense:
            code = table[event_plane[owner], np.minimum(mid, np.uint64(max_id + 1)).astype(np.int64)]
        else:
            keys = (event_plane[owner] << 32) | (mid & np.uint64(0xFFFFFFFF)).astype(np.int64)
            hit = _lookup(wanted, keys)
            code = np.where(hit >= 0, codes[np.maximum(hit, 0)], -1)
        useful = code >= 0
        # group_id is on most host events but needed only to number device "Steps" lines; the op stats only
        # on stream lines; flops on stream and XLA op lines
        group = np.flatnonzero(code == _CODE["group_id"])
        useful[group] = line_kind[owner[group]] == _LINE_STEPS
        op = np.flatnonzero(np.isin(code, [_CODE[s] for s in _OP_STATS]))
        useful[op] = line_kind[owner[op]] == _LINE_STREAM
        flops = np.flatnonzero(code == _CODE["flops"])
        useful[flops] = np.isin(line_kind[owner[flops]], (_LINE_STREAM, _LINE_XLA_OPS))
        return useful

    return keep


def _decode_stats(buf: np.ndarray, stat_event: np.ndarray, stat_start: np.ndarray, stat_len: np.ndarray,
                  event_plane: np.ndarray, planes: list[Any], n_events: int) -> _StatColumns:
    out = _StatColumns(n_events)
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

    wk, wc = _wanted_stat_keys(planes)
    if wk.size == 0:
        return out
    stat_plane = event_plane[stat_event]
    keys = (stat_plane.astype(np.int64) << 32) | (stat_mid & np.uint64(0xFFFFFFFF)).astype(np.int64)
    hit = _lookup(wk, keys)
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

    stat_keys, stat_order, stat_names = _metadata_table(planes, "stat")
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
                parts.append(pa.StringArray.from_buffers(idx.size, pa.py_buffer(offsets.astype(np.int32)),
                                                         pa.py_buffer(data.tobytes())) if offsets[-1] < 2**31
                             else pa.LargeStringArray.from_buffers(idx.size, pa.py_buffer(offsets),
                                                                   pa.py_buffer(data.tobytes())).cast(pa.string()))
                owners.append(ev[is_str])
            if is_ref.any():
                idx = sel[is_ref]
                ref_keys = (s_plane[idx].astype(np.int64) << 32) | (vvalue[idx] & np.uint64(0xFFFFFFFF)).astype(np.int64)
                pos = _lookup(stat_keys, ref_keys)
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
            out.floats[name] = values_f
        else:
            is_int = np.isin(vfield[sel], (3, 4, 7))
            values = np.zeros(n_events, np.int64)
            present = np.zeros(n_events, bool)
            values[ev[is_int]] = vvalue[sel][is_int].view(np.int64)
            present[ev[is_int]] = True
            is_dbl = vfield[sel] == 2
            if is_dbl.any():
                values[ev[is_dbl]] = vvalue[sel][is_dbl].view(np.float64).astype(np.int64)
                present[ev[is_dbl]] = True
            out.ints[name] = (values, present)
    return out


# ----------------------------------------------------------------------------------- details strings

def _gpu_ops(stats: _StatColumns, gpu_rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The op each GPU row ran for (codes into the returned labels, -1: none recorded), from its own stats:
    the TF op (``tf_op``, unless XLA's placeholder ``XlaModule:``), else TF <= 2.5's outermost annotation
    (``level 0``), else the HLO op (``hlo_op``) as ``<hlo_module>/<hlo_op>`` (the op alone without a module).
    Decided per distinct value (Arrow kernels), never per event."""
    if not any(name in stats.string_values for name in _OP_STATS):
        return np.full(gpu_rows.size, -1, np.int32), []
    tf_op = stats.strings("tf_op", gpu_rows)
    tf_op = pc.if_else(pc.is_in(tf_op, pa.array(_NO_TF_OP, pa.string())), pa.nulls(len(tf_op), pa.string()), tf_op)
    hlo_op = stats.strings("hlo_op", gpu_rows)
    qualified = pc.binary_join_element_wise(stats.strings("hlo_module", gpu_rows), hlo_op, "/")
    op = pc.coalesce(tf_op, stats.strings("level 0", gpu_rows), qualified, hlo_op)
    op = pc.if_else(pc.equal(op, ""), pa.nulls(len(op), pa.string()), op)
    encoded = pc.dictionary_encode(op)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, [str(v) for v in encoded.dictionary.to_pylist()]


def _map_strings(values: pa.Array, mapping: dict[str, int]) -> np.ndarray:
    """Map each string through ``mapping`` to a code (-1 when absent), once per distinct value."""
    encoded = pc.dictionary_encode(values)
    mapped = np.array([mapping.get(v, -1) for v in encoded.dictionary.to_pylist()] + [-1], dtype=np.int32)
    indices = encoded.indices.fill_null(len(encoded.dictionary)).to_numpy(zero_copy_only=False)
    return mapped[indices]


def _memcpy_columns(details: pa.Array, copy_kind: np.ndarray) -> dict[str, Any]:
    """Bytes and memory kinds from ``memcpy_details``/``memset_details``; ``copy_kind``: codes from the name."""
    size = extract_int(details, r"(?:^|\s)size:(?P<v>\d+)")
    if len(details) == 0:
        empty = np.empty(0, np.int32)
        return {"bytes": size, "copy_kind": copy_kind, "src_kind": empty, "dst_kind": empty}
    codes = {k: MEM_KIND_LABELS.index(v) for k, v in _MEM_KIND.items()}
    src = pc.struct_field(pc.extract_regex(details, r"kind_src:(?P<v>\w+)"), [0])
    dst = pc.struct_field(pc.extract_regex(details, r"kind_dst:(?P<v>\w+)"), [0])
    return {"bytes": size, "copy_kind": copy_kind, "src_kind": _map_strings(src, codes),
            "dst_kind": _map_strings(dst, codes)}


# ---------------------------------------------------------------------------------------------- read

def _device_rows(hosts: Sequence[_Host]) -> list[dict[str, Any]]:
    rows = []
    for host in hosts:
        for plane, gpu in host.planes:
            if gpu is None:
                continue
            stats = plane_stats(plane)
            vendor_stat = str(stats.get("device_vendor", "")).lower()
            vendor = "amd" if "amd" in vendor_stat else ("nvidia" if "compute_cap_major" in stats or not vendor_stat
                                                         else vendor_stat)
            major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
            name = stats.get("device_name") or stats.get("gpu_device_name") or stats.get("device_type_string") or None
            if not name and major is not None:
                name = f"{vendor.upper()} GPU (compute {major}.{minor}, {stats.get('core_count', '?')} SMs)"
            rows.append({
                "id": host.device_offset + gpu,
                "name": name,
                "vendor": vendor,
                "sm_count": int_or_none(stats.get("core_count")),
                "compute_major": int_or_none(major),
                "compute_minor": int_or_none(minor),
                "total_memory_bytes": int_or_none(stats.get("memory_size")),
                "memory_bandwidth_bytes_per_s": float(stats["memory_bandwidth"]) if "memory_bandwidth" in stats else None,
                "clock_rate_khz": int_or_none(stats.get("clock_rate")),
            })
    return rows


def read(path: Path, fmt: str = "xplane", run: str | None = None, **_: Any) -> Trace:
    """Read a ``.xplane.pb``, a run directory or a TensorBoard logdir (all hosts of one run) as a Trace.

    A run that holds only legacy ``trace.json.gz`` files is read by :mod:`.tf_trace_json`
    (:func:`tracelens.load` and :func:`.tf_profile.read` choose between the two)."""
    path = Path(path)
    files, run_name = discover(path, run)
    xplanes = [f for f in files if not f.name.endswith(".trace.json.gz")]
    if fmt == "tf-trace-json" or not xplanes:
        raise InputError("holds legacy trace.json.gz files, not an XSpace: read it with tracelens.load", path=path)
    return read_files(xplanes, source=path, run=run_name)


def _read_padded(file: Path) -> np.ndarray:
    """The file's bytes as uint8 followed by ``wire.PAD`` zeros, read in place (no second copy)."""
    with open(file, "rb", buffering=0) as handle:
        size = os.fstat(handle.fileno()).st_size
        buffer = np.empty(size + wire.PAD, np.uint8)
        view = buffer.data  # a writable memoryview of the array
        got = 0
        while got < size:
            step = handle.readinto(view[got:size])
            if not step:
                break
            got += step
        if got != size or handle.read(1):  # not a regular file, or it changed size while being read
            handle.seek(0)
            return wire.padded(handle.readall())
    buffer[size:] = 0
    return buffer


def read_files(files: Sequence[Path], source: Path, run: str | None = None) -> Trace:
    hosts: list[_Host] = []
    device_offset = 0
    for ordinal, file in enumerate(files):
        try:
            buffer = _read_padded(file)
            data = buffer.data[: buffer.size - wire.PAD]
        except OSError as err:
            raise InputError(f"cannot read ({err.strerror})", path=file) from None
        if not data:
            raise InputError("file is empty", path=file)
        space = parse_xspace(data, file)
        host = _Host(path=file, ordinal=ordinal, device_offset=device_offset, space=space, data=data,
                     buffer=buffer)
        max_gpu = -1
        for in_space, plane in enumerate(space.planes):
            match = _GPU_PLANE.match(plane.name)
            if plane.name == HOST_PLANE:
                host.planes.append((plane, None))
                host.plane_index.append(in_space)
            elif match:
                host.planes.append((plane, int(match.group(1))))
                host.plane_index.append(in_space)
                max_gpu = max(max_gpu, int(match.group(1)))
            elif plane.name == TASK_ENV_PLANE:
                start = plane_stats(plane).get("profile_start_time")
                host.start_time_ns = int(start) if start else None
        device_offset += max_gpu + 1
        hosts.append(host)
    try:
        return _build_trace(hosts, source, run)
    except wire.WireError as err:
        raise InputError(f"corrupt XEvent bytes ({err})", path=source) from None


def _build_trace(hosts: list[_Host], source: Path, run: str | None) -> Trace:
    planes: list[Any] = []
    lines = _select_lines(hosts, planes)
    counts = np.fromiter((len(ev) for ev in lines.events), dtype=np.int64, count=len(lines.events))
    located = _locate_events(hosts, lines, counts)
    if located is not None:
        buf, starts, ends = located
    else:  # bytes not laid out as expected: take each event's bytes from upb (one Python object each)
        event_bytes = list(chain.from_iterable(lines.events))
        lengths = np.fromiter(map(len, event_bytes), dtype=np.int64, count=len(event_bytes))
        buf = wire.joined_padded(event_bytes)
        del event_bytes
        ends = np.cumsum(lengths)
        starts = ends - lengths
    n = int(starts.size)

    event_line = np.repeat(np.arange(counts.size), counts)
    line_plane = np.asarray(lines.plane, np.int64)
    event_plane = line_plane[event_line] if n else np.empty(0, np.int64)

    event_line_kind = np.asarray(lines.kind, np.int64)[event_line]
    decoded = wire.walk_events(buf, starts, ends,
                               _wanted_stat_filter(event_plane.astype(np.int64), event_line_kind, planes))
    mid, offset_ps, duration_ps, occurrences = (
        v.view(np.int64) for v in (decoded.metadata_id, decoded.offset_ps, decoded.duration_ps,
                                   decoded.num_occurrences))
    stats = _decode_stats(buf, decoded.stat_event, decoded.stat_start, decoded.stat_length, event_plane,
                          planes, n)
    del decoded

    # names: (plane, metadata id) -> metadata name
    name_index, names_all = _event_names(planes, event_plane, mid)

    line_kind = np.asarray(lines.kind, np.int64)[event_line]
    line_ts = np.asarray(lines.timestamp_ns, np.int64)[event_line]
    # Integer ns: floor of the exact picosecond start and end (end is not start + floor(duration)).
    start_ns = line_ts + np.floor_divide(offset_ps, 1000)
    end_ns = line_ts + np.floor_divide(offset_ps + duration_ps, 1000)
    ident = np.asarray(lines.ident, np.int64)[event_line]
    host_of = np.asarray(lines.host, np.int64)[event_line]
    device_of = np.asarray(lines.device, np.int64)[event_line]

    # Absolute clock: per host profile_start_time (unix ns) when the Task Environment plane gives it.
    host_start = np.asarray([h.start_time_ns or 0 for h in hosts], np.int64)
    have_unix = all(h.start_time_ns for h in hosts)
    if have_unix:
        start_ns = start_ns + host_start[host_of]
        end_ns = end_ns + host_start[host_of]

    aggregated = occurrences > 0  # aggregated events carry a count, not a time: not on the timeline
    corr, has_corr = stats.int_column("correlation_id")
    step_num, has_step_num = stats.int_column("step_num")

    # kinds, decided once per metadata name and then per event (as codes into KIND_LABELS)
    code = {k: i for i, k in enumerate(KIND_LABELS)}
    name_kind = np.array([code[classify_host_name(nm)] for nm in names_all], dtype=np.int32)
    kind = np.full(n, code[OTHER], dtype=np.int32)
    host_rows = line_kind == _LINE_HOST
    kind[host_rows] = name_kind[name_index[host_rows]]
    # CUPTI API callbacks of TF <= 2.x are named after the launched kernel/copy; they carry correlation_id.
    kind[host_rows & has_corr & (kind == code[CPU_OP])] = code[DRIVER]
    host_step = host_rows & has_step_num
    kind[host_step] = code[STEP]

    stream_rows = line_kind == _LINE_STREAM
    upper_names = [nm.upper() for nm in names_all]
    is_memcpy_name = np.array([nm.startswith("MEMCPY") for nm in upper_names], bool)
    is_memset_name = np.array([nm.startswith("MEMSET") for nm in upper_names], bool)
    has_memcpy_details = stats.has("memcpy_details")
    has_memset_details = stats.has("memset_details")
    gpu_kind = np.where(is_memset_name[name_index] | has_memset_details, code[MEMSET],
                        np.where(is_memcpy_name[name_index] | has_memcpy_details, code[MEMCPY], code[KERNEL]))
    kind[stream_rows] = gpu_kind[stream_rows]
    xla_op_rows = line_kind == _LINE_XLA_OPS
    kind[xla_op_rows] = code[GPU_ANNOTATION]

    step = np.full(n, -1, np.int64)
    step[host_step] = step_num[host_step]
    name_step = np.array([_step_from_name(nm) for nm in names_all], dtype=np.int64)
    named_step = host_rows & (kind == code[STEP]) & ~has_step_num
    step[named_step] = name_step[name_index[named_step]]

    keep = ~aggregated & (line_kind != _LINE_STEPS)
    keep &= ~((kind == code[STEP]) & (step < 0))
    # One step row per (host, step number): several markers of one step (nested or on several threads)
    # collapse into one row spanning all of them.
    step_rows = np.flatnonzero(keep & (kind == code[STEP]))
    keep[step_rows] = False
    steps = _collapse_steps(step_rows, step, host_of, start_ns, end_ns)
    used_device_steps = False
    if steps is None:
        device_step_rows = np.flatnonzero(~aggregated & (line_kind == _LINE_STEPS))
        steps = _device_steps(device_step_rows, stats, name_index, names_all, host_of, start_ns, end_ns)
        used_device_steps = steps is not None
    if steps is None:
        steps = {"host": np.empty(0, np.int64), "step": np.empty(0, np.int64),
                 "start": np.empty(0, np.int64), "end": np.empty(0, np.int64)}

    rows = np.flatnonzero(keep)
    if rows.size == 0 and steps["step"].size == 0:
        raise InputError("the XSpace holds no timed events on /host:CPU or /device:GPU:N planes", path=source)
    n_steps = steps["step"].size
    gpu_rows = rows[stream_rows[rows]]
    is_gpu = np.concatenate([stream_rows[rows], np.zeros(n_steps, bool)])
    # XLA op rows: on their device, but on no stream and no host thread
    is_xla_op = np.concatenate([xla_op_rows[rows], np.zeros(n_steps, bool)])
    start_all = np.concatenate([start_ns[rows], steps["start"]])
    end_all = np.maximum(np.concatenate([end_ns[rows], steps["end"]]), start_all)  # as build_store clamps
    order = np.argsort(start_all, kind="stable")
    origin = int(start_all.min()) if start_all.size else 0

    def ordered(values: np.ndarray) -> np.ndarray:
        return values[order]

    # display names: metadata names (runtime suffixes stripped); XLA ops by their metadata display name (the
    # HLO op name: newer profilers name the metadata "<program id or module>/<op>"); one "step#N" per step row
    step_names = [f"step#{s}" for s in steps["step"].tolist()]
    labels = [strip_version(nm) for nm in names_all] + _display_names(planes) + [""] + step_names
    row_names = np.where(xla_op_rows[rows], len(names_all) + name_index[rows], name_index[rows])
    name_codes = np.concatenate([row_names, 2 * len(names_all) + np.arange(n_steps)]).astype(np.int32)
    columns: dict[str, Any] = {
        "kind": _dict_column(ordered(np.concatenate([kind[rows], np.full(n_steps, code[STEP], np.int32)])),
                             KIND_LABELS),
        "name": _dict_column(ordered(name_codes), labels),
        "start_ns": ordered(start_all) - origin,
        "end_ns": ordered(end_all) - origin,
    }
    pad = np.zeros(n_steps, np.int64)
    columns["device"] = _masked(ordered(np.concatenate([device_of[rows], pad])), ordered(is_gpu | is_xla_op),
                                pa.int32())
    line_ident = ordered(np.concatenate([ident[rows], pad]))  # a GPU row's stream, a host row's thread
    columns["stream"] = _masked(line_ident, ordered(is_gpu), pa.int64())
    has_tid = ordered(np.concatenate([~stream_rows[rows] & ~xla_op_rows[rows], np.zeros(n_steps, bool)]))
    columns["tid"] = _masked(line_ident, has_tid, pa.int64())
    pid = ordered(np.concatenate([host_of[rows], steps["host"]]))
    # nesting depth of host rows on their thread, as build_store would fill it, but without its
    # per-row string work on the kind column
    columns["depth"] = depth_column(has_tid, pid, line_ident, columns["start_ns"], columns["end_ns"])
    columns["pid"] = _masked(pid, ~ordered(is_xla_op), pa.int64()) if is_xla_op.any() else pid
    columns["correlation_id"] = _masked(ordered(np.concatenate([corr[rows], pad])),
                                        ordered(np.concatenate([has_corr[rows], np.zeros(n_steps, bool)])),
                                        pa.int64())
    # XLA op and GPU rows: their event's flops stat, else (XLA op rows) that of their event metadata
    # (docs/formats/xplane.md)
    event_flops = np.where(stream_rows[rows] | xla_op_rows[rows], stats.float_column("flops")[rows], np.nan)
    meta_flops = np.r_[_metadata_flops(planes), np.nan]  # the last slot: unknown metadata id
    if xla_op_rows.any() and not np.isnan(meta_flops).all():
        event_flops = np.where(np.isnan(event_flops) & xla_op_rows[rows], meta_flops[name_index[rows]], event_flops)
    if not np.isnan(event_flops).all():
        flops = np.concatenate([event_flops, np.full(n_steps, np.nan)])
        columns["flops"] = _masked(ordered(np.nan_to_num(flops)), ordered(~np.isnan(flops)), pa.float64())
    columns["step"] = _masked(ordered(np.concatenate([np.zeros(rows.size, np.int64), steps["step"]])),
                              ordered(np.concatenate([np.zeros(rows.size, bool), np.ones(n_steps, bool)])),
                              pa.int64())

    # GPU details, computed on GPU rows only and scattered to their place in the sorted table
    where_gpu = np.full(start_all.size, -1, np.int64)
    where_gpu[np.flatnonzero(is_gpu)] = np.arange(gpu_rows.size)
    in_rows = ordered(where_gpu)
    gpu_slots = np.flatnonzero(in_rows >= 0)
    placement = (gpu_slots, in_rows[gpu_slots], in_rows.size)  # table rows <- GPU rows
    gpu_kinds = kind[gpu_rows]
    kernel_cols = kernel_columns(stats.strings("kernel_details", gpu_rows))
    for col, values in kernel_cols.items():
        values = np.where(gpu_kinds == code[KERNEL], values, np.nan)
        columns[col] = _place(values, placement, EVENT_SCHEMA.field(col).type)
    copy_details = pc.coalesce(stats.strings("memcpy_details", gpu_rows), stats.strings("memset_details", gpu_rows))
    copy_kind_by_name = np.array([copy_kind_code(nm) for nm in names_all], dtype=np.int32)
    mem_cols = _memcpy_columns(copy_details, copy_kind_by_name[name_index[gpu_rows]])
    is_copy = gpu_kinds == code[MEMCPY]
    is_mem = is_copy | (gpu_kinds == code[MEMSET])
    columns["bytes"] = _place(np.where(is_mem, mem_cols["bytes"], np.nan), placement, pa.int64())
    for col, col_labels in (("copy_kind", COPY_KIND_LABELS), ("src_kind", MEM_KIND_LABELS),
                            ("dst_kind", MEM_KIND_LABELS)):
        gpu_codes = np.where(is_copy, mem_cols[col], -1)
        full = np.full(in_rows.size, -1, np.int32)
        sel = in_rows >= 0
        full[sel] = gpu_codes[in_rows[sel]]
        columns[col] = _dict_column(full, col_labels)
    op_codes, op_labels = _gpu_ops(stats, gpu_rows)
    if op_labels:
        full = np.full(in_rows.size, -1, np.int32)
        sel = in_rows >= 0
        full[sel] = op_codes[in_rows[sel]]
        columns["op"] = _dict_column(full, op_labels)

    events = build_store(columns, sort=False)
    framework = detect_framework(names_all[i] for i in np.flatnonzero(np.bincount(name_index[host_rows], minlength=1)))
    warnings: list[str] = []
    if aggregated.any():
        warnings.append(f"{int(aggregated.sum())} aggregated XEvents (num_occurrences, no timestamp) "
                        "left off the timeline")
    if not have_unix and len(hosts) > 1:
        warnings.append("hosts have no Task Environment start time: their clocks are not aligned")
    for host in hosts:
        warnings.extend(f"{host.path.name}: profiler error: {e}" for e in list(host.space.errors)[:5])
    metadata = TraceMetadata(
        source_format="xplane",
        source_path=str(source),
        producer="JAX profiler" if framework == "jax" else "TensorFlow Profiler",
        framework=framework,
        time_origin_ns=origin,
        clock="unix" if have_unix else "xplane",
        warnings=warnings,
        extra={
            "run": run,
            "hosts": [{"file": str(h.path), "hostnames": list(h.space.hostnames), "pid": h.ordinal,
                       "device_offset": h.device_offset} for h in hosts],
            "aggregated_events": int(aggregated.sum()),
            "steps_from": ("device Steps lines" if used_device_steps
                           else "host step markers" if n_steps else None),
            "protobuf_backend": protobuf_backend(),
            **({"profiler_drops": drops} if (drops := profiler_drops(
                m for h in hosts for m in (*h.space.errors, *h.space.warnings))) else {}),
        },
    )
    return Trace(events=events, devices=build_devices(_device_rows(hosts)), metadata=metadata)


def _locate_events(hosts: list[_Host], lines: _Lines,
                   counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every selected line's XEvents as byte ranges of the files' own bytes (one buffer for all hosts).

    Planes and lines are few: their fields are walked one by one; the events inside each line are found
    by :func:`.xplane_wire.field_starts` over the line's bytes. Every count is checked against what upb
    parsed; None (the caller then asks upb for each event's bytes) when anything disagrees.
    """
    if len(hosts) == 1 and hosts[0].buffer is not None:
        data, buf = hosts[0].data, hosts[0].buffer
    else:
        data = b"".join(h.data for h in hosts)
        buf = wire.padded(data)
    base = np.cumsum([0] + [len(h.data) for h in hosts]).tolist()
    try:
        line_ranges: dict[tuple[int, int, int], tuple[int, int]] = {}
        wanted_planes = {(h, p) for h, p, _ in lines.where}
        for h, host in enumerate(hosts):
            top = wire.scalar_fields(data, base[h], base[h + 1])
            plane_ranges = [(s, e) for number, wt, s, e in top if number == 1 and wt == 2]
            if len(plane_ranges) != len(host.space.planes):
                return None
            for p, (s, e) in enumerate(plane_ranges):
                if (h, p) not in wanted_planes:
                    continue
                ranges = [(ls, le) for number, wt, ls, le in wire.scalar_fields(data, s, e) if number == 3 and wt == 2]
                if len(ranges) != len(host.space.planes[p].lines):
                    return None
                for i, r in enumerate(ranges):
                    line_ranges[(h, p, i)] = r
        bounds = np.asarray([line_ranges[w] for w in lines.where], np.int64).reshape(-1, 2)
        if bounds.size and (np.diff(bounds[:, 0]) <= 0).any():
            return None
        pos = wire.field_starts(buf, data, bounds[:, 0], bounds[:, 1], seed_tag=0x22)
        pos = pos[buf[pos] == 0x22]  # field 4 (events), length-delimited
        owner = np.searchsorted(bounds[:, 0], pos, side="right") - 1
        if not np.array_equal(np.bincount(owner, minlength=counts.size), counts):
            return None
        length, start = wire.read_varints(buf, pos + 1)
        return buf, start, start + length.astype(np.int64)
    except wire.WireError:
        return None


def _step_from_name(name: str) -> int:
    match = _STEP_NAME.match(name)
    return int(match.group(1)) if match else -1


def _collapse_steps(rows: np.ndarray, step: np.ndarray, host: np.ndarray, start: np.ndarray,
                    end: np.ndarray) -> dict[str, np.ndarray] | None:
    """One (host, step) entry spanning the earliest start to the latest end of its markers."""
    if rows.size == 0:
        return None
    import pandas as pd

    frame = pd.DataFrame({"host": host[rows], "step": step[rows], "start": start[rows], "end": end[rows]})
    grouped = frame.groupby(["host", "step"], sort=True).agg(start=("start", "min"), end=("end", "max")).reset_index()
    return {col: grouped[col].to_numpy(np.int64) for col in ("host", "step", "start", "end")}


def _device_steps(rows: np.ndarray, stats: _StatColumns, name_index: np.ndarray, names: list[str],
                  host: np.ndarray, start: np.ndarray, end: np.ndarray) -> dict[str, Any] | None:
    """Steps from the device planes' ``Steps`` lines: one row per (host, step) across all GPUs."""
    if rows.size == 0:
        return None
    step_name = stats.strings("step_name", rows).to_pylist()
    group_id, has_group = stats.int_column("group_id")
    numbers = np.full(rows.size, -1, np.int64)
    for i, (row, label) in enumerate(zip(rows, step_name, strict=True)):  # one per step and GPU: a few hundred at most
        text = label if label is not None else names[name_index[row]]
        if text is not None and str(text).strip().isdigit():
            numbers[i] = int(str(text).strip())
        elif has_group[row]:
            numbers[i] = group_id[row]
    ok = numbers >= 0
    if not ok.any():
        return None
    full_step = np.full(start.size, -1, np.int64)
    full_step[rows[ok]] = numbers[ok]
    return _collapse_steps(rows[ok], full_step, host, start, end)


def _dict_column(codes: np.ndarray, labels: Sequence[str]) -> pa.DictionaryArray:
    """A dictionary-encoded string column from integer codes into ``labels`` (negative = null)."""
    shifted = np.maximum(np.asarray(codes, np.int32), -1)
    shifted += 1  # 0 = null, i + 1 = labels[i]
    unique: dict[str, int] = {}
    remap = np.array([unique.setdefault(label, len(unique)) for label in labels], dtype=np.int64)
    # labels repeat (several planes): dedupe; keep only the labels some row uses (metadata of skipped
    # lines would show up as empty categories)
    seen = np.bincount(shifted, minlength=len(labels) + 1)[1:] > 0
    used = np.zeros(len(unique), bool)
    used[remap[seen]] = True
    compact = np.cumsum(used) - 1
    lut = np.full(len(labels) + 1, -1, np.int32)
    lut[1:] = np.where(used[remap], compact[remap], -1)
    out = lut[shifted]
    kept = [label for label, flag in zip(unique, used.tolist(), strict=True) if flag]
    return pa.DictionaryArray.from_arrays(pa.array(out, mask=out < 0), pa.array(kept, pa.string()))


def _masked(values: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
    return pa.array(values, type=typ, mask=~np.asarray(valid, bool))


def _place(gpu_values: np.ndarray, placement: tuple[np.ndarray, np.ndarray, int], typ: pa.DataType) -> pa.Array:
    """Per-GPU-row floats (NaN = absent) as a full-length column of ``typ``, null off the GPU rows.

    ``placement``: (table rows, the GPU row each takes, table length)."""
    slots, source, n = placement
    values = gpu_values[source]
    present = ~np.isnan(values)
    valid = np.zeros(n, bool)
    valid[slots] = present
    if pa.types.is_integer(typ):
        full = np.zeros(n, typ.to_pandas_dtype())
        full[slots] = np.where(present, values, 0)
        return pa.array(full, typ, mask=~valid)
    full = np.zeros(n, np.float64)
    full[slots] = values
    return pa.array(full, pa.float64(), mask=~valid).cast(typ)
