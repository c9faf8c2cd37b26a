"""NVTX extended payloads of Nsight Systems SQLite exports: the fields NCCL attaches to its API ranges.

NCCL (>= 2.19) attaches a typed payload to each API range of its NVTX domain (NVIDIA/nccl
``src/include/nvtx_payload_schemas.h``): the communicator hash and ``Message size [bytes]`` (the call's count x
type size) for collectives, ``No. of ranks`` for communicator set-up, ``Peer rank`` for send/recv. nsys exports
each schema in ``NVTX_PAYLOAD_SCHEMAS`` / ``NVTX_PAYLOAD_SCHEMA_ENTRIES`` (field name, type, byte offset; the
first field's offset is null = 0) and each event's bytes in ``NVTX_EVENTS.binaryData`` (exported with
``nsys export --include-blobs=true``): a 32-byte little-endian header (uint32 domain id, uint32 reserved, uint32
schema id, uint32 reserved, uint64 payload size, uint64 total size), then the payload. That header layout is the
one GindaChen/nsys-ai decodes on Nsight Systems 2026.2 exports; a blob too short for it, or for a field, reads
as null.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa

HEADER_BYTES = 32
SCHEMA_ID_AT = 8
# NVTX payload entry types (nvToolsExtPayload.h) NCCL uses, and their widths in bytes.
ENTRY_WIDTH = {5: 4, 18: 8, 22: 8}  # TYPE_INT, TYPE_UINT64, TYPE_SIZE


def _little_endian(data: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """Unsigned little-endian integers of ``width`` bytes starting at each of ``at`` in ``data``."""
    out = np.zeros(at.size, np.uint64)
    for k in range(width):  # a loop over the bytes of one integer
        out |= data[at + k].astype(np.uint64) << np.uint64(8 * k)
    return out


def payload_field(
    blobs: pa.Array, entries: Iterable[tuple[int, int | None, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """One payload field per blob: (values as uint64, present). ``entries`` = (schema id, offset, entry type) of
    the field in every schema that has it (the ``NVTX_PAYLOAD_SCHEMA_ENTRIES`` rows with its name)."""
    blobs = blobs if pa.types.is_large_binary(blobs.type) else blobs.cast(pa.large_binary())
    n = len(blobs)
    values, present = np.zeros(n, np.uint64), np.zeros(n, bool)
    if n == 0 or blobs.buffers()[2] is None:
        return values, present
    offsets = np.frombuffer(blobs.buffers()[1], np.int64)[blobs.offset : blobs.offset + n + 1]
    data = np.frombuffer(blobs.buffers()[2], np.uint8)
    start = offsets[:-1]
    length = np.where(blobs.is_valid().to_numpy(zero_copy_only=False), np.diff(offsets), 0)
    has_header = length >= HEADER_BYTES
    schema = np.full(n, -1, np.int64)
    schema[has_header] = _little_endian(data, start[has_header] + SCHEMA_ID_AT, 4).astype(np.int64)
    for schema_id, offset, kind in entries:  # a loop over the schemas holding the field
        width = ENTRY_WIDTH.get(int(kind))
        if width is None:
            continue
        at = HEADER_BYTES + int(offset or 0)
        sel = np.flatnonzero((schema == int(schema_id)) & (length >= at + width))
        values[sel] = _little_endian(data, start[sel] + at, width)
        present[sel] = True
    return values, present


MESSAGE_FIELD = "Message size [bytes]"
COMM_FIELD = "NCCL communicator ID"
NRANKS_FIELD = "No. of ranks"
PAYLOAD_FIELDS = (MESSAGE_FIELD, COMM_FIELD, NRANKS_FIELD)
NCCL_DOMAIN = "NCCL"
# The byte count NCCL records is the call's count x type size (collectives.cc): the per-rank send count of an
# AllGather, the per-rank receive count of a ReduceScatter, the one count (both sides) of the others.
_SEND_SIDE_ONLY = ("ncclAllGather", "ncclSend")
_RECEIVE_SIDE_ONLY = ("ncclReduceScatter", "ncclRecv")
# msg_dtype of a message NCCL counts in bytes (docs/schema.md).
BYTES_DTYPE = "bytes"


def nccl_messages(
    name_codes: np.ndarray,
    names: list[str | None],
    is_nccl: np.ndarray,
    blobs: pa.Array,
    entries: dict[str, list[tuple[int, int | None, int]]],
) -> dict[str, pa.Array] | None:
    """The message columns of NVTX ranges from NCCL's payloads (None when no range has a message size).

    ``name_codes`` index ``names`` (-1: no name); ``is_nccl``: the range is in NCCL's domain; ``entries``: per
    field name, its (schema id, offset, type) in every schema of that domain. Sizes are bytes (msg_dtype
    ``bytes``); the group size is that of the range's communicator where the trace holds the communicator's
    set-up range (``ncclCommInitRank`` and kin carry ``No. of ranks``)."""
    size, has_size = payload_field(blobs, entries.get(MESSAGE_FIELD, []))
    has_size &= is_nccl
    if not has_size.any():
        return None
    # Which side each name's count is, decided once per distinct name.
    base = [(n or "").removesuffix("_impl") for n in names] + [""]
    send_only = np.array([b in _SEND_SIDE_ONLY for b in base])[name_codes]
    receive_only = np.array([b in _RECEIVE_SIDE_ONLY for b in base])[name_codes]
    comm, has_comm = payload_field(blobs, entries.get(COMM_FIELD, []))
    nranks, has_nranks = payload_field(blobs, entries.get(NRANKS_FIELD, []))
    init = has_comm & has_nranks & is_nccl
    ranks_of = pd.Series(nranks[init], index=comm[init])
    ranks_of = ranks_of[~ranks_of.index.duplicated()]
    group = pd.Series(comm).map(ranks_of).to_numpy(dtype=float)
    has_group = has_size & has_comm & ~np.isnan(group)
    n = size.size
    return {
        "msg_in_elems": pa.array(size.astype(np.int64), pa.int64(), mask=~(has_size & ~receive_only)),
        "msg_out_elems": pa.array(size.astype(np.int64), pa.int64(), mask=~(has_size & ~send_only)),
        "msg_dtype": pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, np.int32), mask=~has_size), pa.array([BYTES_DTYPE])
        ),
        "group_size": pa.array(np.nan_to_num(group).astype(np.int32), pa.int32(), mask=~has_group),
    }
