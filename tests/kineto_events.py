"""Hand-built Kineto (PyTorch profiler) JSON for tests: one complete event, and a trace file of events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def complete_event(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, **args: Any) -> dict:
    """A complete ("ph": "X") event with its ``args``."""
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def write_trace(tmp_path: Path, events: list[dict], **top: Any) -> Path:
    """``tmp_path/trace.json``: the events as ``traceEvents`` beside the top-level keys ``top``."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **top}))
    return path
