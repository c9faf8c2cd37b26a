"""The memcpy section's fast paths against the code they replaced (kept here as the reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import memcpy

KINDS = [None, "pageable", "pinned", "managed", "device", "array", "host", "Pinned"]


def _reference_host_memory_codes(src: pd.Series, dst: pd.Series) -> np.ndarray:
    """_host_memory_codes as it was: the distinct (source, destination) pairs by np.unique."""
    s_code, s_values = pd.factorize(src, use_na_sentinel=True)
    d_code, d_values = pd.factorize(dst, use_na_sentinel=True)
    pair = (s_code.astype(np.int64) + 1) * (len(d_values) + 1) + (d_code + 1)
    pairs, inverse = np.unique(pair, return_inverse=True)
    s_of = np.r_[None, np.asarray(s_values, dtype=object)][pairs // (len(d_values) + 1)]
    d_of = np.r_[None, np.asarray(d_values, dtype=object)][pairs % (len(d_values) + 1)]
    classes = memcpy._host_memory_of(pd.Series(s_of, dtype=object), pd.Series(d_of, dtype=object))
    codes = np.array([memcpy.MEMORY_CLASSES.index(c) for c in classes], np.int8)
    return codes[inverse.reshape(-1)]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(KINDS)), max_size=30),
    st.booleans(),
)
def test_host_memory_codes_match_np_unique(pairs: list, categorical: bool) -> None:
    # object or categorical columns (as the trace gives them), nulls among them
    dtype = pd.CategoricalDtype([k for k in KINDS if k]) if categorical else object
    src = pd.Series([a for a, _ in pairs], dtype=dtype)
    dst = pd.Series([b for _, b in pairs], dtype=dtype)
    got = memcpy._host_memory_codes(src, dst)
    assert np.array_equal(got, _reference_host_memory_codes(src, dst))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40).flatmap(lambda size: st.tuples(st.just(size), st.lists(st.integers(0, size - 1)))))
def test_distinct_small_is_np_unique(case: tuple) -> None:
    size, values = case
    v = np.array(values, np.int64)
    distinct, inverse = memcpy._distinct_small(v, size)
    expected, expected_inverse = np.unique(v, return_inverse=True)
    assert np.array_equal(distinct, expected)
    assert np.array_equal(inverse, expected_inverse.reshape(-1))
