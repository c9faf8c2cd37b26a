"""The shared derived values' fast paths against the code they replaced, on one loaded Nsight export, in one process.

Each piece is timed (process CPU time) as first written (the reference copies in
tests/test_shared_values_fast_paths.py, plus the earlier _matches/_ints_at below) and as it is now, alternately,
``--rounds`` times, on the export's own rows: a sparse column at the GPU ops (correlation_id, stream, bytes:
launch_pairs' reads), Coverage of the GPU ops read at every host row (diagnosis' unexplained-idle evidence reads a
few percent of them), the communication section's collective types, and thread_time_positions of the host rows.
One process, so the two sides see the same machine load.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_shared_values.py benchmarks/data/nsys_x1512.sqlite
      [--rounds 3]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from test_shared_values_fast_paths import (  # noqa: E402
    _reference_collective_types,
    _reference_thread_time_positions,
    _ReferenceCoverage,
)

import tracelens  # noqa: E402
from tracelens import intervals  # noqa: E402
from tracelens.analyses import columns as C  # noqa: E402
from tracelens.analyses.communication import _collective_types  # noqa: E402
from tracelens.trace import GPU_ACTIVITY_KINDS, KERNEL, MEMCPY, MEMSET, SparseColumn  # noqa: E402


def old_matches(rows: np.ndarray, carried: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """columns._matches' mark path as first written (a reset of every carried row, a scatter of every row)."""
    mark = np.zeros(max(int(rows[-1]), int(carried[-1])) + 1, bool)
    mark[carried] = True
    mine = np.flatnonzero(mark[rows])
    mark[carried] = False
    mark[rows] = True
    return mine, np.flatnonzero(mark[carried])


def old_ints_at(store, name: str, rows: np.ndarray) -> np.ndarray:
    """columns._ints_at of a sparse column as first written (an Arrow take and fill_null)."""
    stored = store.columns.get(name)
    out = np.full(rows.size, -1, C._int_type(stored))
    mine, theirs = old_matches(rows, stored.rows)
    out[mine] = pc.fill_null(stored.values.take(pa.array(theirs)), -1).to_numpy(zero_copy_only=False)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    trace = tracelens.load(opts.trace)
    cols = C.event_columns(trace)
    gpu = np.flatnonzero(cols.of_kind(*GPU_ACTIVITY_KINDS) & (cols.device >= 0))
    sparse = [
        n
        for n in ("correlation_id", "stream", "bytes")
        if isinstance(trace.store.columns.get(n), SparseColumn)
    ]
    on_device = cols.device >= 0
    kernel = cols.of_kind(KERNEL) & on_device
    rows = np.flatnonzero(kernel | (cols.of_kind(MEMCPY, MEMSET) & on_device))
    host = np.flatnonzero(cols.device < 0)
    gpu_start, gpu_end = cols.start[gpu], cols.end[gpu]
    host_start, host_end = cols.start[host], cols.end[host]
    keys = C.thread_key(cols.pid[host], cols.tid[host])
    pieces = {
        "ints_at": (
            lambda: [old_ints_at(trace.store, n, gpu) for n in sparse],
            lambda: [C._ints_at(trace.store, n, gpu) for n in sparse],
        ),
        "Coverage.overlap": (
            lambda: _ReferenceCoverage(gpu_start, gpu_end).overlap(host_start, host_end),
            lambda: intervals.Coverage(gpu_start, gpu_end).overlap(host_start, host_end),
        ),
        "collective types": (
            lambda: _reference_collective_types(cols, rows, kernel, on_device),
            lambda: _collective_types(cols, rows, kernel, on_device),
        ),
        "thread_time_positions": (
            lambda: _reference_thread_time_positions([(keys, [host_start, host_end])]),
            lambda: C.thread_time_positions([(keys, [host_start, host_end])]),
        ),
    }
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(opts.rounds):  # alternating: old, new, per piece
        for name, pair in pieces.items():
            for side, run in zip(("before", "now"), pair, strict=True):
                t = time.process_time()
                run()
                times.setdefault((name, side), []).append(time.process_time() - t)
    print(f"{Path(opts.trace).name}: {trace.num_events:,} events; sparse columns read: {sparse}")
    print("| piece | before (CPU s, median) | now |\n|---|---|---|")
    for name in pieces:
        before, now = (statistics.median(times[(name, side)]) for side in ("before", "now"))
        print(f"| {name} | {before:.3f} | {now:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
