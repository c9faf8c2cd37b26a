"""The compiled split of the rows carrying a correlation id (analyses/id_split.py, ``_merge_search.id_rows``)
against the numpy selections it replaced in ``launch._join_ids`` (written here from their definition), on
hypothesis-generated kinds, rows and ids: no carrying row, one, GPU ops equal to the GPU rows given or not, ids -1,
int32 and int64 rows and ids, unknown kinds; and ``launch._join_ids`` with the pass against without it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import id_split, launch
from tracelens.analyses.columns import event_columns
from tracelens.trace import ALL_KINDS, DRIVER, GPU_ACTIVITY_KINDS, RUNTIME, Trace

pytestmark = pytest.mark.skipif(
    id_split._compiled is None or not hasattr(id_split._compiled, "id_rows"),
    reason="the compiled pass is not built",
)

GPU_CODES = [ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS]
RUNTIME_CODE, DRIVER_CODE = ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER)


@st.composite
def carrying(draw: st.DrawFn) -> tuple[Any, ...]:
    n = draw(st.integers(0, 50))
    kind = np.array(draw(st.lists(st.integers(-1, len(ALL_KINDS) - 1), min_size=n, max_size=n)), np.int8)
    marks = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    rows = np.flatnonzero(marks).astype(draw(st.sampled_from([np.int32, np.int64])))
    ids = np.array(
        draw(st.lists(st.integers(-1, 2**30 - 1), min_size=rows.size, max_size=rows.size)),
        draw(st.sampled_from([np.int32, np.int64])),
    )
    is_op = np.isin(kind[rows], GPU_CODES)
    op_rows = rows[is_op]
    gpu = draw(
        st.sampled_from(
            ["none", "same", "same64", "fewer", "more", "other"] if op_rows.size else ["none", "same", "more"]
        )
    )
    if gpu == "none":
        gpu_rows = None
    elif gpu == "same":
        gpu_rows = op_rows.copy()
    elif gpu == "same64":
        gpu_rows = op_rows.astype(np.int64)
    elif gpu == "fewer":
        gpu_rows = op_rows[:-1].copy()
    elif gpu == "more":
        gpu_rows = np.append(op_rows, n).astype(op_rows.dtype)
    else:
        gpu_rows = op_rows.copy()
        gpu_rows[-1] += 1
    dtype = draw(st.sampled_from([np.int32, np.int64]))
    return kind, rows, ids, gpu_rows, dtype


@settings(max_examples=400, deadline=None, database=None)
@given(carrying())
def test_split_id_rows_equals_the_selections(data: tuple[Any, ...]) -> None:
    kind, rows, ids, gpu, dtype = data
    got = id_split.split_id_rows(kind, rows, ids, gpu, dtype)
    assert got is not None
    at = kind[rows]
    is_op = np.isin(at, GPU_CODES)
    is_call = (at == RUNTIME_CODE) | (at == DRIVER_CODE)
    if gpu is None or not (is_op.sum() == gpu.size and np.array_equal(rows[is_op], gpu)):
        assert got.op_ids is None
    else:
        assert got.op_ids is not None
        assert got.op_ids.dtype == dtype and np.array_equal(got.op_ids, ids[is_op])
    assert got.ids.dtype == dtype and np.array_equal(got.ids, ids[is_call])
    assert got.rows.dtype == rows.dtype and np.array_equal(got.rows, rows[is_call])
    assert got.is_driver.dtype == bool and np.array_equal(got.is_driver, at[is_call] == DRIVER_CODE)
    assert got.runtimes == int(np.count_nonzero(kind == RUNTIME_CODE))
    assert got.drivers == int(np.count_nonzero(kind == DRIVER_CODE))


def test_a_carrying_row_outside_the_table_is_refused() -> None:
    with pytest.raises(IndexError):
        id_split.split_id_rows(
            np.zeros(2, np.int8), np.array([0, 2], np.int32), np.zeros(2, np.int64), None, np.int64
        )


def test_other_arrays_take_the_numpy_path() -> None:
    kind = np.zeros(3, np.int8)
    assert id_split.split_id_rows(kind, np.arange(3, dtype=np.uint32), np.zeros(3), None, np.int64) is None
    assert id_split.split_id_rows(kind, np.arange(3), np.zeros(3, np.int64), None, np.int16) is None


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["kernel", "memcpy", "runtime", "driver", "gpu_sync"]))
        corr = draw(st.integers(-1, 12))
        gpu = kind in ("kernel", "memcpy", "gpu_sync")
        start = draw(st.integers(0, 100))
        rows.append(
            {
                "kind": kind,
                "name": f"{kind}{corr % 3}",
                "start_ns": start,
                "end_ns": start + draw(st.integers(0, 9)),
                "device": draw(st.sampled_from([0, 1, None])) if gpu else None,
                "stream": 7 if gpu else None,
                "pid": None if gpu else 1,
                "tid": None if gpu else 10 + corr % 2,
                "correlation_id": None if corr < 0 else corr,
            }
        )
    # many host rows carrying no id: the ids are stored sparse
    rows += [
        {"kind": "cpu_op", "name": "op", "start_ns": i, "end_ns": i + 1, "pid": 1, "tid": 10}
        for i in range(draw(st.sampled_from([0, 80])))
    ]
    return rows or [{"kind": "runtime", "name": "x", "start_ns": 0, "end_ns": 1}]


@settings(max_examples=150, deadline=None, database=None)
@given(traces())
def test_join_ids_with_the_pass_equal_the_numpy_path(rows: list[dict[str, Any]]) -> None:
    def joined() -> tuple[Any, ...]:
        trace = Trace.from_rows(rows)
        cols = event_columns(trace)
        gpu, _ = launch._gpu_rows(cols)
        return launch._join_ids(trace, cols, gpu), launch._join_ids(Trace.from_rows(rows), cols, None)

    got = joined()
    saved = id_split._compiled
    id_split._compiled = None  # type: ignore[assignment]
    try:
        want = joined()
    finally:
        id_split._compiled = saved
    for mine, theirs in zip(got, want, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.dtype == b.dtype and np.array_equal(a, b) and a.flags.writeable == b.flags.writeable
