"""The attribution and steps sections' CPU time, step by step, in this tree and others (``--tree DIR``).

For each TRACE and tree, one fresh process run from that tree's root loads the trace, then times in the process's
CPU time (``time.process_time``): the shared steps the attribution section is the first to need (event columns,
launch pairs, host categories, device busy intervals, step windows, one-time work, host rows; each computed once
per trace and read by other sections too), then ``gap_attribution`` and the steps section's ``step_breakdown``
``--inner`` times each (the host rows ready; the attribution's kept `nothing` intervals dropped before each run),
giving the least, and each step's added peak RSS (its peak above the RSS before it, the peak reset by writing "5"
to /proc/self/clear_refs; the largest over its runs). With ``--sections``, each process instead times
``analyze(trace, sections=[SECTION], threads=1)`` for one section (its shared steps included, as when it is the
first section to need them), one process per section. Trees run alternately, ``--rounds`` times; the table
gives every round's figure.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_attribution.py TRACE... --tree /work/main [--rounds 2]
      [--sections attribution steps]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens.analyses import derived
from tracelens.analyses.attribution import gap_attribution, host_rows
from tracelens.analyses.columns import device_busy, event_columns, step_windows
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.startup import host_categories, one_time_work
from tracelens.analyses.steps import step_breakdown
trace = tracelens.load(sys.argv[1])
inner = int(sys.argv[2])
times = {}
added = {}  # label -> MiB: the step's peak RSS above the RSS before it (the largest over its runs; Linux)
def vm(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key)) / 1024
def timed(label, step, repeat=1, before=lambda: None):
    best = None
    for _ in range(repeat):
        before()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        rss = vm("VmRSS")
        t = time.process_time(); step(); spent = time.process_time() - t
        added[label] = max(added.get(label, 0.0), vm("VmHWM") - rss)
        best = spent if best is None else min(best, spent)
    times[label] = best
for label, step in (("event columns", event_columns), ("launch pairs", launch_pairs),
        ("host categories", host_categories), ("device busy", device_busy), ("step windows", step_windows),
        ("one-time work", one_time_work), ("host rows", host_rows)):
    timed(label, lambda: step(trace))
kept = derived._DERIVED[id(trace)].values
def forget():
    for key in [k for k in kept if k.startswith("unexplained")]:
        del kept[key]
timed("gap_attribution", lambda: gap_attribution(trace), inner, forget)
timed("step_breakdown", lambda: step_breakdown(trace), inner)
times["total (one run of each)"] = sum(times.values())
print(json.dumps({"times": times, "added_mib": added,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_SECTION_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens.analyses import analyze
trace = tracelens.load(sys.argv[1])
t, w = time.process_time(), time.perf_counter()
analyze(trace, sections=[sys.argv[2]], threads=1)
times = {f"analyze {sys.argv[2]} (CPU)": time.process_time() - t, f"analyze {sys.argv[2]} (wall)": time.perf_counter() - w}
print(json.dumps({"times": times, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--inner", type=int, default=3, help="runs of each section step per process (least)")
    parser.add_argument("--sections", nargs="*", help="time analyze(sections=[S]) for each S instead")
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    for trace in opts.traces:
        if opts.sections:
            results = {t: [{"times": {}, "peak_mib": 0.0} for _ in range(opts.rounds)] for t in trees}
            for section in opts.sections:
                runs = alternating(_SECTION_CHILD, trees, opts.rounds, str(Path(trace).resolve()), section)
                for t in trees:
                    for merged, run in zip(results[t], runs[t], strict=True):
                        merged["times"].update(run["times"])
                        merged["peak_mib"] = max(merged["peak_mib"], run["peak_mib"])
        else:
            results = alternating(_CHILD, trees, opts.rounds, str(Path(trace).resolve()), str(opts.inner))
        keys = list(results[trees[0]][0]["times"])
        rows = [
            [key] + [" / ".join(f"{r['times'][key]:.3f}" for r in results[t]) for t in trees] for key in keys
        ]
        for key in results[trees[0]][0].get("added_mib", {}):
            rows.append(
                [f"{key}: added peak (MiB)"]
                + [" / ".join(f"{r['added_mib'][key]:.0f}" for r in results[t]) for t in trees]
            )
        rows.append(
            ["peak RSS (MiB)"] + [" / ".join(f"{r['peak_mib']:.0f}" for r in results[t]) for t in trees]
        )
        print(f"\n{Path(trace).name}: CPU seconds, each round\n")
        print(markdown_table(["step"] + [str(t) for t in trees], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
