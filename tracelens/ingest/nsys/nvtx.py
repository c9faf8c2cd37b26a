"""NVTX_EVENTS of an Nsight Systems export: fetched a chunk at a time and compacted (the table is most of a
training export's rows), then turned into ``annotation`` and ``step`` rows with their domains and NCCL's
payload sizes (:mod:`.nvtx_payload`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...event_names import step_number
from ...trace import ANNOTATION, STEP
from . import nvtx_payload, pages
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
    narrowest,
)
from .database import Database, rowid_bounds
from .enums import dense_lookup
from .queries import NVTX_TEXT_COLUMNS, TABLE_NVTX, uncast_text
from .strings import MISSING, Strings, decode_dictionary, decode_encoded, dedupe

# NVTX eventType values (ENUM_NSYS_EVENT_TYPE): ranges we keep, and domain creation.
_NVTX_RANGE_TYPES = (59, 60, 70, 71)
_NVTX_DOMAIN_CREATE = 75


# NVTX_EVENTS rows fetched per query: the fetched batch (NVTX text included) lives only while its chunk is
# compacted, instead of the whole table's batch living through the reading of the names. Two chunks are
# fetched at once (one per core), so the table is read in at least two chunks once it has this many rows.
NVTX_CHUNK_ROWS = 1 << 21
NVTX_SPLIT_MIN_ROWS = 1 << 16


def nvtx_chunk_queries(db: Database, sql: str, pieces: int = 2) -> list[str]:
    """NVTX_EVENTS's SELECT cut into rowid ranges, in rowid order: at most NVTX_CHUNK_ROWS rows each, and at
    least ``pieces`` of them when the table has NVTX_SPLIT_MIN_ROWS rows (fetched in parallel)."""
    bounds = rowid_bounds(db.small, TABLE_NVTX)
    if bounds is None:
        return [sql]
    first, last = bounds
    span = last - first + 1
    count = -(-span // NVTX_CHUNK_ROWS)
    if span >= NVTX_SPLIT_MIN_ROWS:
        count = max(count, pieces)
    size = -(-span // count)
    where = "AND" if " WHERE " in sql else "WHERE"
    return [  # a loop over chunks of millions of rows
        f"{sql} {where} rowid >= {start} AND rowid < {start + size}" for start in range(first, last + 1, size)
    ]


def nvtx_chunk(db: Database, sql: str, names: list[str]) -> pa.Table:
    """One chunk of NVTX_EVENTS fetched and kept as the columns ``nvtx_rows`` reads: times, event type, pid and
    tid (int32, from globalTid), the inline text as a dictionary, textId and domainId (and the payloads).

    Fast path: ADBC reads the text columns raw (string or binary; int64 when every value is NULL), taken as
    bytes, NULL for ''. A column it types otherwise (numbers in a column without TEXT affinity: never nsys)
    sends the chunk to the reference query, whose CAST gives SQLite's own text of each value.

    Faster still: the page reader dictionary-encodes the inline text while it reads the pages (hashing each
    row's bytes, keeping only the distinct values); where it declines, the paths above."""
    paged = _paged_dictionary_chunk(db, sql, names)
    if paged is not None:
        return _compact_nvtx_chunk(paged)
    raw = db.arrow_fast(uncast_text(sql, NVTX_TEXT_COLUMNS), names)
    text = [c for c in NVTX_TEXT_COLUMNS if c in names]
    if raw is not None and all(_text_like(raw.column(c)) for c in text):
        for name in text:
            raw = raw.set_column(names.index(name), name, _as_binary(raw.column(name)))
        return _compact_nvtx_chunk(raw.combine_chunks())
    del raw
    return _compact_nvtx_chunk(db.arrow(sql, names).combine_chunks())


def _paged_dictionary_chunk(db: Database, sql: str, names: list[str]) -> pa.Table | None:
    """The chunk read off the pages with its ``text`` dictionary-encoded while read; None where the page reader
    declines (or the SELECT has no text column to encode)."""
    if "text" not in names:
        return None
    paged = pages.read(db, sql, names, dictionary=("text",))
    if paged is None or not pa.types.is_dictionary(paged.column("text").type):
        return None
    return paged.combine_chunks()


def _text_like(column: pa.ChunkedArray) -> bool:
    return (
        pa.types.is_string(column.type) or pa.types.is_binary(column.type) or column.null_count == len(column)
    )


def _as_binary(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A raw text column as bytes, without a copy or a UTF-8 check (decoding happens once per distinct value)."""
    if column.null_count == len(column):
        return pa.chunked_array([pa.nulls(len(column), pa.binary())])
    return column.cast(pa.binary()) if pa.types.is_string(column.type) else column


def join_nvtx_chunks(pieces: list[pa.Table]) -> pa.Table:
    """The compacted chunks (or one other table's single fetch) as one table, text dictionaries unified."""
    if len(pieces) == 1:
        return pieces[0]
    # permissive: a column typed null in some chunks (no value there) takes the other chunks' type
    table = pa.concat_tables(pieces, promote_options="permissive")
    return table.unify_dictionaries()


# What nvtx_rows needs of eventType, one byte a row instead of eight: a range kept as a row, a domain's creation
# (which names it), or neither.
_OTHER, _RANGE, _DOMAIN_CREATE = 0, 1, 2

_NVTX_COMPACT_SCHEMA = pa.schema(
    [
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("eventClass", pa.int8()),
        ("pid", pa.int32()),
        ("tid", pa.int32()),
        ("text", pa.dictionary(pa.int32(), pa.string())),
        ("textId", pa.int64()),
        ("domainId", pa.int64()),
    ]
)


def _compact_nvtx_chunk(t: pa.Table) -> pa.Table:
    """One fetched chunk as our own copies (a column left in the fetched batch pins all of it); with
    binaryData, a ``payload`` column holding only the blobs long enough for a payload header (else null).
    A textId or payload column with no value in the chunk is kept typed null (no buffers: exports that name
    their ranges inline, or without NCCL payloads, would hold 8 and 4 bytes a row of nulls)."""
    text = t.column("text").combine_chunks()
    if pa.types.is_dictionary(text.type):  # encoded by the page reader: NULL read as b'', as the cast does
        text_idx, text_values = decode_encoded(text.indices.to_numpy(), text.dictionary)
    else:
        text_idx, text_values = decode_dictionary(text)
    del text
    gtid = t.column("globalTid")
    event_type = as_int64(t.column("eventType")).fill_null(-1).to_numpy()
    event_class = np.where(
        np.isin(event_type, _NVTX_RANGE_TYPES),
        _RANGE,
        np.where(event_type == _NVTX_DOMAIN_CREATE, _DOMAIN_CREATE, _OTHER),
    ).astype(np.int8)
    del event_type
    arrays = [
        detach(as_int64(t.column("start"))),
        detach(as_int64(t.column("end"))),
        pa.array(event_class),
        decode_pid(gtid),
        decode_tid(gtid),
        dict_array(text_idx, text_values),
        _ids_or_nulls(t.column("textId")),
        _ids_or_nulls(t.column("domainId")),
    ]
    schema = _NVTX_COMPACT_SCHEMA
    for at in (6, 7):
        if arrays[at].type == pa.null():
            schema = schema.set(at, pa.field(schema.field(at).name, pa.null()))
    if "binaryData" not in t.column_names:
        return pa.Table.from_arrays(arrays, schema=schema)
    blobs = t.column("binaryData").combine_chunks().cast(pa.binary())
    payload = pc.if_else(
        pc.greater_equal(pc.binary_length(blobs), nvtx_payload.HEADER_BYTES),
        blobs,
        pa.nulls(len(blobs), pa.binary()),
    )
    if payload.null_count == len(payload):
        return pa.Table.from_arrays(
            arrays + [pa.nulls(len(payload), pa.null())], schema=schema.append(pa.field("payload", pa.null()))
        )
    return pa.Table.from_arrays(
        arrays + [detach(payload)], schema=schema.append(pa.field("payload", pa.binary()))
    )


def _ids_or_nulls(column: pa.ChunkedArray) -> pa.Array:
    """An id column (textId, domainId) as our own copy in the narrowest integer type that holds its ids (the
    chunks are joined in the widest), or typed null (no buffers) when no row has one."""
    ids = as_int64(column)
    if ids.null_count == len(ids):
        return pa.nulls(len(ids), pa.null())
    narrow = narrowest(ids)
    return narrow if narrow is not ids else detach(ids)


def nvtx_rows(
    box: list[pa.Table], strings: Strings, payload_entries: list[tuple[int, int, str, int, int | None]]
) -> tuple[Part | None, dict[int, str], pa.Array | None]:
    """NVTX_EVENTS (compacted chunk by chunk by :func:`nvtx_chunk`, taken out of ``box``): its ranges as ``annotation`` rows,
    ``tracelens/step#N`` ranges as ``step`` rows, NCCL's payload sizes as message columns. Also returns the
    domain names by id, and the names' dictionary (None when no range is kept)."""
    # NVTX_EVENTS is most of a training export's rows: it arrives compacted chunk by chunk
    # (nvtx_chunk), and each column is let go as soon as it has been used.
    t = box.pop()
    columns = {name: t.column(name) for name in t.column_names}
    n_all = t.num_rows
    del t
    event_class = columns.pop("eventClass").combine_chunks().to_numpy()
    keep = event_class == _RANGE
    created = event_class == _DOMAIN_CREATE
    del event_class
    text = (
        columns.pop("text").combine_chunks()
        if n_all
        else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    )
    text_idx = text.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    text_values = text.dictionary
    del text
    text_ids = columns.pop("textId")
    # One dictionary for inline text and StringIds text: inline entries first, then StringIds shifted. The
    # inline text wins; built in place (each temporary is a 4-byte array of every NVTX row).
    values = pa.concat_arrays([text_values, strings.values])
    if text_ids.null_count == len(text_ids):  # every range named inline (or not at all): the inline codes
        name_idx = text_idx
    else:
        name_idx = strings.lookup(text_ids)
        np.add(name_idx, len(text_values), out=name_idx, where=name_idx >= 0)
        inline = text_idx >= 0
        name_idx[inline] = text_idx[inline]
        del inline
    del text_idx
    if (name_idx == MISSING).any():  # a textId StringIds lacks, and no inline text
        name_idx, values = strings.placeholders(name_idx, id_numpy(text_ids), values)
    else:
        name_idx, values = dedupe(name_idx, values)
    del text_ids

    domain_column = columns.pop("domainId")
    # Domains are named by their creation rows only: without one, the ids name nothing (no NCCL payload, no
    # domain column), and are not read (8 bytes a row).
    domain_ids = int64_numpy(domain_column, fill=-1) if created.any() else None
    del domain_column
    payload = columns.pop("payload", None)
    if payload is not None and payload.null_count == len(payload):
        payload = None  # no payload at all: no message columns (as nccl_messages would find)
    domain_names = (
        {
            int(d): values[int(i)].as_py()
            for d, i in zip(domain_ids[created], name_idx[created], strict=True)
            if i >= 0 and d > 0
        }
        if domain_ids is not None
        else {}
    )
    if not keep.any():
        return None, domain_names, None
    if not keep.all():
        rows = pa.array(keep)
        columns = {name: column.filter(rows) for name, column in columns.items()}
        name_idx = name_idx[keep]
        domain_ids = domain_ids[keep] if domain_ids is not None else None
        payload = payload.filter(rows) if payload is not None else None
    del keep, created
    n = int(name_idx.size)
    # Left in their compacted chunks (our own copies): the assembly reads them a chunk at a time.
    start, end = columns.pop("start"), columns.pop("end")
    pid, tid = columns.pop("pid"), columns.pop("tid")
    # Steps: step marker ranges (tracelens/step#N, ProfilerStep#N) become kind "step" with step = N.
    value_list = values.to_pylist()
    step_of_value = np.array(
        [-1 if (s := step_number(v or "")) is None else s for v in value_list] + [-1], np.int64
    )
    is_step = (step_of_value >= 0)[name_idx]  # index -1 reads the trailing -1
    kinds = np.full(n, KIND_INDEX[ANNOTATION], np.int8)
    kinds[is_step] = KIND_INDEX[STEP]

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
        if payload is not None and entries and domain_ids is not None
        else None
    )
    del payload

    domain_values = sorted(set(domain_names.values()))
    dom_idx = None
    # in place over domain_ids (8 bytes a row): each temporary is of every NVTX range
    if domain_values and domain_ids is not None:
        dom_table = dense_lookup({d: domain_values.index(n) for d, n in domain_names.items()}, -1)
        unknown = (domain_ids < 0) | (domain_ids >= dom_table.size)
        if not domain_ids.flags.writeable:  # a view of the fetched column: copied, the column let go
            domain_ids = domain_ids.copy()
        domain_ids[unknown] = 0
        dom_idx = dom_table[domain_ids]
        dom_idx[unknown] = -1
        del unknown
    del domain_ids
    cols = {
        "kind": kind_column(kinds),
        "name": dict_array(name_idx, values),
        "start_ns": start,
        "end_ns": end,  # null for ranges left open at the end of capture: closed later
        "pid": pid,
        "tid": tid,
        # All-null columns stay None: the assembly gives them one shared null buffer.
        "domain": dict_array(dom_idx, pa.array(domain_values, pa.string())) if dom_idx is not None else None,
        "step": pa.array(step_of_value[name_idx], pa.int64(), mask=~is_step) if is_step.any() else None,
        **(messages or {}),
    }
    return Part(n, cols, owned=("start_ns", "end_ns", "pid", "tid")), domain_names, values
