"""The scanner's one-pass per-row steps (``_kineto_scan.prepare_rows``, used by kineto/prepare.py) against the
numpy steps they replace (prepare._row_steps): the same block columns, values and dtypes, on blocks of any
kinds and of odd values (NaN, infinities, ids beyond int64, fractions, times off the timeline, empty)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest import kineto
from tracelens.ingest.kineto import prepare
from tracelens.ingest.kineto.blocks import DEVICE_SIDE, KIND_CODE, KINDS, MAX_TIME_US
from tracelens.trace import CPU_OP, EVENT_SCHEMA, GPU_ANNOTATION, KERNEL, RUNTIME

pytestmark = pytest.mark.skipif(
    getattr(kineto._kineto_scan, "prepare_rows", None) is None, reason="the native scanner is not built"
)

_ODD = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**63, -(2.0**63), 2.0**62, 2.0**53, 0.5, -0.5, 1.5, 2.5]
_VALUE = st.one_of(
    st.sampled_from(_ODD),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**64), 2**64).map(float),
    st.integers(0, 1000).map(float),  # ordinary ids, so that exact and nested blocks come up too
)
_DURATION = st.one_of(
    st.sampled_from([*_ODD, MAX_TIME_US, -MAX_TIME_US, np.nextafter(MAX_TIME_US, 0), 1712195495519689.047]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0, 1e4),
)
# Start times as prepare_block passes them: on the timeline (blocks.placeable; it drops the other rows).
_LIMIT = float(np.nextafter(MAX_TIME_US, 0))
_START = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, 1712195495519689.047, _LIMIT, -_LIMIT]),
    st.floats(-_LIMIT, _LIMIT),
    st.floats(0, 1e4),
)
_FIELDS = ("ts", "dur", "pid", "tid", "correlation", "external_id")


def _block(kinds: list[int], columns: dict[str, list[float]]) -> dict[str, Any]:
    kind = np.array(kinds, dtype=np.int8)
    block: dict[str, Any] = {key: np.array(values, dtype=np.float64) for key, values in columns.items()}
    block["kind"] = kind
    block["gpu_rows"] = np.flatnonzero(DEVICE_SIDE[kind] | (kind == KIND_CODE[GPU_ANNOTATION]))
    return block


def _both(block: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    numpy_block = {k: v.copy() for k, v in block.items()}
    native_block = {k: v.copy() for k, v in block.items()}
    prepare._row_steps(numpy_block, numpy_block.pop("ts"))
    prepare._native_row_steps(native_block, native_block.pop("ts"), kineto._kineto_scan.prepare_rows)
    return numpy_block, native_block


def _assert_same(expected: dict[str, Any], got: dict[str, Any]) -> None:
    assert list(got) == list(expected) or set(got) == set(expected)
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            assert got[key].dtype == value.dtype, key
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            assert type(got[key]) is type(value) and got[key] == value, key


@st.composite
def _blocks(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(0, 40))
    kinds = draw(st.lists(st.integers(0, len(KINDS) - 1), min_size=n, max_size=n))
    columns = {
        key: draw(st.lists({"ts": _START, "dur": _DURATION}.get(key, _VALUE), min_size=n, max_size=n))
        for key in _FIELDS
    }
    return _block(kinds, columns)


@settings(max_examples=300, deadline=None)
@given(_blocks())
def test_prepare_rows_gives_the_numpy_steps_columns(block: dict[str, Any]) -> None:
    _assert_same(*_both(block))


@pytest.mark.parametrize("n", [0, 1])
@pytest.mark.parametrize("kind", range(len(KINDS)))
def test_empty_and_one_row_blocks(n: int, kind: int) -> None:
    block = _block([kind] * n, {key: [7.25] * n for key in _FIELDS})
    expected, got = _both(block)
    _assert_same(expected, got)
    assert got["nested"] is expected["nested"]


def test_host_ids_held_exactly_or_not() -> None:
    cpu_op, runtime, kernel = KIND_CODE[CPU_OP], KIND_CODE[RUNTIME], KIND_CODE[KERNEL]
    for pid in (12.0, 12.5, np.nan, 2.0**63, 1e300):
        block = _block(
            [cpu_op, runtime, kernel],
            {
                "ts": [1.0, 2.0, 3.0],
                "dur": [1.0, np.nan, 1e30],
                "pid": [pid, 3.0, 4.0],
                "tid": [5.0, pid, 6.0],
                "correlation": [1.0, 2.0, 2.0],
                "external_id": [9.0, np.nan, 2.0**64],
            },
        )
        expected, got = _both(block)
        _assert_same(expected, got)
        assert ("pid_float" in got) is (not got["pid_exact"])


def test_bad_kind_code_is_refused() -> None:
    block = _block([0], {key: [1.0] for key in _FIELDS})
    block["kind"] = np.array([len(KINDS)], dtype=np.int8)
    with pytest.raises(ValueError, match="kind code"):
        prepare._native_row_steps(block, block.pop("ts"), kineto._kineto_scan.prepare_rows)


def test_id_columns_are_int64() -> None:
    # prepare_rows writes int64 data for each id (prepare.int_parts takes the column's dtype from the schema)
    for column in ("pid", "tid", "correlation_id", "external_id"):
        assert EVENT_SCHEMA.field(column).type.to_pandas_dtype() == np.int64


# us_to_ns's floor (truncation less one below a negative fraction) and its rounding of the fraction and of
# durations (one conversion to nearest, ties to even): at the values where those could part from numpy's
# floor and rint (negative fractions, the edge of exact fractions at 2**52, halves of a nanosecond), all on
# the timeline (prepare_rows is given those only).
_ROUNDING_EDGES = [
    -1.5,
    -0.25,
    -1e-9,
    -(2.0**52) + 0.5,
    2.0**52 - 0.5,
    2.0**52,
    2.0**52 + 2,
    -(2.0**52) - 2,
    -1712195495519689.5,
    1712195495519689.047,
    0.0005,
    0.0015,
    0.0025,
    1.0005,
    -1.0005,
    -0.0025,
    2.5e-3,
    0.4999999999999999,
    -0.4999999999999999,
    7.0,
    -7.0,
    _LIMIT,
    -_LIMIT,
]


@pytest.mark.parametrize("value", _ROUNDING_EDGES)
def test_rounding_edges_equal_numpy(value: float) -> None:
    n = 2
    block = _block([KIND_CODE[KERNEL], KIND_CODE[CPU_OP]], {key: [value] * n for key in _FIELDS})
    _assert_same(*_both(block))
