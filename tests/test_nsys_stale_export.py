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

from tests.nsys_handmade_export import edited_copy, query
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


def test_a_report_replaced_by_an_older_file_is_exported_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The .nsys-rep cache was reused while it was newer than the report: a report replaced by another recording
    # whose mtime is older (cp -p, rsync -a, a tar extracted: mtimes kept) read the previous recording's export
    # (the same for run.qdrep beside run.nsys-rep, which share the cache run.tracelens.sqlite).
    from test_nsys import _fake_nsys

    first = edited_copy(tmp_path / "first.sqlite")
    second = edited_copy(
        tmp_path / "second.sqlite", "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 104"
    )
    kernels = {p: query(p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0] for p in (first, second)}
    assert kernels[first] != kernels[second]
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"the first recording")
    log = tmp_path / "nsys.log"
    monkeypatch.setenv(
        "PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    )  # the fake nsys first

    def kernel_count() -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load(report).events.column("kind").to_pylist().count("kernel")

    _fake_nsys(tmp_path / "bin", first, log)
    assert kernel_count() == kernels[first]
    # the second recording, its mtime kept from a day before the first was exported
    report.write_bytes(b"the second recording")
    day_before = (tmp_path / "run.tracelens.sqlite").stat().st_mtime_ns - 86_400 * 10**9
    os.utime(report, ns=(day_before, day_before))
    _fake_nsys(tmp_path / "bin", second, log)
    assert kernel_count() == kernels[second]
    exports = [line for line in log.read_text().splitlines() if line.startswith("export ")]
    assert len(exports) == 2
    assert kernel_count() == kernels[second] and len(log.read_text().splitlines()) == 2  # then reused
