"""The PNG figures that go beside a markdown report (``tracelens report -o review.md``): where each goes and its
bytes. Rendered here, written by the caller; the report links them by file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Figure:
    """A PNG that goes beside a markdown report: ``role`` "utilization" or "ranks", where, and its bytes."""

    role: str
    path: Path
    data: bytes


def plot_path_for(output: str | Path) -> Path:
    """Where the utilization plot goes for report ``output``: ``review.md`` -> ``review.utilization.png``."""
    return _beside(output, "utilization")


def ranks_plot_path_for(output: str | Path) -> Path:
    """Where the per-rank plot goes for report ``output``: ``run.md`` -> ``run.ranks.png``."""
    return _beside(output, "ranks")


def _beside(output: str | Path, what: str) -> Path:
    out = Path(output)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}.{what}.png")


def figures(doc: dict[str, Any], output: str | Path) -> list[Figure]:
    """The PNG figures of a markdown report written to ``output``: the utilization plot (when the document
    has a utilization timeline) and, for a run document, the per-rank plot. Rendered, not written: the
    caller writes each ``data`` to its ``path`` and passes the list to :func:`render` to link them."""
    from .plots import ranks_png, utilization_png

    out: list[Figure] = []
    for role, path, draw in (
        ("utilization", plot_path_for(output), utilization_png),
        ("ranks", ranks_plot_path_for(output), ranks_png),
    ):
        data = draw(doc)
        if data is not None:
            out.append(Figure(role, path, data))
    return out
