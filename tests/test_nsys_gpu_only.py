"""A GPU-only Nsight Systems export (CUPTI_ACTIVITY_KIND_RUNTIME absent: nsys -t cuda with the API trace lost, or
an export cut to the GPU tables): idle time there cannot be blamed on, or looked for in, a launching thread the
trace does not have. Before, the unexplained-idle finding spoke of "its launching thread" and its fix asked for OS
runtime tracing and CPU sampling; now it says no CUDA API call is recorded and asks for the host side first.
Built from the committed handmade 2026 fixture (its GPU idle: 20 µs of the 59 µs span)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest

from tracelens.cli import main

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"


def _analyze(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["analyze", "--format", "json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("keep_nvtx", [True, False])
def test_gpu_only_export_asks_for_the_host_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keep_nvtx: bool
) -> None:
    path = tmp_path / "gpu_only.sqlite"
    shutil.copy(FIXTURE, path)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME")
    if not keep_nvtx:
        db.execute("DROP TABLE NVTX_EVENTS")
    db.commit()
    db.close()
    doc = _analyze(path, capsys)
    primary = doc["diagnosis"]["primary"]
    assert primary["cause"] == "unexplained_idle"
    assert primary["lost_ns"] == 20_000  # every idle gap: nothing host-side explains any of it
    assert primary["evidence"]["remedy"] == "no_api"
    assert primary["fix"].startswith("The trace records no CUDA/HIP API call")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["analyze", str(path)]) == 0
    text = capsys.readouterr().out
    assert "launching thread to look at" in text
    assert "no recorded activity on its launching thread" not in text


def test_export_with_api_calls_keeps_untraced(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _analyze(FIXTURE, capsys)
    assert doc["diagnosis"]["primary"]["evidence"]["remedy"] == "untraced"
