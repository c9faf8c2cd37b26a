"""Each analysis section's added peak memory, run alone, in analyze's order: which sections are big enough to
be ``Section.exclusive`` (``tracelens/analyses/__init__.py``), and which pairs the two threads could afford.

One fresh process (run from this repository's root, or ``--tree DIR``) loads TRACE, then runs the registry's
sections one at a time in the order :func:`tracelens.analyze` gives them priority (early, then the exclusive
ones, then the rest, then the sections that read others), inside ``reusing_array_pages`` and with
``release_free_memory`` after each, as analyze does. Around each section it resets the process's peak RSS
(writing "5" to /proc/self/clear_refs, Linux) and reads, from /proc/self/status: VmRSS before, VmHWM during,
VmRSS after. "added" = peak during - RSS before: what running the section beside another would add to that
other's peak (the shared values a section memoizes stay in "after"). Also each section's wall and CPU seconds
(CPU above wall: its numpy work used both cores). Shared values (``columns.memo``) are dropped after their last
reader as analyze drops them (``analyses.MEMO_READERS``), and a second table lists the values held after each
section, MiB each (the numpy arrays and frames they own), what the section computed and what went after it.

With ``--timeline`` it runs ``tracelens.analyze`` itself (its two threads, its scheduler) instead: a thread
samples VmRSS every 20 ms, each section's start and end is logged, and the table gives, for each set of sections
that ran at once, the highest RSS seen while they ran (the peak of analyze is the first row), then the sections'
start and end times, with the MiB of shared values held at each: which pairs a schedule can afford at this size.

With ``--timeline --release-columns`` analyze runs as the CLI runs it (``release_columns=True``: each event column
dropped after its last reader, ``tracelens/analyses/column_release.py``), and a third table says when each went.

With ``--memo-costs`` it times computing each big shared value alone (CPU and wall seconds), each after the
values it derives from: what dropping one and computing it again later would cost.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_section_peaks.py TRACE [--tree DIR]
      [--timeline [--release-columns] | --memo-costs]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

_OWNED_BYTES = r"""
import numpy as np, pandas as pd
from tracelens.analyses import columns as C
try:  # the store of shared values and what drops them (older trees: in columns, without dropping)
    from tracelens.analyses import derived as D
except ImportError:
    D = C

# Bytes of the numpy arrays (owning their data), DataFrames and nested containers a shared value holds; the
# event columns inside another value are not counted (a shared value of their own).
def owned_bytes(value, seen=None):
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes if value.base is None and value.flags.owndata else 0
    if isinstance(value, (pd.DataFrame, pd.Series)):
        return int(value.memory_usage(deep=False).sum()) if isinstance(value, pd.DataFrame) else value.nbytes
    if isinstance(value, dict):
        return sum(owned_bytes(v, seen) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(owned_bytes(v, seen) for v in value)
    if hasattr(value, "__dict__"):
        return sum(owned_bytes(v, seen) for k, v in vars(value).items()
                   if k != "store" and not (isinstance(v, C.EventColumns) and len(seen) > 1))
    return 0


def held_bytes(trace):
    derived = D._DERIVED.get(id(trace))
    return {k: owned_bytes(v) for k, v in list(derived.values.items())} if derived else {}
"""

_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, ".")
from contextlib import nullcontext
import tracelens
from tracelens import analyses as A
from tracelens.memory import release_free_memory, reusing_array_pages
#OWNED_BYTES#
def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

path = sys.argv[1]
t0, c0 = time.perf_counter(), time.process_time()
trace = tracelens.load(path)
rows = [{"section": "(load)", "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
         "before": 0, "peak": status()["VmHWM"], "after": status()["VmRSS"]}]
keys = A.SECTIONS
independent = (A.run_order(keys) if hasattr(A, "run_order") else  # older trees: the rule it replaced
               sorted((k for k in keys if not A.BY_KEY[k].needs),
                      key=lambda k: (not A.BY_KEY[k].early, not A.BY_KEY[k].exclusive)))
order = independent + [k for k in keys if k not in independent]
doc = {"source": {"path": path, "event_count": trace.num_events}}
done = {}
# as analyze drops each shared value after its last reader (older trees: none)
last_readers = (A.LastReaders(A.MEMO_READERS, order) if hasattr(A, "MEMO_READERS") else None)
with reusing_array_pages(), D.recording_reads() if hasattr(D, "recording_reads") else nullcontext([]) as log:
    for key in order:
        release_free_memory()
        before = status()["VmRSS"]
        reset_peak()
        t, c = time.perf_counter(), time.process_time()
        asked = len(log)
        with D.reading_as(key) if hasattr(D, "reading_as") else nullcontext():
            done[key] = A.BY_KEY[key].compute(trace, {**doc, **done})
        dropped = last_readers.finished(key) if last_readers else []
        D.forget(trace, dropped) if dropped else None
        release_free_memory()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        s = status()
        held = held_bytes(trace)
        rows.append({"section": key, "wall": wall, "cpu": cpu, "before": before, "peak": s["VmHWM"],
                     "after": s["VmRSS"], "dropped": dropped, "held": held,
                     "computed": sorted({k for _, k, new in log[asked:] if new}),
                     "read": sorted({k for _, k, new in log[asked:]})})
print(json.dumps({"events": trace.num_events, "file": os.path.getsize(path), "rows": rows}))
"""

_TIMELINE = r"""
import json, os, sys, threading, time
sys.path.insert(0, ".")
import tracelens
from tracelens import analyses as A
#OWNED_BYTES#
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024

path = sys.argv[1]
trace = tracelens.load(path)
t0 = time.perf_counter()
samples, events, stop = [], [], threading.Event()

def sample():
    while not stop.is_set():
        samples.append((time.perf_counter() - t0, rss()))
        time.sleep(0.02)

compute = A.Section.compute

def logged(self):
    run = compute.fget(self)
    def section(trace, done):
        events.append((time.perf_counter() - t0, 1, self.key, sum(held_bytes(trace).values())))
        try:
            return run(trace, done)
        finally:
            # the shared values held as it starts and ends (before analyze drops those it was the last reader of)
            events.append((time.perf_counter() - t0, 0, self.key, sum(held_bytes(trace).values())))
    return section

A.Section.compute = property(logged)
released = []
options = {}
if "--release-columns" in sys.argv[2:]:  # as the CLI runs it: each event column dropped after its last reader
    from tracelens.analyses import columns as C
    release = C.release_columns

    def logged_release(trace, names, after):
        kept = [n for n in names if n in dict.keys(trace.store.columns)]
        if kept:
            released.append((time.perf_counter() - t0, after, kept))
        release(trace, names, after)

    C.release_columns = logged_release
    options = {"release_columns": True}
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
tracelens.analyze(trace, **options)
stop.set()
sampler.join()
peaks = {}
for t, value in samples:
    running = set()
    for te, starts, key, _ in events:
        if te > t:
            break
        (running.add if starts else running.discard)(key)
    name = " + ".join(sorted(running)) or "(none)"
    peaks[name] = max(peaks.get(name, 0), value)
print(json.dumps({"events": trace.num_events, "file": os.path.getsize(path), "peaks": peaks,
                  "log": events, "released": released}))
"""


_MEMO_COSTS = r"""
import json, os, resource, sys, time
sys.path.insert(0, ".")
import tracelens
from tracelens.analyses.columns import api_calls, device_busy, event_columns, step_windows
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.startup import host_categories, one_time_work
from tracelens.analyses.attribution import host_rows
from tracelens.analyses.ops.tree import _op_tree
from tracelens.memory import reusing_array_pages

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

trace = tracelens.load(sys.argv[1])
out = []
with reusing_array_pages():  # each after the values it derives from: its own cost
    for name, value in [("event_columns", event_columns), ("device_busy", device_busy),
                        ("api_correlation", api_calls), ("launch_pairs", launch_pairs),
                        ("host_categories", host_categories), ("one_time_work", one_time_work),
                        ("host_rows", host_rows), ("step_windows", step_windows), ("op_tree", _op_tree)]:
        c, w = cpu(), time.perf_counter()
        value(trace)
        out.append((name, cpu() - c, time.perf_counter() - w))
print(json.dumps({"events": trace.num_events, "file": os.path.getsize(sys.argv[1]), "costs": out}))
"""


def timeline(result: dict) -> None:
    mib = 1024 * 1024
    size = result["file"]
    print("| sections running at once | highest RSS MiB | / file |")
    print("|---|---:|---:|")
    for name, value in sorted(result["peaks"].items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {value / mib:,.0f} | {value / size:.2f} |")
    print("\n| s after load | section | shared values held then MiB |")
    print("|---:|---|---:|")
    for t, starts, key, held in result["log"]:
        print(f"| {t:.2f} | {'start' if starts else 'end'} {key} | {held / mib:,.0f} |")
    if result.get("released"):
        print("\n| s after load | event columns released (after the section) |\n|---:|---|")
        for t, after, names in result["released"]:
            print(f"| {t:.2f} | {', '.join(names)} (after {after}) |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--tree", default=str(REPO_ROOT), help="source tree to run (default: this one)")
    parser.add_argument("--timeline", action="store_true", help="run analyze as is; peak RSS per running set")
    parser.add_argument(
        "--memo-costs", action="store_true", help="CPU seconds of each big shared value alone"
    )
    parser.add_argument(
        "--release-columns",
        action="store_true",
        help="with --timeline: analyze(release_columns=True), as the CLI runs it (event columns dropped after "
        "their last reader), and when each went",
    )
    opts = parser.parse_args()
    trace = str(Path(opts.trace).resolve())
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _MEMO_COSTS
            if opts.memo_costs
            else (_TIMELINE if opts.timeline else _CHILD).replace("#OWNED_BYTES#", _OWNED_BYTES),
            trace,
            *(["--release-columns"] if opts.release_columns else []),
        ],
        cwd=opts.tree,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": opts.tree},
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{Path(trace).name}: {result['events']:,} events, file {result['file'] / 2**20:,.0f} MiB\n")
    if opts.timeline:
        timeline(result)
        return 0
    if opts.memo_costs:
        print("| shared value | CPU s | wall s |\n|---|---:|---:|")
        for name, cpu, wall in result["costs"]:
            print(f"| {name} | {cpu:.2f} | {wall:.2f} |")
        return 0
    size = result["file"]
    mib = 1024 * 1024
    print(
        "| section | wall s | CPU s | RSS before MiB | peak MiB | added MiB | added / file | RSS after MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in result["rows"]:
        added = r["peak"] - r["before"]
        print(
            f"| {r['section']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['before'] / mib:,.0f} | "
            f"{r['peak'] / mib:,.0f} | {added / mib:,.0f} | {added / size:.3f} | {r['after'] / mib:,.0f} |"
        )
    print(
        "\nShared values (columns.memo) after each section: MiB of the numpy arrays and frames each holds (event"
    )
    print(
        "columns: only the arrays they own, not the views of the Arrow table); computed, and dropped after it.\n"
    )
    print("| section | held MiB | held values (MiB) | computed | dropped after it |")
    print("|---|---:|---|---|---|")
    for r in result["rows"][1:]:
        held = r.get("held", {})
        listed = ", ".join(
            f"{k} {v / mib:,.0f}" for k, v in sorted(held.items(), key=lambda kv: -kv[1]) if v >= mib
        )
        print(
            f"| {r['section']} | {sum(held.values()) / mib:,.0f} | {listed} | {', '.join(r.get('computed', []))} | "
            f"{', '.join(r.get('dropped', []))} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
