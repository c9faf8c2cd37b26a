"""Resident memory through an Nsight export's load, phase by phase: where the load's peak RSS is reached.

One fresh process (run from this repository's root, or ``--tree DIR``) loads TRACE with ``tracelens.load`` while
a thread samples VmRSS every 10 ms; the reader's steps are marked as they start and end (each table's rows built
from its fetched batch, the assembly, its dense columns scattered, its sparse columns built in the second thread,
the end of tracelens.load). The table lists, per mark, the seconds since the start, the
RSS then and the highest RSS sampled since the previous mark: the peak of the load is the highest of these, and
the mark after it names the step it belongs to. Wall times are not the point (the sampler and the marks slow the
load a little); run under ``flock /tmp/tracelens-bench.lock`` so that no other job's memory traffic moves them.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_load_phases.py TRACE [--tree DIR] [--sparse]
      (``--sparse``: a mark per sparse column too)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, sys, threading, time
sys.path.insert(0, ".")
import tracelens
from tracelens.ingest.nsys import assembly, reader

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

t0 = time.perf_counter()
samples, marks, stop = [], [], threading.Event()

def mark(what):
    marks.append((time.perf_counter() - t0, what, rss()))

def sample():
    while not stop.is_set():
        samples.append((time.perf_counter() - t0, rss()))
        time.sleep(0.01)

def marked(module, name, label):
    function = getattr(module, name)
    def wrapper(*args, **kwargs):
        mark("start " + label(args))
        try:
            return function(*args, **kwargs)
        finally:
            mark("end " + label(args))
    setattr(module, name, wrapper)

builders = reader.NsysReader._builders
def marked_builders(self, db, strings):
    def each(name, build):
        def run(box):
            mark(f"build {name} ({box[0].num_rows:,} rows fetched)")
            try:
                return build(box)
            finally:
                mark(f"built {name}")
        return run
    return {name: each(name, build) for name, build in builders(self, db, strings).items()}
reader.NsysReader._builders = marked_builders
marked(reader, "assemble", lambda args: "assembly")
marked(assembly, "_gather_columns", lambda args: "columns")
marked(assembly, "_scatter", lambda args: f"dense column {args[1].name}")
if sys.argv[2] == "1":
    marked(assembly, "_merged_column", lambda args: f"merge of sparse column {args[1].name}")
threading.Thread(target=sample, daemon=True).start()
trace = tracelens.load(sys.argv[1])
mark("loaded (tracelens.load returned)")
stop.set()
print(json.dumps({"events": trace.num_events, "samples": samples, "marks": marks}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--tree", default=str(REPO_ROOT), help="source tree to run (default: this one)")
    parser.add_argument("--sparse", action="store_true", help="a mark per sparse column too")
    opts = parser.parse_args()
    trace = str(Path(opts.trace).resolve())
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, trace, "1" if opts.sparse else "0"],
        cwd=opts.tree,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": opts.tree},
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    mib = 1024 * 1024
    samples = result["samples"]
    peak_t, peak = max(samples, key=lambda s: s[1]) if samples else (0.0, 0)
    size = os.path.getsize(trace)
    print(
        f"{Path(trace).name}: {result['events']:,} events, file {size / mib:,.0f} MiB; "
        f"highest RSS sampled {peak / mib:,.0f} MiB ({peak / size:.2f}x the file) at {peak_t:.2f} s\n"
    )
    print("| s | step | RSS then MiB | highest since the previous mark MiB |")
    print("|---:|---|---:|---:|")
    at = 0
    for t, what, value in result["marks"]:
        highest = 0
        while at < len(samples) and samples[at][0] <= t:
            highest = max(highest, samples[at][1])
            at += 1
        print(f"| {t:.2f} | {what} | {value / mib:,.0f} | {max(highest, value) / mib:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
