"""The host table's `total` of a name is the time its rows cover on their threads: a row inside a row of the same
(kind, name) on its thread (a recursive Python frame: torch's module `_call_impl` inside `_call_impl`, as
with_stack=True records it) is in its ancestor's time already (docs/analyses.md, "host")."""

from __future__ import annotations

import gzip
import json

import tracelens
from tests.conftest import SHARED_TRACES
from tracelens.analyses import host
from tracelens.trace import Trace


def _python(name: str, start: int, end: int, tid: int = 1) -> dict:
    return {"kind": "python", "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid}


CALL = "torch/nn/modules/module.py(1743): _call_impl"


def _top(rows: list[dict]) -> dict[str, dict]:
    return {t["name"]: t for t in host.host_summary(Trace.from_rows(rows))["top"]}


def test_recursive_frames_count_their_outermost_time_once():
    # thread 1: _call_impl [0, 1000) > _call_impl [100, 900) > _call_impl [200, 300) and [400, 800);
    # forward [150, 850) between them. Thread 2: _call_impl [0, 500). Covered by _call_impl: 1000 on thread 1,
    # 500 on thread 2 = 1500 (the rows' durations sum to 1000 + 800 + 100 + 400 + 500 = 2800: before, the table
    # said 2.8 µs of _call_impl in a 1 µs host span on 2 threads).
    rows = [
        _python(CALL, 0, 1000),
        _python(CALL, 100, 900),
        _python("model.py(10): forward", 150, 850),
        _python(CALL, 200, 300),
        _python(CALL, 400, 800),
        _python(CALL, 0, 500, tid=2),
    ]
    top = _top(rows)
    assert (top[CALL]["count"], top[CALL]["total_ns"]) == (5, 1500)
    assert top["model.py(10): forward"]["total_ns"] == 700


def test_frames_that_overlap_without_nesting_count_their_union():
    # [0, 100) and [50, 150) of one name on one thread (not nested: a clock glitch): the union, 150
    top = _top([_python("f", 0, 100), _python("f", 50, 150)])
    assert top["f"]["total_ns"] == 150


def test_the_real_with_stack_trace_has_no_name_over_its_threads_time():
    # h100_bert_small_inference (with_stack=True, 2 host threads): _call_impl's rows summed to 21.8 ms in a
    # 4.87 ms host span. An independent walk of the JSON: per thread, the union of the name's intervals.
    path = SHARED_TRACES / "pytorch" / "h100_bert_small_inference_torch2.6.json.gz"
    if not path.is_file():
        return
    events = json.load(gzip.open(path))["traceEvents"]
    by_thread: dict[tuple, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "python_function" and e.get("name") == CALL:
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e.get("dur", 0)))
    union_us = 0.0
    for spans in by_thread.values():
        end = float("-inf")
        for s, e in sorted(spans):
            union_us += max(0.0, e - max(s, end))
            end = max(end, e)
    summary = host.host_summary(tracelens.load(path), top_n=10_000)
    top = {t["name"]: t for t in summary["top"]}
    assert abs(top[CALL]["total_ns"] - union_us * 1000) <= 1000  # (µs floats rounded to ns per row)
    assert all(t["total_ns"] <= summary["span_ns"] * summary["threads"] for t in summary["top"])
