"""Unified memory: nsys writes the driver's on-demand page migrations of managed memory as MEMCPY rows of copy kinds
11-13 ("Unified Host-to-Device" ...: CUDA_MEMCPY_KIND_UVM_*), which no API call launches (their correlationId is
no call's). Counted as launched ops that lost their call, 18 migrations beside the handmade export's 6 launched ops
made a caveat "18 of 24 GPU ops (75.0%) match no launch call (launched before it began, or by untraced host code)"
and took every cause's predicted gain away ("the replay cannot tie most GPU ops to a launch call"); and copies that
were mostly migrations got the pinned-memory/fewer-bytes fixes of explicit copies, "of mixed or unknown host
memory". Migrations are now left out of the launch checks, and such copies get the managed-memory fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.nsys_handmade_export import T0, edited_copy, query
from tracelens.cli import main

UVM_ENUM = (
    "INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device'), "
    "(12, 'CUDA_MEMCPY_KIND_UVM_DTOH', 'Unified Device-to-Host')"
)
TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
)
# the export's 63 µs stretched 100x (6.3 ms): long enough for the replay to rank causes by their predicted gain
STRETCH = tuple(
    f'UPDATE {t} SET start = {T0} + (start - {T0}) * 100, "end" = {T0} + ("end" - {T0}) * 100' for t in TABLES
)


def _migrations(
    copy_kind: int, first_ns: int, every_ns: int, length_ns: int, count: int, size: int
) -> list[str]:
    """``count`` migrations of ``size`` bytes on device 0, ``every_ns`` apart from ``first_ns`` (after T0)."""
    return [
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, "
        "globalPid, bytes, copyKind, srcKind, dstKind, migrationCause) SELECT "
        f"{T0 + first_ns + i * every_ns}, {T0 + first_ns + i * every_ns + length_ns}, 0, contextId, 0, 0, "
        f"globalPid, {size}, {copy_kind}, 4, 4, 2 FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 1"
        for i in range(count)
    ]


def _analyze(path: Path, capsys: pytest.CaptureFixture) -> dict:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def test_migrations_are_no_unlaunched_ops(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # 18 HtoD migrations during the first kernel (its page faults), 1 ms apart once stretched
    path = edited_copy(
        tmp_path / "uvm.sqlite", UVM_ENUM, *_migrations(11, 10_000, 1_000, 800, 18, 64 << 10), *STRETCH
    )
    ops = "SELECT copyKind, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY"
    rows = query(path, ops)
    calls = {c for (c,) in query(path, "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    assert sum(1 for kind, corr in rows if kind in (11, 12) and corr not in calls) == 18
    launched = query(
        path,
        "SELECT count(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT correlationId "
        "FROM CUPTI_ACTIVITY_KIND_MEMSET UNION ALL SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE "
        "copyKind NOT IN (11, 12)) WHERE correlationId NOT IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
    )[0][0]
    doc = _analyze(path, capsys)
    problems = {p["kind"] for p in doc["diagnosis"]["completeness"]["problems"]}
    assert "gpu_activity_without_launches" not in problems
    assert doc["whatif"]["replay_error"]["unlaunched_gpu_ops"] == launched == 0
    assert not [c["cause"] for c in doc["diagnosis"]["causes"] if c.get("gain_reason") == "unlaunched"]


def test_copies_that_are_migrations_get_the_managed_memory_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # 40 DtoH migrations of 2 MiB after the last kernel (host code touching managed data): the exposed copies
    path = edited_copy(
        tmp_path / "uvm_dtoh.sqlite", UVM_ENUM, *_migrations(12, 63_000, 2_000, 1_900, 40, 2 << 20)
    )
    doc = _analyze(path, capsys)
    (memcpy,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == "memcpy"]
    assert memcpy["evidence"]["by_kind"][0]["kind"] == "UVM DtoH"
    assert memcpy["evidence"]["remedy"] == "managed"
    assert "cudaMemPrefetchAsync" in memcpy["fix"]
    assert main(["analyze", str(path)]) == 0
    assert "UVM DtoH copies of 80.0 MiB" in (out := " ".join(capsys.readouterr().out.split()))
    assert "migrated on demand (unified memory)" in out and "of mixed or unknown host memory" not in out
