"""Each block's row columns made ready for the table (:class:`.table.Columns`) on the thread that scanned it:
the steps that go row by row within a block, so that less is left to do after the last block."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...trace import EVENT_SCHEMA, GPU_ANNOTATION
from .blocks import (
    DEVICE_SIDE,
    KIND_CODE,
    LAUNCH_SIDE,
    MAX_TIME_US,
    NESTED_KIND,
    PENDING,
    SKIP,
    placeable,
    scanner,
    untimed,
)
from .fields import DEVICE_FIELDS, OP_NUMBERS, OP_TEXTS


def prepare_block(block: dict[str, Any]) -> dict[str, Any]:
    """A block's row columns made ready for :class:`Columns` on the thread that scanned it: every step that
    goes row by row within a block (the same values as over the joined columns), so that less is left to do
    after the last block.

    Rows that are not timeline events (no kind, a ts off the timeline) are dropped; ts becomes ``start``
    (int64 ns), dur ``duration`` (int64 ns, 0 when off the timeline); pid, tid, correlation and external_id
    become int64 ``data`` and ``<name>_valid`` as their columns store them (pid and tid of host rows only,
    correlation of device and launch rows only), with whether pid and tid hold their float values exactly
    (``<name>_exact``; the floats kept as ``<name>_float`` where not); ``nested``: whether a row nests on a
    thread; the launches (``launch_rows``, their correlation and pid) and each GPU row's correlation, Kineto
    pid and tid, to give device rows their launch's pid and their fallback device and stream.
    """
    pending = block.pop(PENDING, None)
    if pending is not None:  # native.prepared_block's, made now (without the names' steps: no flags here)
        block = pending(None)
    if "kind" not in block or "start" in block:
        return block
    ts = block.pop("ts")
    kind = block["kind"]
    keep = (kind != SKIP) & placeable(ts)
    if not keep.all():
        counts = block.setdefault("counts", {})
        counts["untimed"] = counts.get("untimed", 0) + untimed(kind, ts)
        keep_rows(block, keep)
        ts, kind = ts[keep], block["kind"]
        if kind.size == 0:
            return {k: v for k, v in block.items() if k in ("counts", "problem")}
    prepare_rows = getattr(scanner(), "prepare_rows", None)
    if prepare_rows is None:  # no scanner built (or an older build): the same steps in numpy
        _row_steps(block, ts)
    else:
        _native_row_steps(block, ts, prepare_rows)
    return block


def _row_steps(block: dict[str, Any], ts: np.ndarray) -> None:
    """prepare_block's per-row steps in numpy (the reference of :func:`_native_row_steps`)."""
    kind = block["kind"]
    block["start"] = microseconds_to_ns(ts)
    del ts
    dur = block.pop("dur")
    block["duration"] = np.rint(np.where(placeable(dur), dur, 0.0) * 1000).astype(np.int64)
    del dur
    device_side = np.take(DEVICE_SIDE, kind)  # np.take: 2-3x faster than indexing for lookup tables
    launch_side = np.take(LAUNCH_SIDE, kind)
    not_host = device_side | (kind == KIND_CODE[GPU_ANNOTATION])
    correlation = np.where(device_side | launch_side, block.pop("correlation"), np.nan)
    kineto_pid, kineto_tid = block.pop("pid"), block.pop("tid")
    gpu_rows = block["gpu_rows"]
    block["gpu_correlation"] = correlation[gpu_rows]
    block["gpu_pid"] = kineto_pid[gpu_rows]
    block["gpu_tid"] = kineto_tid[gpu_rows]
    launches = np.flatnonzero(launch_side & ~np.isnan(correlation) & ~np.isnan(kineto_pid))
    block["launch_rows"] = launches
    block["launch_correlation"] = correlation[launches]
    block["launch_pid"] = kineto_pid[launches]
    pid = np.where(not_host, np.nan, kineto_pid)
    tid = np.where(not_host, np.nan, kineto_tid)
    del kineto_pid, kineto_tid
    block["nested"] = bool((np.take(NESTED_KIND, kind) & ~np.isnan(tid)).any())
    for key, values, column in (
        ("pid", pid, "pid"),
        ("tid", tid, "tid"),
        ("correlation", correlation, "correlation_id"),
        ("external_id", block.pop("external_id"), "external_id"),
    ):
        block[key], block[f"{key}_valid"] = int_parts(values, column)
        if key in ("pid", "tid"):
            block[f"{key}_exact"] = exact = stored_exactly(values, block[key])
            if not exact:
                block[f"{key}_float"] = values


# Each kind's flags for the scanner's prepare_rows (_kineto_scan.c KIND_*): keeps its correlation (device and
# launch rows), is a launch, is not a host row (its pid and tid dropped), nests on a thread.
KIND_FLAGS = (
    DEVICE_SIDE * 1
    | LAUNCH_SIDE * 2
    | (DEVICE_SIDE | (np.arange(DEVICE_SIDE.size) == KIND_CODE[GPU_ANNOTATION])) * 4
    | NESTED_KIND * 8
).astype(np.uint8)
NOT_HOST = (KIND_FLAGS & 4) != 0  # the GPU rows (device rows and GPU annotations)
_KEEPS_CORRELATION = (KIND_FLAGS & 3) != 0


def _native_row_steps(block: dict[str, Any], ts: np.ndarray, prepare_rows: Callable[..., Any]) -> None:
    """The steps of :func:`_row_steps` (the same columns) by the scanner's one pass over the rows (C), with no
    temporaries: the int parts, validity, exactness, launches and nesting at once."""
    kind = np.ascontiguousarray(block["kind"], dtype=np.int8)
    n = kind.size
    floats = [
        np.ascontiguousarray(block.pop(key), dtype=np.float64)
        for key in ("dur", "pid", "tid", "correlation", "external_id")
    ]
    dur, kineto_pid, kineto_tid, correlation, external = floats
    start, duration = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    parts = {key: (np.empty(n, dtype=np.int64), np.empty(n, dtype=bool)) for key in _ID_KEYS}
    launch_rows = np.empty(n, dtype=np.int64)
    launches, pid_exact, tid_exact, nested = prepare_rows(
        kind,
        np.ascontiguousarray(ts, dtype=np.float64),
        *floats,
        KIND_FLAGS,
        start,
        duration,
        *(part for key in _ID_KEYS for part in parts[key]),
        launch_rows,
        MAX_TIME_US,
    )
    block["start"], block["duration"] = start, duration
    gpu_rows = block["gpu_rows"]
    block["gpu_correlation"] = np.where(
        np.take(_KEEPS_CORRELATION, np.take(kind, gpu_rows)), np.take(correlation, gpu_rows), np.nan
    )
    block["gpu_pid"] = np.take(kineto_pid, gpu_rows)
    block["gpu_tid"] = np.take(kineto_tid, gpu_rows)
    launches = launch_rows[:launches].astype(np.intp)  # a copy: the n-row buffer is let go
    block["launch_rows"] = launches
    block["launch_correlation"] = np.take(correlation, launches)
    block["launch_pid"] = np.take(kineto_pid, launches)
    block["nested"] = nested
    for key, exact, kineto in (("pid", pid_exact, kineto_pid), ("tid", tid_exact, kineto_tid)):
        block[key], block[f"{key}_valid"] = parts[key]
        block[f"{key}_exact"] = exact
        if not exact:
            block[f"{key}_float"] = np.where(np.take(NOT_HOST, kind), np.nan, kineto)
    for key in ("correlation", "external_id"):
        block[key], block[f"{key}_valid"] = parts[key]


_ID_KEYS = ("pid", "tid", "correlation", "external_id")


_ROW_COLUMNS = ("kind", "dur", "pid", "tid", "correlation", "external_id", "name")


def keep_rows(block: dict[str, Any], keep: np.ndarray) -> None:
    """The block with only the ``keep`` rows (its GPU and op records of dropped rows dropped too)."""
    local = np.cumsum(keep) - 1  # each kept row's new index
    for key in _ROW_COLUMNS:
        value = block[key]
        block[key] = (value[0][keep], value[1]) if key == "name" else value[keep]
    gpu = keep[block["gpu_rows"]]
    block["gpu_rows"] = local[block["gpu_rows"][gpu]]
    for key in (*DEVICE_FIELDS, "grid", "block"):
        block[key] = block[key][gpu]
    block["sync_kind"] = (block["sync_kind"][0][gpu], block["sync_kind"][1])
    op = keep[block["op_rows"]]
    block["op_rows"] = local[block["op_rows"][op]]
    for key in OP_NUMBERS:
        block[key] = block[key][op]
    for key in OP_TEXTS:
        block[key] = (block[key][0][op], block[key][1])


def int_parts(values: np.ndarray, column: str) -> tuple[np.ndarray, np.ndarray]:
    """A float64 id column (NaN: missing) as the int64 data and validity its column stores (stored.int_column):
    missing values and values the type cannot hold (stored.unrepresentable) are null, their data 0."""
    dtype = np.dtype(EVENT_SCHEMA.field(column).type.to_pandas_dtype())
    valid = np.abs(values) < 2.0 ** (8 * dtype.itemsize - 1)  # not stored.unrepresentable (integer dtypes)
    with np.errstate(invalid="ignore"):
        data = values.astype(dtype)
    data *= valid
    return data, valid


def stored_exactly(ids: np.ndarray, data: np.ndarray | None = None) -> bool:
    """Whether every non-NaN value of a float64 id column (pid, tid) is an integer an int64 column holds as
    is, so that the stored column, read back as float64, is the same array (nulls as NaN). ``data``: the
    column's :func:`int_parts` data, which then equals each such value (a cheaper test: NaN equals nothing)."""
    if data is not None:
        return int(np.count_nonzero(data == ids)) + int(np.count_nonzero(np.isnan(ids))) == ids.size
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isnan(ids) | ((np.abs(ids) < 2.0**63) & (np.trunc(ids) == ids))))


def microseconds_to_ns(ts: np.ndarray) -> np.ndarray:
    """Float microseconds -> int64 ns: whole microseconds times 1000 plus the rounded fraction (0 where
    the time is not finite), so that large absolute timestamps keep their exact ns digits."""
    finite = np.isfinite(ts)
    if finite.all():
        # whole * 1000 + rint((ts - whole) * 1000), with the temporaries reused (the same values)
        whole_us = np.floor(ts)
        fraction_ns = np.subtract(ts, whole_us)
        fraction_ns *= 1000
        np.rint(fraction_ns, out=fraction_ns)
        start = whole_us.astype(np.int64)
        start *= 1000
        start += fraction_ns.astype(np.int64)
        return start
    start = np.zeros(len(ts), dtype=np.int64)
    start[finite] = microseconds_to_ns(ts[finite])
    return start
