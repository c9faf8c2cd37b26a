"""An NVTX range recorded with neither ``text`` nor ``textId`` (its name null in the table) was a blank row in the
ranges table and the host section's top names, in the terminal and the markdown report: it is listed as
``(no name)`` (``analyses.names.NO_NAME``). Built from the committed handmade 2026 export, one push/pop range
(eventType 59) added on its thread: 2 µs, launching nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest

from tracelens.analyses.names import NO_NAME
from tracelens.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"


def _with_unnamed_range(path: Path, text: str | None) -> Path:
    shutil.copy(FIXTURE, path)
    db = sqlite3.connect(path)
    (tid,) = db.execute("SELECT globalTid FROM NVTX_EVENTS WHERE text = 'forward'").fetchone()
    db.execute(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) "
        "VALUES (1000010000, 1000012000, 59, ?, ?, NULL, 0)",
        (text, tid),
    )
    db.commit()
    db.close()
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("text", [None, ""])
def test_range_without_text_is_named_not_blank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None
) -> None:
    path = _with_unnamed_range(tmp_path / "unnamed.sqlite", text)
    doc = json.loads(_run(["analyze", "--format", "json", str(path)], capsys))
    ranges = {r["name"]: r for r in doc["ranges"]["ranges"]}
    assert "" not in ranges
    assert ranges[NO_NAME]["count"] == 1 and ranges[NO_NAME]["cpu_ns"] == 2_000
    assert ranges[NO_NAME]["gpu_ops"] == 0
    assert {"kind": "annotation", "name": NO_NAME} in [
        {k: t[k] for k in ("kind", "name")} for t in doc["host"]["top"]
    ]
    assert not any(t["name"] == "" for t in doc["host"]["top"])
    terminal = _run(["analyze", str(path)], capsys)
    assert f" {NO_NAME} " in terminal
    out = tmp_path / "report.md"
    _run(["report", str(path), "-o", str(out)], capsys)
    report = out.read_text()
    assert f"| {NO_NAME} | 1 | 2 µs |" in report  # the ranges table's row
    assert f"| annotation | {NO_NAME} | 1 | 2 µs |" in report  # the host side's
