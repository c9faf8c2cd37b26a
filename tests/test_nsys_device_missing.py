"""GPU rows of an Nsight Systems export without a device (a damaged or hand-edited export: nsys writes every
``deviceId``). Read as they were, the rows were kernels of no GPU: every GPU analysis left them out and the
diagnosis called the trace healthy ("no bottleneck to fix", GPUs 0) while it holds kernels. Built in tmp_path
from the hand-built fixture; expectations from SQL over the same file."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tracelens.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _damaged(tmp_path: Path, *statements: str) -> Path:
    path = tmp_path / "damaged.sqlite"
    shutil.copy(FIXTURE, path)
    path.chmod(0o644)
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def _analyze(path: Path, capsys: pytest.CaptureFixture) -> tuple[dict, str]:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_gpu_tables_without_a_device_column_are_not_a_healthy_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(tmp_path, *(f"ALTER TABLE {t} DROP COLUMN deviceId" for t in GPU_TABLES))
    doc, _ = _analyze(path, capsys)
    assert doc["diagnosis"]["primary"]["cause"] == "incomplete_trace"
    warnings = " ".join(doc["source"]["warnings"])
    for table in GPU_TABLES:
        assert f"{table} lacks column(s) deviceId" in warnings


def test_gpu_rows_without_a_device_are_left_out_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(
        tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = NULL WHERE correlationId = 102"
    )
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    kept = conn.execute(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId IS NOT NULL"
    ).fetchone()[0]
    dropped = conn.execute(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId IS NULL"
    ).fetchone()[0]
    conn.close()
    with pytest.warns(UserWarning, match="1 GPU row\\(s\\) have no device"):  # printed on stderr by the CLI
        doc, _ = _analyze(path, capsys)
    assert (kept, dropped) == (2, 1)
    assert doc["summary"]["kernel_count"] == kept
    assert f"{dropped} GPU row(s) have no device" in " ".join(doc["source"]["warnings"])


def test_every_gpu_row_without_a_device_is_not_a_healthy_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _damaged(tmp_path, *(f"UPDATE {t} SET deviceId = NULL" for t in GPU_TABLES))
    with pytest.warns(UserWarning, match="6 GPU row\\(s\\) have no device"):
        doc, _ = _analyze(path, capsys)
    assert doc["diagnosis"]["primary"]["cause"] == "incomplete_trace"
