"""call_join.keyed_calls (one compiled pass, ``_kernel_stats.split_call_keys``: the rows carrying a correlation id
split into GPU ops and calls, the calls' keys packed) and its join equal what launch_pairs did before: the split of
id_split (``_merge_search.id_rows``), the calls without an id dropped, and launch_rows' numpy path (match_calls), and
an independent join (a dict of each id's first call by (driver after runtime, row)); on hypothesis-generated kinds,
carrying rows and ids (test_id_split's): no carrying row, one, GPU ops equal to the GPU rows given or not, ids -1 and
repeated (runtime and driver calls of one id: ties), int32 and int64 rows and ids, unknown kinds; and launch_pairs
with the pass equals launch_pairs without it on a Kineto trace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_id_split import carrying
from test_launch_rows_compiled import _independent

from tracelens.analyses import call_join, id_split

pytestmark = pytest.mark.skipif(
    call_join._compiled is None
    or not hasattr(call_join._compiled, "split_call_keys")
    or id_split._compiled is None,
    reason="the compiled passes are not built",
)


def _before(kind, rows, ids, gpu, dtype, row_type) -> tuple[Any, ...]:  # noqa: ANN001
    """The split (id_split), the calls with an id, launch_rows by numpy."""
    split = id_split.split_id_rows(kind, rows, ids, gpu, dtype)
    assert split is not None
    with_id = split.ids >= 0
    compiled = call_join._compiled
    call_join._compiled = None  # type: ignore[assignment]
    try:
        op_corr = (
            split.op_ids if split.op_ids is not None else np.zeros(gpu.size, dtype)
        )  # any ids: joined alike
        joined = call_join.launch_rows(
            op_corr, split.ids[with_id], split.rows[with_id], split.is_driver[with_id], row_type
        )
    finally:
        call_join._compiled = compiled
    return split, op_corr, joined, (split.ids[with_id], split.rows[with_id], split.is_driver[with_id])


@settings(max_examples=400, deadline=None, database=None)
@given(carrying(), st.sampled_from([np.int32, np.int64]))
def test_keyed_calls_equal_the_split_and_the_numpy_join(data: tuple[Any, ...], row_type: type) -> None:
    kind, rows, ids, gpu, dtype = data
    if gpu is None:
        return  # launch_pairs always gives the GPU ops
    keyed = call_join.keyed_calls(kind, rows, ids, gpu, dtype)
    if rows.size == 0 or rows.size < gpu.size:
        assert keyed is None
        return
    split, op_corr, (matched, launch_row, unique), calls = _before(kind, rows, ids, gpu, dtype, row_type)
    if keyed is None:  # more calls than the carrying rows beside gpu's ops hold, or widths not built for
        widths = (rows.itemsize, ids.itemsize, gpu.itemsize, np.dtype(dtype).itemsize)
        assert split.ids.size > rows.size - gpu.size or widths not in call_join.SPLIT_WIDTHS
        return
    assert (keyed.op_ids is None) == (split.op_ids is None)
    if split.op_ids is not None:
        assert keyed.op_ids is not None
        assert keyed.op_ids.dtype == split.op_ids.dtype and keyed.op_ids.tolist() == split.op_ids.tolist()
    assert keyed.call_ids.dtype == split.ids.dtype and keyed.call_ids.tolist() == split.ids.tolist()
    assert keyed.api_rows == split.runtimes + split.drivers
    got = keyed.join(op_corr, row_type)
    assert got[0].tolist() == matched.tolist()
    assert got[1].dtype == np.dtype(row_type) and got[1].tolist() == launch_row.tolist()
    assert got[2] == unique
    want_matched, want_rows, want_unique = _independent(op_corr, *calls)
    assert got[0].tolist() == want_matched and got[1].tolist() == want_rows and got[2] == want_unique


def test_keyed_calls_ties_and_edges() -> None:
    from tracelens.trace import ALL_KINDS, DRIVER, KERNEL, RUNTIME

    k, r, d = ALL_KINDS.index(KERNEL), ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER)
    # a driver call before the runtime call of its id, two runtime calls of one id, a call without an id
    kind = np.array([d, r, k, r, r, k, k, r, -1], np.int8)
    rows = np.arange(8, dtype=np.int32)
    ids = np.array([4, 4, 4, 9, 9, 9, 5, -1], np.int64)
    gpu = np.array([2, 5, 6], np.int32)
    keyed = call_join.keyed_calls(kind, rows, ids, gpu, np.int64)
    assert keyed is not None and keyed.op_ids is not None
    assert keyed.op_ids.tolist() == [4, 9, 5] and keyed.call_ids.tolist() == [4, 4, 9, 9, -1]
    assert keyed.api_rows == 5
    matched, launch_row, unique = keyed.join(keyed.op_ids, np.int32)
    assert matched.tolist() == [True, True, False] and launch_row.tolist() == [1, 3, -1] and not unique
    # one carrying row, a GPU op; no calls
    one = call_join.keyed_calls(
        np.array([k], np.int8), np.array([0], np.int32), np.array([3]), np.array([0], np.int32), np.int64
    )
    assert one is not None and one.keys.size == 0
    assert [a.tolist() for a in one.join(np.array([3]), np.int64)[:2]] == [[False], [-1]]
    # no carrying row: not taken
    none = np.zeros(0, np.int32)
    assert call_join.keyed_calls(kind, none, none, none, np.int32) is None
