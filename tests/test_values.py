"""tracelens.values.int_or_none: the one integer conversion the readers and analyses share."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tracelens.values import int_or_none


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (7, 7),
        (-3, -3),
        (2**63, 2**63),
        (np.int64(5), 5),
        (np.uint64(2**64 - 1), 2**64 - 1),
        (3.9, 3),
        (-3.9, -3),
        (np.float64(12.0), 12),
        (np.float32(2.5), 2),
        ("42", 42),
        (" 42 ", 42),
        ("-1", -1),
        (None, None),
        (True, None),
        (False, None),
        (np.bool_(True), None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        (np.float64("nan"), None),
        ("4.2", None),
        ("abc", None),
        ("", None),
        (b"12", None),
        (pd.NA, None),
        ([1], None),
    ],
)
def test_int_or_none(value: object, expected: int | None) -> None:
    got = int_or_none(value)
    assert got == expected and (got is None or type(got) is int)
