"""Enums of an Nsight Systems export: from its ENUM_* tables when present, else the built-in ids (2022 and
older exports have no ENUM_* tables); the labels the event table uses for copy, memory and sync kinds."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from .columns import dict_array, int64_numpy
from .database import Database

# Built-in enum mappings, used when the export has no ENUM_* tables (2022 and older).
_MEMCPY_KIND_BY_ID = {
    0: None,
    1: "HTOD",
    2: "DTOH",
    3: "HTOA",
    4: "ATOH",
    5: "ATOA",
    6: "ATOD",
    7: "DTOA",
    8: "DTOD",
    9: "HTOH",
    10: "PTOP",
    11: "UVM_HTOD",
    12: "UVM_DTOH",
    13: "UVM_DTOD",
}
_MEMCPY_LABEL = {
    "HTOD": "HtoD",
    "DTOH": "DtoH",
    "HTOA": "HtoA",
    "ATOH": "AtoH",
    "ATOA": "AtoA",
    "ATOD": "AtoD",
    "DTOA": "DtoA",
    "DTOD": "DtoD",
    "HTOH": "HtoH",
    "PTOP": "PtoP",
    "UVM_HTOD": "UVM HtoD",
    "UVM_DTOH": "UVM DtoH",
    "UVM_DTOD": "UVM DtoD",
}
_MEM_KIND_BY_ID = {
    0: "PAGEABLE",
    1: "PINNED",
    2: "DEVICE",
    3: "ARRAY",
    4: "MANAGED",
    5: "DEVICE_STATIC",
    6: "MANAGED_STATIC",
    7: "UNKNOWN",
}
_MEM_KIND_LABEL = {
    "PAGEABLE": "pageable",
    "PINNED": "pinned",
    "DEVICE": "device",
    "ARRAY": "array",
    "MANAGED": "managed",
    "DEVICE_STATIC": "device",
    "MANAGED_STATIC": "managed",
}
_SYNC_KIND_BY_ID = {
    0: None,
    1: "EVENT_SYNCHRONIZE",
    2: "STREAM_WAIT_EVENT",
    3: "STREAM_SYNCHRONIZE",
    4: "CONTEXT_SYNCHRONIZE",
}
_SYNC_LABEL = {
    "EVENT_SYNCHRONIZE": "event_sync",
    "STREAM_WAIT_EVENT": "stream_wait_event",
    "STREAM_SYNCHRONIZE": "stream_sync",
    "CONTEXT_SYNCHRONIZE": "context_sync",
}

# Enum and NVTX domain ids are small; a larger one (a damaged export) is left out of the dense lookups below
# rather than sizing them.
_MAX_DENSE_ID = 2**20


def dense_lookup(positions: dict[int, int], fill: int) -> np.ndarray:
    """int32 table with ``table[id] = positions[id]`` and ``fill`` elsewhere (ids outside [0, _MAX_DENSE_ID)
    are left out)."""
    ids = [i for i in positions if isinstance(i, int) and 0 <= i < _MAX_DENSE_ID]
    table = np.full(max(ids, default=0) + 1, fill, np.int32)  # never empty: callers index it at 0
    for i in ids:
        table[i] = positions[i]
    return table


def _enum_names(
    db: Database, table: str, builtin: Mapping[int, str | None], prefix: str
) -> dict[int, str | None]:
    """id -> short enum name (``CUDA_MEMCPY_KIND_HTOD`` -> ``HTOD``) from ``table`` or ``builtin``."""
    if table in db.tables and {"id", "name"} <= set(db.columns(table)):
        out: dict[int, str | None] = {}
        for ident, name in db.small(f"SELECT id, name FROM {table}"):
            if not isinstance(ident, int) or not isinstance(name, str):  # NULLs, or cells of another type
                continue
            short = name.split(prefix, 1)[1] if prefix in name else name
            out[int(ident)] = None if short in ("UNKNOWN",) else short
        if out:
            return out
    return dict(builtin)


def coded_column(
    codes: pa.Array, labels: Mapping[int, str | None], default: str | None = None
) -> pa.DictionaryArray:
    """Map integer codes to a dictionary column of labels; unknown codes, null codes and None labels
    become ``default`` (null when None)."""
    values = sorted({v for v in labels.values() if v is not None} | ({default} if default else set()))
    index = {v: i for i, v in enumerate(values)}
    fallback = index[default] if default else -1
    table = dense_lookup(
        {code: index[label] for code, label in labels.items() if label is not None}, fallback
    )
    arr = int64_numpy(codes, fill=-1)
    ok = (arr >= 0) & (arr < table.size)
    idx = np.where(ok, table[np.where(ok, arr, 0)], fallback).astype(np.int32)
    return dict_array(idx, pa.array(values, pa.string()))


def copy_labels(db: Database) -> dict[int, str | None]:
    """copyKind id -> ``HtoD``, ``DtoH``, ... (None: unknown)."""
    copy_names = _enum_names(db, "ENUM_CUDA_MEMCPY_OPER", _MEMCPY_KIND_BY_ID, "CUDA_MEMCPY_KIND_")
    return {k: (_MEMCPY_LABEL.get(v, v) if v else None) for k, v in copy_names.items()}


def mem_labels(db: Database) -> dict[int, str | None]:
    """Memory kind id -> ``pageable``, ``pinned``, ``device``, ... (None: unknown)."""
    names = _enum_names(db, "ENUM_CUDA_MEM_KIND", _MEM_KIND_BY_ID, "CUDA_MEMOPR_MEMORY_KIND_")
    return {k: _MEM_KIND_LABEL.get(v) if v else None for k, v in names.items()}


def sync_labels(db: Database) -> dict[int, str | None]:
    """syncType id -> ``event_sync``, ``stream_wait_event``, ``stream_sync``, ``context_sync`` (None: unknown)."""
    names = _enum_names(db, "ENUM_CUPTI_SYNC_TYPE", _SYNC_KIND_BY_ID, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_")
    return {k: _SYNC_LABEL.get(v) if v else None for k, v in names.items()}
