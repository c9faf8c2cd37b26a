"""A progress bar on stderr for long ingests, shown only when stderr is a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Progress(Protocol):
    def advance(self, amount: float) -> None: ...


class _Silent:
    def advance(self, amount: float) -> None:
        pass


class _RichBar:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress, self._task = progress, task

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)


@contextmanager
def progress_bar(
    description: str, total: float | None, *, enabled: bool | None = None, unit: str | None = None
) -> Iterator[Progress]:
    """Yield an object with ``advance(n)``; draws a transient rich bar only on an interactive stderr.

    ``unit``: what is counted, shown as ``done/total unit`` ("1/2 ranks"); None counts bytes ("1.2/4.0 MB").
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    counted = [DownloadColumn()] if unit is None else [MofNCompleteColumn(), TextColumn(unit)]
    columns = [TextColumn("{task.description}"), BarColumn(), *counted, TimeRemainingColumn()]
    with RichProgress(*columns, console=Console(stderr=True, force_terminal=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield _RichBar(bar, task)
