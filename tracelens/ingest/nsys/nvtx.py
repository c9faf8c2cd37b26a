"""NVTX_EVENTS of an Nsight Systems export: fetched a chunk at a time and compacted (the table is most of a
training export's rows), then turned into ``annotation`` and ``step`` rows with their domains and NCCL's
payload sizes (:mod:`.nvtx_payload`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...event_names import step_number
from ...trace import ANNOTATION, STEP
from . import nvtx_payload
from .columns import (
    KIND_INDEX,
    Part,
    as_int64,
    decode_pid,
    decode_tid,
    detach,
    dict_array,
    id_numpy,
    int64_numpy,
    kind_column,
)
from .database import Database
from .enums import dense_lookup
from .queries import TABLE_NVTX
from .strings import MISSING, Strings, decode_dictionary, dedupe

# NVTX eventType values (ENUM_NSYS_EVENT_TYPE): ranges we keep, and domain creation.
_NVTX_RANGE_TYPES = (59, 60, 70, 71)
_NVTX_DOMAIN_CREATE = 75


# NVTX_EVENTS rows fetched per query: the fetched batch (NVTX text included) lives only while its chunk is
# compacted, instead of the whole table's batch living through the reading of the names.
NVTX_CHUNK_ROWS = 1 << 22


def nvtx_compact(db: Database, sql: str, names: list[str]) -> pa.Table:
    """NVTX_EVENTS fetched a rowid range at a time, each chunk kept as the columns ``nvtx_rows`` reads: times,
    event type, pid and tid (int32, from globalTid), the inline text as a dictionary, textId and domainId."""
    bounds = db.small(f'SELECT min(rowid), max(rowid) FROM "{TABLE_NVTX}"')
    lo, hi = bounds[0] if bounds else (None, None)
    if not isinstance(lo, int) or not isinstance(hi, int):
        return _compact_nvtx_chunk(db.arrow(sql, names).combine_chunks())
    where = "AND" if " WHERE " in sql else "WHERE"
    pieces = []
    for first in range(lo, hi + 1, NVTX_CHUNK_ROWS):  # a loop over chunks of millions of rows
        chunk = db.arrow(f"{sql} {where} rowid >= {first} AND rowid < {first + NVTX_CHUNK_ROWS}", names)
        pieces.append(_compact_nvtx_chunk(chunk.combine_chunks()))
        del chunk
    table = pa.concat_tables(pieces)
    del pieces
    return table.unify_dictionaries()


_NVTX_COMPACT_SCHEMA = pa.schema(
    [
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("eventType", pa.int64()),
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("text", pa.dictionary(pa.int32(), pa.string())),
        ("textId", pa.int64()),
        ("domainId", pa.int64()),
    ]
)


def _compact_nvtx_chunk(t: pa.Table) -> pa.Table:
    """One fetched chunk as our own copies (a column left in the fetched batch pins all of it); with
    binaryData, a ``payload`` column holding only the blobs long enough for a payload header (else null)."""
    text_idx, text_values = decode_dictionary(t.column("text"))
    gtid = t.column("globalTid")
    arrays = [
        detach(as_int64(t.column("start"))),
        detach(as_int64(t.column("end"))),
        detach(as_int64(t.column("eventType"))),
        decode_pid(gtid),
        decode_tid(gtid),
        dict_array(text_idx, text_values),
        detach(as_int64(t.column("textId"))),
        detach(as_int64(t.column("domainId"))),
    ]
    if "binaryData" not in t.column_names:
        return pa.Table.from_arrays(arrays, schema=_NVTX_COMPACT_SCHEMA)
    blobs = t.column("binaryData").combine_chunks().cast(pa.binary())
    payload = pc.if_else(
        pc.greater_equal(pc.binary_length(blobs), nvtx_payload.HEADER_BYTES),
        blobs,
        pa.nulls(len(blobs), pa.binary()),
    )
    return pa.Table.from_arrays(
        arrays + [detach(payload)], schema=_NVTX_COMPACT_SCHEMA.append(pa.field("payload", pa.binary()))
    )


def nvtx_rows(
    box: list[pa.Table], strings: Strings, payload_entries: list[tuple[int, int, str, int, int | None]]
) -> tuple[Part | None, dict[int, str], pa.Array | None]:
    """NVTX_EVENTS (compacted by :func:`nvtx_compact`, taken out of ``box``): its ranges as ``annotation`` rows,
    ``tracelens/step#N`` ranges as ``step`` rows, NCCL's payload sizes as message columns. Also returns the
    domain names by id, and the names' dictionary (None when no range is kept)."""
    # NVTX_EVENTS is most of a training export's rows: it arrives compacted chunk by chunk
    # (nvtx_compact), and each column is let go as soon as it has been used.
    t = box.pop()
    columns = {name: t.column(name) for name in t.column_names}
    n_all = t.num_rows
    del t
    event_type = int64_numpy(columns.pop("eventType"), fill=-1)
    keep = np.isin(event_type, _NVTX_RANGE_TYPES)
    created = event_type == _NVTX_DOMAIN_CREATE
    del event_type
    text = (
        columns.pop("text").combine_chunks()
        if n_all
        else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    )
    text_idx = text.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    text_values = text.dictionary
    del text
    text_ids = columns.pop("textId")
    id_idx = strings.lookup(text_ids)
    # One dictionary for inline text and StringIds text: inline entries first, then StringIds shifted.
    values = pa.concat_arrays([text_values, strings.values])
    name_idx = np.where(
        text_idx >= 0, text_idx, np.where(id_idx >= 0, id_idx + len(text_values), id_idx)
    ).astype(np.int32)
    del text_idx, id_idx
    if (name_idx == MISSING).any():  # a textId StringIds lacks, and no inline text
        name_idx, values = strings.placeholders(name_idx, id_numpy(text_ids), values)
    else:
        name_idx, values = dedupe(name_idx, values)
    del text_ids

    domain_ids = int64_numpy(columns.pop("domainId"), fill=-1)
    payload = columns.pop("payload", None)
    domain_names = {
        int(d): values[int(i)].as_py()
        for d, i in zip(domain_ids[created], name_idx[created], strict=True)
        if i >= 0 and d > 0
    }
    if not keep.any():
        return None, domain_names, None
    if not keep.all():
        rows = pa.array(keep)
        columns = {name: column.filter(rows) for name, column in columns.items()}
        name_idx = name_idx[keep]
        domain_ids = domain_ids[keep]
        payload = payload.filter(rows) if payload is not None else None
    del keep, created
    n = int(name_idx.size)
    start, end = columns.pop("start").combine_chunks(), columns.pop("end").combine_chunks()
    pid, tid = columns.pop("pid").combine_chunks(), columns.pop("tid").combine_chunks()
    # Steps: step marker ranges (tracelens/step#N, ProfilerStep#N) become kind "step" with step = N.
    value_list = values.to_pylist()
    step_of_value = np.array(
        [-1 if (s := step_number(v or "")) is None else s for v in value_list] + [-1], np.int64
    )
    step = step_of_value[name_idx]  # index -1 reads the trailing -1
    is_step = step >= 0
    kinds = np.where(is_step, KIND_INDEX[STEP], KIND_INDEX[ANNOTATION])

    domain_values = sorted(set(domain_names.values()))
    dom_table = dense_lookup({d: domain_values.index(n) for d, n in domain_names.items()}, -1)
    ok = (domain_ids >= 0) & (domain_ids < dom_table.size)
    dom_idx = np.where(ok, dom_table[np.where(ok, domain_ids, 0)], -1).astype(np.int32)

    # NCCL's payloads: the message and group sizes of its API ranges.
    nccl_ids = [d for d, name in domain_names.items() if name == nvtx_payload.NCCL_DOMAIN]
    entries: dict[str, list[tuple[int, int | None, int]]] = {}
    for domain, schema, field_name, kind, offset in payload_entries:
        if domain in nccl_ids:
            entries.setdefault(field_name, []).append((schema, offset, kind))
    messages = (
        nvtx_payload.nccl_messages(
            name_idx, value_list, np.isin(domain_ids, nccl_ids), payload.combine_chunks(), entries
        )
        if payload is not None and entries
        else None
    )
    cols = {
        "kind": kind_column(kinds),
        "name": dict_array(name_idx, values),
        "start_ns": start,
        "end_ns": end,  # null for ranges left open at the end of capture: closed later
        "pid": pid,
        "tid": tid,
        # All-null columns stay None: the assembly gives them one shared null buffer.
        "domain": dict_array(dom_idx, pa.array(domain_values, pa.string())) if domain_values else None,
        "step": pa.array(step, pa.int64(), mask=~is_step) if is_step.any() else None,
        **(messages or {}),
    }
    return Part(n, cols, owned=("start_ns", "end_ns", "pid", "tid")), domain_names, values
