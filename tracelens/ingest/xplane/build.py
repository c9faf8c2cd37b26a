"""The xplane reader's event table from the decoded events (:mod:`.events`), in named steps: each event's kind
and step number (:func:`_classify`), the rows kept and the step rows (:func:`_rows`), the timeline columns
(:func:`_timeline_columns`), the GPU details (:func:`_gpu_detail_columns`) and the metadata (:func:`_metadata`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from ...event_names import strip_api_suffix
from ...trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    EVENT_SCHEMA,
    GPU_ANNOTATION,
    KERNEL,
    MEMCPY,
    MEMSET,
    OTHER,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    STEP,
    Trace,
    TraceMetadata,
    build_devices,
    build_store,
    depth_column,
)
from ..profiler_log import profiler_drops
from ..tf_common import (
    COPY_KIND_LABELS,
    classify_host_name,
    copy_kind_code,
    host_unique_ids,
    kernel_columns,
)
from .columns import dict_column, masked, place
from .details import MEM_KIND_LABELS, gpu_ops, memcpy_columns
from .devices import device_rows
from .events import Events, walk_events
from .framework import PRODUCERS
from .framework import detect as detect_framework
from .lines import LINE_HOST, LINE_STEPS, LINE_STREAM, LINE_XLA_OPS
from .names import display_names, metadata_flops
from .schema import protobuf_backend
from .space import Host
from .steps import collapse_steps, device_steps, step_from_name
from .threads import CALLBACK_LINE_PREFIX, callback_line_threads

KIND_LABELS = (
    OTHER,
    CPU_OP,
    DRIVER,
    RUNTIME,
    PYTHON,
    STEP,
    ANNOTATION,
    KERNEL,
    MEMCPY,
    MEMSET,
    GPU_ANNOTATION,
    OVERHEAD,
)
_KIND_CODE = {k: i for i, k in enumerate(KIND_LABELS)}


def build_trace(hosts: list[Host], source: Path, run: str | None) -> Trace:
    """The hosts' events as one :class:`Trace` (raises :class:`.wire.WireError` on corrupt event bytes)."""
    ev = walk_events(hosts)
    kinds = _classify(ev)
    merged = _merge_callback_lines(ev, kinds)
    rows = _rows(ev, kinds, source)
    columns = _timeline_columns(ev, kinds, rows)
    _gpu_detail_columns(ev, kinds, rows, columns)
    events = build_store(columns, sort=False)
    metadata = _metadata(hosts, ev, kinds, rows, source, run)
    if merged:
        metadata.extra["merged_host_lines"] = merged
    return Trace(events=events, devices=build_devices(device_rows(hosts)), metadata=metadata)


@dataclass
class _Kinds:
    """Per event: its kind (a code into KIND_LABELS), the line it is on, and its step number (-1: none)."""

    kind: np.ndarray
    host_rows: np.ndarray
    stream_rows: np.ndarray
    xla_op_rows: np.ndarray
    step: np.ndarray


def _classify(ev: Events) -> _Kinds:
    """Each event's kind, decided once per metadata name and then per event, and its step number."""
    names_all, name_index, line_kind, stats, n = ev.names, ev.name_index, ev.line_kind, ev.stats, ev.n
    _, has_corr = stats.int_column("correlation_id")
    step_num, has_step_num = stats.int_column("step_num")

    # kinds, decided once per metadata name and then per event (as codes into KIND_LABELS)
    code = _KIND_CODE
    name_kind = np.array([code[classify_host_name(nm)] for nm in names_all], dtype=np.int32)
    kind = np.full(n, code[OTHER], dtype=np.int32)
    host_rows = line_kind == LINE_HOST
    kind[host_rows] = name_kind[name_index[host_rows]]
    # CUPTI API callbacks of TF <= 2.x are named after the launched kernel/copy; they carry correlation_id.
    kind[host_rows & has_corr & (kind == code[CPU_OP])] = code[DRIVER]
    # a tracelens.nvtx range recorded under the TF profiler (stat tracelens=1): the user's annotation, as record_function
    # ranges are in a Kineto trace, not a framework op (which would count as the host's own work)
    _, has_range_stat = stats.int_column("tracelens")
    kind[host_rows & has_range_stat & (kind == code[CPU_OP])] = code[ANNOTATION]
    host_step = host_rows & has_step_num
    kind[host_step] = code[STEP]

    stream_rows = line_kind == LINE_STREAM
    upper_names = [nm.upper() for nm in names_all]
    is_memcpy_name = np.array([nm.startswith("MEMCPY") for nm in upper_names], bool)
    is_memset_name = np.array([nm.startswith("MEMSET") for nm in upper_names], bool)
    has_memcpy_details = stats.has("memcpy_details")
    has_memset_details = stats.has("memset_details")
    gpu_kind = np.where(
        is_memset_name[name_index] | has_memset_details,
        code[MEMSET],
        np.where(is_memcpy_name[name_index] | has_memcpy_details, code[MEMCPY], code[KERNEL]),
    )
    kind[stream_rows] = gpu_kind[stream_rows]
    xla_op_rows = line_kind == LINE_XLA_OPS
    kind[xla_op_rows] = code[GPU_ANNOTATION]

    step = np.full(n, -1, np.int64)
    step[host_step] = step_num[host_step]
    name_step = np.array([step_from_name(nm) for nm in names_all], dtype=np.int64)
    named_step = host_rows & (kind == code[STEP]) & ~has_step_num
    step[named_step] = name_step[name_index[named_step]]
    return _Kinds(kind, host_rows, stream_rows, xla_op_rows, step)


def _merge_callback_lines(ev: Events, kinds: _Kinds) -> list[dict[str, str]]:
    """Read each API-callback line (``Host Threads/<tid>``) as the thread of the line that nests its calls
    (:mod:`.threads`): its events take that line's thread id. Returns ``{line, into}`` per line merged."""
    if not any(name.startswith(CALLBACK_LINE_PREFIX) for name in ev.line_names):
        return []  # no such line (every CUDA trace): no pass over the events
    host = np.flatnonzero(kinds.host_rows & ~ev.untimed)
    if host.size == 0:
        return []
    is_api = np.isin(kinds.kind[host], [_KIND_CODE[RUNTIME], _KIND_CODE[DRIVER]])
    line = ev.line[host]
    found = callback_line_threads(
        line, ev.host[host], ev.start_ns[host], ev.end_ns[host], is_api, ev.line_names
    )
    merged = []
    for callback, into in found.items():  # a few lines
        ev.ident[host[line == callback]] = ev.ident[host[line == into][0]]
        merged.append({"line": ev.line_names[callback], "into": ev.line_names[into]})
    return merged


@dataclass
class _Rows:
    """The events kept as table rows (``rows``, event indices) followed by one row per step, and the table
    order (by start)."""

    rows: np.ndarray
    steps: dict[str, np.ndarray]  # host, step, start, end of each step row
    n_steps: int
    used_device_steps: bool
    gpu_rows: np.ndarray  # the events of ``rows`` on stream lines
    is_gpu: np.ndarray  # per table row before ordering
    is_xla_op: np.ndarray
    start_all: np.ndarray
    end_all: np.ndarray
    order: np.ndarray
    origin: int

    @property
    def ordered(self) -> Callable[[np.ndarray], np.ndarray]:
        order = self.order

        def ordered(values: np.ndarray) -> np.ndarray:
            return values[order]

        return ordered


def _rows(ev: Events, kinds: _Kinds, source: Path) -> _Rows:
    """The events that become rows (not aggregated, not on Steps lines, not step markers), and the step rows:
    host step markers collapsed per (host, step), else the device Steps lines."""
    untimed, line_kind, kind, step, stream_rows, xla_op_rows = (
        ev.untimed,
        ev.line_kind,
        kinds.kind,
        kinds.step,
        kinds.stream_rows,
        kinds.xla_op_rows,
    )
    stats, name_index, names_all = ev.stats, ev.name_index, ev.names
    host_of, start_ns, end_ns = ev.host, ev.start_ns, ev.end_ns
    code = _KIND_CODE

    keep = ~untimed & (line_kind != LINE_STEPS)
    keep &= ~((kind == code[STEP]) & (step < 0))
    # One step row per (host, step number): several markers of one step (nested or on several threads)
    # collapse into one row spanning all of them.
    step_rows = np.flatnonzero(keep & (kind == code[STEP]))
    keep[step_rows] = False
    steps = collapse_steps(step_rows, step, host_of, start_ns, end_ns)
    used_device_steps = False
    if steps is None:
        device_step_rows = np.flatnonzero(~untimed & (line_kind == LINE_STEPS))
        steps = device_steps(device_step_rows, stats, name_index, names_all, host_of, start_ns, end_ns)
        used_device_steps = steps is not None
    if steps is None:
        steps = {
            "host": np.empty(0, np.int64),
            "step": np.empty(0, np.int64),
            "start": np.empty(0, np.int64),
            "end": np.empty(0, np.int64),
        }

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
    return _Rows(
        rows,
        steps,
        n_steps,
        used_device_steps,
        gpu_rows,
        is_gpu,
        is_xla_op,
        start_all,
        end_all,
        order,
        origin,
    )


def _timeline_columns(ev: Events, kinds: _Kinds, r: _Rows) -> dict[str, Any]:
    """kind, name, times, device, stream, tid, depth, pid, correlation id, flops and step, in table order."""
    names_all, name_index, planes, stats = ev.names, ev.name_index, ev.planes, ev.stats
    device_of, ident, host_of = ev.device, ev.ident, ev.host
    kind, stream_rows, xla_op_rows = kinds.kind, kinds.stream_rows, kinds.xla_op_rows
    rows, steps, n_steps, is_gpu, is_xla_op = r.rows, r.steps, r.n_steps, r.is_gpu, r.is_xla_op
    start_all, end_all, origin, ordered = r.start_all, r.end_all, r.origin, r.ordered
    corr, has_corr = stats.int_column("correlation_id")
    corr = host_unique_ids(corr, has_corr, host_of)  # per-process ids: unique over the run's hosts
    code = _KIND_CODE

    # display names: metadata names (runtime suffixes stripped); XLA ops by their metadata display name (the
    # HLO op name: newer profilers name the metadata "<program id or module>/<op>"); one "step#N" per step row
    step_names = [f"step#{s}" for s in steps["step"].tolist()]
    labels = [strip_api_suffix(nm) for nm in names_all] + display_names(planes) + [""] + step_names
    row_names = np.where(xla_op_rows[rows], len(names_all) + name_index[rows], name_index[rows])
    name_codes = np.concatenate([row_names, 2 * len(names_all) + np.arange(n_steps)]).astype(np.int32)
    columns: dict[str, Any] = {
        "kind": dict_column(
            ordered(np.concatenate([kind[rows], np.full(n_steps, code[STEP], np.int32)])), KIND_LABELS
        ),
        "name": dict_column(ordered(name_codes), labels),
        "start_ns": ordered(start_all) - origin,
        "end_ns": ordered(end_all) - origin,
    }
    pad = np.zeros(n_steps, np.int64)
    columns["device"] = masked(
        ordered(np.concatenate([device_of[rows], pad])), ordered(is_gpu | is_xla_op), pa.int32()
    )
    line_ident = ordered(np.concatenate([ident[rows], pad]))  # a GPU row's stream, a host row's thread
    columns["stream"] = masked(line_ident, ordered(is_gpu), pa.int64())
    has_tid = ordered(np.concatenate([~stream_rows[rows] & ~xla_op_rows[rows], np.zeros(n_steps, bool)]))
    columns["tid"] = masked(line_ident, has_tid, pa.int64())
    pid = ordered(np.concatenate([host_of[rows], steps["host"]]))
    # nesting depth of host rows on their thread, as build_store would fill it, but without its
    # per-row string work on the kind column
    columns["depth"] = depth_column(has_tid, pid, line_ident, columns["start_ns"], columns["end_ns"])
    columns["pid"] = masked(pid, ~ordered(is_xla_op), pa.int64()) if is_xla_op.any() else pid
    columns["correlation_id"] = masked(
        ordered(np.concatenate([corr[rows], pad])),
        ordered(np.concatenate([has_corr[rows], np.zeros(n_steps, bool)])),
        pa.int64(),
    )
    # XLA op and GPU rows: their event's flops stat, else (XLA op rows) that of their event metadata
    # (docs/formats/xplane.md)
    event_flops = np.where(stream_rows[rows] | xla_op_rows[rows], stats.float_column("flops")[rows], np.nan)
    meta_flops = np.r_[metadata_flops(planes), np.nan]  # the last slot: unknown metadata id
    if xla_op_rows.any() and not np.isnan(meta_flops).all():
        event_flops = np.where(
            np.isnan(event_flops) & xla_op_rows[rows], meta_flops[name_index[rows]], event_flops
        )
    if not np.isnan(event_flops).all():
        flops = np.concatenate([event_flops, np.full(n_steps, np.nan)])
        columns["flops"] = masked(ordered(np.nan_to_num(flops)), ordered(~np.isnan(flops)), pa.float64())
    columns["step"] = masked(
        ordered(np.concatenate([np.zeros(rows.size, np.int64), steps["step"]])),
        ordered(np.concatenate([np.zeros(rows.size, bool), np.ones(n_steps, bool)])),
        pa.int64(),
    )
    return columns


def _gpu_detail_columns(ev: Events, kinds: _Kinds, r: _Rows, columns: dict[str, Any]) -> None:
    """Kernel geometry, copy bytes and kinds, and the op of each GPU row, added to ``columns``: computed on
    GPU rows only and scattered to their place in the sorted table."""
    names_all, name_index, stats, kind = ev.names, ev.name_index, ev.stats, kinds.kind
    start_all, is_gpu, gpu_rows, ordered = r.start_all, r.is_gpu, r.gpu_rows, r.ordered
    code = _KIND_CODE

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
        columns[col] = place(values, placement, EVENT_SCHEMA.field(col).type)
    copy_details = pc.coalesce(
        stats.strings("memcpy_details", gpu_rows), stats.strings("memset_details", gpu_rows)
    )
    copy_kind_by_name = np.array([copy_kind_code(nm) for nm in names_all], dtype=np.int32)
    mem_cols = memcpy_columns(copy_details, copy_kind_by_name[name_index[gpu_rows]])
    is_copy = gpu_kinds == code[MEMCPY]
    is_mem = is_copy | (gpu_kinds == code[MEMSET])
    columns["bytes"] = place(np.where(is_mem, mem_cols["bytes"], np.nan), placement, pa.int64())
    for col, col_labels in (
        ("copy_kind", COPY_KIND_LABELS),
        ("src_kind", MEM_KIND_LABELS),
        ("dst_kind", MEM_KIND_LABELS),
    ):
        gpu_codes = np.where(is_copy, mem_cols[col], -1)
        full = np.full(in_rows.size, -1, np.int32)
        sel = in_rows >= 0
        full[sel] = gpu_codes[in_rows[sel]]
        columns[col] = dict_column(full, col_labels)
    op_codes, op_labels = gpu_ops(stats, gpu_rows)
    if op_labels:
        full = np.full(in_rows.size, -1, np.int32)
        sel = in_rows >= 0
        full[sel] = op_codes[in_rows[sel]]
        columns["op"] = dict_column(full, op_labels)


def _metadata(
    hosts: list[Host], ev: Events, kinds: _Kinds, r: _Rows, source: Path, run: str | None
) -> TraceMetadata:
    """Framework, clock, warnings and ``metadata.extra`` (hosts, aggregated events, where steps came from)."""
    names_all, name_index, aggregated, have_unix = ev.names, ev.name_index, ev.aggregated, ev.have_unix
    host_rows, origin, used_device_steps, n_steps = kinds.host_rows, r.origin, r.used_device_steps, r.n_steps
    host_names = [names_all[i] for i in np.flatnonzero(np.bincount(name_index[host_rows], minlength=1))]
    framework = detect_framework(
        host_names, [h.space for h in hosts], ev.stats.strings("hlo_module", r.gpu_rows)
    )
    warnings: list[str] = []
    if aggregated.any():
        warnings.append(
            f"{int(aggregated.sum())} aggregated XEvents (num_occurrences, no timestamp) "
            "left off the timeline"
        )
    if ev.out_of_range.any():
        bad = np.flatnonzero(ev.out_of_range)
        lines = sorted({ev.line_names[i] for i in np.unique(ev.line[bad]).tolist()})
        warnings.append(
            f"{bad.size:,} XEvents at a time beyond 2^62 ns (a corrupt line timestamp, offset or duration) left "
            f"off the timeline (lines: {', '.join(lines[:5])}{', …' if len(lines) > 5 else ''})"
        )
    if not have_unix and len(hosts) > 1:
        warnings.append("hosts have no Task Environment start time: their clocks are not aligned")
    for host in hosts:
        warnings.extend(f"{host.path.name}: profiler error: {e}" for e in list(host.space.errors)[:5])
    if len(hosts) > 1:  # a host of a run whose GPU side is missing while others have theirs
        with_gpu = set(np.unique(ev.host[kinds.stream_rows & ~ev.untimed]).tolist())
        if with_gpu:
            warnings.extend(
                f"{h.path.name}: no GPU activity recorded on this host ({len(hosts) - len(with_gpu)} of "
                f"{len(hosts)} hosts): not in the GPU figures"
                for h in hosts
                if h.ordinal not in with_gpu
            )
    for host in hosts:
        if host.copied_planes:
            copies = sorted(set(host.copied_planes))
            warnings.append(
                f"{host.path.name}: {len(host.copied_planes)} plane(s) are copies (the plane id aside) of an "
                f"earlier plane of the same name ({', '.join(copies)}): each read once"
            )
    unread = sorted({name for host in hosts for name in host.unread_devices})
    if unread:
        warnings.append(
            f"device planes not read: {', '.join(unread)} (tracelens reads GPU activity, /device:GPU:N, only)"
        )
    return TraceMetadata(
        source_format="xplane",
        source_path=str(source),
        producer=PRODUCERS[framework],
        framework=framework,
        time_origin_ns=origin,
        clock="unix" if have_unix else "xplane",
        warnings=warnings,
        extra={
            "run": run,
            "hosts": [
                {
                    "file": str(h.path),
                    "hostnames": list(h.space.hostnames),
                    "pid": h.ordinal,
                    "device_offset": h.device_offset,
                }
                for h in hosts
            ],
            "aggregated_events": int(aggregated.sum()),
            "steps_from": (
                "device Steps lines" if used_device_steps else "host step markers" if n_steps else None
            ),
            "protobuf_backend": protobuf_backend(),
            **(
                {"profiler_drops": drops}
                if (drops := profiler_drops(m for h in hosts for m in (*h.space.errors, *h.space.warnings)))
                else {}
            ),
            **({"unread_device_planes": unread} if unread else {}),
        },
    )
