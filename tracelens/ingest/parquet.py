"""Read back a table written by ``tracelens convert`` (or the multi-rank cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..trace import COLUMNS_ADDED_SINCE_1_0, DEVICE_SCHEMA, EVENT_SCHEMA, Trace, TraceMetadata, build_devices


def read(path: Path, **_: Any) -> Trace:
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"unreadable Parquet ({_one_line(err)})", path=path) from None
    try:
        # pyarrow reads a damaged dictionary index as it is: checked here, not as an IndexError in an analysis
        # (~7 ns a row, ~2% of the read)
        table.validate(full=True)
        return _trace(table, path)
    except (ValueError, pa.ArrowException) as err:
        # damage the footer's own checks let through: a column name that is not UTF-8, metadata that is not
        # JSON (both ValueError), a column that does not cast to its type, values out of their bounds
        raise InputError(f"damaged tracelens Parquet ({_one_line(err)})", path=path) from None


def _one_line(err: Exception) -> str:
    # pyarrow's messages span lines (a damaged page header: three); the CLI's error is one
    return " ".join(str(err).split())


def _trace(table: pa.Table, path: Path) -> Trace:
    meta = table.schema.metadata or {}
    if b"tracelens.metadata" not in meta:
        raise InputError("Parquet file was not written by tracelens (no tracelens metadata)", path=path)
    for name in COLUMNS_ADDED_SINCE_1_0:  # a table written by 1.0 lacks them: null, as the format had none
        if name not in table.column_names:
            table = table.append_column(
                EVENT_SCHEMA.field(name), pa.nulls(table.num_rows, EVENT_SCHEMA.field(name).type)
            )
    missing = set(EVENT_SCHEMA.names) - set(table.column_names)
    if missing:
        raise InputError(f"Parquet table lacks tracelens columns {sorted(missing)}", path=path)
    metadata = TraceMetadata.from_dict(json.loads(meta[b"tracelens.metadata"]))
    devices = build_devices(json.loads(meta.get(b"tracelens.devices", b"[]")))
    events = table.select(EVENT_SCHEMA.names).replace_schema_metadata(None).cast(EVENT_SCHEMA)
    return Trace(events=events, devices=devices.cast(DEVICE_SCHEMA), metadata=metadata)
