"""sync._next_calls (the next call on a copy's thread, searched one thread at a time) against the search it
replaced, kept as the many-thread path (_next_calls_by_position: every call's (thread, start) position sorted), on
random calls: starts in order or not, ties, copies on threads without calls, no calls at all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import sync
from tracelens.analyses.columns import Table, thread_key
from tracelens.values import dense_codes


@settings(max_examples=80, deadline=None)
@given(
    calls=st.integers(0, 60),
    copies=st.integers(1, 20),
    threads=st.integers(1, 5),
    sorted_starts=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_next_calls_equal_the_search_by_position(
    calls: int, copies: int, threads: int, sorted_starts: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    pid = rng.integers(1, 3, calls).astype(np.int32)
    tid = rng.integers(0, threads, calls).astype(np.int32)
    start = rng.integers(0, 50, calls).astype(np.int64)  # ties on purpose
    if sorted_starts:
        start = np.sort(start)
    codes, thread_keys = dense_codes(thread_key(pid, tid))
    table = Table({"start": start, "thread": codes.astype(np.int8)})
    # copies on the calls' threads and on one more thread without calls
    copy_key = thread_key(
        rng.integers(1, 3, copies).astype(np.int32), rng.integers(0, threads + 1, copies).astype(np.int32)
    )
    after = rng.integers(0, 60, copies).astype(np.int64)
    call, found = sync._next_calls(table, thread_keys, copy_key, after)
    want_call, want_found = sync._next_calls_by_position(table, thread_keys, copy_key, after)
    assert np.array_equal(found, want_found)
    assert np.array_equal(call[found], want_call[want_found])
