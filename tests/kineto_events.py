"""Hand-built Kineto (PyTorch profiler) JSON for tests: one complete event, and a trace file of events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracelens.ingest import kineto


def complete_event(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, **args: Any) -> dict:
    """A complete ("ph": "X") event with its ``args``."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def write_trace(tmp_path: Path, events: list[dict], **top: Any) -> Path:
    """``tmp_path/trace.json``: the events as ``traceEvents`` beside the top-level keys ``top``."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **top}))
    return path


@pytest.fixture(params=["native", "msgspec"], name="engine")
def both_engines(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test run with the native scanner and with the msgspec engine (the scanner switched off): both must
    read a trace alike. Import ``both_engines`` into a test module to use it as ``engine``."""
    if request.param == "msgspec":
        monkeypatch.setattr(kineto, "_kineto_scan", None)
    elif kineto._kineto_scan is None:
        pytest.skip("native scanner not built")
    return str(request.param)
