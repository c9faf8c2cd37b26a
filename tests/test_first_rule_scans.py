"""startup_first.first_rule_scans by the compiled walk of both rules (``_kernel_stats.first_rule_scans``) equals
``first_scan.long_group_firsts`` of each rule (first_call: every row, by thread; first_api: the API calls, by process)
and the row-by-row reference of test_first_scan, on hypothesis-generated columns (empty tables, one row, ties of
start, starts out of order, rows without a name or a thread, thread ids past 2^32, negative durations, pids that
share their low 32 bits), with the two rules' tables drawn apart and over each other; and ``one_time_work`` with
the walk equals it without (the two passes of long_group_firsts, and the numpy path)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_first_scan import CATEGORIES, _fields, columns, reference, traces

from tracelens.analyses import first_scan, startup, startup_first
from tracelens.trace import ALL_KINDS, DRIVER, RUNTIME, Trace

pytestmark = pytest.mark.skipif(
    startup_first._compiled is None
    or not hasattr(startup_first._compiled, "first_rule_scans")
    or first_scan._compiled is None,
    reason="the compiled passes are not built",
)


def _api_table(draw_bits: list[int]) -> np.ndarray:
    """An allowed table of the API kinds only (as startup's first_api table), set where ``draw_bits`` is."""
    table = np.zeros((len(ALL_KINDS) + 1, CATEGORIES + 1), np.uint8)
    for code in (ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER)):
        table[code] = draw_bits[code * (CATEGORIES + 1) : (code + 1) * (CATEGORIES + 1)]
    return table.reshape(-1)


@settings(max_examples=400, deadline=None, database=None)
@given(
    columns(),
    st.lists(
        st.integers(0, 1),
        min_size=(len(ALL_KINDS) + 1) * (CATEGORIES + 1),
        max_size=(len(ALL_KINDS) + 1) * (CATEGORIES + 1),
    ),
    st.sampled_from([0, 5, 10, 100]),
    st.sampled_from([0, 3, 10]),
)
def test_both_rules_in_one_walk_equal_each_pass(
    data, api_bits: list[int], min_call: int, min_api: int
) -> None:
    cols, category, call_table, _ = data
    api_table = _api_table(api_bits)
    api_rows = np.flatnonzero(
        (cols.kind == ALL_KINDS.index(RUNTIME)) | (cols.kind == ALL_KINDS.index(DRIVER))
    )
    got = startup_first._compiled_scans(cols, category, call_table, api_table, min_call, min_api)  # type: ignore[arg-type]
    assert got is not None
    want_call = reference(cols, category, call_table, True, min_call, None)
    want_api = reference(cols, category, api_table, False, min_api, api_rows)
    passes = (
        first_scan.long_group_firsts(cols, category, call_table, True, min_call),  # type: ignore[arg-type]
        first_scan.long_group_firsts(cols, category, api_table, False, min_api, api_rows),  # type: ignore[arg-type]
    )
    for scan, want, by_pass in zip(got, (want_call, want_api), passes, strict=True):
        if want is None:
            assert scan is None and by_pass is None
            continue
        assert scan is not None and by_pass is not None
        assert scan[0].dtype == np.int64 and scan[0].tolist() == want[0] == by_pass[0].tolist()
        assert scan[1] is (want[1] < 0) and want[1] == by_pass[1]


def test_the_walk_declines_columns_that_are_not_plain() -> None:
    cols = SimpleNamespace(
        kind=np.zeros(2, np.int8),
        name=np.zeros(2, np.int32),
        pid=np.ones(2, np.int64),
        tid=np.ones(4, np.int64)[::2],  # not contiguous
        start=np.zeros(2, np.int64),
        end=np.ones(2, np.int64),
    )
    table = np.ones((len(ALL_KINDS) + 1) * (CATEGORIES + 1), np.uint8)
    assert startup_first._compiled_scans(cols, np.zeros(2, np.int8), table, table, 0, 0) is None  # type: ignore[arg-type]


def test_a_kind_outside_the_table_is_refused() -> None:
    cols = SimpleNamespace(
        kind=np.array([len(ALL_KINDS)], np.int8),
        name=np.zeros(1, np.int32),
        pid=np.ones(1, np.int64),
        tid=np.ones(1, np.int64),
        start=np.zeros(1, np.int64),
        end=np.ones(1, np.int64),
    )
    table = np.ones((len(ALL_KINDS) + 1) * (CATEGORIES + 1), np.uint8)
    with pytest.raises(IndexError):
        startup_first._compiled_scans(cols, np.zeros(1, np.int8), table, table, 0, 0)  # type: ignore[arg-type]


def test_startup_tables_allow_only_the_api_kinds_for_first_api() -> None:
    """first_rule_scans walks every row for the first_api rule: the same as its API calls only where its table
    allows no other kind."""
    table = startup._FIRST_API_TABLE.reshape(len(ALL_KINDS) + 1, CATEGORIES + 1)
    others = [
        k for k in range(len(ALL_KINDS) + 1) if k not in (ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER))
    ]
    assert not table[others].any()


@settings(max_examples=150, deadline=None, database=None)
@given(traces())
def test_one_time_work_with_the_walk_equals_the_two_passes_and_the_numpy_path(rows: list[dict]) -> None:
    got = _fields(startup.one_time_work(Trace.from_rows(rows)))
    walk, passes = startup_first._compiled, first_scan._compiled
    startup_first._compiled = None  # type: ignore[assignment]
    try:
        by_passes = _fields(startup.one_time_work(Trace.from_rows(rows)))
        first_scan._compiled = None  # type: ignore[assignment]
        by_numpy = _fields(startup.one_time_work(Trace.from_rows(rows)))
    finally:
        startup_first._compiled, first_scan._compiled = walk, passes
    assert got == by_passes == by_numpy


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_many_rows_over_blocks_equal_each_pass(seed: int) -> None:
    """Tables of several of the walk's blocks (4096 rows), in start order (the quick walk) or with one start out of
    order late (the general walk after the quick one gives up), long rows in every block."""
    rng = np.random.default_rng(seed)
    n = 10_000
    start = np.sort(rng.integers(0, 10**6, n))
    if seed == 3:
        start[9_000] = 0
    cols = SimpleNamespace(
        kind=rng.integers(-1, len(ALL_KINDS), n).astype(np.int8),
        name=rng.integers(-1, 40, n).astype(np.int32),
        pid=rng.integers(1, 3, n).astype(np.int32),
        tid=rng.integers(-1, 6, n).astype(np.int64),
        start=start,
        end=start + rng.choice([1, 10, 200, 5_000], n, p=[0.5, 0.3, 0.15, 0.05]),
    )
    category = rng.integers(-1, CATEGORIES, n).astype(np.int8)
    call_table, api_table = startup._FIRST_CALL_TABLE, startup._FIRST_API_TABLE
    api_rows = np.flatnonzero(
        (cols.kind == ALL_KINDS.index(RUNTIME)) | (cols.kind == ALL_KINDS.index(DRIVER))
    )
    got = startup_first._compiled_scans(cols, category, call_table, api_table, 4_000, 150)  # type: ignore[arg-type]
    assert got is not None
    wants = (
        reference(cols, category, call_table, True, 4_000, None),
        reference(cols, category, api_table, False, 150, api_rows),
    )
    for scan, want in zip(got, wants, strict=True):
        if want is None:
            assert scan is None
            continue
        assert scan is not None and scan[0].tolist() == want[0] and scan[1] is (want[1] < 0)
