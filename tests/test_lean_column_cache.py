"""lean_columns: a small table's gathered columns kept from their first read give what gathering on each read gave
(whole, at selected rows, with the fill of gathered_where), a fresh array each read, and still refuse a released
event column."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses import lean_columns
from tracelens.analyses.columns import EventColumns
from tracelens.analyses.table import Table
from tracelens.reads import ColumnReleasedError


def columns(n: int) -> EventColumns:
    rng = np.random.default_rng(n)
    start = np.sort(rng.integers(0, 10**6, n)).astype(np.int64)
    return EventColumns(
        kind=np.zeros(n, np.int8),
        name=rng.integers(-1, 5, n).astype(np.int32),
        names=np.array(list("abcde"), dtype=object),
        start=start,
        end=start + rng.integers(0, 100, n),
        device=np.zeros(n, np.int8),
        pid=np.ones(n, np.int32),
        tid=rng.integers(-1, 3, n).astype(np.int64),
        external_id=np.full(n, -1, np.int32),
    )


def table(cols: EventColumns, rows: np.ndarray, on: np.ndarray) -> Table:
    return Table(
        {
            "start": lean_columns.gathered(cols, "start", rows),
            "tid": lean_columns.gathered_where(cols, "tid", rows, on, -1),
        }
    )


@pytest.mark.parametrize("size", [0, 1, 57])
def test_kept_columns_equal_gathering_on_each_read(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cols = columns(200)
    rng = np.random.default_rng(size)
    rows = rng.integers(0, 200, size).astype(np.int32)
    on = rng.random(size) < 0.6
    at = rng.integers(0, max(size, 1), 3 * size).astype(np.int64) if size else np.zeros(0, np.int64)
    monkeypatch.setattr(lean_columns, "CACHED_ROWS", -1)  # gathered on each read
    plain = table(cols, rows, on)
    expected = {k: (plain[k], plain[at][k]) for k in ("start", "tid")}
    monkeypatch.setattr(lean_columns, "CACHED_ROWS", 1 << 19)
    kept = table(cols, rows, on)
    for _ in range(2):  # the first read keeps the column, the second reads it kept
        for key, (whole, picked) in expected.items():
            got = kept[key]
            np.testing.assert_array_equal(got, whole)
            assert got.dtype == whole.dtype
            np.testing.assert_array_equal(kept[at][key], picked)
            got[:] = 7  # a fresh array: writing it changes no later read
    np.testing.assert_array_equal(kept["tid"], np.where(on, cols.tid[rows], -1))


def test_a_released_column_is_refused_after_it_was_kept() -> None:
    cols = columns(50)
    kept = table(cols, np.arange(10, dtype=np.int32), np.ones(10, bool))
    kept["start"]
    cols.release(["start_ns"], after="steps")
    with pytest.raises(ColumnReleasedError):
        kept["start"]
