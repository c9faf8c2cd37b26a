"""The analysis document as a value: the section registry, the ``summary`` block, and saved documents
(``analyze --format json``) read back by ``load_document``, ``report`` and ``diff``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES
from tests.test_diagnosis import load_case
from tracelens.analyses import REGISTRY, SECTIONS, report_sections
from tracelens.cli import main
from tracelens.document import looks_like_document, summarize
from tracelens.document.saved import dumps, type_error
from tracelens.errors import InputError
from tracelens.report import markdown, terminal

DEMO = FIXTURES / "demo.pt.trace.json.gz"
SLOW = FIXTURES / "templates" / "pytorch_slow-input_cpu.pt.trace.json.gz"


# ------------------------------------------------------------------------------------------ registry


def test_registry_is_the_one_list_of_sections() -> None:
    assert SECTIONS == [s.key for s in REGISTRY]
    assert len(set(SECTIONS)) == len(SECTIONS)
    for section in REGISTRY:
        assert callable(section.compute)
    shown = [s.key for s in report_sections()]
    assert "diagnosis" not in shown and set(shown) == set(SECTIONS) - {"diagnosis"}
    # Every renderer draws only registry sections; the rest of the document goes to its generic form.
    assert set(markdown.DRAW) <= set(SECTIONS) and set(terminal.DRAW) <= set(SECTIONS)


def test_analyze_puts_summary_after_source() -> None:
    doc = tracelens.analyze(tracelens.load(DEMO))
    assert list(doc)[:3] == ["schema_version", "source", "summary"]
    assert list(doc)[3:] == SECTIONS
    summary = doc["summary"]
    devices = doc["devices"]
    n = len(devices)
    assert summary["gpu_utilization"] == pytest.approx(sum(d["busy_ns"] / d["span_ns"] for d in devices) / n)
    assert summary["device_mean_span_ns"] == sum(d["span_ns"] for d in devices) / n
    assert summary["steps"] is not None and summary["steps"]["count"] == doc["steps"]["count"]
    assert summary["primary_cause"] == doc["diagnosis"]["primary"]["cause"]
    assert summary["device_mean_idle_by_cause"] == {
        k: v / n for k, v in doc["attribution"]["total_by_cause"].items()
    }


# ---------------------------------------------------------------------------------------- saved JSON


def _save(trace: Path, out: Path) -> Path:
    assert main(["analyze", str(trace), "--format", "json", "-o", str(out)]) == 0
    return out


def test_load_document_reads_a_saved_document(tmp_path: Path) -> None:
    saved = _save(DEMO, tmp_path / "demo.json")
    doc = tracelens.load_document(saved)
    assert doc == json.loads(saved.read_text())
    # A document saved without a summary (older tracelens) gets the same one computed.
    bare = {k: v for k, v in doc.items() if k != "summary"}
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    assert tracelens.load_document(tmp_path / "bare.json")["summary"] == summarize(doc) == doc["summary"]


def test_a_document_saved_by_schema_1_0_gets_this_versions_summary(tmp_path: Path) -> None:
    """Schema 1.0 summaries summed durations over devices under other names (gpu_span_ns, ...): reading one
    back recomputes the summary from its sections, so diff and report find the keys they read; figures the
    older sections cannot give (the utilization split: no kernel_union_ns in its devices) are null."""
    doc = json.loads(_save(DEMO, tmp_path / "demo.json").read_text())
    old = {**doc, "schema_version": "1.0"}
    old["summary"] = {"device_count": 1, "gpu_utilization": 0.5, "gpu_busy_ns": 1, "gpu_span_ns": 2}
    old["devices"] = [
        {k: v for k, v in d.items() if k not in ("kernel_union_ns", "copies_only_ns", "memsets_only_ns")}
        for d in doc["devices"]
    ]
    (tmp_path / "old.json").write_text(json.dumps(old))
    summary = tracelens.load_document(tmp_path / "old.json")["summary"]
    assert summary["device_mean_span_ns"] == doc["summary"]["device_mean_span_ns"]
    assert summary["gpu_utilization"] == doc["summary"]["gpu_utilization"]
    assert summary["utilization_by_kind"] is None
    assert main(["diff", str(tmp_path / "old.json"), str(DEMO), "-o", str(tmp_path / "d.md")]) == 0


def test_report_of_a_saved_document_equals_report_of_the_trace(tmp_path: Path) -> None:
    saved = _save(DEMO, tmp_path / "demo.json")
    assert main(["report", str(DEMO), "-o", str(tmp_path / "a.md")]) == 0
    assert main(["report", str(saved), "-o", str(tmp_path / "b.md")]) == 0
    assert (tmp_path / "a.md").read_text() == (tmp_path / "b.md").read_text()


def test_diff_of_saved_documents_equals_diff_of_the_traces(tmp_path: Path) -> None:
    a, b = _save(DEMO, tmp_path / "a.json"), _save(SLOW, tmp_path / "b.json")
    assert main(["diff", str(DEMO), str(SLOW), "-f", "json", "-o", str(tmp_path / "traces.json")]) == 0
    assert main(["diff", str(a), str(b), "-f", "json", "-o", str(tmp_path / "docs.json")]) == 0
    assert json.loads((tmp_path / "traces.json").read_text()) == json.loads(
        (tmp_path / "docs.json").read_text()
    )
    # One saved document against one trace works too.
    assert main(["diff", str(a), str(SLOW), "-o", str(tmp_path / "mixed.md")]) == 0


def test_a_document_saved_from_stdout_is_found_by_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(DEMO), "--format", "json"]) == 0
    saved = tmp_path / "demo-analysis"  # no extension: `tracelens analyze --format json > demo-analysis`
    saved.write_text(capsys.readouterr().out)
    assert looks_like_document(saved)
    assert main(["report", str(saved), "-o", str(tmp_path / "b.md")]) == 0
    assert main(["report", str(DEMO), "-o", str(tmp_path / "a.md")]) == 0
    assert (tmp_path / "a.md").read_text() == (tmp_path / "b.md").read_text()


@pytest.mark.parametrize(
    "text",
    [
        '{"schema_version": "1.0"}',
        '{"schema_version": "1.0", "source": {',
        '{"schema_version": "1.0", "source": 3}',
    ],
)
def test_bad_saved_document_is_one_line_and_exit_2(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracelens: ") and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(InputError):
        tracelens.load_document(bad)


def test_traces_are_not_taken_for_documents(tmp_path: Path) -> None:
    kineto = sorted((FIXTURES / "kineto").glob("*.json"))
    assert kineto and not any(looks_like_document(p) for p in kineto)
    assert not looks_like_document(DEMO)  # .json.gz: a trace
    # A trace object carrying traceEvents is a trace even with a schema_version key.
    odd = tmp_path / "odd.json"
    odd.write_text('{"schema_version": 1, "source": {}, "traceEvents": []}')
    assert not looks_like_document(odd)
    with pytest.raises(InputError):
        tracelens.load_document(FIXTURES / "kineto" / kineto[0].name)


# Saved documents edited or damaged deep inside a section (found by editing saved documents, 2026-11-28: each
# stopped the commands that read the field with an internal error, exit 3): bad input, one line naming the
# file, exit 2. A document of this schema version has the keys it holds checked against their declared types
# when it is read (load_document), so every command refuses it, whether or not it reads the field, and the message
# names the field's path. (A missing key is not refused there: a document saved by an earlier tracelens of the same
# schema version lacks the keys added since; a renderer that needs one is caught by the CLI's guard, below.)
EDITS = {
    "step count null": lambda d: d["summary"]["steps"].__setitem__("count", None),
    "kernel time a string": lambda d: d["kernels"].__setitem__("total_ns", "x"),
    "no summary, a device's span a string": lambda d: (
        d.pop("summary"),
        d["devices"][0].__setitem__("span_ns", "x"),
    ),
    "a list item of another type": lambda d: d["gaps"]["bucket_edges_ns"].__setitem__(1, "x"),
    "a section a string": lambda d: d.__setitem__("sync", "x"),
    "a boolean a number": lambda d: d["diagnosis"]["completeness"].__setitem__("complete", 1),
    "an integer a fraction": lambda d: d["devices"][0].__setitem__("busy_ns", 1.5),
    "a map's value of another type": lambda d: d["attribution"]["total_by_cause"].__setitem__("x", "y"),
    "an object a list": lambda d: d["summary"].__setitem__("utilization_by_kind", []),
}
PATHS = {
    "step count null": "$.summary.steps.count",
    "kernel time a string": "$.kernels.total_ns",
    "no summary, a device's span a string": "$.devices[0].span_ns",
    "a list item of another type": "$.gaps.bucket_edges_ns[1]",
    "a section a string": "$.sync",
    "a boolean a number": "$.diagnosis.completeness.complete",
    "an integer a fraction": "$.devices[0].busy_ns",
    "a map's value of another type": "$.attribution.total_by_cause[...]",
    "an object a list": "$.summary.utilization_by_kind",
}
FAILING = [(edit, command) for edit in sorted(EDITS) for command in ("report", "analyze", "diff")]


def _edited(tmp_path: Path, edit: Callable[[dict], object], version: str | None = None) -> Path:
    doc = json.loads(_save(DEMO, tmp_path / "demo.json").read_text())
    edit(doc)
    if version is not None:
        doc["schema_version"] = version
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    return edited


def _one_line_exit_2(command: str, edited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    args = [str(DEMO), str(edited)] if command == "diff" else [str(edited), "-o", str(tmp_path / "out.md")]
    assert main([command, *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(edited) in err and "damaged or edited" in err
    assert "internal error" not in err
    return err


@pytest.mark.parametrize(("edit", "command"), FAILING)
def test_an_edited_saved_document_is_one_line_and_exit_2(
    edit: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _one_line_exit_2(command, _edited(tmp_path, EDITS[edit]), tmp_path, capsys)
    assert f"- at `{PATHS[edit]}`" in err  # msgspec's message: what was expected, and where


def test_the_type_check_names_what_it_expected() -> None:
    doc = json.loads(dumps(tracelens.analyze(tracelens.load(DEMO))))
    assert type_error(doc) is None
    doc["kernels"]["total_ns"] = "x"
    assert type_error(doc) == "Expected `int`, got `str` - at `$.kernels.total_ns`"
    doc["kernels"]["total_ns"] = 1
    del doc["launch"]["latency"]["p50_ns"]
    assert type_error(doc) == "Object missing required field `p50_ns` - at `$.launch.latency`"
    assert type_error(doc, missing_keys_allowed=True) is None  # what a reader checks: the keys that are there
    doc["launch"]["latency"]["p90_ns"] = "x"
    assert (
        type_error(doc, missing_keys_allowed=True)
        == "Expected `int | null`, got `str` - at `$.launch.latency.p90_ns`"
    )


def test_a_key_missing_from_a_saved_document_is_read(tmp_path: Path) -> None:
    """A document saved by an earlier tracelens of this schema version lacks the keys added since: it is read, and
    a renderer that does without the key renders it."""
    edited = _edited(tmp_path, lambda d: d["launch"]["latency"].pop("p50_ns"))
    assert "p50_ns" not in tracelens.load_document(edited)["launch"]["latency"]
    assert main(["report", str(edited), "-o", str(tmp_path / "out.md")]) == 0


@pytest.mark.parametrize("command", ["report", "analyze", "diff"])
def test_a_key_a_renderer_needs_missing_is_bad_input(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing key passes the read's check; where a renderer needs it, the CLI's guard makes it bad input."""
    edited = _edited(tmp_path, lambda d: d["kernels"]["by_name"].__setitem__(0, {}))
    err = _one_line_exit_2(command, edited, tmp_path, capsys)
    assert "cannot render" in err


def test_a_key_the_types_do_not_declare_is_read(tmp_path: Path) -> None:
    """TypedDicts do not forbid other keys and nothing reads them: a document with one renders as without it
    (the document is kept as read, not replaced by msgspec's converted copy, which would drop it)."""
    edited = _edited(tmp_path, lambda d: d["kernels"].__setitem__("note", "mine"))
    assert tracelens.load_document(edited)["kernels"]["note"] == "mine"  # type: ignore[typeddict-item]
    assert main(["report", str(edited), "-o", str(tmp_path / "b.md")]) == 0
    assert main(["report", str(DEMO), "-o", str(tmp_path / "a.md")]) == 0
    assert (tmp_path / "a.md").read_text() == (tmp_path / "b.md").read_text()


# What the types cannot check, so the CLI's guard (cli._saved_documents_checked) stays: a cause's evidence is
# dict[str, Any] (its keys and types depend on the cause), and a document of an older schema version is read
# unchecked (the types describe this version's).
def _evidence_strings(doc: dict) -> None:
    for cause in (doc["diagnosis"]["primary"], *doc["diagnosis"]["causes"]):
        cause["evidence"] = {key: "x" for key in cause["evidence"]}


@pytest.mark.parametrize("command", ["report", "analyze"])
def test_evidence_of_another_type_passes_the_types_and_is_still_bad_input(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "case.json"
    saved.write_text(dumps(tracelens.analyze(load_case("memcpy"))))
    doc = json.loads(saved.read_text())
    _evidence_strings(doc)
    assert type_error(doc) is None  # valid by type: the renderer of the cause's evidence finds strings
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main([command, str(edited), "-o", str(tmp_path / "out.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(edited) in err and "cannot render" in err


@pytest.mark.parametrize("command", ["report", "analyze", "diff"])
def test_an_edited_document_of_an_older_version_is_still_bad_input(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = _edited(tmp_path, lambda d: d["kernels"]["by_name"].__setitem__(0, {}), version="1.0")
    assert tracelens.load_document(edited)["schema_version"] == "1.0"  # read unchecked
    _one_line_exit_2(command, edited, tmp_path, capsys)


@pytest.mark.parametrize("version", ["2.0", "1.12", "9", "one.one", "", None])
def test_a_document_of_a_newer_or_unknown_schema_is_refused(
    version: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A document saved by a newer tracelens (schema 2.0) was read unchecked as if it were an older one: its keys
    may mean something else (as 1.1's summary does against 1.0's), so its report or diff could be wrong with no
    word said. Refused, one line naming the file and both versions, exit 2; "1.0" and "1.1" still read."""
    doc = json.loads(_save(DEMO, tmp_path / "demo.json").read_text())
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**doc, "schema_version": version}))
    capsys.readouterr()
    for command in (["report", str(newer)], ["diff", str(newer), str(DEMO)], ["analyze", str(newer)]):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(newer) in err and "schema version" in err, err
        assert "1.1" in err
    with pytest.raises(InputError):
        tracelens.load_document(newer)
