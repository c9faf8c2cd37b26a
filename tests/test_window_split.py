"""The priority split of disjoint windows (analyses/window_split.py, host_split.split_disjoint_windows) against
the split of any windows it stands in for (host_split.split_any_windows) and against a brute force over unit
instants written from the definitions in docs/analyses.md ("attribution": priority, sync echo, sync copies,
after-sync gaps, the `nothing` intervals), with no interval code of tracelens; plus hand-built cases of the
piece helpers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import window_split
from tracelens.analyses.host_split import split_any_windows, split_disjoint_windows
from tracelens.analyses.names import CAUSES, HOST_CATEGORY_PRIORITY, INPUT, SYNC

SYNC_LEVEL = HOST_CATEGORY_PRIORITY.index(SYNC)
INPUT_LEVEL = HOST_CATEGORY_PRIORITY.index(INPUT)
LEVELS = len(HOST_CATEGORY_PRIORITY)
SPAN = 60  # instants 0..SPAN-1 (small: the brute force walks each one)


def arr(values: list[int]) -> np.ndarray:
    return np.asarray(values, np.int64)


# --- the piece helpers, by hand ---------------------------------------------------------------------------


def test_cut_keeps_each_windows_part_and_drops_empty_ones():
    # windows [10,20) [20,20) [20,30) [40,50); union [0,5) [8,25) [27,45) [48,60)
    ws, we = arr([10, 20, 20, 40]), arr([20, 20, 30, 50])
    s, e, w = window_split.cut(arr([0, 8, 27, 48]), arr([5, 25, 45, 60]), ws, we)
    assert list(zip(s.tolist(), e.tolist(), w.tolist(), strict=True)) == [
        (10, 20, 0),
        (20, 25, 2),  # the zero-length window [20,20) gets no piece
        (27, 30, 2),
        (40, 45, 3),
        (48, 50, 3),
    ]


def test_union_merges_inside_each_window_not_across_touching_ones():
    # windows [0,10) [10,20) touch; a = [2,6) [10,12) in them, b = [5,10) [12,15)
    a = (arr([2, 10]), arr([6, 12]), arr([0, 1]))
    b = (arr([5, 12]), arr([10, 15]), arr([0, 1]))
    s, e, w = window_split.union(a, b)
    assert (s.tolist(), e.tolist(), w.tolist()) == ([2, 10], [10, 15], [0, 1])
    assert window_split.coverage((s, e, w), 2).tolist() == [8, 5]


def test_complement_and_holes():
    ws, we = arr([0, 10, 30]), arr([10, 20, 40])
    pieces = (arr([0, 4, 12]), arr([2, 10, 15]), arr([0, 0, 1]))
    s, e = window_split.complement(pieces, ws, we)
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == [(2, 4), (10, 12), (15, 20), (30, 40)]
    hs, he = window_split.holes(pieces)
    assert hs.tolist()[1:] == [2, 10, 15] and he.tolist()[:-1] == [0, 4, 12]


# --- generated cases -----------------------------------------------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> dict:
    # windows: sorted, not overlapping; touching and zero-length ones on purpose
    bounds = sorted(draw(st.lists(st.integers(0, SPAN), min_size=0, max_size=12)))
    pairs = []
    at = 0
    while at + 1 < len(bounds):
        pairs.append((bounds[at], bounds[at + 1]))
        at += draw(st.sampled_from([1, 2]))  # 1: the next window starts where this one ends
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, SPAN - 1),
                st.integers(0, 10),
                st.sampled_from([0, 1, 1, 1, 2, 3, 3, 4, 4]),  # syncs often: their echo
                st.booleans(),
            ),
            min_size=draw(st.sampled_from([0, 6])),  # many rows, so that syncs wait and leave an echo
            max_size=25,
        )
    )
    if draw(st.booleans()):
        rows.sort()  # host rows come in start order
    with_busy = draw(st.integers(0, 3))  # 0: no busy (steps); 1: drawn; 2, 3: between the windows (gaps)
    if with_busy >= 2:
        edges = [0] + [t for w in pairs for t in w] + [SPAN + 30]
        busy = [(a, b - a) for a, b in zip(edges[::2], edges[1::2], strict=True) if b > a]
    else:
        busy = draw(st.lists(st.tuples(st.integers(0, SPAN - 1), st.integers(0, 20)), max_size=8))
    return {"windows": pairs, "rows": rows, "busy": busy, "with_busy": with_busy > 0}


@st.composite
def echo_cases(draw: st.DrawFn) -> dict:
    """Gaps (windows between busy intervals) with syncs that wait on the GPU and launch/cpu rows after them:
    the echo's case, which the free draws above reach less often."""
    case = draw(cases())
    pairs = case["windows"]
    edges = [0] + [t for w in pairs for t in w] + [SPAN + 30]
    case["busy"] = [(a, b - a) for a, b in zip(edges[::2], edges[1::2], strict=True) if b > a]
    case["with_busy"] = True
    previous_end = 0
    for ws, we in pairs:
        if draw(st.booleans()):
            start = draw(st.integers(max(previous_end - 10, 0), ws))
            end = draw(st.integers(start, max(we, start)))
            case["rows"].append((start, end - start, 1, draw(st.booleans())))
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(ws, max(we - 1, ws)))
            case["rows"].append((at, draw(st.integers(0, 6)), draw(st.sampled_from([3, 4])), False))
        previous_end = we
    return case


def _inputs(case: dict) -> tuple:
    ws = arr([w[0] for w in case["windows"]])
    we = arr([w[1] for w in case["windows"]])
    rows = case["rows"]
    cat = np.asarray([r[2] for r in rows], np.int8)
    s = arr([r[0] for r in rows])
    e = arr([r[0] + r[1] for r in rows])
    copy = np.asarray([r[3] for r in rows], bool)
    busy = None
    if case["with_busy"]:
        # merged, as DeviceBusy holds them (the brute force reads the instants)
        instants = sorted({t for b0, d in case["busy"] for t in range(b0, b0 + d)})
        runs: list[list[int]] = []
        for t in instants:
            if runs and runs[-1][1] == t:
                runs[-1][1] = t + 1
            else:
                runs.append([t, t + 1])
        busy = (arr([r[0] for r in runs]), arr([r[1] for r in runs]))
    return ws, we, cat, s, e, copy, busy


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(case=st.one_of(cases(), echo_cases()))
def test_disjoint_windows_split_equals_the_split_of_any_windows(case: dict) -> None:
    ws, we, cat, s, e, copy, busy = _inputs(case)
    assert window_split.disjoint_windows(ws, we)
    fast, fast_extra = split_disjoint_windows(ws, we, cat, s, e, copy, busy)
    ref, ref_extra = split_any_windows(ws, we, cat, s, e, copy, busy)
    assert fast.tolist() == ref.tolist()
    assert fast_extra.keys() == ref_extra.keys()
    for key, value in ref_extra.items():
        if isinstance(value, tuple):  # the `nothing` intervals: the very same list
            assert [v.tolist() for v in fast_extra[key]] == [v.tolist() for v in value], key
        else:
            assert fast_extra[key].tolist() == value.tolist(), key


def brute_force(case: dict) -> tuple[list[list[int]], list[int], list[bool], set[int] | None]:
    """Per window: its length per cause, its sync-copy part, whether it starts in a sync; and (with busy) the
    instants of the windows no host activity covers. Walks unit instants [t, t + 1)."""
    rows = [(s, s + d, c, cp) for s, d, c, cp in case["rows"]]
    in_window = {t for ws, we in case["windows"] for t in range(ws, we)}
    covering = {t: {c for s, e, c, _ in rows if s <= t < e} for t in range(SPAN + 30)}
    label: dict[int, int] = {}  # instant -> cause index (levels; LEVELS = nothing)
    echo_copy: set[int] = set()
    for t in in_window:
        label[t] = min(covering[t], default=LEVELS)
    if case["with_busy"]:
        busy = {t for b0, d in case["busy"] for t in range(b0, b0 + d)}
        host_work = {t for t in in_window if covering[t] & set(range(INPUT_LEVEL + 1, LEVELS))}
        eligible = sorted(t for t in host_work if label[t] > INPUT_LEVEL)
        for copies in (False, True):
            for s, e, c, cp in rows:
                if c != SYNC_LEVEL or cp != copies:
                    continue
                waited = sum(1 for t in range(s, e) if t in busy)
                if waited == 0:
                    continue
                # the first `waited` eligible instants at or after the call's end
                for t in [t for t in eligible if t >= e][:waited]:
                    if label[t] > INPUT_LEVEL:  # not claimed by an echo before
                        label[t] = SYNC_LEVEL
                        if copies:
                            echo_copy.add(t)
    per_cause, sync_copy, starts_in_sync = [], [], []
    for ws, we in case["windows"]:
        instants = range(ws, we)
        per_cause.append([sum(1 for t in instants if label[t] == k) for k in range(LEVELS + 1)])
        # the sync level's instants covered only by synchronous copies (no earlier level, no other sync)
        only_copies = sum(
            1
            for t in instants
            if SYNC_LEVEL in covering[t]
            and min(covering[t]) == SYNC_LEVEL
            and not any(s <= t < e and c == SYNC_LEVEL and not cp for s, e, c, cp in rows)
        )
        sync_copy.append(only_copies + sum(1 for t in instants if t in echo_copy))
        starts_in_sync.append(we > ws and SYNC_LEVEL in covering[ws])
    nothing = {t for t in in_window if label[t] == LEVELS} if case["with_busy"] else None
    return per_cause, sync_copy, starts_in_sync, nothing


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(case=st.one_of(cases(), echo_cases()))
def test_disjoint_windows_split_equals_the_brute_force(case: dict) -> None:
    ws, we, cat, s, e, copy, busy = _inputs(case)
    split, extra = split_disjoint_windows(ws, we, cat, s, e, copy, busy)
    per_cause, sync_copy, starts_in_sync, nothing = brute_force(case)
    assert split.shape == (len(case["windows"]), len(CAUSES))
    assert split.tolist() == per_cause
    assert extra["sync_copy"].tolist() == sync_copy
    assert extra["starts_in_sync"].tolist() == starts_in_sync
    if nothing is not None:
        us, ue = extra["unexplained"]
        assert {t for a, b in zip(us.tolist(), ue.tolist(), strict=True) for t in range(a, b)} == nothing
