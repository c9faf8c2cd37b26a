"""Renderers: each turns the analysis document (see ``analyses.analyze``) into text.

One module per format, each exposing ``render(doc, **options) -> str``. The format can follow the output
file's extension (``.md`` markdown, ``.json`` JSON, anything else terminal text).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..errors import UsageError

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


def render(doc: dict[str, Any], fmt: str, **options: Any) -> str:
    if fmt not in RENDERERS:
        raise UsageError(f"unknown output format {fmt!r} (choose from {', '.join(RENDERERS)})")
    module = importlib.import_module(f"{__name__}.{RENDERERS[fmt]}")
    return module.render(doc, **options)
