"""The op tree's row lists by their fast paths against independent computations:

- kind_rows.cpu_op_rows: the thread tested in a table-long mask (tables up to MASKED_TID_ROWS rows) vs the tid
  gathered at the cpu ops (the path kept for bigger tables and thread codes), and vs a mask built per row in Python;
- tree.emit_nvtx_rows: no row, without a pass over the table, where no name has the emit_nvtx form.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_ops_lean_paths import _op_trace
from tracelens.analyses.columns import event_columns
from tracelens.analyses.ops import kind_rows, tree
from tracelens.trace import ANNOTATION, CPU_OP, Trace

_KINDS = [CPU_OP, ANNOTATION, "runtime"]


def _rows(kinds: list[int], tids: list[int]) -> list[dict]:
    return [
        {"kind": _KINDS[k], "name": f"op{i % 3}", "start_ns": i, "end_ns": i + 1, "pid": 1, "tid": tid}
        for i, (k, tid) in enumerate(zip(kinds, tids, strict=False))
    ]


def _python_cpu_rows(rows: list[dict]) -> list[int]:
    return [i for i, row in enumerate(rows) if row["kind"] == CPU_OP and row["tid"] >= 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=40), st.lists(st.integers(-2, 3), max_size=40))
def test_cpu_op_rows_masked_equal_gathered(kinds: list[int], tids: list[int]) -> None:
    rows = _rows(kinds, tids)
    if not rows:
        return
    cols = event_columns(Trace.from_rows(rows))
    masked = kind_rows.cpu_op_rows(cols)
    original = kind_rows.MASKED_TID_ROWS
    kind_rows.MASKED_TID_ROWS = 0  # the gather at the cpu ops
    try:
        gathered = kind_rows.cpu_op_rows(cols)
    finally:
        kind_rows.MASKED_TID_ROWS = original
    assert masked.dtype == gathered.dtype == np.int64
    assert masked.tolist() == gathered.tolist() == _python_cpu_rows(rows)


@pytest.mark.parametrize(
    ("kinds", "tids"), [([0], [1]), ([0], [-1]), ([1], [1]), ([0, 0, 0], [5, 5, 5]), ([2, 1], [1, 1])]
)
def test_cpu_op_rows_edge_cases(kinds: list[int], tids: list[int]) -> None:
    rows = _rows(kinds, tids)
    got = kind_rows.cpu_op_rows(event_columns(Trace.from_rows(rows)))
    assert got.dtype == np.int64 and got.tolist() == _python_cpu_rows(rows)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_emit_nvtx_rows_without_such_names_are_none(seed: int) -> None:
    # the generated op traces without their emit_nvtx names: annotations and cpu ops of plain names only
    rows = [
        {**row, "name": "## forward ##"} if row["kind"] in (ANNOTATION, CPU_OP) else row
        for row in _op_trace(np.random.default_rng(seed), True)
    ]
    trace = Trace.from_rows(rows)
    assert not tree.op_names(trace).nvtx.any()
    got = tree.emit_nvtx_rows(trace)
    assert got.dtype == np.int32 and got.size == 0
    with_nvtx = Trace.from_rows(_op_trace(np.random.default_rng(seed), False))
    cols = event_columns(with_nvtx)
    # (the names having that form: found as before, the annotations on a thread)
    expected = np.flatnonzero(cols.of_kind(ANNOTATION) & (cols.tid >= 0))
    assert tree.emit_nvtx_rows(with_nvtx).tolist() == expected.tolist()
