"""The heavy shared steps of the attribution and a few sections, each timed alone: where bench_sections.py's
per-section figures mix a step's own work with the shared joins the first section to need them builds.

For each TRACE and tree (this repository, plus every ``--tree DIR``), one fresh process run from that tree's root
loads the trace, builds the shared joins first (``launch_pairs``, ``host_categories``, ``device_busy``,
``step_windows``), then times ``host_rows`` (with ``one_time_work``), ``gap_attribution`` on the ready host rows,
and the sync, communication, devices, kernels and launch sections, in the process's CPU time
(``time.process_time``), and reads the peak RSS at the end. Trees run alternately, ``--rounds`` times; the table
gives every round's figure.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_section_steps.py TRACE... [--tree DIR] [--rounds 2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens import analyses as A
from tracelens.analyses.attribution import gap_attribution, host_rows
from tracelens.analyses.columns import device_busy, step_windows
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.startup import host_categories
trace = tracelens.load(sys.argv[1])
launch_pairs(trace); host_categories(trace); device_busy(trace); step_windows(trace)
times = {}
def timed(label, step):
    t = time.process_time(); step(); times[label] = time.process_time() - t
timed("host_rows (with one_time_work)", lambda: host_rows(trace))
timed("gap_attribution (host rows ready)", lambda: gap_attribution(trace))
for name in ("sync", "communication", "devices", "kernels", "launch"):
    timed(f"{name} section", lambda: A.BY_KEY[name].compute(trace, {}))
print(json.dumps({"times": times, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=2)
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    for trace in opts.traces:
        results = alternating(_CHILD, trees, opts.rounds, str(Path(trace).resolve()))
        keys = list(results[trees[0]][0]["times"])
        rows = [
            [key] + [" / ".join(f"{r['times'][key]:.3f}" for r in results[t]) for t in trees] for key in keys
        ]
        rows.append(
            ["peak RSS (MiB)"] + [" / ".join(f"{r['peak_mib']:.0f}" for r in results[t]) for t in trees]
        )
        print(f"\n{Path(trace).name}: CPU seconds, each round\n")
        print(markdown_table(["step"] + [t.name for t in trees], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
