"""Style as CI checks it: `ruff check` and `ruff format --check` over the code the project owns ([tool.ruff] in
pyproject.toml). Format with `ruff format` before committing; fix lint with `ruff check --fix`."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

OWNED = ["tracelens", "tests", "fixtures", "benchmarks", "docs"]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    ruff = shutil.which("ruff")
    command = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    return subprocess.run([*command, *args, *OWNED], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args", [("check", "--quiet"), ("format", "--check", "--quiet")], ids=["lint", "format"]
)
def test_ruff(args: tuple[str, ...]) -> None:
    done = _ruff(*args)
    assert done.returncode == 0, (
        f"ruff {' '.join(args)} found problems:\n{done.stdout[-3000:]}{done.stderr[-1000:]}"
    )
