"""Stable JSON: the analysis document as is, integers raw (ns, bytes), keys in documented order."""

from __future__ import annotations

import math
from typing import Any

import orjson


def _finite(value: Any) -> Any:
    # JSON has no NaN/inf: an undefined ratio is null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def render(doc: dict[str, Any], **_: Any) -> str:
    return orjson.dumps(_finite(doc), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"
