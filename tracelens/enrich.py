"""Derived per-event columns filled in after any reader (format-independent)."""

from __future__ import annotations

from .analyses.occupancy import annotate_occupancy
from .trace import Trace


def enrich(trace: Trace) -> Trace:
    """Return the trace with derived columns filled (occupancy, see ``analyses/occupancy.py``)."""
    return annotate_occupancy(trace)
