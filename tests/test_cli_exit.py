"""The CLI's exit without the interpreter's teardown (``tracelens.cli.entry``): the exit status, stdout and stderr
and the ``atexit`` functions are those of the normal exit; where a thread is still alive, the normal exit runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tracelens

ROOT = Path(tracelens.__file__).resolve().parent.parent

# A program that writes to stdout and stderr without a newline (left in the buffers), registers an exit function
# that writes too, then ends through the CLI's exit with status 3.
PROGRAM = """
import atexit, sys, threading
from tracelens import process
atexit.register(lambda: print("exit function ran", flush=False))
print("out", end="")
print("err", end="", file=sys.stderr)
if sys.argv[1] == "thread":
    event = threading.Event()
    threading.Thread(target=event.wait, args=(0.5,)).start()  # alive when the exit comes: the normal exit waits
process.exit_at_once(3)
print("returned", end="")
sys.exit(4)
"""


def _run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_exit_at_once_flushes_and_runs_the_exit_functions():
    child = _run("alone")
    assert child.returncode == 3
    assert child.stdout == "outexit function ran\n"
    assert child.stderr == "err"


def test_a_live_thread_leaves_the_exit_to_the_interpreter():
    child = _run("thread")
    assert child.returncode == 4
    assert child.stdout == "outreturnedexit function ran\n"
    assert child.stderr == "err"


def test_the_cli_exits_with_mains_status(tmp_path):
    child = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert child.returncode == 2
    assert "no such file" in child.stderr
