"""Hypothesis-generated Kineto events: the native scanner's block equals msgspec's (the reference reader), for
numbers of any shape (the scanner reads digit runs eight at a time) and names of any length and content (it
codes them by a hash of their bytes), in compact and in Kineto's indented layout."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_kineto_native import assert_same_block, native, needs_scanner, reference

# A JSON number as a profiler or a hand-written trace may write it: integers of 1 to 25 digits, decimals with
# long integer and fraction parts and leading zeros, exponents, Python's repr of a double.
_digits = st.text(alphabet="0123456789", min_size=1, max_size=25)
_integer_text = st.builds(lambda sign, d: sign + (d.lstrip("0") or "0"), st.sampled_from(["", "-"]), _digits)
_decimal_text = st.builds(
    lambda whole, fraction, exponent: whole + "." + fraction + exponent,
    _integer_text,
    _digits,
    st.sampled_from(["", "e5", "E-3", "e+12", "e-20"]),
)
_repr_text = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300).map(repr)
NUMBERS = st.one_of(_integer_text, _decimal_text, _repr_text)
NAMES = st.text(min_size=0, max_size=70)


def _event(name: str, ascii_only: bool, numbers: list[str], compact: bool) -> str:
    separator, colon = (",", ":") if compact else (", ", ": ")
    members = [
        ("ph", '"X"'),
        ("cat", '"cpu_op"'),
        ("name", json.dumps(name, ensure_ascii=ascii_only)),
        ("pid", "1"),
        ("tid", numbers[0]),
        ("ts", "1"),
        ("dur", numbers[1]),
        ("args", "{" + f'"correlation"{colon}{numbers[2]}' + "}"),
    ]
    return "{" + separator.join(f'"{key}"{colon}{value}' for key, value in members) + "}"


def _as_python_reads(text: str) -> float:
    return float(int(text)) if text.lstrip("-").isdigit() else float(text)


@needs_scanner
@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    st.lists(
        st.tuples(NAMES, st.booleans(), st.lists(NUMBERS, min_size=3, max_size=3)), min_size=1, max_size=30
    ),
    st.booleans(),
)
def test_generated_events_read_natively_equal_msgspec(
    events: list[tuple[str, bool, list[str]]], compact: bool
) -> None:
    texts = [_event(name, ascii_only, numbers, compact) for name, ascii_only, numbers in events]
    # Kineto's own layout (two spaces before each event) or one line
    text = "[\n  " + ",\n  ".join(texts) + "\n]" if not compact else "[" + ",".join(texts) + "]"
    want = reference(text)
    got = native(text)
    if got is None:  # declined: only for what msgspec's typed decoder would also refuse (not here)
        raise AssertionError(f"declined: {text[:300]}")
    assert_same_block(got, want)
    # every number bit for bit Python's float() (the correlation id of each event); a JSON integer is an int
    # first, as msgspec reads it ("-0" is 0, not -0.0)
    correlations = np.array([_as_python_reads(numbers[2]) for _, _, numbers in events])
    assert got["correlation"].tobytes() == correlations.tobytes()
