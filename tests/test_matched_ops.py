"""analyses/launch.py ``matched_ops``: the launch pairs' matched ops read whole where every op is matched (the table
itself, its columns read as they are held: a held array, or a lean column's copy) equal the row selection they
replace (``pairs[pairs["matched"]]``), column by column, for every op matched, some, none, one op and no op; and the
queue depth through it equals the argsort sweep (``test_launch_fast_paths.reference_queue_depth``)."""

from __future__ import annotations

import numpy as np
import pytest
from test_launch_fast_paths import reference_queue_depth

from tracelens.analyses import launch
from tracelens.analyses.columns import Table
from tracelens.analyses.lean_columns import narrowed

COLUMNS = ("device", "stream", "launch_end", "end", "matched", "correlation_id")


def pairs_of(seed: int, size: int, matched_share: float) -> Table:
    rng = np.random.default_rng(seed)
    launch_end = np.sort(rng.integers(0, 1000, size)).astype(np.int64)
    return Table(
        {
            "device": rng.integers(0, 2, size).astype(np.int8),
            "stream": narrowed(rng.integers(0, 4, size).astype(np.int64)),
            "launch_end": launch_end,
            "end": launch_end + rng.integers(0, 50, size),
            "matched": rng.random(size) < matched_share,
            "correlation_id": narrowed(np.arange(size, dtype=np.int64) + 7),
        }
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("size", [0, 1, 2, 50])
@pytest.mark.parametrize("matched_share", [1.0, 0.6, 0.0])
def test_matched_ops_equal_the_selection(seed: int, size: int, matched_share: float) -> None:
    pairs = pairs_of(seed, size, matched_share)
    before = {name: pairs[name].copy() for name in COLUMNS}
    got, want = launch.matched_ops(pairs), pairs[pairs["matched"]]
    assert len(got) == len(want) and got.empty == want.empty
    for name in COLUMNS:
        assert got[name].dtype == want[name].dtype, name
        assert np.array_equal(got[name], want[name]), name
    assert launch.queue_depth(pairs) == reference_queue_depth(pairs)
    for name in COLUMNS:  # the table is left as it was
        assert np.array_equal(pairs[name], before[name]), name
