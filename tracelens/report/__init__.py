"""Renderers: each turns the analysis document (see ``analyses.analyze``) into text.

One module per format, each exposing ``render(doc, **options) -> str``: renderers return text and write no
file (the CLI writes the output and, for a markdown report with ``--png``, the :func:`figures` beside it).
The format can follow the output file's extension (``.md`` markdown, ``.json`` JSON, anything else terminal
text). Sections are drawn in the order of the section registry (``tracelens.analyses.REGISTRY``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:  # types only: the document's TypedDicts are not imported by analyze (kimp17)
    from ..document import Document

RENDERERS = {
    "terminal": "terminal",
    "json": "json_renderer",
    "markdown": "markdown",
}


def format_for_path(path: str | Path | None, default: str = "terminal") -> str:
    if path is None:
        return default
    suffix = Path(path).suffix.lower()
    return {".md": "markdown", ".markdown": "markdown", ".json": "json"}.get(suffix, default)


def render(doc: Document, fmt: str, **options: Any) -> str:
    if fmt not in RENDERERS:
        raise UsageError(f"unknown output format {fmt!r} (choose from {', '.join(RENDERERS)})")
    module = importlib.import_module(f"{__name__}.{RENDERERS[fmt]}")
    return module.render(doc, **options)


def figures(
    doc: Document, fmt: str, output: str | Path | None, *, plots: bool = True, png: bool = False
) -> list[Any]:
    """The PNG files that go beside a report (``markdown.Figure``: role, path, bytes): only for markdown
    written to a file with ``png`` and ``plots`` on. Pass the list to :func:`render` so the report links them."""
    if fmt != "markdown" or not (plots and png) or output in (None, "-"):
        return []
    from .markdown import figures as markdown_figures

    return markdown_figures(doc, output)  # type: ignore[arg-type]
