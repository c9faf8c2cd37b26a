"""Which tables of an Nsight Systems export are read, and the SELECT for each: columns are looked up by name,
so exports from 2022 (schema 2.x) to 2026 (3.25) read the same way (a column an export lacks reads NULL)."""

from __future__ import annotations

from collections.abc import Iterable

from . import nvtx_payload
from .contexts import green_context_sms
from .database import Database

TABLE_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
TABLE_MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
TABLE_MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
TABLE_SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
TABLE_RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
TABLE_NVTX = "NVTX_EVENTS"
TABLE_OSRT = "OSRT_API"
TABLE_PROFILER_OVERHEAD = "PROFILER_OVERHEAD"
TABLE_CUPTI_OVERHEAD = "CUPTI_ACTIVITY_KIND_OVERHEAD"
# nsys --cuda-graph-trace=graph: one row per CUDA graph execution (its kernels get no rows of their own)
TABLE_GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
GPU_TABLES = (TABLE_KERNEL, TABLE_MEMCPY, TABLE_MEMSET, TABLE_GRAPH_TRACE)
NVTX_TEXT_COLUMNS = ("text", "binaryData")
HOST_TABLES = (TABLE_NVTX, TABLE_RUNTIME, TABLE_OSRT, TABLE_PROFILER_OVERHEAD, TABLE_CUPTI_OVERHEAD)


def payload_schema_entries(db: Database) -> list[tuple[int, int, str, int, int | None]]:
    """(domain id, schema id, field name, entry type, offset) of the NVTX payload fields NCCL's message
    columns come from; empty without the table (exports before 2024, or without NCCL)."""
    table = "NVTX_PAYLOAD_SCHEMA_ENTRIES"
    if table not in db.tables or not {"domainId", "schemaId", "name", "type", "offset"} <= set(
        db.columns(table)
    ):
        return []
    names = ", ".join(f"'{n}'" for n in nvtx_payload.PAYLOAD_FIELDS)
    rows = db.small(
        f'SELECT DISTINCT domainId, schemaId, name, "type", "offset" FROM {table} WHERE name IN ({names})'
    )
    return [
        r
        for r in rows
        if isinstance(r[0], int)
        and isinstance(r[1], int)
        and isinstance(r[3], int)
        and (r[4] is None or isinstance(r[4], int))
    ]


def text_cast(column: str) -> str:
    """The reference read of a text column: BLOB keeps invalid UTF-8 intact for replacement decoding, and ''
    stands for NULL, so that the column's Arrow type depends neither on which rows come first nor on the
    engine (stdlib sqlite3 or ADBC)."""
    return f"ifnull(CAST(\"{column}\" AS BLOB), X'')"


def uncast_text(sql: str, columns: Iterable[str]) -> str:
    """``sql`` with the text ``columns`` read raw instead of through :func:`text_cast` (the fast path of
    :func:`.nvtx.nvtx_chunk`: the two expressions cost SQLite a fifth of NVTX_EVENTS's fetch)."""
    for column in columns:
        sql = sql.replace(text_cast(column), f'"{column}"')
    return sql


def _select(
    db: Database,
    warnings: list[str],
    table: str,
    wanted: Iterable[str],
    required: Iterable[str],
    text: Iterable[str] = (),
    where: str = "",
) -> tuple[str, list[str]] | None:
    """SQL selecting the ``wanted`` columns the table has (NULL for the rest); None without the table."""
    if table not in db.tables:
        return None
    have = set(db.columns(table))
    missing = [c for c in required if c not in have]
    if missing:
        warnings.append(f"{table} lacks column(s) {', '.join(missing)}; table skipped")
        return None
    text = set(text)
    exprs, names = [], []
    for col in wanted:
        if col not in have:
            exprs.append("NULL")
        elif col in text:
            exprs.append(text_cast(col))
        else:
            exprs.append(f'"{col}"')
        names.append(col)
    return f'SELECT {", ".join(exprs)} FROM "{table}" {where}', names


def table_queries(
    db: Database, payload_entries: list[tuple[int, int, str, int, int | None]], warnings: list[str]
) -> dict[str, tuple[str, list[str]]]:
    """The SELECT each event table is read with, ``{table: (sql, column names)}`` (tables the export lacks
    are left out; one lacking a required column is left out with a warning)."""
    gpu = ["start", "end", "deviceId", "streamId", "correlationId", "globalPid"]
    # A GPU row without its device is an op of no GPU: every GPU analysis would leave it out and the trace read as
    # healthy. nsys writes deviceId in every GPU table; without it the table is skipped, with a warning.
    gpu_required = ["start", "end", "deviceId"]
    # the join of each GPU op to its launch call: read without it, every launch, queue and attribution figure is
    # made of no pair, with no word
    for table in (TABLE_KERNEL, TABLE_MEMCPY, TABLE_MEMSET, TABLE_RUNTIME):
        if table in db.tables and "correlationId" not in db.columns(table):
            warnings.append(
                f"{table} lacks column(s) correlationId (a newer schema?): its rows join no launch call or GPU op"
            )
    if TABLE_KERNEL in db.tables and not {"demangledName", "shortName"} & set(db.columns(TABLE_KERNEL)):
        warnings.append(
            f"{TABLE_KERNEL} lacks column(s) demangledName, shortName (a newer schema?): its kernels are read "
            "unnamed, each called <kernel name not in the export>"
        )
    specs = {
        TABLE_KERNEL: _select(
            db,
            warnings,
            TABLE_KERNEL,
            gpu
            + [
                "demangledName",
                "shortName",
                "gridX",
                "gridY",
                "gridZ",
                "blockX",
                "blockY",
                "blockZ",
                "registersPerThread",
                "staticSharedMemory",
                "dynamicSharedMemory",
                "graphId",
            ]
            # a green context's kernels are judged against its SMs: read which context each ran in where any is
            + (["greenContextId", "contextId"] if green_context_sms(db) else []),
            gpu_required,
        ),
        TABLE_MEMCPY: _select(
            db, warnings, TABLE_MEMCPY, gpu + ["bytes", "copyKind", "srcKind", "dstKind"], gpu_required
        ),
        TABLE_MEMSET: _select(db, warnings, TABLE_MEMSET, gpu + ["bytes", "memKind"], gpu_required),
        # deviceId not required: CUPTI's synchronization record has no device (nsys writes 0: the window
        # export's second process syncs on "device 0" while its kernels run on device 1)
        TABLE_SYNC: _select(db, warnings, TABLE_SYNC, gpu + ["syncType"], ["start", "end"]),
        TABLE_GRAPH_TRACE: _select(db, warnings, TABLE_GRAPH_TRACE, gpu + ["graphId"], gpu_required),
        TABLE_RUNTIME: _select(
            db,
            warnings,
            TABLE_RUNTIME,
            ["start", "end", "eventClass", "globalTid", "correlationId", "nameId"],
            ["start", "end"],
        ),
        # binaryData (NCCL's payloads) only where the export declares the payload fields read from it.
        TABLE_NVTX: _select(
            db,
            warnings,
            TABLE_NVTX,
            ["start", "end", "eventType", "globalTid", "text", "textId", "domainId"]
            + (["binaryData"] if payload_entries else []),
            ["start", "eventType"],
            text=NVTX_TEXT_COLUMNS,
        ),
        TABLE_OSRT: _select(
            db, warnings, TABLE_OSRT, ["start", "end", "globalTid", "nameId"], ["start", "end"]
        ),
        TABLE_PROFILER_OVERHEAD: _select(
            db, warnings, TABLE_PROFILER_OVERHEAD, ["start", "end", "globalTid", "nameId"], ["start", "end"]
        ),
        TABLE_CUPTI_OVERHEAD: _select(
            db, warnings, TABLE_CUPTI_OVERHEAD, ["start", "end", "globalTid", "nameId"], ["start", "end"]
        ),
    }
    return {name: spec for name, spec in specs.items() if spec is not None}
