"""Stable JSON: the analysis document as is, integers raw (ns, bytes), keys in documented order.

The encoding is :func:`tracelens.document.dumps`, the counterpart of ``tracelens.load_document``.
"""

from __future__ import annotations

from typing import Any

from ..document import dumps


def render(doc: dict[str, Any], **_: Any) -> str:
    return dumps(doc)
