"""An export older than the report beside it: ``nsys profile -o run --export sqlite`` left run.nsys-rep and
run.sqlite; the run was profiled again (``-f true``, no export) and run.nsys-rep replaced. ``tracelens analyze
run.sqlite``, or ``analyze DIR`` (which reads the export beside its report), diagnosed the previous recording
without a word. nsys's own tools re-export such a file; tracelens (which never writes beside the input) reads it
and says that the report beside it is newer, naming the command that refreshes it."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from tests.nsys_handmade_export import edited_copy
from tracelens.cli import main
from tracelens.ingest import load


def _export_and_report(directory: Path, report_newer: bool, suffix: str = ".nsys-rep") -> tuple[Path, Path]:
    directory.mkdir()
    export = edited_copy(directory / "run.sqlite")
    report = directory / f"run{suffix}"
    report.write_bytes(b"a report")
    t = export.stat().st_mtime
    os.utime(report, (t + 60, t + 60) if report_newer else (t - 60, t - 60))
    return export, report


@pytest.mark.parametrize("suffix", [".nsys-rep", ".qdrep"])
def test_an_export_older_than_its_report_says_so(
    tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture
) -> None:
    export, report = _export_and_report(tmp_path / "out", report_newer=True, suffix=suffix)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(export)
    stale = [w for w in trace.metadata.warnings if report.name in w]
    assert len(stale) == 1 and "newer than this export" in stale[0]
    assert "nsys export --type sqlite --force-overwrite true" in stale[0]
    # the directory reads the export beside its report: the same warning, in the report too
    assert main(["analyze", str(tmp_path / "out")]) == 0
    assert f"warning: {report.name} beside it is newer than this export" in capsys.readouterr().out


def test_an_export_newer_than_its_report_is_quiet(tmp_path: Path) -> None:
    export, report = _export_and_report(tmp_path / "out", report_newer=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(export)
    assert not [w for w in trace.metadata.warnings if report.name in w]
