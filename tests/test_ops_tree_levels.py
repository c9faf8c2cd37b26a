"""The op tree's per-thread searches (outermost and innermost op at each launch time, from the nesting levels)
against loop references on small hypothesis-generated threads, nesting or overlapping."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.ops.tree import _outermost_innermost_at, _sorted_depth, ops_by_thread

ops = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15)), min_size=1, max_size=25)
times = st.lists(st.integers(-2, 60), max_size=20)


def _reference(spans: list[tuple[int, int]], ts: list[int]) -> tuple[list[int], list[int]]:
    """Ops ordered by (start, longest first, row); an op's level = the earlier ops still running at its start
    (end after it); outermost at t = the last level-0 op starting at or before t if it still runs; innermost =
    per level the same, the deepest level that has one."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -(spans[i][1] - spans[i][0]), i))
    s = [spans[i][0] for i in order]
    e = [spans[i][1] for i in order]
    level = [sum(e[j] > s[i] for j in range(i)) for i in range(len(s))]
    outer, inner = [], []
    for t in ts:
        found = {}
        for lvl in set(level):
            last = [i for i in range(len(s)) if level[i] == lvl and s[i] <= t]
            if last and t < e[last[-1]]:
                found[lvl] = 10 * order[last[-1]] + 7  # the row, as the rows array below holds it
        outer.append(found.get(0, -1))
        inner.append(found[max(found)] if found else -1)
    return outer, inner


@settings(max_examples=400, deadline=None)
@given(ops, times)
def test_outermost_innermost_match_reference(spans: list[tuple[int, int]], ts: list[int]) -> None:
    spans = [(s, s + d) for s, d in spans]
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], -(spans[i][1] - spans[i][0]), i))
    start = np.array([spans[i][0] for i in order], np.int64)
    end = np.array([spans[i][1] for i in order], np.int64)
    rows = np.array([10 * i + 7 for i in order], np.int64)
    t = np.array(ts, np.int64)
    level = _sorted_depth(start, end)
    outer, inner = _outermost_innermost_at(rows, start, end, level, t)
    expected_outer, expected_inner = _reference(spans, ts)
    assert outer.tolist() == expected_outer
    assert inner.tolist() == expected_inner
    # level 0 is the outermost ops: those starting once every earlier op has ended
    enclosed = np.r_[False, start[1:] < np.maximum.accumulate(end)[:-1]]
    assert np.array_equal(level == 0, ~enclosed)


class _Cols:
    def __init__(self, pid: list[int], tid: list[int], start: list[int], end: list[int]) -> None:
        self.pid = np.array(pid, np.int32)
        self.tid = np.array(tid, np.int32)
        self.start = np.array(start, np.int64)
        self.end = np.array(end, np.int64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 2), st.integers(0, 3), st.integers(0, 12), st.integers(0, 5)), max_size=40
    ),
    st.booleans(),
    st.data(),
)
def test_ops_by_thread_is_lexsort(
    events: list[tuple[int, int, int, int]], in_start_order: bool, data: st.DataObject
) -> None:
    """Rows ordered by (thread, start, longest first, row), as np.lexsort orders them, and each thread's run."""
    if in_start_order:
        events = sorted(events, key=lambda e: e[2])
    cols = _Cols(
        [p for p, _, _, _ in events],
        [t for _, t, _, _ in events],
        [s for _, _, s, _ in events],
        [s + d for _, _, s, d in events],
    )
    rows = np.array(
        sorted(data.draw(st.sets(st.integers(0, max(len(events) - 1, 0))))) if events else [], np.int64
    )
    got, bounds = ops_by_thread(cols, rows)
    key = cols.pid[rows].astype(np.int64) * 100 + cols.tid[rows]
    expected = rows[np.lexsort((rows, cols.start[rows] - cols.end[rows], cols.start[rows], key))]
    assert got.tolist() == expected.tolist()
    runs = [got[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    assert [len(set((cols.pid[r] * 100 + cols.tid[r]).tolist())) for r in runs] == [1] * len(runs)
    assert len({int(cols.pid[r[0]]) * 100 + int(cols.tid[r[0]]) for r in runs}) == len(runs)
