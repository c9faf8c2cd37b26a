"""mypy over tracelens/ with the [tool.mypy] settings in pyproject.toml (every function annotated; the few
per-module exceptions are listed there with their reasons). Same as running `python3 -m mypy` at the root."""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_passes_on_the_package() -> None:
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), str(ROOT / "tracelens")])
    assert status == 0, (
        f"mypy found type errors (run `python3 -m mypy` at the repository root):\n{stdout}{stderr}"
    )
