"""label_sums (the ranges section's templates summed and ordered in numpy) against the pandas groupby + agg +
sort_values it replaces: ties of the sums, repeated and empty labels, one row, int64 extremes."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.label_sums import largest_first, sums_by_label


def _reference(labels: list[str], columns: dict[str, np.ndarray]) -> pd.DataFrame:
    frame = pd.DataFrame({**columns, "label": labels})
    agg = (
        frame.groupby("label", sort=False)
        .agg(**{f: (f, "sum") for f in columns}, texts=(next(iter(columns)), "size"))
        .reset_index()
    )
    return agg.sort_values(["a", "label"], ascending=[False, True], kind="stable")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "x", "ab", "a", "ProfilerStep#N"]), st.integers(-3, 3), st.integers(0, 9)
        ),
        min_size=1,
        max_size=30,
    )
)
def test_sums_by_label_equal_the_pandas_groupby(rows: list) -> None:
    labels = [r[0] for r in rows]
    columns = {"a": np.array([r[1] for r in rows], np.int64), "b": np.array([r[2] for r in rows], np.int64)}
    label, sums = sums_by_label(labels, columns)
    expected = _reference(labels, columns)
    order = largest_first(sums["a"], label)
    assert label[order].tolist() == expected["label"].tolist()
    for name in ("a", "b", "texts"):
        assert sums[name][order].tolist() == expected[name].tolist()


def test_largest_first_at_the_int64_extremes() -> None:
    values = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, 0], np.int64)
    labels = np.array(["d", "c", "b", "a"], dtype=object)
    assert largest_first(values, labels).tolist() == [1, 3, 2, 0]
