"""Small conversions of loosely typed values (JSON fields, protobuf stats, table cells) that the readers
and analyses share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def int_or_none(value: Any) -> int | None:
    """``value`` as an int, or None where it holds no integer.

    Integers (Python or numpy) as they are; finite floats truncated toward zero; strings of an integer
    (``"42"``) parsed. None for None, booleans, NaN and infinities, other strings and every other type
    (``pd.NA``, bytes, lists, ...).
    """
    if value is None or isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None
