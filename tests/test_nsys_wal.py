"""An export in WAL mode (journal_mode=wal set by a tool that indexed or edited it; the header's read/write
versions 2). A read-only open of a WAL database makes SQLite create the ``-shm`` index (and an empty ``-wal``) beside
it: reading wrote two files next to the user's input, and in a directory the reader cannot write (a shared,
read-only dataset) the file failed with "cannot read SQLite database (attempt to write a readonly database)".
Where no ``-wal`` holds commits, every page is in the file itself: it is opened immutable, nothing created. Where
one does, SQLite reads it as before (the commits are there and nowhere else)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nsys_handmade_export import FIXTURE, edited_copy, query
from tracelens.cli import main
from tracelens.ingest.nsys import database


def _wal_export(path: Path) -> Path:
    edited_copy(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode=wal").fetchone() == ("wal",)
    conn.close()  # a clean close checkpoints and removes -wal and -shm: the header stays in WAL mode
    assert path.read_bytes()[18:20] == b"\x02\x02"
    return path


def _kernels(capsys: pytest.CaptureFixture, path: Path) -> int:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    return sum(d["kernel_count"] for d in json.loads(capsys.readouterr().out)["devices"])


@pytest.mark.parametrize("engine", ["pages", "sqlite3", "adbc"])
def test_a_wal_export_is_read_without_creating_files_beside_it(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("TRACELENS_NSYS_ENGINE", engine)
    path = _wal_export(tmp_path / "wal.sqlite")
    before = sorted(p.name for p in tmp_path.iterdir())
    (kernels,) = query(FIXTURE, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]
    assert _kernels(capsys, path) == kernels
    assert sorted(p.name for p in tmp_path.iterdir()) == before == ["wal.sqlite"]


_WRITER = """
import os, shutil, sqlite3, sys
src, dst = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(src)
conn.execute("PRAGMA wal_autocheckpoint=0")  # the commit stays in the -wal file
conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
conn.commit()
shutil.copy(src, dst)
shutil.copy(src + "-wal", dst + "-wal")
os._exit(0)  # no close: no checkpoint
"""


def test_commits_still_in_the_wal_file_are_read(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    work = _wal_export(tmp_path / "work.sqlite")
    path = tmp_path / "export.sqlite"
    subprocess.run([sys.executable, "-c", _WRITER, str(work), str(path)], check=True)
    assert Path(f"{path}-wal").stat().st_size > 0
    (in_file,) = query(FIXTURE, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]
    (kernels,) = query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]
    assert kernels == in_file + 1
    assert _kernels(capsys, path) == kernels


def test_a_wal_file_that_cannot_be_applied_read_only_is_one_clear_line(tmp_path: Path) -> None:
    # (as a user who cannot write the directory: SQLite needs the -shm index to read the -wal file's commits)
    path = tmp_path / "export.sqlite"
    path.write_bytes(b"")
    Path(f"{path}-wal").write_bytes(b"x" * 64)
    err = database._input_error(sqlite3.OperationalError("attempt to write a readonly database"), path)
    assert "export.sqlite-wal beside it holds commits not yet in the file" in str(err)
