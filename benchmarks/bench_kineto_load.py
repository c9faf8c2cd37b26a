"""Kineto ``.json.gz``: ``tracelens.load`` and ``analyze --format json`` against ISA-L decompression of the
same file (issue 28, item 3), and where the load's CPU time goes.

Each measurement is a fresh process (imports included, as a user's command pays them): wall time, CPU time
(user + system, all threads) and peak RSS, from the child's own rusage. The floor is ISA-L (``isal.igzip``)
decompression of the file, the bytes discarded. Rounds are interleaved; the table gives the median of each.

In process (issue 28's ratio): one fresh process per tree imports tracelens, then runs the floor and
``tracelens.load`` alternately, ``--rounds`` times each; the ratio is the median load wall over the median
floor wall of that same process (imports excluded from both), with the CPU times beside them. A load's time ends
when it returns the trace: the trace is freed after the clock stops (before, its ~9 ms of unmapping at the 406 MB
tile were counted in the load).
``--tree DIR`` (repeatable) adds another source tree (a checkout of an earlier commit, its scanner built
there) measured in the same rounds: before/after in one run, on the same machine state.

``--parts`` adds one in-process breakdown of the load's CPU time in this tree: imports, decompression and
cutting into blocks, the native scanner, the blocks' numpy columns, their per-block steps (kineto/prepare.py,
on the worker threads in a real load; one part where the scanner makes the prepared block, native.py), adding them to the table (string merges,
each block's start times), the table build, enrichment (each block scanned in this thread as it is cut: a
sum of CPU times, not the overlapped wall time of a real load).

``--imports`` adds, per tree, what a fresh ``tracelens.load`` of the file imports (``python -X importtime``,
``--rounds`` fresh processes): the sum over modules of each one's smallest self time (the import work itself,
less swayed by a busy machine than one run's total), the modules that cost most, and whether pyarrow.compute
and pandas were imported.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_kineto_load.py [FILE.json.gz] [--rounds 3]
      [--tree /path/to/other/checkout] [--parts] [--imports]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ensure_bytecode

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
DEFAULT_INPUTS = (
    BENCH_DIR / "data" / "kineto_tiled_406mb" / "rank-0.tiled.pt.trace.json.gz",
    BENCH_DIR / "data" / "kineto_tiled_520mb" / "rank-0.tiled.pt.trace.json.gz",
)

FLOOR = """
import sys
from isal import igzip
with igzip.open(sys.argv[1], "rb") as fh:
    while fh.read(8 << 20):
        pass
"""
LOAD = """
import sys
import tracelens
tracelens.load(sys.argv[1])
"""
# what `python -m tracelens analyze --format json TRACE -o /dev/null` runs, its entry and its exit included (the
# CLI's entry ends the process without the interpreter's teardown; tracelens.cli.main alone, as this child ran
# before, paid that teardown: ~30-40 ms of CPU more than the command's process)
ANALYZE = """
import os, runpy, sys
sys.argv = ["tracelens", "analyze", "--format", "json", sys.argv[1], "-o", os.devnull]
runpy.run_module("tracelens", run_name="__main__", alter_sys=True)
"""

IN_PROCESS = """
import json, statistics, sys, time
import tracelens
from isal import igzip

def floor():
    with igzip.open(sys.argv[1], "rb") as fh:
        while fh.read(8 << 20):
            pass

runs = {"floor": [], "load": []}
for _ in range(int(sys.argv[2])):
    for name, work in (("floor", floor), ("load", lambda: tracelens.load(sys.argv[1]))):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()  # (held until timed: freeing the trace is the caller's, after the load)
        runs[name].append((time.perf_counter() - wall, time.process_time() - cpu))
        del result
print(json.dumps(runs))
"""

PARTS = """
import json, sys, time
started = time.process_time()
from pathlib import Path
import msgspec
import tracelens
from tracelens.enrich import enrich
from tracelens.ingest.kineto import native, split
from tracelens.ingest.kineto.msgspec_engine import decode_header
from tracelens.ingest.kineto.table import Columns
try:
    from tracelens.ingest.kineto.prepare import prepare_block
except ImportError:  # a tree before the per-block steps (their work is then in "add" and "table build")
    prepare_block = None
parts = {"imports": time.process_time() - started}
path = Path(sys.argv[1])

class Quiet:
    def advance(self, n):
        pass

def timed(name, fn, *args):
    start = time.process_time()
    result = fn(*args)
    parts[name] = parts.get(name, 0.0) + time.process_time() - start
    return result

# Each block is scanned as it comes and let go, as the reader does (holding them all would fault in fresh
# pages for every block and count that as decompression); in a tree whose reader inflates into a ring of reused
# buffers (split_stream's `buffers`), into a ring too (two: each block is done before the next is read).
import inspect
ring = {"buffers": 2} if "buffers" in inspect.signature(split.split_stream).parameters else {}
stream = split.split_stream(path, Quiet(), 16 << 20, **ring)
columns, document = Columns(path), {}
while (piece := timed("decompress + cut", next, stream, None)) is not None:
    kind, payload, shift = piece
    if kind == "events":
        scanned = timed("scan (C)", native.scanner().scan_events, payload.pieces(), native.to_number,
                        msgspec.json.decode)
        if hasattr(native, "_prepared_columns"):  # a tree whose scanner makes the prepared block in one pass
            block = timed("block columns + prep", native._prepared_columns, scanned)
        else:
            block = timed("block columns", native._scanned_columns, scanned)
            if prepare_block is not None:
                block = timed("block prep", prepare_block, block)
    elif kind == "header":
        document.update(decode_header(payload, path, shift))
        continue
    else:
        block, meta = timed("scan (C)", native.scan_document, payload)
        document.update(meta)
    timed("add to table", columns.add, block)
trace = timed("table build", columns.finish, document)
timed("enrich", enrich, trace)
print(json.dumps(parts))
"""


def run(tree: Path, code: str, path: Path, *args: str) -> dict:
    """One fresh process: wall, CPU and peak RSS from its own rusage."""
    ensure_bytecode(tree)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryFile("w+") as err:  # the CLI's "wrote ..." line; shown when the child fails
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(path), *args],
            cwd=tree,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        out = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage (not waited for by Popen)
        wall = time.perf_counter() - started
        exit_code = os.waitstatus_to_exitcode(status)
        if exit_code:
            err.seek(0)
            raise SystemExit(f"{tree}: exit {exit_code}: {(err.read().strip().splitlines() or [''])[-1]}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "out": out,
    }


IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \| +(\S+)")


def import_costs(tree: Path, path: Path, rounds: int) -> dict[str, int]:
    """Per module imported by a fresh ``tracelens.load(path)`` in ``tree``: its smallest self time (us) over
    ``rounds`` processes."""
    ensure_bytecode(tree)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    best: dict[str, int] = {}
    for _ in range(rounds):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", LOAD, str(path)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        for self_us, name in IMPORT_LINE.findall(err):
            best[name] = min(best.get(name, 1 << 62), int(self_us))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--parts", action="store_true")
    parser.add_argument("--imports", action="store_true")
    parser.add_argument("--no-analyze", action="store_true")
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/kineto_load.md")
    opts = parser.parse_args()
    path = opts.path or next((p for p in DEFAULT_INPUTS if p.exists()), None)
    if path is None or not path.exists():
        raise SystemExit("no input: pass a Kineto .json.gz (or generate benchmarks/data/kineto_tiled_*)")
    trees = [REPO_ROOT, *(t.resolve() for t in opts.tree)]
    jobs = [("floor", REPO_ROOT, FLOOR)]
    for tree in trees:
        jobs.append((f"load [{tree.name}]", tree, LOAD))
        if not opts.no_analyze:
            jobs.append((f"analyze [{tree.name}]", tree, ANALYZE))
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in jobs}
    for r in range(opts.rounds):
        for label, tree, code in jobs if r % 2 == 0 else list(reversed(jobs)):
            m = run(tree, code, path)
            runs[label].append(m)
            print(
                f"round {r + 1} {label}: wall {m['wall']:.2f} s, cpu {m['cpu']:.2f} s, "
                f"peak {m['rss_mib']:.0f} MiB",
                flush=True,
            )
    floor = statistics.median(m["wall"] for m in runs["floor"])
    floor_cpu = statistics.median(m["cpu"] for m in runs["floor"])
    lines = [
        "# Kineto load against ISA-L decompression (`bench_kineto_load.py`)",
        "",
        f"{path.name}: {path.stat().st_size / 2**20:.1f} MiB gzipped; {opts.rounds} interleaved rounds of fresh "
        f"processes, medians; run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average at the "
        f"end {' '.join(Path('/proc/loadavg').read_text().split()[:3])} (2 shared cores: walls swing, CPU less).",
        "",
        "| run | wall | CPU | peak RSS | wall / floor wall | CPU / floor CPU |",
        "|---|---|---|---|---|---|",
    ]
    for label, ms in runs.items():
        wall = statistics.median(m["wall"] for m in ms)
        cpu = statistics.median(m["cpu"] for m in ms)
        rss = statistics.median(m["rss_mib"] for m in ms)
        lines.append(
            f"| {label} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB | {wall / floor:.1f}x | "
            f"{cpu / floor_cpu:.1f}x |"
        )
    lines += [
        "",
        f"In process (imports excluded; floor and load alternately in one process per tree, {opts.rounds} each, "
        "medians):",
        "",
        "| tree | ISA-L floor wall / CPU | load wall / CPU | load / floor (wall) | load / floor (CPU) |",
        "|---|---|---|---|---|",
    ]
    for tree in trees:
        inproc = json.loads(run(tree, IN_PROCESS, path, str(opts.rounds))["out"].strip().splitlines()[-1])
        med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in inproc.items()}
        (fw, fc), (lw, lc) = med["floor"], med["load"]
        print(f"in process [{tree.name}]: floor {inproc['floor']}, load {inproc['load']}", flush=True)
        lines.append(
            f"| {tree.name} | {fw:.2f} / {fc:.2f} s | {lw:.2f} / {lc:.2f} s | {lw / fw:.1f}x | {lc / fc:.1f}x |"
        )
    if opts.parts:
        parts = json.loads(run(REPO_ROOT, PARTS, path)["out"].strip().splitlines()[-1])
        lines += ["", "Load CPU by part (this tree, one in-process run, summed CPU of all threads):", ""]
        lines += ["| part | CPU |", "|---|---|"]
        lines += [f"| {name} | {seconds:.2f} s |" for name, seconds in parts.items()]
        lines.append(f"| total | {sum(parts.values()):.2f} s |")
    if opts.imports:
        lines += [
            "",
            f"Imports of a fresh `tracelens.load` (`-X importtime`, {opts.rounds} processes per tree; per module "
            "its smallest self time):",
            "",
            "| tree | sum of self times | pyarrow.compute | pandas | costliest modules (ms) |",
            "|---|---|---|---|---|",
        ]
        for tree in trees:
            costs = import_costs(tree, path, opts.rounds)
            top = sorted(costs.items(), key=lambda item: -item[1])[:6]
            lines.append(
                f"| {tree.name} | {sum(costs.values()) / 1000:.0f} ms | {'pyarrow.compute' in costs} | "
                f"{'pandas' in costs} | {', '.join(f'{name} {us / 1000:.1f}' for name, us in top)} |"
            )
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if opts.write:
        (BENCH_DIR / "results" / "kineto_load.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
