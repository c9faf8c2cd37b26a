"""``tracelens record -- python train.py ...``: profile a command with Nsight Systems, export, analyze.

Three steps, each one an ordinary command the user could type (and is told to, when ``nsys`` is missing):

    nsys profile -t cuda,nvtx,osrt,cudnn,cublas -o OUT/NAME --force-overwrite true COMMAND...
    nsys export --type sqlite --force-overwrite true --output OUT/NAME.sqlite OUT/NAME.nsys-rep
    tracelens analyze OUT/NAME.sqlite
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import InputError, OutputError, ToolMissingError, UsageError
from .process import user_environment

NSYS_TRACE = "cuda,nvtx,osrt,cudnn,cublas"


def report_name(command: Sequence[str]) -> str:
    """A file-name-safe base name for the report: the script's (or program's) stem, e.g. ``train``."""
    candidates = [arg for arg in command if not arg.startswith("-")]
    # "python train.py" / "python -m pkg.mod": prefer the script or module over the interpreter.
    chosen = candidates[0] if candidates else "run"
    for index, arg in enumerate(command):
        if arg.endswith(".py"):
            chosen = arg
            break
        if arg == "-m" and index + 1 < len(command):
            chosen = command[index + 1].rsplit(".", 1)[-1]
            break
    stem = Path(chosen).name.removesuffix(".py")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._") or "run"


def profile_command(command: Sequence[str], output_base: Path, nsys: str = "nsys") -> list[str]:
    return [nsys, "profile", "-t", NSYS_TRACE, "-o", str(output_base), "--force-overwrite", "true", *command]


def export_command(report: Path, sqlite: Path, nsys: str = "nsys") -> list[str]:
    return [
        nsys,
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "--output",
        str(sqlite),
        str(report),
    ]


def _manual_commands(command: Sequence[str], out_dir: Path) -> str:
    base = out_dir / report_name(command)
    steps = [
        profile_command(command, base),
        export_command(base.with_name(base.name + ".nsys-rep"), base.with_name(base.name + ".sqlite")),
        ["tracelens", "analyze", str(base.with_name(base.name + ".sqlite"))],
    ]
    return " && ".join(shlex.join(step) for step in steps)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def _run_to_stderr(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` with its output shown live on our stderr (captured and replayed when stderr has no fd)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is not None:
        return subprocess.run(argv, stdout=fd, stderr=fd, env=user_environment())
    done = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=user_environment())
    sys.stderr.write(done.stdout + done.stderr)
    return done


def record_and_analyze(command: list[str], out_dir: Path) -> str:
    """Profile ``command`` under ``nsys``, export the report to SQLite, and return the terminal analysis.

    The profiled program's own output goes to stderr so that stdout carries only the analysis. Raises
    :class:`ToolMissingError` (naming the manual commands) when ``nsys`` is not on PATH.
    """
    command = list(command)
    if not command:
        raise UsageError("record needs a command to profile, e.g. tracelens record -- python train.py")
    out_dir = Path(out_dir)
    nsys = shutil.which("nsys")
    if nsys is None:
        raise ToolMissingError(
            "Nsight Systems 'nsys' is not on PATH; install it (or add it to PATH), or run "
            f"by hand: {_manual_commands(command, out_dir)}"
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # --out names a file, or a folder under one: the user's to fix
        raise OutputError(
            f"cannot create the folder for the report: {err.strerror or err}", path=out_dir
        ) from None
    base = out_dir / report_name(command)
    report = base.with_name(base.name + ".nsys-rep")
    sqlite = base.with_name(base.name + ".sqlite")
    for stale in (report, base.with_name(base.name + ".qdrep"), sqlite):
        stale.unlink(missing_ok=True)  # so a failed run never analyzes the previous run's files

    profiled = _run_to_stderr(profile_command(command, base, nsys))
    if not report.is_file() and base.with_name(base.name + ".qdrep").is_file():
        report = base.with_name(base.name + ".qdrep")  # Nsight Systems before 2021.4
    if not report.is_file():
        raise InputError(
            f"'nsys profile' wrote no report (exit {profiled.returncode}); "
            f"is the command right? {shlex.join(command)}",
            path=report,
        )

    exported = subprocess.run(
        export_command(report, sqlite, nsys), capture_output=True, text=True, errors="replace"
    )
    if exported.returncode != 0 or not sqlite.is_file():
        raise InputError(
            f"'nsys export' failed (exit {exported.returncode}): "
            f"{_last_line(exported.stderr or exported.stdout)}",
            path=report,
        )

    from . import load
    from .analyses import analyze
    from .report import render

    text = render(analyze(load(sqlite), release_columns=True), "terminal")  # the trace is ours alone
    notes = [f"report: {report}", f"SQLite export: {sqlite}"]
    if profiled.returncode != 0:
        notes.append(f"note: the profiled command exited with status {profiled.returncode}")
    return text + ("" if text.endswith("\n") else "\n") + "\n".join(notes) + "\n"
