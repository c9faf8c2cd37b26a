"""JSON goldens: the full `analyze` document of every real trace in ../shared/traces and every fixture trace,
stored in tests/golden/json/ and compared key by key, so refactors keep every number (floats to 1e-9 relative).

These tests only compare. After an intended change regenerate with ``python3 -m tests.goldens --regen json``
and review the diff of ``tests/golden/json/`` like code (tests/goldens.py). Shared-trace goldens skip when
../shared is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.goldens import (
    FIXTURE_TRACES,
    JSON_GOLDEN,
    SHARED,
    SHARED_NAMES,
    check_json,
    document,
    fixture_name,
    json_differences,
    json_golden_path,
)


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_NAMES)
def test_shared_trace_document_is_unchanged(name: str) -> None:
    path = SHARED / name
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    check_json(name, document(path))


@pytest.mark.parametrize("path", FIXTURE_TRACES, ids=[fixture_name(p) for p in FIXTURE_TRACES])
def test_fixture_document_is_unchanged(path: Path) -> None:
    check_json(fixture_name(path), document(path))


def test_every_golden_has_its_trace() -> None:
    """A golden whose trace was renamed or removed would otherwise lie there unchecked."""
    expected = {json_golden_path(fixture_name(p)) for p in FIXTURE_TRACES} | {
        json_golden_path(n) for n in SHARED_NAMES
    }
    stray = sorted(p.name for p in JSON_GOLDEN.glob("*.json") if p not in expected)
    assert stray == [], f"goldens without a trace in fixtures/ or SHARED_NAMES (delete them): {stray}"


def test_the_comparison_catches_changes() -> None:
    golden = {"a": 1, "b": [1.0, {"c": "x"}], "d": 0.5}
    assert json_differences(golden, golden) == []
    assert json_differences({"a": 1, "b": [1.0 + 1e-12, {"c": "x"}], "d": 0.5}, golden) == []  # float noise
    assert json_differences({"a": 2, "b": [1.0], "d": 0.5, "e": 0}, golden) == [
        ".e: unexpected",
        ".a: 2 != 1",
        ".b: 1 items, golden 2",
    ]
    assert json_differences({"a": 1.0, "b": [1.0, {"c": "x"}], "d": 0.5}, golden) == [
        ".a: 1.0 != 1"
    ]  # type change


def test_a_changed_document_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check fails on a difference and on a missing golden, naming the regeneration command."""
    monkeypatch.delenv("TRACELENS_REGEN_GOLDEN", raising=False)
    monkeypatch.setattr("tests.goldens.JSON_GOLDEN", tmp_path)
    monkeypatch.setattr("tests.goldens.ROOT", tmp_path)
    with pytest.raises(AssertionError, match="python3 -m tests.goldens --regen"):
        check_json("x/y.json", {"a": 1})
    (tmp_path / "x__y.json.json").write_text('{"a": 1}\n', encoding="utf-8")
    check_json("x/y.json", {"a": 1})
    with pytest.raises(
        AssertionError, match=r"1 differences.*\.a: 2 != 1.*python3 -m tests.goldens --regen json"
    ):
        check_json("x/y.json", {"a": 2})


def test_the_regeneration_command_writes_what_the_tests_compare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python3 -m tests.goldens --regen report` into an empty folder writes the committed report goldens."""
    from tests import goldens

    monkeypatch.setattr(goldens, "GOLDEN", tmp_path)
    assert goldens.main(["--regen", "report"]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(JSON_GOLDEN.parent).as_posix()
        for p in JSON_GOLDEN.parent.rglob("*")
        if p.is_file() and p.parent != JSON_GOLDEN
    )
    assert written == committed
    assert {"core.md", "core.txt", "full.md", "full.txt", "terminal/demo.80.txt"} <= set(written)
    for name in written:
        assert (tmp_path / name).read_bytes() == (JSON_GOLDEN.parent / name).read_bytes(), name
    assert goldens.regenerate(["report"]) == []  # a second run changes nothing
