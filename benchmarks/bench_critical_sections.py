"""The sections on analyze's critical path one by one (default: ranges, memcpy, communication), for this tree and others.

For each TRACE and each tree (this repository, plus every ``--tree DIR``, e.g. /work/main), one fresh process run
from that tree's root loads the trace once, computes the memos the sections share (event columns, device busy
unions, launch pairs, API call ids) so that they are not charged to the first section, then runs each section
through ``analyses.analyze(trace, sections=[NAME], threads=1)`` ``--repeat`` times, reading the process's CPU time
(``time.process_time``: steadier than wall time on a shared machine) and the wall time. Trees run alternately,
``--rounds`` times; the table gives the median CPU seconds per section over every run of a tree, and each tree's
peak RSS.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_critical_sections.py TRACE... [--tree /work/main]
      [--sections ranges,memcpy,communication] [--rounds 3] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens import analyses as A
from tracelens.analyses.columns import api_calls, device_busy, event_columns
from tracelens.analyses.launch import launch_pairs
trace = tracelens.load(sys.argv[1])
event_columns(trace); device_busy(trace); launch_pairs(trace); api_calls(trace)
cpu, wall = {}, {}
for _ in range(int(sys.argv[3])):
    for name in sys.argv[2].split(","):
        c, w = time.process_time(), time.perf_counter()
        A.analyze(trace, sections=[name], threads=1)
        cpu.setdefault(name, []).append(time.process_time() - c)
        wall.setdefault(name, []).append(time.perf_counter() - w)
print(json.dumps({"cpu": cpu, "wall": wall, "events": trace.num_events,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--sections", default="ranges,memcpy,communication")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each section per process")
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    names = opts.sections.split(",")
    for trace in opts.traces:
        results = alternating(
            _CHILD, trees, opts.rounds, str(Path(trace).resolve()), opts.sections, str(opts.repeat)
        )
        rows = []
        for name in names:
            row = [name]
            for tree in trees:
                values = [v for r in results[tree] for v in r["cpu"][name]]
                row.append(f"{statistics.median(values):.3f}")
            rows.append(row)
        rows.append(
            ["total"]
            + [
                f"{sum(statistics.median(v for r in results[t] for v in r['cpu'][n]) for n in names):.3f}"
                for t in trees
            ]
        )
        rows.append(
            ["peak RSS (MiB)"]
            + [f"{statistics.median(r['peak_mib'] for r in results[t]):.0f}" for t in trees]
        )
        events = results[trees[0]][0]["events"]
        print(
            f"\n{Path(trace).name}: {events:,} events; CPU seconds per section, median of "
            f"{opts.rounds} x {opts.repeat}\n"
        )
        print(markdown_table(["section"] + [t.name for t in trees], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
