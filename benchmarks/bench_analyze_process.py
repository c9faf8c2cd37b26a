"""Whole-process cost of ``python3 -m tracelens analyze --format json TRACE``: wall, user+sys CPU and peak RSS of
the child process (``os.wait4``), for this tree and every ``--tree DIR``, run alternately ``--rounds`` times.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_analyze_process.py TRACE [--tree /work/base34]
      [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_once(tree: Path, trace: str, out: str) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one analyze process run from ``tree``'s root."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracelens", "analyze", "--format", "json", trace, "-o", out],
        cwd=tree,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{tree}: analyze failed ({status})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    trace = str(Path(opts.trace).resolve())
    trees = [REPO_ROOT] + [Path(t).resolve() for t in opts.tree]
    results: dict[Path, list[tuple[float, float, float]]] = {t: [] for t in trees}
    for r in range(opts.rounds):
        for i, tree in enumerate(trees if r % 2 == 0 else list(reversed(trees))):
            results[tree].append(run_once(tree, trace, f"/tmp/bench_analyze_process_{os.getpid()}_{i}.json"))
    print("| tree | wall s (median, all) | CPU s (median, all) | peak MiB (all) |")
    print("|---|---|---|---|")
    for tree, runs in results.items():
        walls, cpus, peaks = zip(*runs, strict=True)
        print(
            f"| {tree} | {statistics.median(walls):.2f} ({', '.join(f'{w:.2f}' for w in walls)}) | "
            f"{statistics.median(cpus):.2f} ({', '.join(f'{c:.2f}' for c in cpus)}) | {', '.join(f'{p:.0f}' for p in peaks)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
