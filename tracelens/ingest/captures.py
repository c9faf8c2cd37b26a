"""Successive captures of one profiled process in one directory.

torch.profiler's ``tensorboard_trace_handler(dir)`` writes each profiling cycle (each ``repeat`` of a schedule, or
each profile of the process) to ``dir/<worker>.<time>.pt.trace.json[.gz]``: ``<worker>`` is ``<hostname>_<pid>``
by default, unique per worker process (the handler's documentation), ``<time>`` the write time in ms (torch 1.x)
or ns. Several files of one worker are one process's successive cycles, not ranks: a directory of them is read as
each worker's newest capture (a later cycle is past more of the warm-up), and a note names what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

# <worker>.<time>.pt.trace.json[.gz], <time> >= 13 digits (ms since 1970, or ns)
HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<time>\d{13,})\.pt\.trace\.json(?:\.gz)?$", re.IGNORECASE)


def newest_captures(files: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """``files`` (in their order) less each handler-named worker's earlier captures; and per worker with several,
    a note naming the capture kept and those left out."""
    by_worker: dict[str, list[tuple[int, Path]]] = {}
    for f in files:
        match = HANDLER_NAME.match(f.name)
        if match:
            by_worker.setdefault(match["worker"], []).append((int(match["time"]), f))
    dropped: set[Path] = set()
    notes = []
    for worker, captures in by_worker.items():  # (a loop over files of a directory, not events)
        if len(captures) < 2:
            continue
        captures.sort()
        earlier = [f for _, f in captures[:-1]]
        dropped.update(earlier)
        shown = ", ".join(f.name for f in earlier[:3]) + (
            f" and {len(earlier) - 3} more" if len(earlier) > 3 else ""
        )
        notes.append(
            f"{captures[-1][1].parent}: {len(captures)} captures of one process ({worker}, as "
            f"tensorboard_trace_handler names a profiler's successive cycles), not ranks: the newest, "
            f"{captures[-1][1].name}, is analyzed, {shown} left out (name a file to analyze it)"
        )
    return [f for f in files if f not in dropped], notes
