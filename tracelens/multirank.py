"""Moved to :mod:`tracelens.run` (one module per concern); this name stays for code that imports it."""

from __future__ import annotations

from .run import *  # noqa: F403
from .run import __all__  # noqa: F401
