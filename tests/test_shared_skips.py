"""Without the real traces (../shared/traces, or TRACELENS_SHARED_TRACES), the tests that read them still
count as skipped, and ``-ra`` says so in one line instead of one line per test."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT


def test_absent_shared_traces_fold_into_one_summary_line(tmp_path) -> None:
    env = dict(os.environ, TRACELENS_SHARED_TRACES=str(tmp_path / "nonexistent"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-ra",
            "tests/test_multirank_real.py",
            "tests/test_record.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    skipped_lines = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped_lines) == 1, skipped_lines
    folded = re.match(r"SKIPPED \[(\d+)\] tests/conftest.py: real traces not present in ", skipped_lines[0])
    assert folded, skipped_lines[0]
    assert "TRACELENS_SHARED_TRACES" in skipped_lines[0]
    # Still counted as skipped: the folded count is the session's skip count.
    counted = re.search(r"(\d+) skipped", done.stdout.splitlines()[-1])
    assert counted and int(counted.group(1)) == int(folded.group(1)) >= 5
    assert "not present" not in done.stdout.replace(skipped_lines[0], "")
