"""The range running at a time (tracelens/intervals.py: running_at, reaching_at; per thread or device:
tracelens/analyses/columns.py: range_running_at): hand cases, and a hypothesis property against a brute-force
reference written from the definitions (a loop over every range for every time)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import columns
from tracelens.analyses.columns import range_running_at


def _a(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_running_at_by_hand() -> None:
    # Disjoint ranges [0,10) [10,20) [30,40): the end is open, the start closed, the hole holds nothing.
    starts, ends = _a(0, 10, 30), _a(10, 20, 40)
    t = _a(-1, 0, 9, 10, 25, 30, 39, 40)
    assert intervals.running_at(starts, ends, t).tolist() == [-1, 0, 0, 1, -1, 2, 2, -1]
    # Nested, ordered by (start, longest first): [0,100) [0,50) [10,20). At 5 the last to start is [0,50); at
    # 15 it is [10,20); at 30 the last to start ([10,20)) has ended: none (the outer ranges are not searched).
    assert intervals.running_at(_a(0, 0, 10), _a(100, 50, 20), _a(5, 15, 30)).tolist() == [1, 2, -1]
    # A zero-length range holds no time; no ranges hold nothing.
    assert intervals.running_at(_a(5), _a(5), _a(4, 5, 6)).tolist() == [-1, -1, -1]
    assert intervals.running_at(_a(), _a(), _a(1, 2)).tolist() == [-1, -1]


def test_reaching_at_by_hand() -> None:
    # Overlapping [0,100) [10,20) [30,40): every time in [0,100) is held by [0,100), which reaches furthest.
    starts, ends = _a(0, 10, 30), _a(100, 20, 40)
    assert intervals.reaching_at(starts, ends, _a(-1, 15, 25, 35, 99, 100)).tolist() == [-1, 0, 0, 0, 0, -1]
    # Two ranges reaching equally far: the later one.
    assert intervals.reaching_at(_a(0, 10), _a(50, 50), _a(5, 20)).tolist() == [0, 1]
    assert intervals.reaching_at(_a(), _a(), _a(3)).tolist() == [-1]


@pytest.mark.parametrize("packed", [True, False])
def test_range_running_at_by_hand(monkeypatch: pytest.MonkeyPatch, packed: bool) -> None:
    if not packed:
        monkeypatch.setattr(columns, "PACKED_KEY_LIMIT", 1)  # every span "too long": the rank path
    # Thread 1: [0,10); thread 2: [5,50). At 20 thread 2's range runs, not thread 1's; thread 3 has none.
    keys, starts, ends = _a(1, 2), _a(0, 5), _a(10, 50)
    got = range_running_at(keys, starts, ends, _a(1, 2, 1, 3, 2), _a(20, 20, 3, 6, 50))
    assert got.tolist() == [-1, 1, 0, -1, -1]
    # Overlapping ranges per device: device 0 [0,100) [10,20); device 1 [15,16).
    keys, starts, ends = _a(0, 0, 1), _a(0, 10, 15), _a(100, 20, 16)
    got = range_running_at(keys, starts, ends, _a(0, 0, 1, 1), _a(50, 15, 15, 50), overlapping=True)
    assert got.tolist() == [0, 0, 2, -1]
    assert range_running_at(_a(), _a(), _a(), _a(1), _a(1)).tolist() == [-1]


# --- property: against a brute-force reference ------------------------------------------------------------


def _running_reference(starts: list[int], ends: list[int], t: int) -> int:
    """The last range (in the given start order) starting at or before t, if t is before its end; else -1."""
    last = -1
    for i, s in enumerate(starts):
        if s <= t:
            last = i
    return last if last >= 0 and t < ends[last] else -1


def _reaching_reference(starts: list[int], ends: list[int], t: int) -> int:
    """Among the ranges starting at or before t, the one reaching furthest (the later on a tie), if past t."""
    best = -1
    for i, s in enumerate(starts):
        if s <= t and (best < 0 or ends[i] >= ends[best]):
            best = i
    return best if best >= 0 and t < ends[best] else -1


_ranges = st.lists(st.tuples(st.integers(0, 3), st.integers(-20, 60), st.integers(0, 25)), max_size=12)
_times = st.lists(st.tuples(st.integers(0, 4), st.integers(-25, 90)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(_ranges, _times, st.booleans())
def test_matches_the_reference(
    ranges: list[tuple[int, int, int]], times: list[tuple[int, int]], packed: bool
) -> None:
    ranges = sorted(ranges, key=lambda r: (r[0], r[1]))  # by (key, start), as both forms require
    keys, starts = _a(*[r[0] for r in ranges]), _a(*[r[1] for r in ranges])
    ends = starts + _a(*[r[2] for r in ranges])
    t_keys, t = _a(*[k for k, _ in times]), _a(*[x for _, x in times])
    limit = columns.PACKED_KEY_LIMIT
    try:
        columns.PACKED_KEY_LIMIT = limit if packed else 1
        got = range_running_at(keys, starts, ends, t_keys, t)
        got_reaching = range_running_at(keys, starts, ends, t_keys, t, overlapping=True)
    finally:
        columns.PACKED_KEY_LIMIT = limit
    for i, (k, x) in enumerate(times):
        mine = [j for j in range(len(ranges)) if keys[j] == k]  # this key's ranges, in order
        s, e = [int(starts[j]) for j in mine], [int(ends[j]) for j in mine]
        expected = _running_reference(s, e, x)
        assert got[i] == (mine[expected] if expected >= 0 else -1)
        expected = _reaching_reference(s, e, x)
        assert got_reaching[i] == (mine[expected] if expected >= 0 else -1)
        # "Some range of its key holds it", by instants.
        assert (got_reaching[i] >= 0) == any(a <= x < b for a, b in zip(s, e, strict=True))
    # One timeline (one key): the base functions give the same as the keyed form.
    one = keys == (keys[0] if keys.size else 0)
    on_one = t_keys == (keys[0] if keys.size else 0)
    want = range_running_at(keys[one], starts[one], ends[one], t_keys[on_one], t[on_one])
    assert intervals.running_at(starts[one], ends[one], t[on_one]).tolist() == want.tolist()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 15), st.integers(1, 10)), max_size=10),
    st.lists(st.integers(-5, 200), max_size=15),
)
def test_disjoint_ranges_give_the_one_holding_t(
    gaps_lengths: list[tuple[int, int]], times: list[int]
) -> None:
    # Disjoint ranges laid end to end with gaps: the one range holding t, by a set of instants per range.
    starts, ends, at = [], [], 0
    for gap, length in gaps_lengths:
        starts.append(at + gap)
        ends.append(at + gap + length)
        at = ends[-1]
    got = intervals.running_at(_a(*starts), _a(*ends), _a(*times))
    for i, x in enumerate(times):
        holding = [j for j, (s, e) in enumerate(zip(starts, ends, strict=True)) if x in range(s, e)]
        assert got[i] == (holding[0] if holding else -1)
