"""GPU rows whose start and end are both 0: CUPTI's documented "no timestamp could be collected" (CUpti_ActivityKernel:
"a value of 0 for both the start and end timestamps indicates that timestamp information could not be collected";
NVIDIA/cudf-spark-jni#2255 saw such records reach .nsys-rep files). nsys times are ns since the session began, so
such a row sat a second before the handmade export's other rows: kept, it put the time origin at 0 and the GPU
"idle 1 s" (unexplained_idle 100% of the span, utilization 0.0%). Left out with a warning; both engines."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tests.nsys_handmade_export import edited_copy, query
from tracelens.cli import main
from tracelens.ingest import load

_COLUMNS = (
    "deviceId, contextId, streamId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, "
    "blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory"
)
# one kernel like the first one of the export, at start = end = 0, and one memcpy at 0 too
UNTIMED = (
    f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, correlationId, {_COLUMNS}) "
    f"SELECT 0, 0, 999, {_COLUMNS} FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1",
    "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, "
    "bytes, copyKind, srcKind, dstKind) SELECT 0, 0, deviceId, contextId, streamId, 998, globalPid, 8, 1, 1, 2 "
    "FROM CUPTI_ACTIVITY_KIND_MEMCPY LIMIT 1",
)


@pytest.mark.parametrize("engine", ["pages", "sqlite3"])
def test_gpu_rows_at_time_zero_are_left_out(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("TRACELENS_NSYS_ENGINE", engine)
    path = edited_copy(tmp_path / "untimed.sqlite", *UNTIMED)
    timed = "FROM {} WHERE NOT (start = 0 AND end = 0)"
    kernels = query(path, "SELECT count(*) " + timed.format("CUPTI_ACTIVITY_KIND_KERNEL"))[0][0]
    copies = query(path, "SELECT count(*) " + timed.format("CUPTI_ACTIVITY_KIND_MEMCPY"))[0][0]
    (first,) = query(
        path,
        "SELECT min(start) FROM (SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start FROM "
        "CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start FROM CUPTI_ACTIVITY_KIND_MEMSET) WHERE start > 0",
    )[0]
    (last,) = query(
        path,
        "SELECT max(end) FROM (SELECT end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT end FROM "
        "CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT end FROM CUPTI_ACTIVITY_KIND_MEMSET)",
    )[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(path)
    said = "2 GPU row(s) carry no time (start and end 0: CUPTI collected no timestamps): left out"
    assert said in trace.metadata.warnings
    kind = trace.events.column("kind").to_pylist()
    assert kind.count("kernel") == kernels and kind.count("memcpy") == copies
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    (gpu,) = doc["devices"]
    assert gpu["span_ns"] == last - first  # the GPU's window, not from time 0
    assert gpu["kernel_count"] == kernels


def test_a_gpu_row_at_zero_with_a_duration_is_kept(tmp_path: Path) -> None:
    # start 0 with an end: a time was recorded (the session's first ns): the row is read as any other
    path = edited_copy(
        tmp_path / "at_zero.sqlite",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 0 WHERE start = (SELECT min(start) FROM "
        "CUPTI_ACTIVITY_KIND_KERNEL)",
    )
    (kernels,) = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(path)
    assert trace.events.column("kind").to_pylist().count("kernel") == kernels
    assert not any("carry no time" in w for w in trace.metadata.warnings)
