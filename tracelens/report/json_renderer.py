"""Stable JSON: the analysis document as is, integers raw (ns, bytes), keys in documented order."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np


def _finite(value: Any) -> Any:
    # JSON has no NaN/inf: an undefined ratio is null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _numpy(value: Any) -> Any:
    # numpy scalars and arrays (np.float64 is a float already): their Python equivalents.
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise NotImplementedError(f"cannot write {type(value).__name__} as JSON")


_ENCODER = msgspec.json.Encoder(enc_hook=_numpy)


def render(doc: dict[str, Any], **_: Any) -> str:
    return msgspec.json.format(_ENCODER.encode(_finite(doc)), indent=2).decode() + "\n"
