"""process.py: one OpenBLAS thread in the CLI's process (set before numpy's import, never over the user's
setting), and the user's environment for the programs ``tracelens record`` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracelens import process

REPO = Path(__file__).resolve().parent.parent

_PROBE = r"""
import json, os, sys
from tracelens import process
before = "numpy" in sys.modules
set_here = process.one_blas_thread()
import numpy  # (what OpenBLAS reads the setting at)
print(json.dumps({"numpy_before": before, "set_here": set_here, "value": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "child": process.user_environment().get("OPENBLAS_NUM_THREADS")}))
"""


def _probe(env_value: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_set_before_numpy_and_not_passed_on() -> None:
    got = _probe(None)
    assert got == {"numpy_before": False, "set_here": True, "value": "1", "child": None}


def test_the_users_setting_is_kept_and_passed_on() -> None:
    got = _probe("4")
    assert got == {"numpy_before": False, "set_here": False, "value": "4", "child": "4"}


def test_nothing_set_once_numpy_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy  # noqa: F401  (this test process has it)

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert process.one_blas_thread() is False
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_the_cli_process_runs_with_one_blas_thread(tmp_path: Path) -> None:
    """The CLI's entry sets it before anything imports numpy: a `python -m tracelens` process's environment, seen
    from the process itself (an analysis of the demo trace, then the variable read back through the JSON's run)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(REPO)
    code = (
        "import os, sys, runpy\n"
        "import atexit\n"
        "atexit.register(lambda: sys.stderr.write('BLAS=' + str(os.environ.get('OPENBLAS_NUM_THREADS')) + '\\n'))\n"
        "sys.argv = ['tracelens', 'analyze', sys.argv[1], '--format', 'json']\n"
        "runpy.run_module('tracelens', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "fixtures" / "demo.pt.trace.json.gz")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "BLAS=1" in done.stderr.splitlines()
    json.loads(done.stdout)  # the analysis itself unchanged: a JSON document
