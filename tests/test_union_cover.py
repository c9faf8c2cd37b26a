"""``level_cut.union_cover`` (``_merge_search.union_cover``: the union of two piece lists measured at a few windows,
and its holes in the windows, without the union built) against ``window_split.totals`` / ``window_split.complement``
of ``window_split.union`` (the numpy path): empty lists, one piece, ties, touching pieces and windows, empty
windows, repeated and unordered ``which``; and ``split_gaps`` with the pass against without it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import intervals
from tracelens.analyses import host_split, level_cut, window_split

pytestmark = pytest.mark.skipif(
    not level_cut.union_cover_available(), reason="the compiled pass is not built"
)


def _windows(rng: np.random.Generator, count: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.sort(rng.integers(0, span, 2 * count))  # touching, empty and tied windows likely
    return edges[0::2].astype(np.int64), edges[1::2].astype(np.int64)


def _pieces(rng: np.random.Generator, count: int, span: int, ws: np.ndarray, we: np.ndarray) -> tuple:
    s = np.sort(rng.integers(0, span, count))
    e = s + rng.integers(0, span // 10 + 1, count)
    return window_split.cut(*intervals.merge(s, e), ws, we)


def _check(a: tuple, b: tuple, which: np.ndarray, ws: np.ndarray, we: np.ndarray) -> None:
    union = window_split.union(a, b)
    want_totals = window_split.totals(union, which)
    only = level_cut.union_cover(a, b, which)
    assert only is not None and only[1] is None and np.array_equal(only[0], want_totals)
    found = level_cut.union_cover(a, b, which, (ws, we))
    assert found is not None and found[1] is not None
    assert np.array_equal(found[0], want_totals)
    for got, want in zip(found[1], window_split.complement(union, ws, we), strict=True):
        assert got.dtype == np.int64 and np.array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(
    windows=st.integers(0, 30),
    na=st.integers(0, 60),
    nb=st.integers(0, 60),
    span=st.sampled_from([20, 1000, 10**6]),
    seed=st.integers(0, 2**32 - 1),
)
def test_union_cover_equals_numpy(windows: int, na: int, nb: int, span: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ws, we = _windows(rng, windows, span)
    a, b = _pieces(rng, na, span, ws, we), _pieces(rng, nb, span, ws, we)
    which = rng.integers(0, max(windows, 1), int(rng.integers(0, 12))) if windows else np.zeros(0, np.int64)
    _check(a, b, which.astype(np.int64), ws, we)


def test_union_cover_edge_cases() -> None:
    ws, we = np.array([0, 10, 10, 30], np.int64), np.array([10, 10, 20, 40], np.int64)
    none = window_split.empty()
    one = (np.array([12]), np.array([15]), np.array([2]))
    touching = (np.array([0, 5, 30]), np.array([5, 10, 40]), np.array([0, 0, 3]))
    tied = (np.array([0, 12, 30]), np.array([3, 18, 31]), np.array([0, 2, 3]))
    which = np.array([3, 0, 3, 1], np.int64)  # unordered, repeated, an empty window
    for a, b in [(none, none), (one, none), (none, one), (one, one), (touching, tied), (tied, touching)]:
        _check(
            tuple(np.asarray(x, np.int64) for x in a),
            tuple(np.asarray(x, np.int64) for x in b),
            which,
            ws,
            we,
        )
    empty = np.zeros(0, np.int64)
    _check(none, none, empty, empty, empty)  # no windows at all
    # a piece whose window is outside the windows: declined
    bad = (np.array([5], np.int64), np.array([6], np.int64), np.array([7], np.int64))
    assert level_cut.union_cover(bad, none, empty, (ws, we)) is None


@settings(max_examples=60, deadline=None)
@given(size=st.integers(0, 200), gaps=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_split_gaps_same_with_and_without_union_cover(size: int, gaps: int, seed: int) -> None:
    """The fused tail of ``_split_pieces`` against the built unions (the pass hidden), sync rows likely."""
    split_gaps_both_ways(size, gaps, seed, 0.3, "union_cover_available")


def split_gaps_both_ways(size: int, gaps: int, seed: int, copy_share: float, hidden_pass: str) -> None:
    """``host_split.split_gaps`` on made-up host rows (``copy_share`` of them sync copies) and gaps, with the
    compiled pass that ``level_cut.<hidden_pass>`` says is built and with it hidden: the same answers."""
    from types import SimpleNamespace

    import pandas as pd

    rng = np.random.default_rng(seed)
    span = 1000
    events = 2 * size + 1
    start = np.sort(rng.integers(0, span, events))
    rows = SimpleNamespace(
        cols=SimpleNamespace(start=start, end=start + rng.integers(0, span // 6 + 1, events)),
        row=np.sort(rng.choice(events, size, replace=False)).astype(np.int32),
        category=rng.choice(np.arange(5, dtype=np.int8), size, p=[0.05, 0.15, 0.1, 0.35, 0.35]),
        thread=rng.integers(0, 2, size).astype(np.int8),
        sync_copy=rng.random(size) < copy_share,
        threads=pd.DataFrame({"pid": np.zeros(2, np.int32), "tid": np.arange(2, dtype=np.int32)}),
    )
    ws, we = _windows(rng, gaps, span + span // 4)
    busy = intervals.gaps(ws, we) if ws.size else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    which = np.argsort(-(we - ws), kind="stable")[:3]
    answers = []
    for hidden in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if hidden:
                patch.setattr(level_cut, hidden_pass, lambda: False)
            got = host_split.split_gaps(ws, we, rows, np.arange(2), busy, which)  # type: ignore[arg-type]
        answers.append([got.totals, got.chosen, got.sync_copy_ns, got.starts_in_sync, *got.unexplained])
    for x, y in zip(*answers, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))
