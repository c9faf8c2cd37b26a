"""The Kineto reader's worker-thread CPU per block (issue 28): the native scanner, then the block
made ready for the table from its output (kineto/native.py's prepared block where a tree has it, else its block
columns and prepare.prepare_block), per tree.

The file's event blocks are inflated and cut first (as the reader cuts them, 16 MiB each) and held as bytes;
then one pass runs the steps over every block in turn, timing each step's CPU (``time.process_time``: the steps
run on this one thread) and counting its minor page faults, the prepared blocks held (as the table holds them
until its build). Each round is one fresh process per tree (fresh memory, as in a load), the trees alternating
(``--tree DIR``, repeatable: a checkout with its scanner built); the table gives each step's median.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_kineto_worker.py FILE.json.gz [--rounds 5]
      [--tree /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, resource, sys, time
from pathlib import Path
import msgspec
from tracelens.ingest.kineto import native, split
from tracelens.ingest.kineto.prepare import prepare_block

class Quiet:
    def advance(self, n):
        pass

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def columns_and_prep(scanned):
    # a tree that makes the prepared block in one step (native._prepared_columns), else the two steps
    if hasattr(native, "_prepared_columns"):
        return native._prepared_columns(scanned)
    return prepare_block(native._scanned_columns(scanned))

blocks = []
for kind, payload, shift in split.split_stream(Path(sys.argv[1]), Quiet(), 16 << 20):
    if kind == "events":
        blocks.append(tuple(bytes(p) for p in payload.pieces()))
parts = {"scan (C)": 0.0, "columns + prep": 0.0, "faults scan (C)": 0, "faults columns + prep": 0}
kept = []  # the prepared blocks, held as the table holds them until its build
for pieces in blocks:
    f0, t0 = faults(), time.process_time()
    scanned = native.scanner().scan_events(pieces, native.to_number, msgspec.json.decode)
    t1, f1 = time.process_time(), faults()
    kept.append(columns_and_prep(scanned))
    t2, f2 = time.process_time(), faults()
    parts["scan (C)"] += t1 - t0
    parts["columns + prep"] += t2 - t1
    parts["faults scan (C)"] += f1 - f0
    parts["faults columns + prep"] += f2 - f1
    del scanned
print(json.dumps([parts]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    opts = parser.parse_args()
    trees = [REPO_ROOT, *opts.tree]
    results: dict[str, list[dict[str, float]]] = {tree.name: [] for tree in trees}
    for _ in range(opts.rounds):
        for tree in trees:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(opts.file.resolve())],
                cwd=tree,
                env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[tree.name] += json.loads(out.strip().splitlines()[-1])
    print(f"{opts.file.name}: {opts.rounds} rounds (a fresh process per tree each), median CPU s\n")
    steps = ("scan (C)", "columns + prep")
    print("| tree | " + " | ".join(steps) + " | total | page faults (by step) |")
    print("|---|---|---|---|---|")
    for name, rounds in results.items():
        medians = [statistics.median(r[k] for r in rounds) for k in steps]
        total = statistics.median(sum(r[k] for k in steps) for r in rounds)
        faults = " + ".join(f"{statistics.median(r['faults ' + k] for r in rounds):,.0f}" for k in steps)
        cells = " | ".join(f"{v:.3f}" for v in medians)
        print(f"| {name} | {cells} | {total:.3f} | {faults} |")


if __name__ == "__main__":
    main()
