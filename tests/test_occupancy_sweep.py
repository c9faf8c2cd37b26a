"""occupancy.empty_sm_ns_each (one sort of the launch times for several fills) against a per-instant loop and
against one sweep per fill written out here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.occupancy import empty_sm_ns_each

launches = st.lists(
    st.tuples(st.integers(0, 30), st.integers(0, 12), st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5])),
    max_size=12,
)


def _one_sweep(starts: np.ndarray, ends: np.ndarray, fill: np.ndarray) -> float:
    """The sweep for a single fill, as empty_sm_ns computed it before it shared the sort."""
    if starts.size == 0:
        return 0.0
    times = np.concatenate([starts, ends])
    order = np.argsort(times, kind="stable")
    running = np.cumsum(np.concatenate([np.ones(starts.size), -np.ones(ends.size)])[order])[:-1]
    filled = np.cumsum(np.concatenate([fill, -fill])[order])[:-1]
    length = np.diff(times[order]).astype(np.float64)
    empty = 1.0 - np.clip(np.round(filled, 9), 0.0, 1.0)
    return float((length * empty)[running > 0].sum())


@settings(max_examples=300, deadline=None)
@given(launches, st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=12, max_size=12))
def test_empty_sm_ns_each(spans: list[tuple[int, int, float]], other: list[float]) -> None:
    starts = np.array([s for s, _, _ in spans], np.int64)
    ends = np.array([s + d for s, d, _ in spans], np.int64)
    fill = np.array([f for _, _, f in spans])
    fill2 = np.array(other[: len(spans)])
    got = empty_sm_ns_each(starts, ends, [fill, fill2])
    assert got == [_one_sweep(starts, ends, fill), _one_sweep(starts, ends, fill2)]  # bit for bit
    for value, f in zip(got, (fill, fill2), strict=True):
        expected = 0.0
        for t in range(0, 50):  # per instant: 1 - min(1, the running launches' fill), where some run
            on = [i for i in range(len(spans)) if starts[i] <= t < ends[i]]
            if on:
                expected += 1.0 - min(1.0, sum(f[i] for i in on))
        assert value == pytest.approx(expected, abs=1e-6)
