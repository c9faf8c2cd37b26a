"""GPU tables of an Nsight Systems export whose columns the reader cannot use.

- Rows without a device (a damaged or hand-edited export: nsys writes every ``deviceId``). Read as they were,
  they were kernels of no GPU: every GPU analysis left them out and the diagnosis called the trace healthy ("no
  bottleneck to fix", GPUs 0) while it holds kernels.
- GPU tables that hold rows but lack a column the reader needs (a newer schema that renamed ``start``, a damaged
  export): skipped, they left "no GPU activity" and the diagnosis told the user the profiler lost the GPU side
  and to record it again; the GPU side is there, this tracelens cannot read it: bad input, one line, exit 2.

Built in tmp_path from the hand-built fixture; expectations from SQL over the same file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nsys_handmade_export import edited_copy, query
from tracelens.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _damaged(tmp_path: Path, *statements: str) -> Path:
    return edited_copy(tmp_path / "damaged.sqlite", *statements)


def _analyze(path: Path, capsys: pytest.CaptureFixture) -> tuple[dict, str]:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _one_line_error(path: Path, capsys: pytest.CaptureFixture) -> str:
    code = main(["analyze", "-f", "json", str(path)])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and not captured.out
    assert len(err) == 1, err
    assert str(path) in err[0] and "Traceback" not in err[0]
    return err[0]


def test_gpu_tables_without_a_device_column_are_unreadable_not_healthy(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(tmp_path, *(f"ALTER TABLE {t} DROP COLUMN deviceId" for t in GPU_TABLES))
    line = _one_line_error(path, capsys)
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks column(s) deviceId" in line


def test_gpu_tables_of_a_newer_schema_are_unreadable_not_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(
        tmp_path,
        "UPDATE META_DATA_EXPORT SET value = '4.0.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
        "UPDATE META_DATA_EXPORT SET value = '4' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR'",
        *(f'ALTER TABLE {t} RENAME COLUMN "start" TO startNs' for t in GPU_TABLES),
    )
    line = _one_line_error(path, capsys)  # the newer-schema warning is not a second line: the error names it
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks column(s) start" in line
    assert "4.0.0" in line


def test_one_unreadable_gpu_table_beside_readable_ones_is_read_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # The kernels are there: the trace is read; the memset table is named in a warning (as before).
    path = _damaged(tmp_path, 'ALTER TABLE CUPTI_ACTIVITY_KIND_MEMSET RENAME COLUMN "end" TO endNs')
    doc, _ = _analyze(path, capsys)
    assert doc["summary"]["kernel_count"] == 3
    assert any("CUPTI_ACTIVITY_KIND_MEMSET lacks column(s) end" in w for w in doc["source"]["warnings"])


def test_gpu_rows_without_a_device_are_left_out_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(
        tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = NULL WHERE correlationId = 102"
    )
    kept = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId IS NOT NULL")[0][0]
    dropped = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId IS NULL")[0][0]
    with pytest.warns(UserWarning, match="1 GPU row\\(s\\) have no device"):  # printed on stderr by the CLI
        doc, _ = _analyze(path, capsys)
    assert (kept, dropped) == (2, 1)
    assert doc["summary"]["kernel_count"] == kept
    assert f"{dropped} GPU row(s) have no device" in " ".join(doc["source"]["warnings"])


@pytest.mark.parametrize("foreign", [4294967295, 2**31, -1])
def test_gpu_rows_of_a_device_id_no_cuda_ordinal_are_left_out_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, foreign: int
) -> None:
    # The schema's INTEGER holds any int64 and CUPTI writes 0xFFFFFFFF where a record is of no device: such a
    # value failed the int32 device column and the whole export was refused (exit 2). Now that row alone is left
    # out, as a row of no device, and said.
    path = _damaged(
        tmp_path, f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = {foreign} WHERE correlationId = 102"
    )
    kept = query(
        path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId BETWEEN 0 AND 2147483647"
    )
    with pytest.warns(UserWarning, match="1 GPU row\\(s\\) have no device"):
        doc, _ = _analyze(path, capsys)
    assert kept[0][0] == 2
    assert doc["summary"]["kernel_count"] == kept[0][0]
    assert any("no CUDA device ordinal" in w for w in doc["source"]["warnings"])


def test_every_gpu_row_without_a_device_is_not_a_healthy_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(tmp_path, *(f"UPDATE {t} SET deviceId = NULL" for t in GPU_TABLES))
    with pytest.warns(UserWarning, match="6 GPU row\\(s\\) have no device"):
        doc, _ = _analyze(path, capsys)
    assert doc["diagnosis"]["primary"]["cause"] == "incomplete_trace"


def test_gpu_rows_ending_before_they_start_are_zero_length_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # K1 gemm [10_000, 30_000] made to end 5_000 ns before it starts: read as zero-length (as before), now said.
    path = _damaged(
        tmp_path, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5000 WHERE correlationId = 102'
    )
    backwards = query(path, 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "end" < start')[0][0]
    kernel_ns = query(path, 'SELECT sum(max("end" - start, 0)) FROM CUPTI_ACTIVITY_KIND_KERNEL')[0][0]
    doc, _ = _analyze(path, capsys)
    assert (backwards, kernel_ns) == (1, 15_000)
    assert doc["summary"]["device_mean_kernel_ns"] == kernel_ns
    assert f"{backwards} GPU row(s) end before they start: read as zero-length" in doc["source"]["warnings"]


def test_a_newer_schema_that_changed_a_column_type_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Timestamps as text in a schema 4 export: refused (as any cell of another type), in one line that names the
    # schema; the newer-schema warning printed before the error made two lines.
    path = _damaged(
        tmp_path,
        "UPDATE META_DATA_EXPORT SET value = '4.0.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
        "UPDATE META_DATA_EXPORT SET value = '4' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR'",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = '2026-11-28T12:00:00Z'",
    )
    line = _one_line_error(path, capsys)
    assert "unexpected type or size (export schema 4.0.0, newer than any it knows)" in line


def test_the_schema_warning_reads_the_version_it_names(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # A _MAJOR row disagreeing with the version (4294967296 beside 3.24.14: a damaged row) warned "export schema
    # 3.24.14 is newer than any this tracelens knows (major 3)".
    path = _damaged(
        tmp_path,
        "UPDATE META_DATA_EXPORT SET value = '4294967296' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR'",
    )
    doc, _ = _analyze(path, capsys)
    assert not [w for w in doc["source"]["warnings"] if "newer than any" in w]


def test_a_refused_export_is_one_line_whatever_it_would_have_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # A missing string id (a warning) and a kernel ending past 2^62 ns (refused after the rows are read): the warning
    # went to stderr before the refusal, two lines (found by an SQL fuzz); warnings are said once the file is read.
    path = _damaged(
        tmp_path,
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 4294967296 WHERE rowid = 1",
        'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = 9223372036854775807 WHERE rowid = 1',
    )
    # the program as run (its warnings printed by the CLI, not captured by pytest)
    env = {**os.environ, "PYTHONPATH": str(FIXTURE.parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert str(path) in lines[0] and "2^62" in lines[0]


def test_gpu_sync_rows_need_no_device(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # CUPTI's synchronization record has no device: nsys writes 0 (the 2026.2 window's second process syncs on
    # "device 0" while its kernels run on device 1). A sync table without deviceId, or rows with a null one, keep
    # their rows and no warning (the GPU tables' rule is for ops on a GPU's timeline).
    path = _damaged(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION DROP COLUMN deviceId")
    syncs = (
        sqlite3.connect(path)
        .execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
        .fetchone()[0]
    )
    doc, _ = _analyze(path, capsys)
    assert syncs == 1
    assert sum(w["count"] for w in doc["sync"]["gpu_waits"]) == syncs
    assert not [w for w in doc["source"]["warnings"] if "deviceId" in w or "no device" in w]


def test_kernels_of_a_schema_without_their_name_columns_are_named_so(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # A newer schema that renamed demangledName and shortName: read as NULL ids, every kernel was one kernel
    # named "" in the by-name tables, with no word. Now each is named as unnamed, and a warning says why.
    path = _damaged(
        tmp_path,
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN demangledName TO demangledNameRef",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN shortName TO shortNameRef",
    )
    count = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    doc, _ = _analyze(path, capsys)
    by_name = doc["kernels"]["by_name"]
    assert [(k["name"], k["count"]) for k in by_name] == [("<kernel name not in the export>", count)]
    assert any("lacks column(s) demangledName, shortName" in w for w in doc["source"]["warnings"])


def test_rows_without_a_start_are_left_out_not_read_at_the_sessions_start(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # nsys writes every start (NOT NULL). A null one (a hand-edited export, rebuilt without the constraint) was read
    # as 0, the session's start: the kernel ran from there to its end and the GPU was "busy" the whole time.
    path = _damaged(
        tmp_path,
        "CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL",
        "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL",
        "ALTER TABLE k2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE correlationId = 102",
    )
    kept, kernel_ns = query(
        path, 'SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start IS NOT NULL'
    )[0]
    with pytest.warns(UserWarning, match="1 row\\(s\\) have no start time"):
        doc, _ = _analyze(path, capsys)
    assert (kept, kernel_ns) == (2, 15_000)
    assert doc["summary"]["kernel_count"] == kept
    assert doc["summary"]["device_mean_kernel_ns"] == kernel_ns


def test_a_table_without_correlation_ids_is_said(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # A newer schema that renamed RUNTIME.correlationId: no launch call joined its kernel, and nothing said so (the
    # launch and attribution figures were made of no pair). Read as before, now with a warning.
    path = _damaged(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME COLUMN correlationId TO corrId")
    doc, _ = _analyze(path, capsys)
    assert (
        doc["summary"]["kernel_count"] == query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    )
    assert any(
        w.startswith("CUPTI_ACTIVITY_KIND_RUNTIME lacks column(s) correlationId")
        for w in doc["source"]["warnings"]
    )


OTHER_GLOBAL_PID = (1 << 48) + (4343 << 24)  # a second process, pid 4343


def _second_process(tmp_path: Path, *extra: str) -> Path:
    # the three kernels again, 1 ms later, launched by pid 4343 on its own "CUDA device 0"
    return _damaged(
        tmp_path,
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL",
        f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = {OTHER_GLOBAL_PID}, start = start + 1000000, "
        f'"end" = "end" + 1000000 WHERE rowid > 3',
        *extra,
    )


def test_processes_sharing_a_device_number_with_no_gpu_mapping_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Two processes each on "CUDA device 0" and no TARGET_INFO_CUDA_DEVICE to say which GPU each is: read as one
    # GPU (its kernel time the two processes' sum), with no word, where CUDA_VISIBLE_DEVICES per rank makes them
    # two GPUs. The reading stays (the export cannot tell), now said.
    path = _second_process(tmp_path)
    pids = query(
        path,
        "SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0",
    )
    doc, _ = _analyze(path, capsys)
    assert sorted(p for (p,) in pids) == [4242, 4343]
    assert doc["summary"]["device_count"] == 1
    said = [w for w in doc["source"]["warnings"] if w.startswith("several processes run GPU ops")]
    assert len(said) == 1 and "CUDA device 0: processes 4242, 4343" in said[0]


def test_processes_whose_gpus_the_export_names_are_not_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _second_process(
        tmp_path,
        "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER)",
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242), (1, 0, 4343)",
    )
    doc, _ = _analyze(path, capsys)
    assert doc["summary"]["device_count"] == 2
    assert not [w for w in doc["source"]["warnings"] if w.startswith("several processes run GPU ops")]
