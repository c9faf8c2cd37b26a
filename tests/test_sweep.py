"""CI sweep: the commands a new user runs first — ``analyze``, ``analyze --format json``, ``report`` and
``diff X X`` — on every trace in fixtures/ and ../shared/traces (read in place; skipped when absent): never an
internal error (exit 3), and exit 0 on these valid traces. In-process (``cli.main``) to keep it fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, SHARED_TRACES

from tracelens.cli import main

TRACE_SUFFIXES = (".json", ".json.gz", ".xplane.pb", ".sqlite")


def _traces(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.name.endswith(TRACE_SUFFIXES)
        and p.parent.name != "causes"  # rows for Trace.from_rows (tests/test_verdicts.py), not files
        and not p.name.endswith(".facts.json")
    )  # a recording's side facts, not a trace


FIXTURE_TRACES = [pytest.param(p, id=str(p.relative_to(FIXTURES))) for p in _traces(FIXTURES)]
SHARED = _traces(SHARED_TRACES)
SHARED_PARAMS = [
    pytest.param(p, id=str(p.relative_to(SHARED_TRACES)), marks=pytest.mark.shared) for p in SHARED
] or [pytest.param(None, marks=pytest.mark.skip(reason="../shared/traces not present"))]


def _sweep(path: Path, capsys: pytest.CaptureFixture) -> None:
    for args in (
        ["analyze", str(path)],
        ["analyze", "--format", "json", str(path)],
        ["report", str(path)],
        ["diff", str(path), str(path)],
    ):
        code = main(args)
        out, err = capsys.readouterr()
        assert code != 3, f"{' '.join(args)}: internal error: {err.strip()}"
        assert code == 0, f"{' '.join(args)}: exit {code}: {err.strip()}"
        assert out.strip(), " ".join(args)
        if "json" in args:
            assert json.loads(out)["source"]["format"]


def test_the_sweep_finds_the_fixture_traces() -> None:
    names = {str(p.relative_to(FIXTURES)) for p in _traces(FIXTURES)}
    assert {
        "demo.pt.trace.json.gz",
        "kineto/bare_list.json",
        "robust/shapes_unmodelled.json",
        "templates/tf_healthy_cpu.xplane.pb",
        "gpu/jax_mlp_cuda.xplane.pb",
    } <= names


@pytest.mark.parametrize("path", FIXTURE_TRACES)
def test_fixture_trace_commands_never_fail(path: Path, capsys: pytest.CaptureFixture) -> None:
    _sweep(path, capsys)


@pytest.mark.parametrize("path", SHARED_PARAMS)
def test_shared_trace_commands_never_fail(path: Path, capsys: pytest.CaptureFixture) -> None:
    _sweep(path, capsys)
