"""names.host_category_codes (numpy columns: a per-kind table, the name rules at the rows they change) against
names.host_category, the pandas definition it computes, on generated rows: every kind and an unknown one,
input-wait, blocking-sync, launch and other names, null names."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.names import host_category, host_category_codes
from tracelens.trace import ALL_KINDS

NAMES = [
    "cudaLaunchKernel",
    "cudaStreamSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
    "IteratorGetNext",
    "tracelens/data",
    "aten::mm",
    "ProfilerStep#3",
    "hipDeviceSynchronize",
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-1, len(ALL_KINDS) - 1), st.integers(-1, len(NAMES) - 1)),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 3),
)
def test_host_category_codes_equal_the_pandas_definition(rows: list[tuple[int, int]], unused: int) -> None:
    kind = np.array([k for k, _ in rows], np.int8)
    name = np.array([n for _, n in rows], np.int32)
    names = np.array(NAMES + [f"unused name {i}" for i in range(unused)], dtype=object)
    kinds = pd.Series([ALL_KINDS[k] if k >= 0 else "unknown kind" for k in kind.tolist()])
    texts = pd.Series(pd.Categorical([NAMES[n] if n >= 0 else None for n in name.tolist()], categories=NAMES))
    assert host_category_codes(kind, name, names).tolist() == host_category(kinds, texts).tolist()
