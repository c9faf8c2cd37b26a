"""The attribution's gap split (``host_split.split_gaps``) alone, on the inputs it gets from one trace, in this tree
and others (``--tree DIR``): no trace loaded per tree, no other step timed.

First a child process from this tree loads TRACE (``small_pages`` as the CLI sets it), runs ``gap_attribution`` with
``split_gaps`` spied, and saves what each device's call was given (the gaps, the host rows' arrays and the event
times they index, the threads, the busy intervals, the chosen gaps) to a temporary ``.npz``. Then for each round and
tree, a fresh process from that tree's root runs ``split_gaps`` on every saved call ``--runs`` times, each run as
``analyze`` runs a section (inside ``reusing_array_pages`` sized to the trace, ``release_free_memory`` before it) and
reports the runs' CPU (``getrusage`` user + sys) and minor page faults, least and median; and the same warm (no
release between runs, ``time.thread_time``). The answers' digest must match across trees (``same answer``).

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_gap_split.py TRACE --tree /work/base17
      [--rounds 3] [--runs 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from common import REPO_ROOT, alternating, markdown_table, run_child

_DUMP = r"""
import json, sys
import numpy as np
sys.path.insert(0, ".")
import tracelens
from tracelens.memory import small_pages
from tracelens.analyses import attribution
calls = []
split_gaps = attribution.split_gaps
def spy(starts, ends, rows, thread_set, busy, which):
    calls.append(dict(gs=starts, ge=ends, start=rows.cols.start, end=rows.cols.end, row=rows.row,
                      category=rows.category, thread=rows.thread, sync_copy=rows.sync_copy,
                      pid=rows.threads.pid, tid=rows.threads.tid, thread_set=thread_set, bs=busy[0], be=busy[1],
                      which=which))
    return split_gaps(starts, ends, rows, thread_set, busy, which)
attribution.split_gaps = spy
with small_pages():
    trace = tracelens.load(sys.argv[1])
    attribution.gap_attribution(trace)
events = int(calls[0]["start"].size) if calls else 0  # the event rows: the page cache's size class as analyze sets it
np.savez(sys.argv[2], calls=len(calls), events=events,
         **{f"{k}_{i}": np.asarray(v) for i, call in enumerate(calls) for k, v in call.items()})
print(json.dumps({"calls": len(calls), "events": events}))
"""

_CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, ".")
import numpy as np
from types import SimpleNamespace
from tracelens.analyses.host_split import split_gaps
from tracelens.memory import release_free_memory, reusing_array_pages, small_pages

class Threads:
    def __init__(self, pid, tid):
        self.pid, self.tid = pid, tid
    def __len__(self):
        return self.pid.size

saved = np.load(sys.argv[1])
calls = []
for i in range(int(saved["calls"])):
    a = {k: saved[f"{k}_{i}"] for k in ("gs", "ge", "start", "end", "row", "category", "thread", "sync_copy", "pid",
                                         "tid", "thread_set", "bs", "be", "which")}
    rows = SimpleNamespace(cols=SimpleNamespace(start=a["start"], end=a["end"]), row=a["row"],
                           category=a["category"], thread=a["thread"], sync_copy=a["sync_copy"],
                           threads=Threads(a["pid"], a["tid"]))
    calls.append((a["gs"], a["ge"], rows, a["thread_set"], (a["bs"], a["be"]), a["which"]))

def run_all():
    return [split_gaps(*call) for call in calls]

cold, faults, warm = [], [], []
with small_pages(), reusing_array_pages(int(saved["events"])):
    for _ in range(int(sys.argv[2])):
        release_free_memory()
        before = resource.getrusage(resource.RUSAGE_SELF)
        out = run_all()
        after = resource.getrusage(resource.RUSAGE_SELF)
        cold.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        faults.append(after.ru_minflt - before.ru_minflt)
        del out
for _ in range(int(sys.argv[2])):
    start = time.thread_time()
    out = run_all()
    warm.append(time.thread_time() - start)
digest = hashlib.sha256()
for got in out:
    for a in (got.totals, got.chosen, np.int64(got.sync_copy_ns), got.starts_in_sync, *got.unexplained):
        digest.update(np.ascontiguousarray(a).tobytes())
print(json.dumps({"cold": cold, "faults": faults, "warm": warm, "digest": digest.hexdigest()}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=40, help="runs of split_gaps per process")
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    with tempfile.TemporaryDirectory() as tmp:
        saved = str(Path(tmp) / "split_gaps_inputs.npz")
        info = run_child(_DUMP, REPO_ROOT, str(Path(opts.trace).resolve()), saved)
        results = alternating(_CHILD, trees, opts.rounds, saved, str(opts.runs))

    def cells(tree: Path, key: str, scale: float) -> str:
        return " ; ".join(
            f"{scale * min(r[key]):.1f} / {scale * statistics.median(r[key]):.1f}" for r in results[tree]
        )

    rows = [
        ["CPU ms as analyze runs it (least / median)"] + [cells(t, "cold", 1000) for t in trees],
        ["page faults a run (least / median)"] + [cells(t, "faults", 1) for t in trees],
        ["CPU ms warm (least / median)"] + [cells(t, "warm", 1000) for t in trees],
    ]
    first = results[trees[0]][0]["digest"]
    rows.append(["same answer"] + [str(all(r["digest"] == first for r in results[t])) for t in trees])
    print(
        f"\n{Path(opts.trace).name}: split_gaps ({info['calls']} device(s)), {opts.runs} runs per process\n"
    )
    print(markdown_table(["figure"] + [str(t) for t in trees], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
