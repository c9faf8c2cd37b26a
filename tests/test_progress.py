"""The ingest progress bar: drawn only on an interactive stderr."""

from __future__ import annotations

import re

import tracelens.progress as progress


def test_silent_when_stderr_is_not_a_terminal(capsys):
    with progress.progress_bar("reading x", total=10) as bar:  # pytest's stderr is not a TTY
        bar.advance(10)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def test_draws_on_stderr_when_enabled(capsys):
    with progress.progress_bar("reading x", total=10, enabled=True) as bar:
        bar.advance(5)
    captured = capsys.readouterr()
    assert captured.out == ""  # never on stdout, which may carry JSON
    assert "reading x" in captured.err


def test_counts_ranks_not_bytes(capsys):
    with progress.progress_bar("analyzing", total=2, enabled=True, unit="ranks") as bar:
        bar.advance(1)
    err = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", capsys.readouterr().err)  # colours and cursor moves removed
    assert "1/2 ranks" in err
    assert "bytes" not in err
