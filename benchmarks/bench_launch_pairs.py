"""launch_pairs (and launch._call_rows, launch_calls' rows) as it was and as it is now, on one loaded trace, in
one process.

The previous computation is tests/test_launch_fast_paths.py's reference copy (reference_launch_pairs,
reference_call_rows: table-long kind masks, ``columns.api_calls`` and ``EventColumns.at`` matched against the
rows carrying each column, a stable argsort of the calls' ids). Each side runs ``--rounds`` times, alternately,
timed in process CPU seconds, with the shared values it computes (launch_pairs, call_ids_unique, the api ids)
dropped before each run. The two sides' columns are checked equal once. Also prints the bytes the pairs table
holds for the whole analysis (now and materialized) and the CPU time of one read of each of its columns.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_launch_pairs.py benchmarks/data/nsys_x400.sqlite
      [--rounds 5]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
from test_launch_fast_paths import (  # noqa: E402
    PAIRS_COLUMNS,
    reference_call_rows,
    reference_launch_pairs,
)

import tracelens  # noqa: E402
from tracelens.analyses import launch  # noqa: E402
from tracelens.analyses.columns import event_columns  # noqa: E402
from tracelens.analyses.derived import forget  # noqa: E402

SHARED = {"launch_pairs", "call_ids_unique", "api_correlation"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    t = time.process_time()
    trace = tracelens.load(opts.trace)
    event_columns(trace)
    print(
        f"{Path(opts.trace).name}: {trace.num_events:,} events, loaded in {time.process_time() - t:.1f} CPU s"
    )

    def fresh(run):  # noqa: ANN001, ANN202
        def timed():  # noqa: ANN202
            forget(trace, SHARED)
            return run()

        return timed

    pieces = {
        "launch_pairs": (
            fresh(lambda: reference_launch_pairs(trace)[0]),
            fresh(lambda: launch.launch_pairs(trace)),
        ),
        "_call_rows": (fresh(lambda: reference_call_rows(trace)), fresh(lambda: launch._call_rows(trace))),
    }
    before, now = pieces["launch_pairs"][0](), pieces["launch_pairs"][1]()
    for name in PAIRS_COLUMNS:
        assert before[name].dtype == now[name].dtype and np.array_equal(before[name], now[name]), name
    print(
        f"{len(now):,} GPU ops, {int(now['matched'].sum()):,} matched; the pairs hold "
        f"{now.held_bytes() / 2**20:.0f} MiB (materialized: {before.held_bytes() / 2**20:.0f} MiB)"
    )
    # what a read of each column of the whole table costs now (gathered, widened or set anew where it is not held)
    reads: dict[str, list[float]] = {}
    for _ in range(opts.rounds):
        for name in PAIRS_COLUMNS:
            t = time.process_time()
            now[name]
            reads.setdefault(name, []).append(time.process_time() - t)
    print("| column | read CPU ms (median) |\n|---|---:|")
    for name in PAIRS_COLUMNS:
        print(f"| {name} | {1000 * statistics.median(reads[name]):.1f} |")
    del before, now
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(opts.rounds):  # alternating: before, now, per piece
        for name, pair in pieces.items():
            for side, run in zip(("before", "now"), pair, strict=True):
                t = time.process_time()
                run()
                times.setdefault((name, side), []).append(time.process_time() - t)
    print("| piece | before (CPU s, median) | now | min before | min now |\n|---|---|---|---|---|")
    for name in pieces:
        b, n = times[(name, "before")], times[(name, "now")]
        print(
            f"| {name} | {statistics.median(b):.3f} | {statistics.median(n):.3f} | {min(b):.3f} | {min(n):.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
