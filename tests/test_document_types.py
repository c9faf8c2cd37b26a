"""The document's types cannot drift from the output: on every real trace in ../shared/traces and every
fixture, each key of each section of the analyze document is declared in that section's TypedDict in
tracelens/document/types.py (nested TypedDicts and lists of them included), and each required key declared there
is present."""

from __future__ import annotations

import functools
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints, is_typeddict

import msgspec
import pytest

import tracelens
from tests.conftest import FIXTURES, shared_params
from tests.test_diagnosis import CAUSES_DIR, load_case
from tracelens.document import Document
from tracelens.document.saved import dumps, type_error

REAL_TRACES = (
    shared_params("nsys", "*.sqlite")
    + shared_params("pytorch", "*.json.gz")
    + shared_params("tf", "*.xplane.pb")
)
FIXTURE_TRACES = [
    pytest.param(p, id=str(p.relative_to(FIXTURES)))
    for p in sorted(FIXTURES.glob("*.gz"))
    + sorted((FIXTURES / "kineto").glob("*.json"))
    + sorted((FIXTURES / "templates").glob("*.gz"))
    + sorted((FIXTURES / "templates").glob("*.pb"))
    + sorted((FIXTURES / "nsys").glob("*.sqlite"))
]
CAUSE_CASES = sorted(p.stem for p in CAUSES_DIR.glob("*.json"))


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def mismatches(value: Any, tp: Any, path: str = "") -> list[str]:
    """Keys of ``value`` that ``tp`` does not declare, and required keys of ``tp`` that ``value`` lacks."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if value is None:
            return []
        dicts = [a for a in members if is_typeddict(a)]
        tp = dicts[0] if dicts and isinstance(value, dict) else members[0]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path} is {type(value).__name__}, {tp.__name__} declares an object"]
        hints = get_type_hints(tp)
        problems = [f"{_at(path, key)} is not declared in {tp.__name__}" for key in value if key not in hints]
        problems += [
            f"{_at(path, key)} is required by {tp.__name__} but absent"
            for key in sorted(tp.__required_keys__)
            if key not in value
        ]
        for key, sub in value.items():
            if key in hints:
                problems += mismatches(sub, hints[key], _at(path, key))
        return problems
    if get_origin(tp) is list and isinstance(value, list):
        (element,) = get_args(tp)
        return [p for sub in value for p in mismatches(sub, element, f"{path}[]")]
    if get_origin(tp) is dict and isinstance(value, dict):
        _, element = get_args(tp)
        return [p for key, sub in value.items() for p in mismatches(sub, element, _at(path, key))]
    return []


def unique(problems: list[str]) -> list[str]:
    return sorted(set(problems))


@functools.cache
def _analyze_file(path: Path) -> dict:
    return tracelens.analyze(tracelens.load(path))


@pytest.mark.parametrize("path", REAL_TRACES + FIXTURE_TRACES)
def test_document_keys_match_the_types(path: Path) -> None:
    assert unique(mismatches(_analyze_file(path), Document)) == []


@pytest.mark.parametrize("case", CAUSE_CASES)
def test_document_keys_match_the_types_on_cause_fixtures(case: str) -> None:
    assert unique(mismatches(tracelens.analyze(load_case(case)), Document)) == []


# Every document tracelens writes passes the check a saved one gets when read back (load_document: msgspec against
# the types), so a valid document is never refused; the saved form (dumps: NaN as null, numpy as Python) is
# what is checked.
def _saved_type_error(doc: dict) -> str | None:
    return type_error(msgspec.json.decode(dumps(doc)))


@pytest.mark.parametrize("path", REAL_TRACES + FIXTURE_TRACES)
def test_saved_documents_pass_the_type_check(path: Path) -> None:
    assert _saved_type_error(_analyze_file(path)) is None


@pytest.mark.parametrize("case", CAUSE_CASES)
def test_saved_documents_pass_the_type_check_on_cause_fixtures(case: str) -> None:
    assert _saved_type_error(tracelens.analyze(load_case(case))) is None


def test_saved_run_documents_pass_the_type_check(tmp_path: Path) -> None:
    """A multi-rank run document (its replay_error has no model split by lag: optional in ReplayError)."""
    from tests.test_multirank import write_handmade_run
    from tracelens.run import analyze_run

    kineto = sorted((FIXTURES / "kineto").glob("*.json"))[:3]
    for paths in ([write_handmade_run(tmp_path / "run")[0].parent], kineto):
        doc, failures = analyze_run(paths, workers=1, cache_dir=tmp_path / "cache")
        assert failures == [] and "ranks" in doc
        assert _saved_type_error(doc) is None


def test_the_types_describe_the_written_schema_version() -> None:
    from tracelens.analyses import JSON_SCHEMA_VERSION
    from tracelens.document.types import SCHEMA_VERSION

    assert SCHEMA_VERSION == JSON_SCHEMA_VERSION  # bumped: review types.py, then bump its SCHEMA_VERSION


def test_every_section_is_typed() -> None:
    from tracelens.analyses import SECTIONS

    hints = get_type_hints(Document)
    untyped = [
        key for key in SECTIONS if not is_typeddict(hints[key]) and not is_typeddict(get_args(hints[key])[0])
    ]
    assert untyped == []


def test_checker_catches_undeclared_and_missing_keys() -> None:
    doc = tracelens.analyze(load_case("memcpy"))
    doc["launch"]["latency"]["bogus_ns"] = 1
    del doc["memcpy"]["per_device"][0]["by_kind"][0]["expected_link"]
    doc["steps"]["steps"] = [{"step": 1}]
    assert unique(mismatches(doc, Document)) == [
        "launch.latency.bogus_ns is not declared in LaunchLatency",
        "memcpy.per_device[].by_kind[].expected_link is required by MemcpyDeviceKind but absent",
        *[
            f"steps.steps[].{key} is required by StepRow but absent"
            for key in ("duration_ns", "end_ns", "gpu_busy", "host", "start_ns")
        ],
    ]
    # Optional keys may be absent or present; maps whose keys are data take any key.
    doc = tracelens.analyze(load_case("memcpy"))
    doc["steps"].pop("listed", None)
    doc["devices"][0]["rank"] = 0
    doc["attribution"]["total_by_cause"]["anything"] = 1
    assert mismatches(doc, Document) == []


def test_device_row_declares_the_fields_of_device_utilization() -> None:
    """``Device`` (a ``devices`` row) is ``DeviceUtilization`` as a dict plus an optional ``rank``: the two are
    written out separately (mypy reads the TypedDict), so they must declare the same fields with the same types."""
    from tracelens.document.types import Device, DeviceUtilization

    row = get_type_hints(Device)
    assert row.pop("rank") is int and "rank" in Device.__optional_keys__
    assert row == get_type_hints(DeviceUtilization)
    assert set(row) <= Device.__required_keys__
