"""The attribution section alone, timed repeatedly on one loaded trace as ``analyze`` runs it, in this tree and
others (``--tree DIR``).

For each TRACE and tree, one fresh process run from that tree's root loads the trace once (``small_pages`` as the
CLI sets it), computes the shared values the section reads (event columns, launch pairs, host categories, device
busy intervals, one-time work, host rows: other sections' work too), then inside ``reusing_array_pages`` (as
``analyze`` runs its sections) runs ``gap_attribution`` ``--inner`` times, each after ``release_free_memory``
(``analyze`` flushes the page cache after every section, so the section starts on fresh pages) and after dropping
the `nothing` intervals it keeps. Each run's user and system CPU time (``getrusage``) and wall time; the table
gives the least and the median over the runs, per round. The first tree's document is compared with each
other tree's (``same document``).

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_attribution_split.py TRACE --tree /work/base34
      [--rounds 1] [--inner 5]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table

_CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens.memory import release_free_memory, reusing_array_pages, small_pages
from tracelens.analyses import derived
from tracelens.analyses.attribution import gap_attribution, host_rows
from tracelens.analyses.columns import device_busy, event_columns
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.startup import host_categories, one_time_work
runs = []
with small_pages():
    trace = tracelens.load(sys.argv[1])
    with reusing_array_pages():
        for step in (event_columns, launch_pairs, host_categories, device_busy, one_time_work, host_rows):
            step(trace)
        kept = derived._DERIVED[id(trace)].values
        for _ in range(int(sys.argv[2])):
            for key in [k for k in kept if k.startswith("unexplained")]:
                del kept[key]
            release_free_memory()
            before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            doc = gap_attribution(trace)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_SELF)
            runs.append({"user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
                         "wall": wall})
digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
print(json.dumps({"runs": runs, "digest": digest,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--inner", type=int, default=5, help="runs of the section per process")
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    for trace in opts.traces:
        results = alternating(_CHILD, trees, opts.rounds, str(Path(trace).resolve()), str(opts.inner))

        def figure(tree: Path, key: str, results: dict[Path, list[dict]] = results) -> str:
            cells = []
            for result in results[tree]:
                values = [run["user"] + run["sys"] if key == "cpu" else run[key] for run in result["runs"]]
                cells.append(f"{min(values):.3f} / {statistics.median(values):.3f}")
            return " ; ".join(cells)

        rows = [
            [f"{key} (least / median)"] + [figure(t, key) for t in trees]
            for key in ("cpu", "user", "sys", "wall")
        ]
        rows.append(
            ["peak RSS (MiB)"] + [" ; ".join(f"{r['peak_mib']:.0f}" for r in results[t]) for t in trees]
        )
        first = results[trees[0]][0]["digest"]
        rows.append(["same document"] + [str(all(r["digest"] == first for r in results[t])) for t in trees])
        print(f"\n{Path(trace).name}: gap_attribution, seconds over {opts.inner} runs per process\n")
        print(markdown_table(["figure"] + [str(t) for t in trees], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
