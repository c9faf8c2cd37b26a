"""The causes registry (tracelens/analyses/diagnosis/): every cause is one module with one Cause, listed once in
CAUSES, and has a sentence, a fix for every remedy and framework fallback, and its docs (docs/json.md,
docs/analyses.md). Adding a cause without one of them fails here."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

from tracelens.analyses import BY_KEY, REGISTRY, SECTIONS, analyze, diagnosis, with_needs
from tracelens.analyses.diagnosis import CAUSES, NEEDS, PRIMARY_ONLY, VERDICTS, diagnose
from tracelens.analyses.diagnosis.cause import DEFAULT, ONLY
from tracelens.report.findings import sentence
from tracelens.trace import Trace, TraceMetadata

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FIXTURES = ROOT / "fixtures"
HELPERS = {"cause", "ranking", "wording"}  # the package's modules that are not a cause


def _case(name: str) -> dict[str, Any]:
    data = json.loads((FIXTURES / "causes" / f"{name}.json").read_text())
    trace = Trace.from_rows(
        data["rows"], data["devices"], TraceMetadata("handmade", framework=data["framework"])
    )
    return dict(analyze(trace))


def _collectives() -> dict[str, Any]:
    # An all-reduce with nothing beside it for 50 ns on one GPU (test_communication.py has the derivation).
    def gpu(name: str, start: int, end: int) -> dict[str, Any]:
        return {"kind": "kernel", "name": name, "start_ns": start, "end_ns": end, "device": 0, "stream": 7}

    return dict(
        analyze(
            Trace.from_rows(
                [
                    gpu("gemm", 0, 100),
                    gpu("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 150),
                    gpu("gemm", 200, 300),
                ]
            )
        )
    )


def _queued() -> dict[str, Any]:
    # a graph replay the host waits for: 70 µs of queued gaps (tests/test_attribution.py has the derivation)
    from tests.test_attribution import _graph_replay_with_sync_rows

    return dict(analyze(Trace.from_rows(_graph_replay_with_sync_rows())))


def _incomplete() -> dict[str, Any]:
    import tracelens

    return dict(analyze(tracelens.load(FIXTURES / "completeness" / "launches_without_gpu.json")))


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    names = [
        "input_pipeline",
        "host_launch_overhead",
        "synchronization",
        "memcpy",
        "low_occupancy",
        "multi_gpu_imbalance",
        "startup",
        "unexplained_idle",
        "graph_step",
    ]
    return [_case(n) for n in names] + [_collectives(), _incomplete(), _queued()]


def test_one_module_per_cause_listed_once():
    modules = {m.name for m in pkgutil.iter_modules(diagnosis.__path__)} - HELPERS
    entries = [*CAUSES, *VERDICTS]
    names = [e.name for e in entries]
    assert len(set(names)) == len(names)
    # Each module exports one CAUSE (or VERDICT) named after it, and that value is the one in the lists.
    assert modules == set(names)
    for entry in entries:
        module = importlib.import_module(f"{diagnosis.__name__}.{entry.name}")
        assert getattr(module, "CAUSE", None) is entry or getattr(module, "VERDICT", None) is entry
    assert set(PRIMARY_ONLY) == {v.name for v in VERDICTS}


@pytest.mark.parametrize("cause", CAUSES, ids=lambda c: c.name)
def test_every_cause_has_a_fix_for_each_remedy(cause):
    assert cause.fixes
    for remedy, table in cause.fixes.items():
        assert table.get(DEFAULT), f"{cause.name}: remedy {remedy} has no generic fix"
        assert all(isinstance(text, str) and text for text in table.values())
    assert cause.device_lost is not None or cause.lost is not None, f"{cause.name}: no lost time"


def _section(text: str, heading: str) -> str:
    """From ``heading`` to the next heading of its level or above (its subsections included)."""
    start = text.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(text, start + len(heading))
    return text[start : end.start() if end else len(text)]


@pytest.mark.parametrize("entry", [*CAUSES, *VERDICTS], ids=lambda c: c.name)
def test_every_cause_is_documented(entry):
    json_md = (DOCS / "json.md").read_text()
    analyses_md = (DOCS / "analyses.md").read_text()
    assert f"### Evidence: {entry.name}\n" in json_md, f"docs/json.md lacks '### Evidence: {entry.name}'"
    diagnosis_docs = _section(analyses_md, "## diagnosis")
    if entry in CAUSES:
        # A row of the causes table: what lost_ns is and why it is recoverable.
        assert re.search(rf"^\| `{entry.name}` \|", diagnosis_docs, re.M), (
            f"docs/analyses.md: no row for {entry.name}"
        )
    else:
        assert f"`{entry.name}`" in diagnosis_docs


@pytest.mark.parametrize("cause", [c for c in CAUSES if set(c.fixes) != {ONLY}], ids=lambda c: c.name)
def test_every_remedy_is_documented(cause):
    table = _section((DOCS / "analyses.md").read_text(), "### Fixes follow the evidence")
    rows = [line for line in table.splitlines() if line.startswith("|")]
    # Rows of one cause: its own row, then the continuation rows (an empty first cell) below it.
    mine, inside = [], False
    for line in rows:
        first = line.split("|")[1].strip()
        inside = first == f"`{cause.name}`" or (inside and first == "")
        if inside:
            mine.append(line)
    documented = set(re.findall(r"`([a-z_]+)`", " ".join(row.split("|")[2] for row in mine)))
    assert set(cause.fixes) <= documented, (
        f"{cause.name}: remedies {set(cause.fixes) - documented} undocumented"
    )


def test_every_cause_and_verdict_has_its_own_sentence(documents):
    seen: set[str] = set()
    for doc in documents:
        diag = doc["diagnosis"]
        for finding in [diag["primary"], *diag["causes"]]:
            name = finding["cause"]
            seen.add(name)
            text = sentence(finding, diag)
            # The generic fallback ("<cause>: 3 µs lost.") is only for names another version wrote.
            assert not text.startswith(f"{name}:"), text
            # the cause's own sentence, then (report/findings.py) the replay's gain and the critical path
            assert text.startswith(diagnosis.sentence_of(name)(finding, diag))
    assert seen == {c.name for c in CAUSES} | set(PRIMARY_ONLY), "a cause no case exercises"


def test_unknown_cause_gets_the_fallback_sentence():
    assert diagnosis.sentence_of("from_a_newer_version") is None
    assert (
        sentence({"cause": "from_a_newer_version", "lost_ns": 3000, "evidence": {}})
        == "from_a_newer_version: 3 µs lost."
    )


def test_ties_break_in_causes_order():
    causes = _case("input_pipeline")["diagnosis"]["causes"]
    # host_launch_overhead and unexplained_idle both lose 10 ns: CAUSES order decides.
    tied = [c["cause"] for c in causes if c["lost_ns"] == 10]
    assert (
        tied
        == sorted(tied, key=[c.name for c in CAUSES].index)
        == ["host_launch_overhead", "unexplained_idle"]
    )


# ---------------------------------------------------------------------------------------------- inputs


class _Reads(dict):
    """A dict that records which keys were read."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


@pytest.mark.parametrize("case", ["memcpy", "multi_gpu_imbalance", "input_pipeline"])
def test_diagnosis_reads_only_the_sections_it_declares(case):
    data = json.loads((FIXTURES / "causes" / f"{case}.json").read_text())
    trace = Trace.from_rows(
        data["rows"], data["devices"], TraceMetadata("handmade", framework=data["framework"])
    )
    done = _Reads({k: v for k, v in analyze(trace).items() if k in SECTIONS and k != "diagnosis"})
    diagnose(trace, done)
    assert done.read <= set(NEEDS), f"undeclared inputs: {done.read - set(NEEDS)}"
    assert {"attribution", "memcpy"} <= done.read  # the recorder sees reads at all


def test_needs_come_before_the_section():
    for position, section in enumerate(REGISTRY):
        for need in section.needs:
            assert need in BY_KEY and SECTIONS.index(need) < position, (section.key, need)


def test_analyze_computes_what_a_section_needs():
    data = json.loads((FIXTURES / "causes" / "memcpy.json").read_text())
    trace = Trace.from_rows(
        data["rows"], data["devices"], TraceMetadata("handmade", framework=data["framework"])
    )
    alone = analyze(trace, sections=["diagnosis"])
    assert [k for k in alone if k in SECTIONS] == ["diagnosis"]
    assert alone["diagnosis"] == analyze(trace)["diagnosis"]
    assert with_needs(["diagnosis"]) == [k for k in SECTIONS if k in (*NEEDS, "diagnosis")]
    with pytest.raises(ValueError, match="unknown analysis section 'nope'"):
        analyze(trace, sections=["nope"])


def test_json_docs_list_the_causes_in_order():
    text = _section((DOCS / "json.md").read_text(), "### diagnosis — the ranked causes")
    listed = text[text.index("Cause (`cause`):") : text.index("(`diagnosis.CAUSES`")]
    assert re.findall(r"`([a-z_]+)`", listed)[1:] == [c.name for c in CAUSES]


def test_every_memcpy_check_is_worded_and_has_a_fix():
    from tracelens.analyses import memcpy as copies
    from tracelens.analyses.diagnosis import memcpy as memcpy_cause

    assert set(memcpy_cause.CHECK_SENTENCES) == set(copies.CHECKS)
    # Every remedy a check can name (the string literals after "remedy": in the section's source) is in the
    # one fix table, with a generic text.
    source = Path(copies.__file__).read_text()
    remedies = {
        word for line in re.findall(r'"remedy": (.*)', source) for word in re.findall(r'"([a-z_]+)"', line)
    }
    assert {"pin", "async", "batch", "resident", "floor", "overlap", "link"} <= remedies
    assert all(memcpy_cause.FIXES[r]["default"] for r in remedies)


def test_memcpy_checks_are_worded_from_their_evidence(documents):
    checks = [c for doc in documents for c in (doc.get("memcpy") or {}).get("findings") or []]
    assert checks
    for check in checks:
        from tracelens.analyses.diagnosis import memcpy as memcpy_cause

        assert memcpy_cause.check_sentence(check) != check["id"]


@pytest.mark.parametrize(
    ("share", "level"),
    [
        (None, "low"),
        (0.0, "low"),
        (0.0999, "low"),
        (0.10, "medium"),
        (0.2499, "medium"),
        (0.25, "high"),
        (1.0, "high"),
    ],
)
def test_one_severity_policy(share, level):
    from tracelens.report.markdown import severity as label

    assert diagnosis.severity(share) == level
    assert label(share).endswith(level)


def _tracelens_imports(path: Path) -> set[str]:
    """The tracelens modules a file imports (relative imports resolved), anywhere in it."""
    import ast

    package = path.relative_to(ROOT).with_suffix("").parts
    package = package[:-1]  # the file's package (an __init__ is its own package's file)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out.update(f"{module}.{a.name}" if not node.module and node.level else module for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "tracelens" or m.startswith("tracelens.")}


def test_causes_and_units_stay_below_the_renderers():
    # docs/architecture.md: units.py imports nothing of tracelens; the diagnosis package never imports report/.
    assert not _tracelens_imports(ROOT / "tracelens" / "units.py")
    for path in (ROOT / "tracelens" / "analyses" / "diagnosis").glob("*.py"):
        imports = _tracelens_imports(path)
        assert imports, path  # the resolver sees this package's imports at all
        assert not any(m.startswith("tracelens.report") for m in imports), (path.name, imports)
