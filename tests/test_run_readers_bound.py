"""``column_release.run_readers`` answers without counting the replay's points where the trace has at most
``whatif.MAX_POINTS / 2`` events (``whatif.graph_points`` counts at most 2 an event): the same readers as the count
gives, whatever the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracelens
from tracelens.analyses import MEMO_READERS, SECTIONS, whatif
from tracelens.analyses.column_release import run_readers
from tracelens.analyses.derived import reading_as

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "name", ["demo.pt.trace.json.gz", "pytorch_cpu_train.pt.trace.json.gz"], ids=lambda name: name
)
def test_run_readers_without_the_count_equals_the_count(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(ROOT / "fixtures" / name)
    with reading_as("whatif"):
        points = whatif.graph_points(trace)
    events = trace.num_events
    assert points <= 2 * events  # the bound the shortcut rests on
    for limit in sorted({0, 1, max(points - 1, 0), points, points + 1, 2 * events - 1, 2 * events, 10**9}):
        monkeypatch.setattr(whatif, "MAX_POINTS", limit)
        readers, shared = run_readers(trace, SECTIONS, MEMO_READERS)
        replays = points <= limit  # the count's answer
        assert ("whatif" in readers["input_dims"]) == replays, limit
        assert ("whatif" in shared["kernel_launches"]) == replays, limit
