"""An export left mid-write (``nsys export`` killed, or the file copied while a writer ran) has a hot rollback
journal beside it: SQLite must roll it back before reading, which a read-only open cannot, and the file failed
with "cannot read SQLite database (attempt to write a readonly database)": a write nobody asked for. It now
fails with one line saying what the journal means. The journal is made here by a transaction whose pages spill
to the file before the process ends without committing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracelens.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"

_WRITER = """
import os, shutil, sqlite3, sys
src, dst = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(src, isolation_level=None)
conn.execute("PRAGMA cache_size=1")  # spill the changed pages to the file: the journal is needed to undo them
conn.execute("BEGIN")
for _ in range(200):
    conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 3")
shutil.copy(src, dst)
shutil.copy(src + "-journal", dst + "-journal")
os._exit(0)  # no commit, no rollback: what a killed writer leaves
"""


def test_an_export_with_a_hot_journal_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    work = tmp_path / "writing.sqlite"
    shutil.copy(FIXTURE, work)
    path = tmp_path / "export.sqlite"
    subprocess.run([sys.executable, "-c", _WRITER, str(work), str(path)], check=True)
    assert os.path.getsize(f"{path}-journal") > 0
    code = main(["analyze", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert str(path) in err[0] and "-journal" in err[0] and "interrupted" in err[0]
    assert "attempt to write" not in err[0]
