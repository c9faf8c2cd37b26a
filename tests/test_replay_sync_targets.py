"""What an explicit synchronize waits for in the replay graph (replay/wait_edges.py), on hand-built Nsight exports:

- the last op issued before the call on a stream, where ops whose launch the trace lacks (issued before the
  window) run ahead of ops launched in it: a stream runs its ops in issue order, so an op launched before the
  sync was issued before it whatever the unlaunched ops before it started at. Before, each op's issue time was
  the running max of the stream's issue times, an unlaunched op's own start among them: on h100x2_fastvideo_window
  (424 ms of work queued before the window on each device) a 428 ms cudaStreamSynchronize waited for an op that
  ended 424 ms before it returned, and the wait read as its own cost;
- a stream sync whose recorded device runs no such stream: CUPTI records a synchronization's context and stream,
  Nsight's deviceId beside them was 0 on every row of that export, context 2's (device 1) too, so device 1's four
  stream syncs (428 ms of the host's time) had no wait at all and read as host work on the critical path."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from tests.nsys_handmade_export import US, nsys_export
from tracelens.ingest import load
from tracelens.replay.critical import critical_path
from tracelens.replay.engine import solve
from tracelens.replay.graph import build

MEMCPY_ASYNC, LAUNCH, STREAM_SYNC = 1, 2, 4  # StringIds of the handmade fixture
STREAM_SYNCHRONIZE = 3  # ENUM_CUPTI_SYNC_TYPE


def _graph(path: Path):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(path)
    return trace, build(trace)


def _waits(g) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    """(awaited point, waiting call's end, lag) in µs from the first point, per wait edge."""
    t0 = int(g.time.min())
    return sorted(
        (int(g.time[s] - t0) // US, int(g.time[d] - t0) // US, int(lag) // US)
        for s, d, lag in zip(
            g.edge_src[g.edge_is_wait], g.edge_dst[g.edge_is_wait], g.edge_lag[g.edge_is_wait], strict=True
        )
    )


def test_a_sync_waits_for_the_copy_launched_before_it_behind_unlaunched_work(tmp_path: Path) -> None:
    """Stream 7: U1 [100, 600] µs (no launch call: issued before the trace), then C2 [600, 700], launched by A2 at
    [10, 15]; S = cudaStreamSynchronize [20, 705]. S waits for C2's end (700 µs; lag 5). By hand, the critical
    path from S's end: its 5 µs after C2 (sync_waits), C2's 100 µs (copies), U1's 500 µs (kernels), U1's start
    anchored: 605 µs, no host time. Before, U1's own start (100 µs, after S started) made C2 read as issued after
    S: no wait, S's 685 µs were host work."""
    path = nsys_export(
        tmp_path / "sync_behind_unlaunched.sqlite",
        [(MEMCPY_ASYNC, 10, 15, 21, None), (STREAM_SYNC, 20, 705, 22, None)],
        [("kernel", 50, 0, 7, 100, 600), ("copy", 21, 0, 7, 600, 700)],
    )
    trace, g = _graph(path)
    # (times from A2's start, the first point: U1's start at 90, C2's end at 690, S's end at 695)
    assert _waits(g) == [(690, 695, 5)]
    assert g.call_waits.tolist() == [False, True] and g.call_waited.tolist() == [False, True]
    path_sums = critical_path(g, solve(g), trace)
    assert path_sums is not None and path_sums["length_ns"] == 605 * US
    assert path_sums["ns"] == {
        "host": 0,
        "sync_waits": 5 * US,
        "kernels": 500 * US,
        "copies": 100 * US,
        "communication": 0,
    }


def test_a_stream_sync_recorded_on_the_wrong_device_waits_on_its_stream(tmp_path: Path) -> None:
    """K0 on device 0 stream 7 [0, 50] µs (unlaunched); A1 launches K1 on device 1 stream 15 [10, 510]; S =
    cudaStreamSynchronize [20, 515], its SYNCHRONIZATION row naming device 0 (which runs no stream 15) and stream
    15. S waits for K1's end (lag 5), the stream on the device of its thread's launch; before, none."""
    path = nsys_export(
        tmp_path / "sync_wrong_device.sqlite",
        [(LAUNCH, 0, 5, 31, None), (STREAM_SYNC, 20, 515, 32, None)],
        [("kernel", 60, 0, 7, 0, 50), ("kernel", 31, 1, 15, 10, 510)],
        syncs=[(32, 0, 15, STREAM_SYNCHRONIZE, 21, 514)],
    )
    _, g = _graph(path)
    assert _waits(g) == [(510, 515, 5)]
    assert int(g.op_device[np.flatnonzero(g.op_end == g.edge_src[g.edge_is_wait][0])[0]]) == 1
    assert g.call_waited.tolist() == [False, True]
