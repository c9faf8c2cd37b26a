"""unexplained_idle._process_count on a pid column held as codes (an Nsight export's threads: no pass over the rows
where the codes' table names no process the sampled rows missed) vs the same column as a plain array (the passes
over the rows), on generated columns: rare pids the sample can miss, negative pids, pids of rows that are not host
rows, and more processes than the passes check one by one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.coded import CodedInts
from tracelens.analyses.diagnosis import unexplained_idle


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-3, 40), min_size=1, max_size=24),
    st.integers(1, 3000),
    st.floats(0, 1),
    st.randoms(use_true_random=False),
)
def test_process_count_of_codes_equals_the_plain_column(
    table: list[int], size: int, host: float, rnd
) -> None:
    values = np.array(table, np.int32)
    # a rare code (one row): evenly spaced samples may miss it
    codes = np.array([rnd.randrange(values.size) if rnd.random() < 0.98 else 0 for _ in range(size)], np.int8)
    host_mask = np.array([rnd.random() < host for _ in range(size)])
    coded = CodedInts(codes, values, complete=False)
    sample = unexplained_idle.PID_SAMPLE
    unexplained_idle.PID_SAMPLE = 16  # a sample of about 16 rows: one that misses processes
    try:
        expected = unexplained_idle._process_count(values[codes], host_mask)
        assert unexplained_idle._process_count(coded, host_mask) == expected
    finally:
        unexplained_idle.PID_SAMPLE = sample
    assert expected == np.unique(values[codes][host_mask & (values[codes] >= 0)]).size
