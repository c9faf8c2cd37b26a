"""NVTX content of valid Nsight Systems exports that the reader refused as damaged.

- An export whose only rows are NVTX ranges still open when capture stopped (``end`` null: nsys writes no end for
  a range never closed), e.g. a capture that recorded annotations and no CUDA activity: the open ends ran "to
  the trace's last end", of which there was none, and the file was refused ("timestamps span more than 2^62
  ns: a damaged export").
- A range named like a step marker whose number no int64 holds (``tracelens/step#99999999999999999999999``: user
  text): refused as "a table holds values of an unexpected type or size"; it is no step marker (the shared
  rule, ``tracelens/event_names.py``), so it is read as an annotation.

Built in tmp_path from the hand-built fixture; expectations from SQL over the same file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nsys_handmade_export import edited_copy, query
from tracelens.cli import main
from tracelens.event_names import step_number
from tracelens.ingest import load

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"
EVENT_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
)


def _edited(tmp_path: Path, *statements: str) -> Path:
    return edited_copy(tmp_path / "edited.sqlite", *statements)


def test_an_export_of_open_ranges_only_is_read(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _edited(
        tmp_path,
        *(f"DELETE FROM {t}" for t in EVENT_TABLES),
        'DELETE FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NOT NULL',
    )
    open_ranges = query(path, 'SELECT start FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NULL')
    assert open_ranges == [(1_000_066_000,)]  # still_open, the fixture's one range open at capture end
    trace = load(path)
    ranges = trace.df[trace.df.kind == "annotation"]
    # Nothing recorded after it: it ends where it starts (at the trace's last timestamp, its own start).
    assert len(ranges) == 1
    assert int(ranges.start_ns.iloc[0]) + trace.metadata.time_origin_ns == 1_000_066_000
    assert int(ranges.end_ns.iloc[0]) == int(ranges.start_ns.iloc[0])
    assert main(["analyze", str(path)]) == 0
    capsys.readouterr()


def test_open_ranges_after_every_end_end_at_the_last_start(tmp_path: Path) -> None:
    # Two open ranges, nothing closed: each runs to the trace's last timestamp, the later one's start.
    path = _edited(
        tmp_path,
        *(f"DELETE FROM {t}" for t in EVENT_TABLES),
        'DELETE FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND "end" IS NOT NULL',
        'INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) '
        "SELECT 1000050000, NULL, 59, 'earlier_open', globalTid, 0 FROM NVTX_EVENTS WHERE text = 'still_open'",
    )
    last = query(path, "SELECT max(start) FROM NVTX_EVENTS WHERE eventType IN (59, 60)")[0][0]
    trace = load(path)
    ranges = trace.df[trace.df.kind == "annotation"].set_index("name")
    origin = trace.metadata.time_origin_ns
    assert int(ranges.loc["earlier_open", "end_ns"]) + origin == last
    assert int(ranges.loc["still_open", "end_ns"]) + origin == last


def test_a_step_number_no_int64_holds_is_an_annotation(tmp_path: Path) -> None:
    big = "tracelens/step#99999999999999999999999"
    assert step_number(big) is None
    assert step_number("tracelens/step#9223372036854775807") == 2**63 - 1
    path = _edited(
        tmp_path, f"UPDATE NVTX_EVENTS SET text = '{big}', textId = NULL WHERE text = 'tracelens/step#1'"
    )
    trace = load(path)
    row = trace.df[trace.df.name == big]
    assert list(row.kind) == ["annotation"]


def test_an_export_without_any_event_row_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # e.g. nsys profile --trace=none --sample=cpu: scheduling and sampling tables only. docs/analyses.md: a trace
    # with no timed event at all is bad input (the Kineto and xplane readers refuse one); this one read as a
    # "0 events" trace with a verdict.
    path = _edited(tmp_path, *(f"DROP TABLE {t}" for t in (*EVENT_TABLES, "NVTX_EVENTS")))
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "no event" in err[0]
