"""The native engine: the columnar scanner ``tracelens/ingest/_kineto_scan.c`` (GIL released), its float
columns' layout, and its output turned into block columns: for the reader, straight into the block
:func:`.prepare.prepare_block` makes of them, by the scanner's one pass over the rows (prepare_scanned)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np

from ...trace import GPU_ANNOTATION
from . import row_chunks
from .blocks import (
    DEVICE_SIDE,
    KIND_CODE,
    MAX_TIME_US,
    PENDING,
    SKIP,
    kind_table,
    kinds,
    no_op_columns,
    op_columns,
    placeable,
    scanner,
    to_number,
    untimed,
    used_codes,
)
from .fields import (
    DEVICE_FIELDS,
    NATIVE_OP_FLOATS,
    NATIVE_OP_STRINGS,
    NATIVE_ROW_FLOATS,
    NATIVE_SPARSE_FLOATS,
    NATIVE_STRINGS,
    OP_JSON,
    canonical_json,
)
from .msgspec_engine import DECODE_ERRORS, LOOSE_DOCUMENT_DECODER, document_fields
from .named_kinds import DRIVER_KIND, LAUNCH_SIDE_BYTES, STEP_KIND, NameFlags
from .prepare import KIND_FLAGS, NOT_HOST, prepare_block

__all__ = ["prepared_block", "scan_block", "scan_block_columns", "scan_document", "scan_raw", "scanner"]


# Which of the scanner's float columns, sparse record fields and string code columns holds each field
# (fields.py; the package checks the built scanner's N_FLOATS and N_ROW_FLOATS against them at import).
_AT = {field: i for i, field in enumerate(NATIVE_ROW_FLOATS)}
_SPARSE_AT = {field: i for i, field in enumerate(NATIVE_SPARSE_FLOATS)}
_STRING_AT = {field: i for i, field in enumerate(NATIVE_STRINGS)}


def scan_block(pieces: tuple[bytes | memoryview, ...]) -> dict[str, Any] | None:
    """A block read by the native scanner, made ready for the table as :func:`.prepare.prepare_block` makes
    the columns of :func:`scan_block_columns` (None: the scanner declined the block)."""
    scanned = scan_raw(pieces)
    return None if scanned is None else _prepared_columns(scanned)


def scan_raw(pieces: tuple[bytes | memoryview, ...]) -> dict[str, Any] | None:
    """The scanner's output for a block (None: it declined the block): the first of :func:`scan_block`'s two
    steps, the one that reads the block's text."""
    scanned: dict[str, Any] | None = scanner().scan_events(pieces, to_number, msgspec.json.decode)
    return scanned


def prepared_block(scanned: dict[str, Any]) -> dict[str, Any]:
    """The second of :func:`scan_block`'s steps: the block of :func:`scan_raw`'s output (which holds no reference
    to the block's text), left to be made by the step that reads it next (blocks.PENDING): named_kinds.ready_block,
    which then also does its names' steps in the same pass over the rows (~7 ms a load of the 406 MB tile), or
    prepare.prepare_block."""
    return {PENDING: functools.partial(_prepared_columns, scanned)}


def reserve_rows(scanned: dict[str, Any], text_bytes: int) -> dict[str, Any]:
    """The scanner's output (of ``text_bytes`` of JSON) with the slices of its block's kept columns
    (:data:`CHUNK_SLOTS`) taken in the row chunks (row_chunks.reserved; none without chunks, rows, or where the
    block's rows are not all kept), which :func:`prepared_block` writes into; the prepared sizes it needs for them
    are kept for that step."""
    rows = scanned["rows"]
    if rows == 0 or row_chunks.current() is None:
        return scanned
    sizes = scanned["prepared_sizes"] = _sizes(scanned)
    if sizes is not None:
        counts = {"row": rows, "gpu": sizes[0], "launch": sizes[1]}
        scanned["row_slots"] = row_chunks.reserved(counts, text_bytes, CHUNK_SLOTS)
    return scanned


def scan_block_columns(pieces: tuple[bytes | memoryview, ...]) -> dict[str, Any] | None:
    """The columns :func:`block_columns` makes, from the native scanner (None: it declined the block)."""
    scanned = scanner().scan_events(pieces, to_number, msgspec.json.decode)
    return None if scanned is None else _scanned_columns(scanned)


def scan_document(payload: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A whole document (or its last piece) in any layout, read by the native scanner: the block columns and
    the document's other fields; None when the scanner declines it (msgspec then reads it)."""
    scanned = scanner().scan_document(payload, to_number, msgspec.json.decode)
    if scanned is None:
        return None
    found, start, end = scanned
    fields: dict[str, Any] = {}
    if start >= 0:  # an object: its other members, decoded without the (already read) event list
        try:
            doc = LOOSE_DOCUMENT_DECODER.decode(
                b"".join((memoryview(payload)[:start], b"[]", memoryview(payload)[end:]))
            )
        except (*DECODE_ERRORS, msgspec.ValidationError):
            return None
        fields = document_fields(doc)
    return _scanned_columns(found), fields


def _scanned_columns(scanned: dict[str, Any]) -> dict[str, Any]:
    block = _counted(scanned)
    n = scanned["rows"]
    if n == 0:
        return block
    return _row_columns(scanned, block)


def _counted(scanned: dict[str, Any]) -> dict[str, Any]:
    counts = {
        "events": sum(scanned[k] for k in ("complete", "flow", "instant", "metadata", "other_phase")),
        "flow": scanned["flow"],
        "instant": scanned["instant"],
        "metadata": scanned["metadata"],
        "other_phase": scanned["other_phase"],
        "lenient_blocks": 0,
        "untimed": 0,
    }
    return {"counts": counts}


def _row_columns(scanned: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    n = scanned["rows"]
    # The scanner gives a buffer per row float column and per string code column: a column of kept rows is
    # the buffer itself when every row is kept (no copy), else gathered from one contiguous column. The
    # sparse fields (GPU-side ones, external_id_old) come in records of the rows holding one (sparse_at).
    floats = [np.frombuffer(column, dtype=np.float64) for column in scanned["floats"]]
    sparse_at = _sparse_fields(scanned)
    codes = [np.frombuffer(column, dtype=np.int32) for column in scanned["codes"]]
    kind = kinds(codes[_STRING_AT["cat"]], scanned["categories"])
    ts = floats[_AT["ts"]]
    kept = (kind != SKIP) & placeable(ts)
    every_row = bool(kept.all())
    if not every_row:
        block["counts"]["untimed"] = untimed(kind, ts)
    rows = np.arange(n) if every_row else np.flatnonzero(kept)
    if rows.size == 0:
        return block

    def row_column(field: str) -> np.ndarray:
        column = floats[_AT[field]]
        return column if every_row else np.take(column, rows)

    kind = kind if every_row else np.take(kind, rows)
    gpu_rows = np.flatnonzero(np.take(DEVICE_SIDE, kind) | (kind == KIND_CODE[GPU_ANNOTATION]))
    at_gpu = rows[gpu_rows]
    block.update({field: row_column(field) for field in ("ts", "dur", "pid", "tid", "correlation")})
    external = row_column("external_id")
    missing = np.isnan(external)
    if missing.any():
        external = external.copy()  # the scanner's buffer is read-only
        external[missing] = sparse_at(rows[missing])[_SPARSE_AT["external_id_old"]]
    gpu = sparse_at(at_gpu)
    block.update({field: gpu[_SPARSE_AT[field]] for field in DEVICE_FIELDS})
    block.update(
        {
            "kind": kind,
            "name": used_codes(codes[_STRING_AT["name"]], scanned["names"], rows),
            "external_id": external,
            "gpu_rows": gpu_rows,
            "grid": np.column_stack([gpu[_SPARSE_AT["grid_x"] + i] for i in range(3)]),
            "block": np.column_stack([gpu[_SPARSE_AT["block_x"] + i] for i in range(3)]),
            "sync_kind": used_codes(codes[_STRING_AT["sync_kind"]], scanned["sync_kinds"], at_gpu),
        }
    )
    block.update(_op_columns(rows, scanned))
    return block


def _sparse_fields(scanned: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    """A function of scanner rows giving their sparse fields (NATIVE_SPARSE_FLOATS), one contiguous row per
    field, NaN where a row has no sparse record: the values a column per field would hold at those rows."""
    listed = np.frombuffer(scanned["sparse_rows"], dtype=np.int64)  # ascending
    # the records a field per row (contiguous gathers below), and a last column of NaN for rows without one
    records = np.full((len(NATIVE_SPARSE_FLOATS), listed.size + 1), np.nan)
    records[:, :-1] = (
        np.frombuffer(scanned["sparse_floats"], dtype=np.float64)
        .reshape(listed.size, len(NATIVE_SPARSE_FLOATS))
        .T
    )

    def at(rows: np.ndarray) -> np.ndarray:
        if listed.size == 0:
            return np.take(records, np.full(rows.size, 0), axis=1)
        found = np.searchsorted(listed, rows)
        np.minimum(found, listed.size - 1, out=found)
        found[listed[found] != rows] = listed.size  # the NaN column
        return np.take(records, found, axis=1)

    return at


def _op_columns(rows: np.ndarray | None, scanned: dict[str, Any]) -> dict[str, Any]:
    """:func:`op_record_columns`; for a block without op records (most blocks of a big trace), the empty columns
    it would give (blocks.no_op_columns), without its ~40 numpy calls (~0.2 ms a block)."""
    return no_op_columns() if _no_ops(scanned) else op_record_columns(rows, scanned)


def _no_ops(scanned: dict[str, Any]) -> bool:
    """Whether the scanner found no op record in the block."""
    return memoryview(scanned["op_rows"]).nbytes == 0


def op_record_columns(rows: np.ndarray | None, scanned: dict[str, Any]) -> dict[str, Any]:
    """The op fields of the kept ``rows`` holding one (blocks.op_columns), from the scanner's op records; JSON
    texts made canonical once per distinct raw text. ``rows`` None: every row of the block is kept (each record
    is then its own row's: no search, no gathers)."""
    listed = np.frombuffer(scanned["op_rows"], dtype=np.int64)
    floats = np.frombuffer(scanned["op_floats"], dtype=np.float64).reshape(listed.size, len(NATIVE_OP_FLOATS))
    codes = np.frombuffer(scanned["op_codes"], dtype=np.int32).reshape(listed.size, len(NATIVE_OP_STRINGS))
    records: np.ndarray | None = None
    if rows is None:
        local = listed
    else:
        local = np.searchsorted(rows, listed)  # the records' rows among the kept rows (both sorted)
        kept = local < rows.size
        kept[kept] &= rows[local[kept]] == listed[kept]
        records = np.flatnonzero(kept)
        local = local[records]
    texts: dict[str, tuple[np.ndarray, Sequence[str | None]]] = {}
    for i, name in enumerate(NATIVE_OP_STRINGS):
        # every record kept (records None): each of the field's strings is some record's (the scanner interns the
        # records' only), so used_codes would give the codes back as they are: not counted (~2 ms a 406 MB load)
        if records is None:
            found, values = codes[:, i], scanned["op_strings"][i]
        else:
            found, values = used_codes(codes[:, i], scanned["op_strings"][i], records)
        texts[name] = (found, [canonical_json(v) for v in values] if name in OP_JSON else values)
    numbers = {
        name: floats[:, i] if records is None else floats[records, i]
        for i, name in enumerate(NATIVE_OP_FLOATS)
    }
    return op_columns(local, numbers, texts)


# The columns the scanner's prepare_scanned writes (_kineto_scan.c P_*), in its order: each one's dtype and
# whether it holds a value per row, per GPU row or per launch (the rows as int64, intp where the block holds
# them; grid and block three floats per GPU row).
_PREPARED = (
    ("kind", np.int8, "row"),
    ("name", np.int32, "row"),
    ("start", np.int64, "row"),
    ("duration", np.int64, "row"),
    ("pid", np.int64, "row"),
    ("pid_valid", np.bool_, "row"),
    ("tid", np.int64, "row"),
    ("tid_valid", np.bool_, "row"),
    ("correlation", np.int64, "row"),
    ("correlation_valid", np.bool_, "row"),
    ("external_id", np.int64, "row"),
    ("external_id_valid", np.bool_, "row"),
    ("gpu_rows", np.int64, "gpu"),
    ("gpu_correlation", np.float64, "gpu"),
    ("gpu_pid", np.float64, "gpu"),
    ("gpu_tid", np.float64, "gpu"),
    ("sync_kind", np.int32, "gpu"),
    *((field, np.float64, "gpu") for field in DEVICE_FIELDS),  # the sparse floats after external_id_old
    ("grid", np.float64, "gpu"),
    ("block", np.float64, "gpu"),
    ("launch_rows", np.int64, "launch"),
    ("launch_correlation", np.float64, "launch"),
    ("launch_pid", np.float64, "launch"),
)


# prepare_scanned's bit of each column it may write as int32 (_kineto_scan.c narrow_id: the ids and the duration), in
# its misfit result.
_NARROW_BIT = {"pid": 1, "tid": 2, "correlation": 4, "external_id": 8, "duration": 16}
if set(_NARROW_BIT) != row_chunks.NARROW_KEYS:  # pragma: no cover - a guard for whoever changes either
    raise ImportError("the scanner's int32 columns are not row_chunks.NARROW_KEYS")

# The prepared columns the reader keeps in the row chunks (row_chunks.py): the int64 row columns (the ids and the
# duration as int32: row_chunks.NARROW_KEYS), and the GPU rows' and launches' float fields, which the table build reads joined (not
# the block's codes, validities or row numbers, which it maps, drops or shifts per block).
CHUNK_SLOTS: tuple[row_chunks.Slot, ...] = tuple(
    (key, np.int32 if key in row_chunks.NARROW_KEYS else dtype, per, 3 if key in ("grid", "block") else 1)
    for key, dtype, per in _PREPARED
    if key in row_chunks.CHUNKED_KEYS or (dtype is np.float64 and per in ("gpu", "launch"))
)


def _sources(scanned: dict[str, Any]) -> tuple[Any, ...]:
    """prepared_sizes' and prepare_scanned's inputs from the scanner's output."""
    return (
        scanned["floats"],
        scanned["codes"],
        scanned["sparse_rows"],
        scanned["sparse_floats"],
        _kind_table(scanned),
        KIND_FLAGS,
        MAX_TIME_US,
    )


def _kind_table(scanned: dict[str, Any]) -> np.ndarray:
    """blocks.kind_table of the block's categories, made once (kept in ``scanned``): both the sizes (as the block's
    scan ends) and the prepare pass read it (a Python step a category, ~18 us a call in a load)."""
    table: np.ndarray | None = scanned.get("kind_table")
    if table is None:
        table = scanned["kind_table"] = kind_table(scanned["categories"])
    return table


def _sizes(scanned: dict[str, Any]) -> tuple[int, int] | None:
    """The prepared block's GPU rows and launches (None: a row to drop, or no scanner function: numpy steps)."""
    module = scanner()
    if scanned["rows"] == 0 or not hasattr(module, "prepared_sizes"):
        return None
    sizes: tuple[int, int] | None
    counts = scanned.get("row_counts")  # counted by the scanner as it stored the rows: no pass over them
    if counts is not None and hasattr(module, "counted_sizes"):
        table = _kind_table(scanned)
        sizes = module.counted_sizes(counts, scanned["max_abs_ts"], table, KIND_FLAGS, MAX_TIME_US)
    else:  # (a ts, correlation or pid set by the scanner's second phase; a build without the counts)
        sizes = module.prepared_sizes(*_sources(scanned))
    return sizes


def _prepared_columns(scanned: dict[str, Any], flags: NameFlags | None = None) -> dict[str, Any]:
    """The block prepare_block makes of :func:`_scanned_columns`' (the same keys and values, in the same
    order), written by the scanner's prepare_scanned in one pass over the rows (C, no numpy temporaries) into
    numpy columns (numpy's memory, as the block's columns always were), where every row is kept; else by those
    two steps. With the names' ``flags``, that pass also does named_kinds.ready_block's steps: the block is then
    the one ready_block makes of it."""
    module = scanner()
    n = scanned["rows"]
    sources = _sources(scanned)
    sizes = scanned["prepared_sizes"] if "prepared_sizes" in scanned else _sizes(scanned)
    if sizes is None:  # a row to drop (or no scanner function): the numpy steps
        return prepare_block(_scanned_columns(scanned))
    counts = {"row": n, "gpu": sizes[0], "launch": sizes[1]}
    chunks = row_chunks.current()  # the int64 row columns from shared chunks, for big traces (row_chunks.py)
    # (the slices the reader took for this block as its scan ended, in file order: reserve_rows)
    slots = scanned.get("row_slots") or {}
    made = {
        key: slots[key]
        if key in slots and slots[key].shape[0] == counts[per]
        else chunks.column(key, n)
        if chunks is not None and key in row_chunks.CHUNKED_KEYS
        else np.empty((counts[per], 3) if key in ("grid", "block") else counts[per], dtype=dtype)
        for key, dtype, per in _PREPARED
    }
    names: tuple[np.ndarray, ...] | None = None
    if flags is not None:  # ready_block's outputs, written in the same pass
        names = (
            flags.bits(scanned["names"]),
            STEP_KIND,
            DRIVER_KIND,
            LAUNCH_SIDE_BYTES,
            np.empty(n, dtype=np.uint8),  # kind_valid
            np.zeros(len(scanned["names"]), dtype=bool),  # launch_names
        )
    pid_exact, tid_exact, nested, misfit = module.prepare_scanned(*sources, tuple(made.values()), names)
    # ids (or durations) their int32 slots cannot hold: those columns as int64 arrays (the block's pass again), and
    # the read's next blocks take int64 slots for them (a trace's ids beyond int32: the pass again for a block or two)
    if misfit:
        wide = [key for key, bit in _NARROW_BIT.items() if misfit & bit]
        if chunks is not None:
            chunks.widen(wide)
        made.update({key: np.empty(n, dtype=np.int64) for key in wide})
        pid_exact, tid_exact, nested, misfit = module.prepare_scanned(*sources, tuple(made.values()), names)
    column = made.pop
    block = _counted(scanned)
    block.update({field: column(field) for field in DEVICE_FIELDS})
    gpu_rows = column("gpu_rows").astype(np.intp, copy=False)
    kind = column("kind")
    block.update(
        {
            "kind": kind,
            # every row kept: each of the block's names is some row's (the scanner codes the kept rows' only)
            "name": (column("name"), scanned["names"]),
            "gpu_rows": gpu_rows,
            "grid": column("grid"),
            "block": column("block"),
            "sync_kind": used_codes(column("sync_kind"), scanned["sync_kinds"]),  # (an array of its own)
        }
    )
    block.update(_op_columns(None, scanned))  # (every row kept)
    for key in ("start", "duration", "gpu_correlation", "gpu_pid", "gpu_tid"):
        block[key] = column(key)
    block["launch_rows"] = column("launch_rows").astype(np.intp, copy=False)
    for key in ("launch_correlation", "launch_pid"):
        block[key] = column(key)
    block["nested"] = nested
    for key, exact in (("pid", pid_exact), ("tid", tid_exact)):
        block[key], block[f"{key}_valid"] = column(key), column(f"{key}_valid")
        block[f"{key}_exact"] = exact
        if (
            not exact
        ):  # the floats as the numpy steps keep them (host rows' only; the kinds names change stay host)
            kineto = np.frombuffer(scanned["floats"][_AT[key]], dtype=np.float64)
            block[f"{key}_float"] = np.where(np.take(NOT_HOST, kind), np.nan, kineto)
    for key in ("correlation", "external_id"):
        block[key], block[f"{key}_valid"] = column(key), column(f"{key}_valid")
    if names is not None:
        block["kind_valid"], block["launch_names"] = names[4], names[5]
    return block
