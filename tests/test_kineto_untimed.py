"""Kineto complete events ("ph": "X") without a usable "ts" (missing, null, not a number, or past the timeline):
the reader drops them, as it drops the profiler's own "Trace" span on purpose. They were dropped without a word
(the scanner's counts hold them among the complete events, beside that span): now both engines count them,
equally, whether the file is read as one block or many, and the load warns. Expected counts from the JSON here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracelens.ingest.kineto import reader
from tracelens.ingest.kineto.blocks import scanner


def _events(n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        # the profiler's own span (category "Trace"), dropped on purpose: never counted, with or without ts
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 1, "ts": 100.0, "dur": 9e4},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (1)", "pid": "Spans", "tid": 1, "dur": 9e4},
    ]  # fmt: skip
    for i in range(n):
        op = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 7}", "pid": 1, "tid": 5, "ts": 100.0 + 3 * i,
              "dur": 2.0, "args": {"External id": i}}  # fmt: skip
        if i % 50 == 7:
            del op["ts"]  # missing
        elif i % 50 == 19:
            op["ts"] = None  # null
        elif i % 50 == 31:
            op["ts"] = 1e30  # past the timeline (trace.MAX_TIME_NS)
        events.append(op)
        if i % 10 == 0:
            kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 110.0 + 3 * i, "dur": 1.0,
                      "args": {"correlation": i, "device": 0, "stream": 7}}  # fmt: skip
            if i % 100 == 50:
                del kernel["ts"]
            events.append(kernel)
    events.append(
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 5, "s": "t"}
    )  # no ts
    return events


def _expected(events: list[dict[str, Any]]) -> int:
    """Complete events, not the profiler's span, whose ts is no finite number within the timeline."""
    bad = 0
    for e in events:
        if e["ph"] != "X" or e["cat"] == "Trace":
            continue
        ts = e.get("ts")
        bad += not isinstance(ts, (int, float)) or ts > 1e20  # (1e30 us here: past the year 2116)
    return bad


ENGINES = ["msgspec"] + (["native"] if scanner() is not None else [])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("many_blocks", [False, True])
def test_untimed_complete_events_are_counted_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, many_blocks: bool
) -> None:
    if many_blocks:
        monkeypatch.setattr(reader, "BLOCK_BYTES", 16384)
        monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 8192)
    events = _events(3000)
    path = tmp_path / "untimed.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    want = _expected(events)
    # 3000 ops: 60 each missing, null, past the timeline; 30 of the 300 kernels without ts
    assert want == 3 * 60 + 30
    trace = reader.read(path, engine=engine)
    timed = sum(1 for e in events if e["ph"] == "X" and e["cat"] != "Trace") - want
    assert trace.store.num_rows == timed
    said = [w for w in trace.metadata.warnings if "without a usable timestamp" in w]
    assert said == [
        f'{want:,} complete event(s) ("ph": "X") without a usable timestamp ("ts" missing, not a number, or off the '
        "timeline) were dropped: they are in no figure"
    ]


def test_a_trace_whose_only_untimed_event_is_the_profilers_span_says_nothing(tmp_path: Path) -> None:
    events = [e for e in _events(40) if e["cat"] == "Trace" or (e.get("ts") is not None and e["ts"] < 1e20)]
    path = tmp_path / "span_only.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    for engine in ENGINES:
        trace = reader.read(path, engine=engine)
        assert not any("timestamp" in w for w in trace.metadata.warnings), engine
