"""Analyses: pure functions from a :class:`~tracelens.trace.Trace` to JSON-ready results.

Each section module exposes ``section(trace, done) -> object`` where ``done`` holds the sections computed
before it (read-only) and the return value is JSON-serialisable (dicts, lists, str, int, float, None).
Typed, reusable functions live beside ``section`` in each module. :func:`analyze` runs them in order and
returns the document that ``analyze --format json`` prints (keys documented in ``docs/json.md``).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..trace import Trace

JSON_SCHEMA_VERSION = "1.0"

# Order matters: later sections may read earlier ones (diagnosis reads everything).
SECTIONS: list[str] = [
    "devices",
    "kernels",
    "host",
    "gaps",
    "steps",
    "attribution",
    "launch",
    "sync",
    "ranges",
    "memcpy",
    "occupancy",
    "diagnosis",
]


def analyze(trace: Trace, *, sections: list[str] | None = None) -> dict[str, Any]:
    """Run every analysis section and return the result document."""
    meta = trace.metadata
    doc: dict[str, Any] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "source": {
            "path": meta.source_path,
            "format": meta.source_format,
            "producer": meta.producer,
            "producer_version": meta.producer_version,
            "format_version": meta.format_version,
            "framework": meta.framework,
            "rank": meta.rank,
            "world_size": meta.world_size,
            "event_count": trace.events.num_rows,
            "warnings": list(meta.warnings),
        },
    }
    for name in sections or SECTIONS:
        module = importlib.import_module(f"{__name__}.{name}")
        doc[name] = module.section(trace, doc)
    return doc
