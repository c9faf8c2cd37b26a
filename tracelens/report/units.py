"""Human units for terminal and markdown output: :mod:`tracelens.units` (shared with the diagnosis's
sentences, which live below ``report/``)."""

from __future__ import annotations

from ..units import FRACTION_KEYS, fmt_auto, fmt_bytes, fmt_ns, fmt_pct, plural, signed

__all__ = ["FRACTION_KEYS", "fmt_auto", "fmt_bytes", "fmt_ns", "fmt_pct", "plural", "signed"]
