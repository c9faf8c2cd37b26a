"""The GPU rows' fields put in table order (:class:`.table.Columns`): the GPU rows placed, and each field taken
(from the GPU rows in file order, joined) at only the GPU rows that use it, straight into its stored column."""

from __future__ import annotations

import numpy as np

from ...trace import GPU_ANNOTATION, code_lookup
from .appended import Appended
from .blocks import DEVICE_SIDE, KIND_CODE, KINDS
from .placing import in_table_order, rows_of_kinds_placed
from .stored import Stored, sparse_column

# the kinds of GPU rows (those with GPU fields: device-side rows and GPU annotations), by kind code
GPU_KIND = DEVICE_SIDE | (np.arange(len(KINDS)) == KIND_CODE[GPU_ANNOTATION])


def gpu_placed(
    kind: np.ndarray, order: np.ndarray, gpu_rows: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """The GPU rows (``gpu_rows``: joined-block rows, ascending) placed in table order (``kind``: the kinds in
    table order): as the rows of the GPU kinds (:func:`.placing.rows_of_kinds_placed`), else by a gather of their
    marks (the two are the same rows as the engines list them)."""
    at = np.flatnonzero(code_lookup(GPU_KIND, kind))
    return rows_of_kinds_placed(at, order, gpu_rows) or in_table_order(gpu_rows, order, m)


def field_at(
    parts: Appended,
    field: str,
    rows: np.ndarray,
    at_rows: np.ndarray,
    n: int,
    column: str,
    scale: float = 1.0,
) -> Stored:
    """:func:`sparse_column` of the GPU ``field`` (a value per GPU row in file order; dropped from ``parts``)
    at some GPU ``rows`` (their table rows ``at_rows``), divided by ``scale`` unless 1."""
    values = np.take(parts.pop(field), rows)
    return sparse_column(values if scale == 1.0 else values / scale, at_rows, n, column)


def geometry(parts: Appended, field: str, rows: np.ndarray, at_rows: np.ndarray, n: int) -> list[Stored]:
    """The x, y and z columns of a kernel's ``grid`` or ``block`` (three values per GPU row) at the kernel
    ``rows`` (their table rows ``at_rows``): the kernels' triples gathered once."""
    values = np.take(parts.pop(field), rows, axis=0)
    return [sparse_column(values[:, i], at_rows, n, f"{field}_{axis}") for i, axis in enumerate("xyz")]


def shared_memory(parts: Appended, rows: np.ndarray, at_rows: np.ndarray, n: int) -> list[Stored]:
    """The static and dynamic shared memory columns of the kernel ``rows`` (their table rows ``at_rows``): Kineto
    writes only their sum, held as static (occupancy needs the sum), dynamic 0 where the sum is known."""
    total = np.take(parts.pop("shared_memory"), rows)
    return [
        sparse_column(total, at_rows, n, "static_shared_bytes"),
        sparse_column(np.where(np.isnan(total), np.nan, 0.0), at_rows, n, "dynamic_shared_bytes"),
    ]


def with_fallback(parts: Appended, field: str, fallback: str) -> np.ndarray:
    """The GPU ``field`` (file order; both dropped from ``parts``), ``fallback`` where it is missing (NaN)."""
    values = parts.pop(field)
    return np.where(np.isnan(values), parts.pop(fallback), values)


def stream_column(parts: Appended, kept: np.ndarray, at: np.ndarray, n: int) -> Stored:
    """The stream column: each GPU row's stream, or its Kineto tid where args have none, at its table row."""
    return sparse_column(np.take(with_fallback(parts, "stream", "gpu_tid"), kept), at, n, "stream")


def no_device_count(devices: np.ndarray) -> int:
    """How many GPU ops' devices (args.device, else pid; float, NaN where neither) are no GPU number the int32
    device column holds (missing, negative, fractional, or past 2^31 - 1: CUPTI's 0xFFFFFFFF): the table keeps
    them with a null device, in the kernel tables and out of every per-GPU figure."""
    ok = (devices >= 0) & (devices < 2**31)  # (NaN compares False)
    ok &= np.floor(devices) == devices
    return int(devices.size - np.count_nonzero(ok))


def no_device_warning(count: int) -> str:
    return (
        f"{count:,} GPU op(s) name no device (args.device and pid are no GPU number, e.g. 4294967295, or both "
        "missing): counted in the kernel tables, left out of every per-GPU figure"
    )
