"""analyze's peak memory with and without releasing each event column after its last reader
(``analyze(trace, release_columns=True)``, as the CLI runs it; ``tracelens/analyses/column_release.py``).

One fresh process per run (from this repository's root, or ``--tree DIR``) loads TRACE, resets the process's peak
RSS (writing "5" to /proc/self/clear_refs, Linux), runs analyze, and reports RSS before, the peak during analyze
(VmHWM) and RSS after, its CPU seconds (user + system) and wall, and when each column went. Runs alternate off and
on, ``--runs`` pairs; ``--threads 1`` runs the sections one at a time (a peak that does not depend on which
sections happen to overlap on the two threads, which moves the two-thread peak by +-100 MiB from run to run at
x1512).

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_column_release.py TRACE [--runs N] [--threads T]
      [--tree DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from common import run_child

REPO_ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens import analyses as A

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

path, release, threads = sys.argv[1], sys.argv[2] == "on", int(sys.argv[3])
trace = tracelens.load(path)
released = []
options = {"threads": threads}
if release:
    from tracelens.analyses import columns as C
    drop = C.release_columns
    t0 = time.perf_counter()

    def noted(trace, names, after):
        kept = [n for n in names if n in dict.keys(trace.store.columns)]
        if kept:
            released.append((round(time.perf_counter() - t0, 2), after, kept))
        drop(trace, names, after)

    C.release_columns = noted
    options["release_columns"] = True
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
c, w = cpu(), time.perf_counter()
A.analyze(trace, **options)
cpu_s, wall_s = cpu() - c, time.perf_counter() - w
print(json.dumps({"events": trace.num_events, "before": before, "peak": status("VmHWM"),
                  "after": status("VmRSS"), "cpu": cpu_s, "wall": wall_s, "released": released}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--tree", default=str(REPO_ROOT), help="source tree to run (default: this one)")
    parser.add_argument("--runs", type=int, default=1, help="pairs of runs (off, on), alternating")
    parser.add_argument("--threads", type=int, default=2, help="analyze's threads (1: one section at a time)")
    opts = parser.parse_args()
    trace = str(Path(opts.trace).resolve())
    mib = 2**20
    print(f"{Path(trace).name}, {opts.threads} thread(s)\n")
    print(
        "| release | RSS before MiB | peak MiB | RSS after MiB | CPU s | wall s |\n|---|---:|---:|---:|---:|---:|"
    )
    released = []
    for _ in range(opts.runs):
        for mode in ("off", "on"):
            r = run_child(
                _CHILD, Path(opts.tree), trace, mode, str(opts.threads), env={"PYTHONPATH": opts.tree}
            )
            print(
                f"| {mode} | {r['before'] / mib:,.0f} | {r['peak'] / mib:,.0f} | {r['after'] / mib:,.0f} "
                f"| {r['cpu']:.1f} | {r['wall']:.1f} |",
                flush=True,
            )
            released = r["released"] or released
    if released:
        print("\n| s into analyze | event columns released (after the section) |\n|---:|---|")
        for t, after, names in released:
            print(f"| {t:.2f} | {', '.join(names)} (after {after}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
