"""tracelens record: with a fake ``nsys`` on PATH (a script written here that logs its argv, writes a report
for ``profile`` and copies a real SQLite export for ``export``), and with no nsys at all."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES
from tracelens.cli import main
from tracelens.errors import InputError, ToolMissingError
from tracelens.record import record_and_analyze, report_name

TINY_SQLITE = SHARED_TRACES / "nsys" / "rtx3080_tiny_nsys2026.1.sqlite"
PY = Path(sys.executable).name  # the report is named after the program: "python3", "python3.11", ...

FAKE_NSYS = """#!{python}
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[0] == "profile":
    base = args[args.index("-o") + 1]
    command = args[args.index("--force-overwrite") + 2:]
    code = subprocess.call(command)
    if os.environ.get("FAKE_NSYS_NO_REPORT") != "1":
        with open(base + ".nsys-rep", "wb") as fh:
            fh.write(b"fake report")
    sys.exit(code)
if args[0] == "export":
    if os.environ.get("FAKE_NSYS_EXPORT_FAILS") == "1":
        print("Error: the report is corrupt", file=sys.stderr)
        sys.exit(1)
    shutil.copyfile(os.environ["FAKE_NSYS_SQLITE"], args[args.index("--output") + 1])
    sys.exit(0)
sys.exit(64)
"""


@pytest.fixture
def fake_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake nsys as the only thing on PATH; returns its argv log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nsys"
    script.write_text(FAKE_NSYS.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "nsys-argv.jsonl"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_SQLITE", str(TINY_SQLITE))
    return log


def logged(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_report_name_is_the_script_or_module() -> None:
    assert report_name(["python", "train.py", "--epochs", "3"]) == "train"
    assert (
        report_name(["python3", "-m", "tracelens.templates.pytorch_train", "--steps", "5"]) == "pytorch_train"
    )
    assert report_name(["./my app"]) == "my_app"
    assert report_name(["python", "-c", "print(1)"]) == "python"


@pytest.mark.shared
@pytest.mark.skipif(not TINY_SQLITE.is_file(), reason="../shared/traces/nsys not present")
def test_record_profiles_exports_and_analyzes(
    fake_nsys: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    program = [sys.executable, "-c", "print('training output')"]
    text = record_and_analyze(program, out)

    calls = logged(fake_nsys)
    assert calls == [
        [
            "profile",
            "-t",
            "cuda,nvtx,osrt,cudnn,cublas",
            "-o",
            str(out / PY),
            "--force-overwrite",
            "true",
            *program,
        ],
        [
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "--output",
            str(out / f"{PY}.sqlite"),
            str(out / f"{PY}.nsys-rep"),
        ],
    ]
    exported = out / f"{PY}.sqlite"
    assert exported.read_bytes() == TINY_SQLITE.read_bytes()
    # The analysis of the export is what comes back; the program's own output went to stderr, not into it.
    assert text.startswith(str(exported))
    assert "Diagnosis" in text
    assert text.rstrip().endswith(f"SQLite export: {exported}")
    assert "training output" not in text
    assert "training output" in capfd.readouterr().err


@pytest.mark.shared
@pytest.mark.skipif(not TINY_SQLITE.is_file(), reason="../shared/traces/nsys not present")
def test_record_cli_prints_the_analysis(
    fake_nsys: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli-out"
    code = main(["record", "--out", str(out), "--", sys.executable, "-c", "import sys; sys.exit(3)"])
    captured = capfd.readouterr()
    assert code == 0
    assert captured.out.startswith(str(out / f"{PY}.sqlite"))
    assert "note: the profiled command exited with status 3" in captured.out


def test_no_report_from_nsys_is_one_clear_error(
    fake_nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NSYS_NO_REPORT", "1")
    with pytest.raises(InputError, match="'nsys profile' wrote no report"):
        record_and_analyze([sys.executable, "-c", "pass"], tmp_path / "out")
    assert [call[0] for call in logged(fake_nsys)] == ["profile"]


def test_failed_export_is_one_clear_error(
    fake_nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NSYS_EXPORT_FAILS", "1")
    with pytest.raises(InputError, match=r"'nsys export' failed \(exit 1\): Error: the report is corrupt"):
        record_and_analyze([sys.executable, "-c", "pass"], tmp_path / "out")


def test_stale_export_is_never_analyzed(
    fake_nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{PY}.sqlite").write_bytes(b"SQLite format 3\x00 from an earlier run")
    monkeypatch.setenv("FAKE_NSYS_EXPORT_FAILS", "1")
    with pytest.raises(InputError, match="'nsys export' failed"):
        record_and_analyze([sys.executable, "-c", "pass"], out)
    assert not (out / f"{PY}.sqlite").exists()


def test_without_nsys_the_error_names_the_manual_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    out = tmp_path / "rec"
    with pytest.raises(ToolMissingError) as info:
        record_and_analyze(["python", "train.py", "--lr", "0.1"], out)
    message = str(info.value)
    assert "\n" not in message
    assert "'nsys' is not on PATH" in message
    assert (
        shlex.join(
            [
                "nsys",
                "profile",
                "-t",
                "cuda,nvtx,osrt,cudnn,cublas",
                "-o",
                str(out / "train"),
                "--force-overwrite",
                "true",
                "python",
                "train.py",
                "--lr",
                "0.1",
            ]
        )
        in message
    )
    assert (
        shlex.join(
            [
                "nsys",
                "export",
                "--type",
                "sqlite",
                "--force-overwrite",
                "true",
                "--output",
                str(out / "train.sqlite"),
                str(out / "train.nsys-rep"),
            ]
        )
        in message
    )
    assert f"tracelens analyze {out / 'train.sqlite'}" in message
    assert not out.exists()  # nothing was created

    # Through the CLI: exit 2, one line on stderr, no traceback.
    assert main(["record", "--out", str(out), "--", "python", "train.py"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("tracelens: Nsight Systems 'nsys'")
    assert "Traceback" not in captured.err


def test_empty_command_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tracelens.errors import UsageError

    monkeypatch.setenv("PATH", os.devnull)
    with pytest.raises(UsageError):
        record_and_analyze([], tmp_path)


@pytest.mark.shared
@pytest.mark.skipif(not TINY_SQLITE.is_file(), reason="../shared/traces/nsys not present")
def test_the_profiled_program_gets_the_users_blas_setting(
    fake_nsys: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's one OpenBLAS thread (process.py) is its own: the program it profiles runs with what the user
    set (here: nothing)."""
    from tracelens import process

    # as one_thread leaves it in a CLI process (numpy is imported in this one: one_thread would set nothing)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setattr(process, "_set_here", True)
    program = [
        sys.executable,
        "-c",
        "import os; print('BLAS=' + str(os.environ.get('OPENBLAS_NUM_THREADS')))",
    ]
    record_and_analyze(program, tmp_path / "out")
    assert "BLAS=None" in capfd.readouterr().err
