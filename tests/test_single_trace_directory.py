"""``tracelens analyze DIR`` where DIR holds one trace: what ``nsys profile -o report1 --export sqlite`` (or
``--stats=true``) leaves, ``report1.nsys-rep`` beside ``report1.sqlite``, or a folder with one Kineto JSON.

Before, a directory with one ``.sqlite`` failed with "directory holds no trace (.json[.gz], .sqlite, .nsys-rep or
.xplane.pb)", naming the very suffix it held; a directory with one JSON file was detected as Kineto and then the
reader was handed the directory ("no such file"). The one trace is read now (the
``.sqlite`` export where the report it came from sits beside it)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tracelens.cli import main
from tracelens.ingest import detect_format, load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NSYS = FIXTURES / "nsys" / "handmade_nsys2026.sqlite"
KINETO = FIXTURES / "demo.pt.trace.json.gz"


def _analyze_json(path: Path, capsys: pytest.CaptureFixture) -> dict:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_report_and_its_export_in_one_directory_read_the_export(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    shutil.copy(NSYS, tmp_path / "report1.sqlite")
    (tmp_path / "report1.nsys-rep").write_bytes(b"not read: its export is beside it")
    kernels = sqlite3.connect(NSYS).execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert detect_format(tmp_path) == "nsys"
    doc = _analyze_json(tmp_path, capsys)
    assert doc["summary"]["kernel_count"] == kernels == 3
    assert doc["source"]["path"].endswith("report1.sqlite")


def test_a_directory_with_one_kineto_trace_reads_it(tmp_path: Path) -> None:
    # (named without ".trace.json.gz": a directory holding one is taken for a TF logdir, a case left to that reader)
    shutil.copy(KINETO, tmp_path / "worker0.json.gz")
    assert len(load(tmp_path).events) == len(load(KINETO).events) > 0


def test_a_directory_with_two_reports_and_no_export_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "a.nsys-rep").write_bytes(b"x")
    (tmp_path / "b.nsys-rep").write_bytes(b"x")
    assert main(["analyze", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "directory holds 2 traces (a.nsys-rep, b.nsys-rep): name the one to read" in err


def test_a_report_beside_its_tracelens_cache_is_the_report(tmp_path: Path) -> None:
    # tracelens's own export of run.nsys-rep (run.tracelens.sqlite, docs/formats/nsys.md) is not a second trace
    (tmp_path / "run.nsys-rep").write_bytes(b"x")
    shutil.copy(NSYS, tmp_path / "run.tracelens.sqlite")
    assert detect_format(tmp_path) == "nsys-rep"
