"""Hand-built Nsight exports for tests, from the committed handmade 2026 export (fixtures/nsys/handmade_nsys2026.sqlite,
its schema and string ids): a copy with a test's SQL statements applied (:func:`edited_copy`), read back read-only
(:func:`query`); and, for the replay's tests, a copy holding only the host calls, GPU ops, synchronization rows and
"Command Buffer Full" overhead rows a test gives, on one thread of one process (:func:`nsys_export`)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"
T0 = 1_000_000_000
US = 1_000
GLOBAL_PID = (1 << 48) + (4242 << 24)
GLOBAL_TID = GLOBAL_PID + 4242
KERNEL_NAME = 7  # StringIds of the handmade fixture: "void gemm<float>(const float *, float *)", short name 8
CBF = 900  # StringIds id given to "Command Buffer Full" here


# the statements that leave the handmade export without event rows (its schema, string ids and targets kept)
NO_EVENTS = (
    *(
        f"DELETE FROM CUPTI_ACTIVITY_KIND_{t}"
        for t in ("KERNEL", "RUNTIME", "MEMCPY", "MEMSET", "SYNCHRONIZATION")
    ),
    "DELETE FROM NVTX_EVENTS",
)


def edited_copy(path: Path, *statements: str) -> Path:
    """``path``: a writable copy of the handmade export with ``statements`` run on it."""
    shutil.copy(FIXTURE, path)
    path.chmod(0o644)
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def query(path: Path, sql: str) -> list[tuple]:
    """The rows of ``sql`` over the export at ``path``, opened read-only."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def nsys_export(
    path: Path,
    calls: list[tuple[int, int, int, int, tuple[int, int] | None]],
    ops: list[tuple[str, int, int, int, int, int]],
    syncs: Sequence[tuple[int, int, int, int, int, int]] = (),
) -> Path:
    """A copy of the handmade 2026 export holding only ``calls`` (StringIds name id, start µs, end µs, correlation
    id, the "Command Buffer Full" overhead row inside it (start, end µs) or None), ``ops`` (kind "copy" (64 MiB HtoD,
    pinned) or "kernel", correlation id (one no call has: unlaunched), device, stream, start µs, end µs) and
    ``syncs`` (SYNCHRONIZATION rows: correlation id, device, stream, syncType, start µs, end µs), on one thread of
    one process."""
    edited_copy(path, *NO_EVENTS)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO StringIds VALUES (?, 'Command Buffer Full')", (CBF,))
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_OVERHEAD (start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER, "
        "overheadType INTEGER NOT NULL)"
    )
    for name, start, end, corr, block in calls:
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
            (T0 + start * US, T0 + end * US, GLOBAL_TID, corr, name),
        )
        if block is not None:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_OVERHEAD VALUES (?, ?, 103, ?, ?, ?, 8)",
                (T0 + block[0] * US, T0 + block[1] * US, GLOBAL_TID, corr, CBF),
            )
    for kind, corr, device, stream, start, end in ops:
        if kind == "copy":
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
                "globalPid, bytes, copyKind, srcKind, dstKind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 1, 2)",
                (T0 + start * US, T0 + end * US, device, device + 1, stream, corr, GLOBAL_PID, 64 << 20),
            )
        else:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
                "globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, "
                "registersPerThread, staticSharedMemory, dynamicSharedMemory) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 64, 1, 1, 256, 1, 1, 32, 0, 0)",
                (
                    T0 + start * US,
                    T0 + end * US,
                    device,
                    device + 1,
                    stream,
                    corr,
                    GLOBAL_PID,
                    KERNEL_NAME,
                    KERNEL_NAME + 1,
                ),
            )
    for corr, device, stream, sync_type, start, end in syncs:
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, streamId, "
            "correlationId, globalPid, syncType, eventId) VALUES (?, ?, ?, 1, ?, ?, ?, ?, 0)",
            (T0 + start * US, T0 + end * US, device, stream, corr, GLOBAL_PID, sync_type),
        )
    db.commit()
    db.close()
    return path
