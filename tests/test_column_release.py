"""Event columns released after their last reader (``analyze(..., release_columns=True)``, as the CLI runs it): the
table of readers (``analyses.column_release.COLUMN_READERS``) against the reads analyze makes, the document the
same byte for byte with and without releasing, a read of a released column an internal error naming the column and
the reader, and a caller's trace left alone by default."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import shared_traces

import tracelens
import tracelens.analyses as analyses
from tests.goldens import FIXTURE_TRACES, fixture_name
from tracelens.analyses import MEMO_READERS, RECOMPUTED, REGISTRY, column_release, columns, whatif
from tracelens.analyses.column_release import COLUMN_READERS, KERNEL_LAUNCHES, ColumnRelease
from tracelens.analyses.columns import event_columns, release_columns
from tracelens.analyses.derived import memo_family, reading_as
from tracelens.cli import main
from tracelens.errors import TracelensError
from tracelens.reads import ColumnReleasedError, recording_column_reads
from tracelens.report import render
from tracelens.trace import EVENT_COLUMNS

ROOT = Path(__file__).resolve().parent.parent
# every trace the project produces (the goldens' and the hand-built cases': completeness/, causes/, robust/), and
# real ones
TRACES = [
    *sorted(
        {
            *FIXTURE_TRACES,
            *(
                p
                for p in (ROOT / "fixtures").rglob("*")
                if p.is_file() and p.name.endswith((".json", ".json.gz", ".sqlite", ".pb"))
            ),
        }
    ),
    *shared_traces("nsys", "*.sqlite"),
    *shared_traces("pytorch", "*.json.gz"),
    *shared_traces("tf", "*.pb"),
]
NSYS = ROOT / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"


def _undeclared(log: list[tuple[str | None, str | None, str]], readers: dict[str, frozenset[str]]) -> set:
    """The reads of a declared column by a reader the table does not name: a read inside the computation of a
    shared value counts for that value (any of its readers may compute it), else for the section."""
    out = set()
    for section, computing, column in log:
        if column not in readers:
            continue  # not released: held to the end
        declared = readers[column]
        value = memo_family(computing) if computing else None
        if section not in declared and value not in declared:
            out.add((section, value, column))
    return out


@pytest.mark.parametrize(
    "path", TRACES, ids=[fixture_name(p) if "fixtures" in str(p) else p.name for p in TRACES]
)
def test_released_columns_leave_the_document_unchanged_and_every_read_is_declared(path: Path) -> None:
    try:
        trace = tracelens.load(path)
    except TracelensError:
        pytest.skip("bad input (refused at load: nothing to analyze)")
    want = render(tracelens.analyze(tracelens.load(path)), "json")
    with recording_column_reads() as log:
        got = render(analyses.analyze(trace, release_columns=True), "json")
    assert got == want
    # every read of a column the table lists is by a reader it names (else a schedule that ran that reader after
    # the release would fail); the run above raised on any read of a column already released
    assert _undeclared(log, COLUMN_READERS) == set()
    stored = set(dict.keys(trace.store.columns))
    if {"grid_x", "depth"} & stored:  # released before the first section: no section reads them
        assert {"grid_x", "depth"} & stored <= set(trace.store.released)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_trace_too_large_to_replay_releases_the_replay_columns_early_with_the_same_document(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(whatif, "MAX_POINTS", 0)  # every trace too large: the section says so and stops
    want = render(analyses.analyze(tracelens.load(NSYS), threads=threads), "json")
    trace = tracelens.load(NSYS)
    readers, _ = column_release.run_readers(trace, analyses.SECTIONS, MEMO_READERS)
    assert "whatif" not in readers["stream"] and "whatif" in readers["device"]
    with recording_column_reads() as log:
        got = render(analyses.analyze(trace, threads=threads, release_columns=True), "json")
    assert got == want
    assert _undeclared(log, readers) == set()
    released = trace.store.released
    # stream's last readers: the launch pairs (held) and communication, not the skipped replay
    assert released["stream"] != "whatif" and released["copy_kind"] != "whatif"


def test_analyze_leaves_a_callers_trace_whole_unless_asked() -> None:
    trace = tracelens.load(NSYS)
    first = render(analyses.analyze(trace), "json")
    assert trace.store.released == {}
    assert render(analyses.analyze(trace), "json") == first  # analyzed again: the same
    analyses.analyze(trace, release_columns=True)
    assert "grid_x" in trace.store.released


def test_the_cli_releases_the_columns_of_the_trace_it_loaded_with_the_same_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[str] = []
    release = columns.release_columns

    def noted(trace: tracelens.Trace, names: list[str], after: str) -> None:
        released.extend(names)
        release(trace, names, after)

    monkeypatch.setattr(columns, "release_columns", noted)
    out = tmp_path / "doc.json"
    assert main(["analyze", str(NSYS), "--format", "json", "-o", str(out)]) == 0
    assert "grid_x" in released
    want = render(tracelens.analyze(tracelens.load(NSYS)), "json")
    assert out.read_text(encoding="utf-8").strip() == want.strip()


def test_a_read_of_a_released_column_raises_naming_the_column_and_the_reader() -> None:
    trace = tracelens.load(NSYS)
    cols = event_columns(trace)
    assert cols.device.size == trace.num_events  # held before
    release_columns(trace, ["device", "stream", "start_ns"], after="memcpy")
    reads = [
        lambda: cols.device,
        lambda: cols.start,
        lambda: cols.stream,
        lambda: cols.at("stream", np.arange(3)),
        lambda: trace.store.numpy("device"),
        lambda: trace.take("stream", np.arange(3)),
        lambda: trace.store.has("device"),
        lambda: trace.store.columns.get("start_ns"),
    ]
    for read in reads:
        with reading_as("ops"), pytest.raises(ColumnReleasedError) as error:
            read()
        message = str(error.value)
        assert "'ops'" in message and "'memcpy'" in message
        assert any(f"'{column}'" in message for column in ("device", "stream", "start_ns"))
    assert cols.pid.size == trace.num_events  # the others stay
    assert trace.store.has("pid") and not trace.store.has("graph_id_never_stored")


def test_event_columns_built_after_a_release_leave_the_released_out() -> None:
    trace = tracelens.load(NSYS)
    trace.store.release(["tid"], "host")
    cols = event_columns(trace)
    assert cols.pid.size == trace.num_events
    with reading_as("ranges"), pytest.raises(ColumnReleasedError, match="'tid'.*'host'"):
        _ = cols.tid


def test_column_release_names_each_column_once_after_its_last_reader() -> None:
    readers = {"a": {"s1", "s2"}, "b": {"F"}, "c": set(), "d": {"G"}, "e": {"s4"}}
    shared = {"F": {"s1", "s3"}, "G": {"s2"}}
    release = ColumnRelease(readers, shared, ["s1", "s2", "s3", "s4"], recomputed={"G": ["s3"]})
    held: set[str] = set()
    assert release.due(None, held.__contains__) == ["c"]  # no reader in the run
    assert release.due("s1", held.__contains__) == []
    held.add("G")  # G held: its readers no longer read d, but s3 computes it again
    assert release.due("s2", held.__contains__) == ["a"]
    held.add("F")  # F held: no reader of F computes it again, so b may go before s3 has run
    assert release.due("s3", held.__contains__) == ["b", "d"]
    assert release.due("s4", held.__contains__) == []  # the run's last section: what is left stays


def test_a_shared_value_not_held_keeps_its_columns_until_its_readers_are_done() -> None:
    release = ColumnRelease({"b": {"F"}}, {"F": {"s1", "s2"}}, ["s1", "s2", "s3"])
    assert release.due(None, lambda value: False) == []
    assert release.due("s1", lambda value: False) == []
    assert release.due("s2", lambda value: False) == ["b"]  # nobody left to compute it


def test_the_table_names_known_columns_sections_and_shared_values() -> None:
    sections = {s.key for s in REGISTRY}
    values = set(MEMO_READERS) | {KERNEL_LAUNCHES}
    assert set(COLUMN_READERS) <= set(EVENT_COLUMNS)
    for readers in COLUMN_READERS.values():
        assert readers <= sections | values
    assert set(RECOMPUTED) <= set(MEMO_READERS)
