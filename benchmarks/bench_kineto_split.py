"""The Kineto reader's main-thread share (issue 28): inflating the ``.json.gz`` and cutting it into event blocks
(``kineto/split.py``'s ``split_stream`` with the reader's block size and ring), against ISA-L's inflate alone
(the raw reader into one reused buffer, and ``igzip.open(...).read(8 MiB)`` as bench_kineto_load.py's floor).
Two more variants place the rest of the load against those: ``split + scan``, the same cut with each block
scanned by the native scanner (``native.scan_raw``) on one worker thread, at most two blocks in flight in a ring
of three, as the reader runs a gzipped file on two cores, and nothing else (no block columns, no table); and
``tracelens.load``, the whole load. What ``tracelens.load`` takes beyond ``split + scan`` is the table's build:
the blocks' columns, their adding, ``Columns.finish`` and enrichment.

Each round runs every variant once in one process, under the load's memory policy (``memory.small_pages``),
with CPU time (user + system) of the process and page faults from its rusage; medians over rounds. A variant
per tree (``--tree DIR``, repeatable) runs in its own process, alternating, so before/after share the machine
state.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_kineto_split.py FILE.json.gz [--rounds 5]
      [--tree /work/base34]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from isal import igzip, isal_zlib
from tracelens import memory
from tracelens.ingest.kineto import reader, split

path = Path(sys.argv[1])
rounds = int(sys.argv[2])

class Quiet:
    def advance(self, n):
        pass

def floor_igzip():
    with igzip.open(path, "rb") as fh:
        while fh.read(8 << 20):
            pass

def floor_raw():
    buffer = bytearray(16 << 20)
    with open(path, "rb") as raw:
        stream = isal_zlib._GzipReader(raw, 512 * 1024)
        while stream.readinto(buffer):
            pass

def cut():
    json_bytes = reader._json_size(path, path.stat().st_size)
    workers = 2
    per_block = json_bytes // (reader.NATIVE_BLOCKS_PER_WORKER * workers) + 1
    block_bytes = min(reader.BLOCK_BYTES, max(reader.MIN_BLOCK_BYTES, per_block))
    for _ in split.split_stream(path, Quiet(), block_bytes, 2 * workers + 1):
        pass

def cut_and_scan():
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    from tracelens.ingest.kineto import native

    pending = deque()
    with ThreadPoolExecutor(1) as worker:
        for kind, payload, _shift in split.split_stream(path, Quiet(), reader.BLOCK_BYTES, 3):
            if kind == "events":
                pending.append(worker.submit(native.scan_raw, payload.pieces()))
                while len(pending) > 2:  # its buffer is read into again once two more blocks are cut
                    pending.popleft().result()
        while pending:
            pending.popleft().result()

def load():
    import tracelens
    return tracelens.load(path)

out = {}
variants = (
    ("igzip floor", floor_igzip), ("raw floor", floor_raw), ("split_stream", cut),
    ("split + scan", cut_and_scan), ("tracelens.load", load),
)
with memory.small_pages():
    for _ in range(rounds):
        for name, work in variants:
            before = resource.getrusage(resource.RUSAGE_SELF)
            cpu, wall = time.process_time(), time.perf_counter()
            result = work()  # (the trace held until timed: freeing it is the caller's, after the load)
            after = resource.getrusage(resource.RUSAGE_SELF)
            out.setdefault(name, []).append({
                "cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                "sys": after.ru_stime - before.ru_stime, "faults": after.ru_minflt - before.ru_minflt,
            })
            del result
print(json.dumps(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    opts = parser.parse_args()
    trees = [REPO_ROOT, *(t.resolve() for t in opts.tree)]
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    for repeat in range(2):  # each tree twice, alternating
        for tree in trees if repeat % 2 == 0 else reversed(trees):
            env = {**os.environ, "PYTHONPATH": str(tree)}
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, str(opts.path.resolve()), str(opts.rounds)],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            for name, runs in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                results.setdefault(f"{name} [{tree.name}]", {}).setdefault("runs", []).extend(runs[1:])
    print("| variant | CPU | sys | wall | minor faults |\n|---|---|---|---|---|")
    for label, entry in results.items():
        runs = entry["runs"]
        med = {key: statistics.median(r[key] for r in runs) for key in ("cpu", "sys", "wall", "faults")}
        print(
            f"| {label} | {med['cpu']:.3f} s | {med['sys']:.3f} s | {med['wall']:.3f} s | {med['faults']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
