"""An nvprof profile (``nvprof -o prof.nvvp``, a SQLite file) is not an Nsight Systems export. Its tables share
names with nsys's (CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MEMCPY) but its kernels live in
CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL and its strings in StringTable(_id_, value), with processId/threadId
instead of nsys's globalTid: read as an export it was "NVIDIA Nsight Systems", 100% busy and memcpy-bound, its
kernel unseen. The schema here is the nvprof tables' columns as scripts that read .nvvp files query them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tracelens.cli import main

NVPROF_SCHEMA = """
CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL UNIQUE);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, cbid INT NOT NULL,
    start INT NOT NULL, end INT NOT NULL, processId INT NOT NULL, threadId INT NOT NULL,
    correlationId INT NOT NULL, returnValue INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, start INT NOT NULL,
    end INT NOT NULL, completed INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL, streamId INT NOT NULL,
    gridX INT NOT NULL, gridY INT NOT NULL, gridZ INT NOT NULL, blockX INT NOT NULL, blockY INT NOT NULL,
    blockZ INT NOT NULL, correlationId INT NOT NULL, name INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, copyKind INT NOT NULL,
    srcKind INT NOT NULL, dstKind INT NOT NULL, flags INT NOT NULL, bytes INT NOT NULL, start INT NOT NULL,
    end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL, streamId INT NOT NULL,
    correlationId INT NOT NULL, runtimeCorrelationId INT NOT NULL);
INSERT INTO StringTable(value) VALUES ('saxpy');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(cbid, start, end, processId, threadId, correlationId, returnValue)
    VALUES (211, 1000, 3000, 77, 77, 1, 0), (211, 4000, 5000, 77, 77, 2, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(copyKind, srcKind, dstKind, flags, bytes, start, end, deviceId,
    contextId, streamId, correlationId, runtimeCorrelationId) VALUES (1, 0, 2, 0, 1048576, 2000, 3000, 0, 1, 7, 1, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start, end, completed, deviceId, contextId, streamId, gridX,
    gridY, gridZ, blockX, blockY, blockZ, correlationId, name) VALUES (6000, 19000, 19000, 0, 1, 7, 100, 1, 1,
    256, 1, 1, 2, 1);
"""


@pytest.mark.parametrize("name", ["prof.nvvp", "prof.sqlite"])
def test_an_nvprof_profile_is_one_clear_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / name
    conn = sqlite3.connect(path)
    conn.executescript(NVPROF_SCHEMA)
    conn.commit()
    conn.close()
    code = main(["analyze", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert str(path) in err[0] and "nvprof" in err[0] and "nsys" in err[0]
    assert "Traceback" not in err[0]
