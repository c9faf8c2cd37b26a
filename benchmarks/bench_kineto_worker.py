"""The Kineto reader's worker-thread CPU per block (issue 28): the native scanner, the block columns made from
its output (kineto/native.py) and prepare_block (kineto/prepare.py), per tree, in one process per tree.

The file's event blocks are inflated and cut first (as the reader cuts them, 16 MiB each) and held as bytes;
then each round runs the three steps over every block in turn, timing each step's CPU (``time.process_time``,
this thread only: the steps run on one thread). Trees alternate round by round, each in its own fresh process
(``--tree DIR``, repeatable: a checkout with its scanner built), and the table gives each step's median.

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
import json, sys, time
from pathlib import Path
import msgspec
from tracelens.ingest.kineto import native, split
from tracelens.ingest.kineto.prepare import prepare_block

class Quiet:
    def advance(self, n):
        pass

blocks = []
for kind, payload, shift in split.split_stream(Path(sys.argv[1]), Quiet(), 16 << 20):
    if kind == "events":
        blocks.append(tuple(bytes(p) for p in payload.pieces()))
rounds = []
for _ in range(int(sys.argv[2])):
    parts = {"scan (C)": 0.0, "block columns": 0.0, "block prep": 0.0}
    for pieces in blocks:
        t0 = time.process_time()
        scanned = native.scanner().scan_events(pieces, native.to_number, msgspec.json.decode)
        t1 = time.process_time()
        block = native._scanned_columns(scanned)
        t2 = time.process_time()
        block = prepare_block(block)
        t3 = time.process_time()
        parts["scan (C)"] += t1 - t0
        parts["block columns"] += t2 - t1
        parts["block prep"] += t3 - t2
        del scanned, block
    rounds.append(parts)
print(json.dumps(rounds))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    opts = parser.parse_args()
    trees = [REPO_ROOT, *opts.tree]
    results: dict[str, list[dict[str, float]]] = {}
    for tree in trees:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(opts.file.resolve()), str(opts.rounds)],
            cwd=tree,
            env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        results[tree.name] = json.loads(out.strip().splitlines()[-1])
    print(f"{opts.file.name}: {opts.rounds} rounds over every block, median CPU s (this thread)\n")
    print("| tree | scan (C) | block columns | block prep | total |")
    print("|---|---|---|---|---|")
    for name, rounds in results.items():
        medians = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        total = statistics.median(sum(r.values()) for r in rounds)
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in medians.values()) + f" | {total:.3f} |")


if __name__ == "__main__":
    main()
