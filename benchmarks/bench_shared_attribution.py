"""The attribution section's shared inputs ``launch_pairs`` and ``one_time_work`` (and its ``_long_launches``), timed
in process CPU on one loaded trace, for this tree and every ``--tree DIR``.

Each tree's fresh process (run alternately, ``--rounds`` times) loads the trace once, computes what the two values
read (event_columns, device_busy, host_categories, step_windows) and both values once, then ``--inner`` times: drops
launch_pairs (and the values it stores beside it) and one_time_work, computes launch_pairs, then one_time_work (which
reads the fresh pairs' launch call columns first, as in the attribution section), then _long_launches alone. The
table gives the median of the processes' medians (and each process's median).

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_shared_attribution.py TRACE [--tree /work/base17]
      [--rounds 3] [--inner 9]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table

_CHILD = r"""
import json, statistics, sys, time
import tracelens
from tracelens.analyses import launch, startup
from tracelens.analyses.columns import device_busy, event_columns
from tracelens.analyses.derived import forget
from tracelens.analyses.step_arrays import step_window_arrays

trace = tracelens.load(sys.argv[1])
event_columns(trace); device_busy(trace); startup.host_categories(trace); step_window_arrays(trace)
launch.launch_pairs(trace); startup.one_time_work(trace)
pairs = {"launch_pairs", "call_ids_unique", "api_correlation"}
times = {"launch_pairs": [], "one_time_work": [], "_long_launches": []}
def long_launch_rows():  # startup._long_launches, or long_launches.long_launches where it moved (katt18)
    if hasattr(startup, "_long_launches"):
        return startup._long_launches(trace)
    from tracelens.analyses.long_launches import long_launches
    return long_launches(trace, startup.LONG_LAUNCH_NS)
for _ in range(int(sys.argv[2])):
    forget(trace, pairs | {"one_time_work"})
    for name, run in (
        ("launch_pairs", lambda: launch.launch_pairs(trace)),
        ("one_time_work", lambda: startup.one_time_work(trace)),
        ("_long_launches", long_launch_rows),
    ):
        t = time.process_time(); run(); times[name].append(time.process_time() - t)
print(json.dumps({k: statistics.median(v) for k, v in times.items()}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inner", type=int, default=9)
    opts = parser.parse_args()
    trees = [REPO_ROOT, *(Path(t).resolve() for t in opts.tree)]
    results = alternating(_CHILD, trees, opts.rounds, str(Path(opts.trace).resolve()), str(opts.inner))
    rows = []
    for name in ("launch_pairs", "one_time_work", "_long_launches"):
        row = [name]
        for tree in trees:
            values = [r[name] * 1e3 for r in results[tree]]
            row.append(f"{statistics.median(values):.1f} ({', '.join(f'{v:.1f}' for v in values)})")
        rows.append(row)
    print(
        f"{Path(opts.trace).name}: ms CPU, median of {opts.rounds} processes (each the median of {opts.inner})\n"
    )
    print(markdown_table(["value", *(t.name for t in trees)], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
