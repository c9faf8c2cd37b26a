"""The host and sync sections' fast paths equal the code they replaced (kept here as references), on
hypothesis-generated inputs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import host


def labels_reference(names: np.ndarray, pair_name: np.ndarray) -> np.ndarray:
    """host_summary's labels before: a Python step per (kind, name) pair."""
    return np.array([names[n] if n >= 0 else "" for n in pair_name], dtype=object)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=5), max_size=8), st.lists(st.integers(-1, 7), max_size=40))
def test_labels_equal_the_per_pair_loop(names: list[str], codes: list[int]) -> None:
    dictionary = np.array(names, dtype=object)
    pair_name = np.array([c for c in codes if c < len(names)], dtype=np.int64)
    got, expected = host._labels(dictionary, pair_name), labels_reference(dictionary, pair_name)
    assert got.dtype == expected.dtype == object
    assert got.tolist() == expected.tolist()
