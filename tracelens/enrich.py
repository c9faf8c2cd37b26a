"""Derived per-event columns filled in after any reader (format-independent)."""

from __future__ import annotations

from .trace import Trace


def enrich(trace: Trace) -> Trace:
    """Return the trace with derived columns filled (occupancy, see ``analyses/occupancy.py``)."""
    try:
        from .analyses.occupancy import annotate_occupancy
    except ImportError:  # occupancy calculator not built yet
        return trace
    return annotate_occupancy(trace)
