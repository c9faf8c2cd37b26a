"""The host block's fast paths equal what they replace (speed lives in benchmarks/):

- host_summary's dense path (each chunk's rows slotted where they stand, other rows in a dropped block of slots)
  equals the hashed path (the host rows gathered, a groupby per chunk), in chunks of a few rows too;
- _top_by_template (numpy grouping and lexsort of the (kind, template) pairs) equals the pandas groupby and
  stable sort it replaces (a reference copy below), ties and thread-bootstrap frames included;
- _chunk_threads on rows in long runs of a thread equals the distinct thread keys.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import host
from tracelens.analyses.columns import thread_key
from tracelens.analyses.names import is_thread_bootstrap, name_template
from tracelens.trace import ALL_KINDS

TRACES = [
    "gpu/pytorch_slow-input_cuda.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("chunk", [7, 1000, 1 << 21])
@pytest.mark.parametrize("name", TRACES)
def test_dense_slices_equal_the_hashed_path(name: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fixture_path(name)
    trace = tracelens.load(path)
    monkeypatch.setattr(host, "CHUNK_ROWS", chunk)
    dense = host.host_summary(trace)
    monkeypatch.setattr(host, "_count_every_slot", lambda slots, rows: False)
    assert host.host_summary(trace) == dense


def reference_top(
    kind: np.ndarray, labels: np.ndarray, totals: np.ndarray, counts: np.ndarray, top_n: int
) -> tuple[list[dict[str, Any]], int]:
    """_top_by_template as first written: a pandas groupby of the pairs and a stable sort."""
    text = pd.Series(labels, dtype=object).astype(str)
    distinct_names = pd.unique(text)
    # an empty template (a null or empty name) is listed as "(no name)"
    template = dict(
        zip(distinct_names, (name_template(n) or "(no name)" for n in distinct_names), strict=True)
    )
    bootstrap = text.map({n: is_thread_bootstrap(n) for n in distinct_names}).to_numpy(bool)
    pairs = pd.DataFrame({"kind": kind, "template": text.map(template), "total": totals, "count": counts})[
        ~bootstrap
    ]
    grouped = (
        pairs.groupby(["kind", "template"], sort=False)
        .agg(total=("total", "sum"), count=("count", "sum"), names=("total", "size"))
        .reset_index()
    )
    grouped = grouped.sort_values(["total", "template"], ascending=[False, True], kind="stable").head(top_n)
    top = [
        {
            "kind": ALL_KINDS[int(r.kind)],
            "name": str(r.template),
            "count": int(r.count),
            "total_ns": int(r.total),
            "names": int(r.names),
        }
        for r in grouped.itertuples(index=False)
    ]
    return top, int(counts[bootstrap].sum())


NAMES = [
    "ProfilerStep#1",
    "ProfilerStep#2",
    "aten::mm",
    "aten::mm, op_id = 5",
    "aten::add",
    "",
    "threading.py(1002): _bootstrap",
    "b",
    "B",
    "cudaLaunchKernel",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3), st.sampled_from(NAMES), st.sampled_from([0, 5, 10, 2**40]), st.integers(1, 9)
        ),
        max_size=30,
        unique_by=lambda r: (r[0], r[1]),  # (kind, name) pairs are distinct, as host_summary gives them
    ),
    st.integers(1, 12),
)
def test_top_by_template_equals_the_pandas_groupby(pairs: list, top_n: int) -> None:
    kind = np.array([p[0] for p in pairs], np.int64)
    labels = np.array([p[1] for p in pairs], dtype=object)
    totals = np.array([p[2] for p in pairs], np.int64)
    counts = np.array([p[3] for p in pairs], np.int64)
    assert host._top_by_template(kind, labels, totals, counts, top_n) == reference_top(
        kind, labels, totals, counts, top_n
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 3), st.integers(1, 20)), max_size=20),
    st.sampled_from([np.int32, np.int64]),
)
def test_chunk_threads_of_runs_equal_the_distinct_thread_keys(runs: list, tid_type: type) -> None:
    lengths = np.array([n for _, _, n in runs], np.int64)
    pid = np.repeat(np.array([p for p, _, _ in runs], np.int32), lengths)
    tid = np.repeat(np.array([t * 1000 + 7 if t >= 0 else t for _, t, _ in runs], np.int64), lengths).astype(
        tid_type
    )
    known = (pid >= 0) & (tid >= 0)
    expected = set(np.unique(thread_key(pid[known], tid[known])).tolist())
    got = host._chunk_threads(pid, tid)
    assert got.size == len(expected) and set(got.tolist()) == expected
