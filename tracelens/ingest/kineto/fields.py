"""The fields of a Kineto event that tracelens reads, declared once: name, JSON key, type.

Each engine's field list is derived from :data:`EVENT_FIELDS` and :data:`ARG_FIELDS`: the msgspec structs
(:mod:`.msgspec_engine`) and the native scanner's float columns and string codes (:data:`NATIVE_FLOATS`,
:data:`NATIVE_STRINGS`). The scanner's C side (``tracelens/ingest/_kineto_scan.c``: its ``F_*`` and ``S_*``
enums and the ``KEY_IS`` tests of its event and args loops) must list the same fields, in the same order,
under the same keys, read as the same types: ``tests/test_kineto_native.py`` checks its source against this.
Adding a field means adding it here and there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import msgspec

# How a value is read. The typed decoder's type and default for each are in msgspec_engine.TYPED.
PHASE = "phase"  # str, "" when missing; "X" marks a complete event
TEXT = "text"  # str or null: one string code column in the scanner
NUMBER = "number"  # float, NaN when missing (JSON integers too: ids and byte counts are exact below 2**53)
NUMBER_OR_TEXT = (
    "number_or_text"  # float or a string holding one ("stream 7", "0x0"), parsed per distinct text
)
TRIPLE = "triple"  # [x, y, z] of integers or null: three float columns <name>_x, <name>_y, <name>_z
# Any JSON value, kept as its text (a string code column in the scanner) and made canonical per distinct
# text by canonical_json, so that every engine gives the same text for the same value.
JSON = "json"

_DEFAULTS = {PHASE: "", TEXT: None, NUMBER: math.nan, NUMBER_OR_TEXT: math.nan, TRIPLE: None, JSON: None}


@dataclass(frozen=True)
class Field:
    name: str  # the structs' attribute and the block's column
    key: str  # the JSON key Kineto writes
    type: str  # PHASE, TEXT, NUMBER, NUMBER_OR_TEXT, TRIPLE or JSON
    gpu: bool = False  # read only for GPU rows (kernels, copies, sets, syncs, GPU annotations)
    op: bool = False  # kept only for the rows that have one of the op fields (OP_FIELDS): few rows do
    default: Any = None  # the typed decoder's value when the key is missing; None: the type's
    fills: str | None = None  # an op field read under an older key: it fills that field where it is missing

    @property
    def missing(self) -> Any:
        return _DEFAULTS[self.type] if self.default is None else self.default


# The event's own members. Order matters only to the scanner (see NATIVE_FLOATS).
EVENT_FIELDS = (
    Field("ts", "ts", NUMBER),
    Field("dur", "dur", NUMBER, default=0.0),
    Field("pid", "pid", NUMBER_OR_TEXT),  # "Spans", "Traces" on the profiler's own rows
    Field("tid", "tid", NUMBER_OR_TEXT),  # "stream 7", "2248185664" in 2021 traces
    Field("ph", "ph", PHASE),
    Field("cat", "cat", TEXT),
    Field("name", "name", TEXT),
)

# Members of the event's "args" object; any other member is skipped.
ARG_FIELDS = (
    Field("correlation", "correlation", NUMBER),
    Field("external_id", "External id", NUMBER),
    Field("external_id_old", "external id", NUMBER),  # 2021 format; external_id where that is missing
    Field("device", "device", NUMBER, gpu=True),
    Field("stream", "stream", NUMBER_OR_TEXT, gpu=True),  # ROCm runtime rows write "0x0"
    Field("bytes", "bytes", NUMBER, gpu=True),
    Field("registers", "registers per thread", NUMBER, gpu=True),
    Field("shared_memory", "shared memory", NUMBER, gpu=True),
    Field("occupancy_pct", "est. achieved occupancy %", NUMBER, gpu=True),
    Field("grid", "grid", TRIPLE, gpu=True),
    Field("block", "block", TRIPLE, gpu=True),
    Field("sync_kind", "cuda_sync_kind", TEXT, gpu=True),
    # What record_shapes=True records about an op's inputs, and a collective's message (cpu_op rows such as
    # record_param_comms and c10d::*, and NCCL kernel rows): schema 1.1's columns of the same names.
    Field("input_dims", "Input Dims", JSON, op=True),
    Field("input_dims_old", "Input dims", JSON, op=True, fills="input_dims"),  # 2021 format
    Field("input_types", "Input type", JSON, op=True),
    Field("concrete_inputs", "Concrete Inputs", JSON, op=True),
    Field("flops", "flops", NUMBER, op=True),
    Field("msg_in_elems", "In msg nelems", NUMBER, op=True),
    Field("msg_out_elems", "Out msg nelems", NUMBER, op=True),
    Field("msg_dtype", "dtype", TEXT, op=True),
    Field("group_size", "Group size", NUMBER, op=True),
    # A collective's own record (record_param_comms ops and NCCL kernels since ~2023): its type and process group.
    Field("collective_name", "Collective name", TEXT, op=True),
    Field("process_group", "Process Group Name", TEXT, op=True),
    Field("group_ranks", "Process Group Ranks", TEXT, op=True),
)

_NUMBERS = (NUMBER, NUMBER_OR_TEXT)

# The scanner's float64 columns, one row per complete event: the numbers (events', then args'), then each
# triple as three columns. The C enum F_TS ... N_FLOATS lists the same names in this order. The op fields are
# not among them (see NATIVE_OP_FLOATS).
NATIVE_FLOATS = (
    *(f.name for f in (*EVENT_FIELDS, *ARG_FIELDS) if f.type in _NUMBERS and not f.op),
    *(f"{f.name}_{axis}" for f in ARG_FIELDS if f.type == TRIPLE for axis in "xyz"),
)
# The scanner gives the first NATIVE_ROW_FLOATS of them as columns (a value per complete event) and the others,
# NATIVE_SPARSE_FLOATS (external_id_old, a 2021 key, and the GPU-side fields), in sparse records: for the events
# holding one of them only (C: N_ROW_FLOATS).
NATIVE_ROW_FLOATS = NATIVE_FLOATS[: NATIVE_FLOATS.index("external_id_old")]
NATIVE_SPARSE_FLOATS = NATIVE_FLOATS[len(NATIVE_ROW_FLOATS) :]
# The scanner's string code columns (int32, -1 when missing): the C enum S_CAT ... N_STRINGS.
NATIVE_STRINGS = tuple(f.name for f in (*EVENT_FIELDS, *ARG_FIELDS) if f.type == TEXT and not f.op)
# GPU-only numbers, kept for GPU rows only (the triples and texts have their own columns).
DEVICE_FIELDS = tuple(f.name for f in ARG_FIELDS if f.gpu and f.type in _NUMBERS)
# The op fields: few events hold one, so a block keeps them for its "op_rows" only, the kept rows where one of
# them is present; the scanner keeps them in op records of such events (C enums OF_* ... N_OP_FLOATS and
# OS_* ... N_OP_STRINGS, in this order), a JSON field as the code of its raw text.
OP_FIELDS = tuple(f for f in ARG_FIELDS if f.op)
OP_NUMBERS = tuple(f.name for f in OP_FIELDS if f.type in _NUMBERS)
# The op text fields as read (the scanner's order), and as columns (a field read under an older key is merged
# into its newer one by blocks.op_columns: FILLS maps the old field to the new).
READ_OP_TEXTS = tuple(f.name for f in OP_FIELDS if f.type in (TEXT, JSON))
OP_TEXTS = tuple(f.name for f in OP_FIELDS if f.type in (TEXT, JSON) and f.fills is None)
FILLS = {f.name: f.fills for f in OP_FIELDS if f.fills is not None}
OP_JSON = tuple(f.name for f in OP_FIELDS if f.type == JSON)
NATIVE_OP_FLOATS = OP_NUMBERS
NATIVE_OP_STRINGS = READ_OP_TEXTS


def canonical_json(raw: Any) -> str | None:
    """A JSON value's canonical text: compact (no whitespace), strings escaped only where JSON requires,
    numbers as msgspec writes them (``[[8,64],[64,32]]``, ``["","[1, 1]"]``); None for null or text that is
    not JSON (UTF-8). ``raw``: its JSON text (bytes, str, ``msgspec.Raw``) or, from a loosely decoded block,
    the decoded value."""
    try:
        value = msgspec.json.decode(raw) if isinstance(raw, (bytes, str, msgspec.Raw)) else raw
        return None if value is None else msgspec.json.encode(value).decode()
    except (msgspec.DecodeError, msgspec.EncodeError, UnicodeDecodeError, TypeError, ValueError):
        return None
