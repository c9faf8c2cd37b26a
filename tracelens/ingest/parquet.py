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
    except (pa.ArrowInvalid, OSError) as err:
        raise InputError(f"unreadable Parquet ({err})", path=path) from None
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
