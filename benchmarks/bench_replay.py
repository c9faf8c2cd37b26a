"""The what-if replay's cost: CPU time and memory of the whatif section against the trace's load, for this tree and
others (``--tree DIR``: e.g. a checkout of an earlier commit, with its extensions built in place).

For each TRACE and tree, one fresh process run from the tree's root loads the trace, computes what the sections
before whatif share with it (event columns, launch pairs, one-time work: analyze computes them for earlier
sections), then the whatif section alone with its size limits lifted, timing it in CPU seconds
(``time.process_time``: the machine is shared, wall time swings) and reading the peak RSS it adds (VmHWM after -
VmRSS before). Trees alternate over ``--rounds``; the table gives medians. The graph's size (points, edges, cuts:
blocking calls, wake-ups and collective ends, which set the numpy batches' cost) is printed with it.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_replay.py TRACE... [--tree ../base] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table

_CHILD = r"""
import json, sys, time
sys.path.insert(0, ".")
import numpy as np
import tracelens
from tracelens.analyses import whatif as W, release_free_memory
from tracelens.analyses.columns import event_columns
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.startup import one_time_work
def status():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
t0 = time.process_time()
trace = tracelens.load(sys.argv[1])
load = time.process_time() - t0
event_columns(trace); launch_pairs(trace); one_time_work(trace)
release_free_memory()
W.MAX_POINTS = 10**12
for name in ("MAX_BLOCKING_CALLS", "MAX_CUTS_WITHOUT_SOLVER"):
    if hasattr(W, name):
        setattr(W, name, 10**12)
rss, hwm = status()
t0 = time.process_time()
doc = W.whatif(trace)
cpu = time.process_time() - t0
after = status()[1]
re = doc["replay_error"] or {}
print(json.dumps({"load_cpu_s": load, "whatif_cpu_s": cpu, "whatif_added_mib": after - max(rss, 0),
                  "peak_mib": after, "points": re.get("points"), "events": trace.num_events,
                  "span_ns": re.get("replayed_span_ns")}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    for trace in opts.traces:
        results = alternating(_CHILD, trees, opts.rounds, str(Path(trace).resolve()))
        rows = []
        for key, label in (
            ("load_cpu_s", "load (CPU s)"),
            ("whatif_cpu_s", "whatif (CPU s)"),
            ("whatif_added_mib", "whatif peak added (MiB)"),
            ("peak_mib", "process peak (MiB)"),
        ):
            rows.append([label] + [f"{statistics.median(r[key] for r in results[t]):.2f}" for t in trees])
        spans = {json.dumps(r["span_ns"]) for runs in results.values() for r in runs}
        first = results[trees[0]][0]
        print(
            f"\n{Path(trace).name}: {first['events']:,} events, {first['points']:,} graph points; median of "
            f"{opts.rounds}; replayed span {'the same in every tree' if len(spans) == 1 else 'DIFFERS: ' + str(spans)}\n"
        )
        print(markdown_table(["", *(t.name for t in trees)], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
