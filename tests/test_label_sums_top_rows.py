"""label_sums.summed_by_row_key and top_by_row_key (the unexplained-idle top host rows grouped and ordered in numpy)
against the pandas groupby / concat / regroup / sort_values chain they replace: chunks, ties of overlap and name, one
row, none."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.label_sums import summed_by_row_key, top_by_row_key


def _frame(rows: list) -> dict[str, np.ndarray]:
    return {
        "name": np.array([r[0] for r in rows], np.int32),
        "kind": np.array([r[1] for r in rows], np.int8),
        "tid": np.array([r[2] for r in rows], np.int64),
        "overlap": np.array([r[3] for r in rows], np.int64),
    }


def _reference(chunks: list[dict[str, np.ndarray]], limit: int) -> tuple:
    partials = [pd.DataFrame(c).groupby(["name", "kind", "tid"], sort=False)["overlap"].sum() for c in chunks]
    summed = pd.concat(partials).groupby(level=[0, 1, 2], sort=False).sum()
    top = summed.rename("overlap").reset_index().sort_values(["overlap", "name"], ascending=[False, True])
    return tuple(
        tuple(r) for r in top.head(limit)[["name", "kind", "tid", "overlap"]].itertuples(index=False)
    )


_ROW = st.tuples(st.integers(0, 4), st.integers(4, 6), st.integers(0, 3), st.integers(1, 5))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_ROW, min_size=1, max_size=15), min_size=1, max_size=4), st.integers(1, 6))
def test_top_by_row_key_equals_the_pandas_chain(chunks: list, limit: int) -> None:
    frames = [_frame(c) for c in chunks]
    parts = [summed_by_row_key(f["name"], f["kind"], f["tid"], f["overlap"]) for f in frames]
    got = top_by_row_key(parts, limit)
    assert got == _reference(frames, limit)
    assert all(type(v) is int for row in got for v in row)


def test_top_by_row_key_of_no_rows_and_of_one() -> None:
    assert top_by_row_key([], 5) == ()
    one = _frame([(3, 5, 9, 7)])
    assert top_by_row_key([summed_by_row_key(*one.values())], 5) == ((3, 5, 9, 7),)
