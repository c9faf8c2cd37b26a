"""``.nsys-rep`` reports: export once to SQLite with the ``nsys`` tool and reuse the export while it is fresh.

The cache sits beside the report (``<report>.tracelens.sqlite``) when that directory is writable, else in
``~/.cache/tracelens/``. It is reused while its mtime is the report's (set so when it is written). The export goes to a temporary
name first and is renamed into place, so an interrupted export never poses as a finished one.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from ...errors import InputError, ToolMissingError, not_found

CACHE_SUFFIX = ".tracelens.sqlite"


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tracelens"


def cache_path(report: Path) -> Path:
    """Where the SQLite export of ``report`` is (or will be) kept."""
    report = Path(report).resolve()
    stem = report.name.rsplit(".", 1)[0]
    if os.access(report.parent, os.W_OK):
        return report.with_name(stem + CACHE_SUFFIX)
    digest = hashlib.sha256(str(report).encode()).hexdigest()[:16]
    return user_cache_dir() / f"{stem}-{digest}{CACHE_SUFFIX}"


def export_command(report: Path, output: Path) -> list[str]:
    return [
        "nsys",
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "--output",
        str(output),
        str(report),
    ]


def export_report(report: Path) -> Path:
    """The SQLite export of ``report``: the cached one if fresh, else a new ``nsys export``."""
    report = Path(report)
    if not report.is_file():
        raise not_found(report) if not report.exists() else InputError("not a file", path=report)
    cache = cache_path(report)
    # Fresh when its mtime is the report's, to the ns (set so below): "newer than the report" reused the export of
    # a report replaced by an older file (cp -p, rsync -a, tar keep mtimes), and of run.qdrep beside run.nsys-rep
    # (one cache name for both)
    recorded = report.stat().st_mtime_ns
    if cache.is_file() and cache.stat().st_mtime_ns == recorded:
        return cache
    nsys = shutil.which("nsys")
    manual = shlex.join(["nsys", "export", "--type", "sqlite", "--output", str(cache), str(report)])
    if nsys is None:
        raise ToolMissingError(
            f"reading a .nsys-rep needs the Nsight Systems 'nsys' tool, which is not on PATH; "
            f"export it yourself with: {manual}  and pass the .sqlite file",
            path=report,
        )
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_name(f"{cache.name}.partial-{os.getpid()}.sqlite")
    command = export_command(report, partial)
    command[0] = nsys
    try:
        proc = subprocess.run(command, capture_output=True, text=True, errors="replace")
        if proc.returncode != 0 or not partial.is_file():
            lines = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
            raise InputError(f"'nsys export' failed (exit {proc.returncode}): {lines[-1]}", path=report)
        os.utime(partial, ns=(time.time_ns(), recorded))  # the report's mtime: the export of this report
        os.replace(partial, cache)
    finally:
        partial.unlink(missing_ok=True)
    return cache


def newer_report_warning(export: Path) -> str | None:
    """A warning where a report of the export's name (``run.nsys-rep`` or ``run.qdrep`` beside ``run.sqlite``) is
    newer than the export: the run was profiled again and the export is of the previous recording (nsys's own
    tools re-export it; tracelens writes nothing beside its input). None otherwise."""
    export = Path(export)
    if not export.name.lower().endswith(".sqlite"):
        return None
    stem = export.name[: -len(".sqlite")]
    try:
        exported = export.stat().st_mtime
        for suffix in (".nsys-rep", ".qdrep"):
            report = export.with_name(stem + suffix)
            if report.is_file() and report.stat().st_mtime > exported:
                command = shlex.join(["nsys", *export_command(report, export)[1:]])
                return (
                    f"{report.name} beside it is newer than this export: the export may be of an earlier "
                    f"recording; refresh it with {command}, or analyze the report"
                )
    except OSError:
        return None  # (a sibling that cannot be looked at says nothing about the export)
    return None
