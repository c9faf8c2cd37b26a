"""occupancy.config_groups and _name_labels (the top kernels' grouping by one int64 key per launch) against the
five-column pandas groupby they replace, with NaN keys, ties, one launch and null/empty names."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import occupancy


def _reference(labels: np.ndarray, config: np.ndarray, per_config: dict[str, np.ndarray]) -> np.ndarray:
    keys = pd.DataFrame({"name": labels, **{k: per_config[k][config] for k in occupancy.CONFIG_KEYS}})
    return keys.groupby(list(keys.columns), sort=False, dropna=False).ngroup().to_numpy()


_VALUES = st.sampled_from([0.0, 1.0, 2.0, np.nan])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(_VALUES, _VALUES, _VALUES, _VALUES), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 5), st.integers(-1, 3)), min_size=1, max_size=40),
)
def test_config_groups_equal_the_five_column_groupby(configs: list, launches: list) -> None:
    per_config = {k: np.array([c[i] for c in configs]) for i, k in enumerate(occupancy.CONFIG_KEYS)}
    config = np.array([c % len(configs) for c, _ in launches], np.intp)
    names = np.array(["a", None, "", "b"], dtype=object)  # None and "" are one label
    codes = np.array([n for _, n in launches], np.int64)  # -1: a null name
    name, label_of = occupancy._name_labels(codes, names)
    texts = np.append(names, None)[codes]
    assert [label_of[c] for c in name] == [t or "" for t in texts]
    group, first = occupancy.config_groups(name, config, per_config)
    expected = _reference(np.array([t or "" for t in texts], dtype=object), config, per_config)
    assert group.tolist() == expected.tolist()
    assert first.tolist() == [int(np.flatnonzero(expected == g)[0]) for g in range(first.size)]


def test_config_groups_of_one_launch() -> None:
    per_config = {k: np.array([1.0]) for k in occupancy.CONFIG_KEYS}
    group, first = occupancy.config_groups(np.zeros(1, np.int64), np.zeros(1, np.intp), per_config)
    assert group.tolist() == [0] and first.tolist() == [0]
