"""On every real trace in ../shared/traces: ``report`` (markdown + plot), the terminal summary, and the
JSON output checked key by key against docs/json.md."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES, ROOT, SHARED_TRACES, shared_params
from tests.test_markdown import assert_details_balanced, assert_only_our_tags, assert_tables_well_formed
from tracelens.cli import main
from tracelens.report import markdown, terminal

ALL_TRACES = (
    shared_params("nsys", "*.sqlite")
    + shared_params("pytorch", "*.json.gz")
    + shared_params("tf", "*.xplane.pb")
)


@functools.cache
def _analyze(path: Path) -> dict:
    return tracelens.analyze(tracelens.load(path))


@pytest.mark.parametrize("path", ALL_TRACES)
def test_report_and_summary_render(path: Path, tmp_path: Path) -> None:
    doc = _analyze(path)
    pngs = markdown.figures(doc, tmp_path / "review.md")
    text = markdown.render(doc, plots=True, figures=pngs)
    assert text.startswith(f"# tracelens report: {markdown.md(path.name)}\n")
    assert assert_tables_well_formed(text) >= 3
    assert_details_balanced(text)
    assert_only_our_tags(text)
    if doc.get("devices"):
        assert "- **GPU busy " in text
        assert pngs[0].role == "utilization" and pngs[0].data[:4] == b"\x89PNG"
        assert "](review.utilization.png)" in text
    if (doc.get("diagnosis") or {}).get("primary"):
        assert "**Primary cause:**" in text
    summary = terminal.render(doc)
    assert max(len(line) for line in summary.split("\n")) <= terminal.WIDTH
    if (doc.get("diagnosis") or {}).get("primary"):
        # The diagnosis comes first, before any table.
        assert 0 <= summary.find("\nDiagnosis:") < summary.find("GPU busy")


def test_cli_report_writes_markdown_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    trace = SHARED_TRACES / "nsys" / "rtx3080_tiny_nsys2026.1.sqlite"
    if not trace.exists():
        pytest.skip("../shared/traces not present")
    out = tmp_path / "review.md"
    assert main(["report", str(trace), "-o", str(out), "--png"]) == 0
    assert capsys.readouterr().err == f"wrote {out}\n"
    assert "](review.utilization.png)" in out.read_text()
    assert (tmp_path / "review.utilization.png").exists()
    out2 = tmp_path / "plain.md"
    assert main(["report", str(trace), "-o", str(out2), "--no-plots"]) == 0
    assert not (tmp_path / "plain.utilization.png").exists()
    assert "utilization.png" not in out2.read_text()
    # Without --png: inline charts only, no PNG beside the report.
    out3 = tmp_path / "inline.md"
    assert main(["report", str(trace), "-o", str(out3)]) == 0
    assert not (tmp_path / "inline.utilization.png").exists()
    assert "utilization.png" not in out3.read_text()
    # analyze --format markdown prints the same report (no plot without an output file).
    assert main(["analyze", str(trace), "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("# tracelens report: rtx3080")


def test_cli_report_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert main(["report", str(empty), "-o", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err == f"tracelens: {empty}: file is empty\n"
    assert not (tmp_path / "r.md").exists()


# ------------------------------------------------------------------------------------ docs/json.md


def documented_keys(heading: str) -> dict[tuple[str, ...], str]:
    """Key path -> type from the tables under ``heading`` (up to the next level-2 heading) of docs/json.md."""
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    keys = {}
    for path, typ in re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", body, flags=re.M):
        keys[tuple(path.split("."))] = typ.strip()
    return keys


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {int: "int", float: "float", str: "string", list: "array", dict: "object"}[type(value)]


def _allowed(doc_type: str) -> set[str]:
    # "array of T or null": an array of T, or null (the "or null" is the array's, not its elements')
    nullable = doc_type.startswith("array of") and doc_type.endswith(" or null")
    head = doc_type.split(" of ")[0] if doc_type.startswith("array of") else doc_type
    words = set(re.findall(r"\b(int|float|string|bool|object|array|null)\b", head)) | (
        {"null"} if nullable else set()
    )
    if "float" in words:
        words.add("int")  # a JSON number written without a fraction
    return words


# Objects whose `evidence` keys depend on their `cause`: documented as diagnosis.evidence.<cause>.<key>.
DIAGNOSIS_CAUSE_PATHS = {("diagnosis", "primary"), ("diagnosis", "causes[]")}
# Completeness problems' `evidence` keys depend on their `kind`: diagnosis.completeness.evidence.<kind>.<key>.
COMPLETENESS_PROBLEMS = ("diagnosis", "completeness", "problems[]")


def walk(value: object, path: tuple[str, ...] = ()):
    yield path, value
    if isinstance(value, dict):
        for key, sub in value.items():
            if key == "evidence" and path in DIAGNOSIS_CAUSE_PATHS and isinstance(value.get("cause"), str):
                yield (*path, "evidence"), sub  # the evidence object itself, as documented there
                yield from walk(sub, ("diagnosis", "evidence", value["cause"]))  # its keys, per cause
                continue
            if key == "evidence" and path == COMPLETENESS_PROBLEMS and isinstance(value.get("kind"), str):
                yield (*path, "evidence"), sub
                yield from walk(
                    sub, ("diagnosis", "completeness", "evidence", value["kind"])
                )  # per problem kind
                continue
            yield from walk(sub, (*path, str(key)))
    elif isinstance(value, list):
        element = (*path[:-1], path[-1] + "[]") if path else ("[]",)
        for sub in value:
            yield from walk(sub, element)


def _segment_matches(pattern: str, segment: str) -> bool:
    if pattern.startswith("*"):
        suffix = pattern[1:]
        return segment.endswith(suffix) and (suffix or "[]" not in segment)
    return pattern == segment


def find_doc(keys: dict[tuple[str, ...], str], path: tuple[str, ...]) -> str | None:
    """The documented type of ``path``; None when undocumented."""
    for pattern, typ in keys.items():
        if len(pattern) == len(path) and all(map(_segment_matches, pattern, path)):
            return typ
        # Descendants of a free-form map are data.
        if "free-form" in typ and len(pattern) < len(path) and all(map(_segment_matches, pattern, path)):
            return "any"
    # Elements of an array documented as "array of T".
    if path and path[-1].endswith("[]"):
        parent = find_doc(keys, (*path[:-1], path[-1][:-2]))
        if parent and parent.startswith("array of "):
            return parent.removesuffix(" or null")[len("array of ") :]
    return None


def undocumented(doc: dict, keys: dict[tuple[str, ...], str]) -> list[str]:
    problems = []
    for path, value in walk(doc):
        if not path:
            continue
        typ = find_doc(keys, path)
        if typ is None:
            problems.append(f"{'.'.join(path)} is not in docs/json.md")
        elif typ != "any" and _json_type(value) not in _allowed(typ):
            problems.append(f"{'.'.join(path)} is {_json_type(value)}, docs/json.md says {typ}")
    return sorted(set(problems))


TEMPLATE_TRACES = [
    pytest.param(p, id=p.name)
    for p in sorted((FIXTURES / "templates").glob("*.gz")) + sorted((FIXTURES / "templates").glob("*.pb"))
]


@pytest.mark.parametrize("path", ALL_TRACES + TEMPLATE_TRACES)
def test_every_analyze_key_is_documented(path: Path) -> None:
    assert undocumented(_analyze(path), documented_keys("The analyze document")) == []


def test_every_diff_key_is_documented() -> None:
    from tests.test_diff import doc
    from tracelens.diff import compare

    keys = documented_keys("The diff document")
    # Hand-made pair that fills every kernels list, plus real pairs across formats.
    base = doc([(80, 100)], steps=[10], kernels={"a": (1, 10), "b": (1, 10), "c": (1, 10)})
    head = doc([(50, 100)], steps=[12], kernels={"a": (1, 20), "b": (1, 5), "d": (1, 10)})
    # the second: HEAD without a kernels section (as a run's document)
    results = [compare(base, head), compare(base, doc([(1, 2)]))]
    reals = [p.values[0] for p in ALL_TRACES if p.values[0] is not None][:4]
    for a, b in zip(reals, reals[1:], strict=False):
        results.append(compare(_analyze(a), _analyze(b)))
    for result in results:
        assert undocumented(result, keys) == []


def test_key_checker_catches_undocumented_and_mistyped_keys() -> None:
    keys = documented_keys("The analyze document")
    assert undocumented({"devices": [{"id": 0, "bogus_ns": 1}]}, keys) == [
        "devices[].bogus_ns is not in docs/json.md"
    ]
    assert undocumented({"devices": [{"id": "0"}]}, keys) == ["devices[].id is string, docs/json.md says int"]
    assert undocumented({"steps": {"summary": {"host_ns": {"input": 3}}}}, keys) == []

    # Diagnosis evidence is checked per cause, as diagnosis.evidence.<cause>.<key>.
    def cause(name: str, evidence: object) -> dict:
        return {"cause": name, "lost_ns": 1, "share": 0.5, "evidence": evidence, "fix": None}

    good = {
        "link_fraction": 0.5,
        "exposed_by_device": {"0": 1},
        "by_kind": [{"kind": "HtoD", "pinned_ns": 1}],
    }
    assert (
        undocumented(
            {"diagnosis": {"primary": cause("memcpy", good), "causes": [cause("memcpy", good)]}}, keys
        )
        == []
    )
    assert (
        undocumented({"diagnosis": {"causes": [cause("startup", {"items": [{"reason": "name"}]})]}}, keys)
        == []
    )
    assert undocumented({"diagnosis": {"primary": cause("memcpy", {"anything": {"0": 1}})}}, keys) == [
        "diagnosis.evidence.memcpy.anything is not in docs/json.md",
        "diagnosis.evidence.memcpy.anything.0 is not in docs/json.md",
    ]
    assert undocumented(
        {"diagnosis": {"causes": [cause("startup", {"items": [{"bogus_ns": 1}]})]}}, keys
    ) == ["diagnosis.evidence.startup.items[].bogus_ns is not in docs/json.md"]
    # A key documented for another cause is not accepted, nor a mistyped or an unknown cause's evidence.
    assert undocumented({"diagnosis": {"primary": cause("none", {"link_fraction": 0.5})}}, keys) == [
        "diagnosis.evidence.none.link_fraction is not in docs/json.md"
    ]
    assert undocumented({"diagnosis": {"primary": cause("memcpy", {"link_fraction": "x"})}}, keys) == [
        "diagnosis.evidence.memcpy.link_fraction is string, docs/json.md says float or null"
    ]
    assert undocumented({"diagnosis": {"primary": cause("bogus", {})}}, keys) == [
        "diagnosis.evidence.bogus is not in docs/json.md"
    ]
