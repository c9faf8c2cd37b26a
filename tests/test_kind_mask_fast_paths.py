"""kinds.kind_mask (a range test per run of consecutive kind codes) equals EventColumns.of_kind (a lookup table
gathered per row, or a compare per kind), on hypothesis-generated kind codes and kind sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.columns import EventColumns
from tracelens.analyses.kinds import code_runs, kind_mask
from tracelens.trace import ALL_KINDS


def of_kind_reference(kind: np.ndarray, kinds: tuple[str, ...]) -> np.ndarray:
    """EventColumns.of_kind's own code (columns.py), run on the codes alone."""
    cols = EventColumns(kind, *[None] * 8)  # the kind codes only
    return EventColumns.of_kind(cols, *kinds)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-1, len(ALL_KINDS) - 1), max_size=200),
    st.lists(st.sampled_from(ALL_KINDS), max_size=len(ALL_KINDS)),
    st.sampled_from([np.int8, np.int16, np.int64]),
)
def test_kind_mask_equals_of_kind(codes: list[int], kinds: list[str], dtype: type) -> None:
    kind = np.array(codes, dtype=dtype)
    expected = of_kind_reference(kind, tuple(kinds))
    got = kind_mask(kind, kinds)
    assert got.dtype == bool and np.array_equal(got, expected)


def test_every_int8_code_outside_the_runs_is_not_matched() -> None:
    # the unsigned compare after a wrapping subtraction, over the whole int8 range
    kind = np.arange(-128, 128, dtype=np.int8)
    got = kind_mask(kind, ALL_KINDS[4:8] + ALL_KINDS[9:12])
    assert np.flatnonzero(got).tolist() == [128 + c for c in (4, 5, 6, 7, 9, 10, 11)]


def test_code_runs() -> None:
    assert code_runs([4, 5, 6, 7, 9, 10, 12]) == [(4, 7), (9, 10), (12, 12)]
    assert code_runs([]) == [] and code_runs([3, 3]) == [(3, 3)]
