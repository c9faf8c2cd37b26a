"""Where analyze's time goes: each section of ``analyses.REGISTRY`` timed one by one, for this tree and others.

For each TRACE and each tree (this repository, plus every ``--tree DIR``, e.g. a worktree of an earlier commit
with its extension built), one fresh process run from that tree's root loads the trace and computes the
sections in ``analyze``'s own order (``early`` ones first, each given the sections before it), timing each
(``time.perf_counter``, or with ``--clock cpu`` the process's CPU time) inside ``reusing_array_pages`` as
analyze runs them (big arrays take freed arrays' pages; without it page faults inflate the replay most), then
the document's summary and its JSON text (``summary + JSON``: what ``analyze --format json`` does after the
sections), and reads the process's peak RSS at the end. Trees are run alternately, ``--rounds`` times; the table gives the median per section. Use
it to find which section grew between two commits.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_sections.py TRACE... [--tree ../wt-base] [--rounds 3]
      [--clock cpu]
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
clock = time.process_time if sys.argv[2] == "cpu" else time.perf_counter
t0 = clock()
trace = tracelens.load(sys.argv[1])
times = {"load": clock() - t0}
meta = trace.metadata
doc = {"schema_version": A.JSON_SCHEMA_VERSION, "source": {
    "path": meta.source_path, "format": meta.source_format, "producer": meta.producer,
    "producer_version": meta.producer_version, "format_version": meta.format_version, "framework": meta.framework,
    "rank": meta.rank, "world_size": meta.world_size, "event_count": trace.num_events,
    "warnings": list(meta.warnings)}}
done = {}
# the sections run as analyze runs them: big arrays take freed arrays' pages (trees without it: nullcontext)
import contextlib
pages = getattr(A, "reusing_array_pages", contextlib.nullcontext)
with pages():
    for name in sorted(A.SECTIONS, key=lambda key: not A.BY_KEY[key].early):
        t = clock()
        done[name] = A.BY_KEY[name].compute(trace, {**doc, **done})
        A.release_free_memory()
        times[name] = clock() - t
times["sections"] = sum(v for k, v in times.items() if k != "load")
t = clock()
from tracelens.document import dumps, summarize  # what analyze and --format json do after the sections
dumps({"schema_version": doc["schema_version"], "source": doc["source"], "summary": summarize(done), **done})
times["summary + JSON"] = clock() - t
print(json.dumps({"times": times, "events": trace.num_events,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--tree", action="append", default=[], help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time (time.perf_counter) or the process's CPU time (time.process_time: steadier on a shared "
        "machine, but counts both cores where a step runs two threads)",
    )
    opts = parser.parse_args()
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    for trace in opts.traces:
        results = alternating(_CHILD, trees, opts.rounds, str(Path(trace).resolve()), opts.clock)
        keys: list[str] = []
        for runs in results.values():
            keys += [k for k in runs[0]["times"] if k not in keys]
        rows = []
        for key in keys:
            row = [key]
            for tree in trees:
                values = [r["times"][key] for r in results[tree] if key in r["times"]]
                row.append(f"{statistics.median(values):.3f}" if values else "-")
            rows.append(row)
        rows.append(
            ["peak RSS (MiB)"]
            + [f"{statistics.median(r['peak_mib'] for r in results[t]):.0f}" for t in trees]
        )
        events = results[trees[0]][0]["events"]
        print(f"\n{Path(trace).name}: {events:,} events; {opts.clock} seconds, median of {opts.rounds}\n")
        print(markdown_table(["section"] + [t.name for t in trees], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
