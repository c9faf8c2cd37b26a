"""Each remedy's ``assumptions`` (whatif.remedies[].assumptions) state the figures its model uses, from the trace
where it measures them (hand-built traces; docs/analyses.md, "Remedies")."""

from __future__ import annotations

from tests.test_replay import SYNC_ROWS, by_cause, host
from tracelens.analyses.whatif import whatif
from tracelens.trace import Trace


def test_sync_remedy_states_its_no_wait_cost() -> None:
    # SYNC_ROWS: both synchronizes wait for their kernel, none finds nothing to wait for: the 2 µs default
    text = by_cause(whatif(Trace.from_rows(SYNC_ROWS)))["synchronization"]["assumptions"]
    assert "(2.0 µs, default)" in text
    assert "does not need the value read back" in text
    # a third synchronize after both kernels ended, lasting 3_000 ns, finds nothing to wait for: its cost is measured
    rows = [*SYNC_ROWS, host("runtime", "cudaDeviceSynchronize", 2_040_000, 2_043_000)]
    text = by_cause(whatif(Trace.from_rows(rows)))["synchronization"]["assumptions"]
    assert "(3.0 µs, the median of this trace's syncs that found nothing to wait for)" in text
