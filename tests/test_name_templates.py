"""Host and range tables group instances of one thing under their template name (docs/analyses.md, "ranges",
"host"): emit_nvtx per-call payloads, numbered step markers; Python thread-start frames are left out of the
host top list. Counts are checked against direct SQLite/JSON queries written here."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3

import pytest

from tests.conftest import shared_traces
from tests.test_report_golden import golden_trace
from tracelens import load
from tracelens.analyses import analyze
from tracelens.analyses.host import host_summary
from tracelens.analyses.names import is_thread_bootstrap, name_template
from tracelens.analyses.ranges import range_summary

MS = 1_000_000


@pytest.mark.parametrize(
    ("name", "template"),
    [
        ("aten::is_nonzero, op_id = 317126", "aten::is_nonzero"),
        ("aten::mm, seq = 12, op_id = 5, sizes = [[8, 64], [64, 32]]", "aten::mm"),
        ("aten::linear, sizes = [[1, 2]]", "aten::linear"),
        ("ProfilerStep#12", "ProfilerStep#N"),
        ("ProfilerStep#0", "ProfilerStep#N"),
        ("Optimizer.step#SGD.step", "Optimizer.step#SGD.step"),
        ("forward, backward", "forward, backward"),  # a comma without a payload key: a name of its own
        ("#3", "#3"),
        ("tracelens/data", "tracelens/data"),
    ],
)
def test_name_template(name: str, template: str) -> None:
    assert name_template(name) == template


def test_thread_bootstrap_names() -> None:
    assert is_thread_bootstrap("threading.py(1032): _bootstrap")
    assert is_thread_bootstrap("threading.py(1075): _bootstrap_inner")
    assert is_thread_bootstrap("threading.py(1012): run")
    assert is_thread_bootstrap("/usr/lib/python3.10/threading.py(1016): _bootstrap_inner")
    assert is_thread_bootstrap("multiprocessing/process.py(314): _bootstrap")
    assert is_thread_bootstrap("multiprocessing/process.py(108): run")
    assert is_thread_bootstrap("multiprocessing/spawn.py(122): spawn_main")
    assert not is_thread_bootstrap("multiprocessing/queues.py(100): get")
    assert not is_thread_bootstrap("train.py(12): run")
    assert not is_thread_bootstrap("threading.py(300): wait")


def test_step_markers_are_one_host_row() -> None:
    # golden_trace: ProfilerStep#0 and ProfilerStep#1, 10 ms each, on one thread
    top = {(r["kind"], r["name"]): r for r in host_summary(golden_trace())["top"]}
    assert top[("step", "ProfilerStep#N")] == {
        "kind": "step",
        "name": "ProfilerStep#N",
        "count": 2,
        "total_ns": 20 * MS,
        "names": 2,
    }
    assert not any(name.startswith("ProfilerStep#") and name != "ProfilerStep#N" for _, name in top)


FASTVIDEO = shared_traces("nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")

# The template in SQL: the text before the first ", " when a payload key follows it.
_TEMPLATE_SQL = """
WITH t AS (
  SELECT COALESCE(n.text, s.value) AS text, n."end" - n.start AS ns
  FROM NVTX_EVENTS n LEFT JOIN StringIds s ON n.textId = s.id
  WHERE n.eventType = 59 AND n."end" IS NOT NULL),
p AS (SELECT text, ns, instr(text, ', ') AS at FROM t)
SELECT CASE WHEN at > 1 AND (substr(text, at + 2) LIKE 'seq = %' OR substr(text, at + 2) LIKE 'op_id = %'
                              OR substr(text, at + 2) LIKE 'sizes = %' OR substr(text, at + 2) LIKE 'input_op_ids = %')
            THEN substr(text, 1, at - 1) ELSE text END AS template,
       COUNT(*), COUNT(DISTINCT text), SUM(ns)
FROM p GROUP BY template
"""


@pytest.mark.skipif(not FASTVIDEO, reason="../shared/traces/nsys not present")
def test_fastvideo_ranges_grouped_by_template() -> None:
    path = FASTVIDEO[0]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        expected = {row[0]: row[1:] for row in db.execute(_TEMPLATE_SQL)}
        instances, texts = db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT COALESCE(n.text, s.value)) FROM NVTX_EVENTS n "
            'LEFT JOIN StringIds s ON n.textId = s.id WHERE n.eventType = 59 AND n."end" IS NOT NULL'
        ).fetchone()
    assert (instances, texts) == (16_782, 16_582)  # the case issue 26 names: one name per op_id before
    trace = load(path)
    out = range_summary(trace, limit=10_000)
    assert (out["count"], out["texts"], out["names"]) == (instances, texts, len(expected))
    assert out["names"] < 300  # a table a person can read
    assert len(out["ranges"]) == len(expected)
    for row in out["ranges"]:
        count, distinct_texts, ns = expected[row["name"]]
        assert (row["count"], row["texts"], row["cpu_ns"]) == (count, distinct_texts, ns), row["name"]
    # the host table groups the same way: its annotation rows are the templates, with the same counts
    for row in host_summary(trace)["top"]:
        assert not re.search(r", (seq|op_id|sizes) = ", row["name"])
        if row["kind"] == "annotation":
            assert (row["count"], row["names"], row["total_ns"]) == expected[row["name"]]


BERT = shared_traces("pytorch", "h100_bert_small_inference_torch2.6.json.gz")


@pytest.mark.skipif(not BERT, reason="../shared/traces/pytorch not present")
def test_thread_bootstrap_frames_folded() -> None:
    with gzip.open(BERT[0], "rt") as f:
        events = json.load(f)["traceEvents"]
    frames = [
        e
        for e in events
        if e.get("ph") == "X"
        and re.fullmatch(
            r"threading\.py\(\d+\): (_bootstrap|_bootstrap_inner|run)|multiprocessing/process\.py\(\d+\): "
            r"(_bootstrap|run)|multiprocessing/spawn\.py\(\d+\): (spawn_main|_main)",
            str(e.get("name")),
        )
    ]
    assert frames  # the trace records them: the test can fail
    host = analyze(load(BERT[0]), sections=["host"])["host"]
    assert host["thread_bootstrap_rows"] == len(frames)
    assert not any(is_thread_bootstrap(r["name"]) for r in host["top"])
