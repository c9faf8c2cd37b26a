"""Sections of this tree against another tree's, in one process: the two sides see the same machine load.

On a shared 2-core machine, bench_sections.py's fresh processes per tree swing by 20-40% for sections whose code
did not change; a change of 5% to a section is lost in that. Here the other tree's package is copied (compiled
extensions included) into a temporary folder under another name (its modules import each other relatively), each
side loads TRACE and computes every section in analyze's order once (so the shared values the sections memoize are
ready: what is timed is each section's own work; ``--own-memos``: its own work and the shared values analyze has it
compute), then the ``--section`` computations alternate between the two
sides (which goes first alternates too), ``--rounds`` times, in the process's CPU time, inside
``reusing_array_pages`` as ``analyze`` runs them. The table gives the median and the minimum per side.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_sections_same_process.py TRACE --tree /work/main
      [--section whatif --section steps] [--rounds 7] [--clock cpu|wall] [--cold | --own-memos]
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, markdown_table

OTHER = "tracelens_other"


def _prepared(package: Any, trace_path: str) -> tuple[Any, Any]:
    """(the package's analyses module, the trace loaded by it, every section computed once)."""
    analyses = importlib.import_module(f"{package.__name__}.analyses")
    trace = package.load(trace_path)
    done: dict[str, Any] = {}
    for name in sorted(analyses.SECTIONS, key=lambda key: not analyses.BY_KEY[key].early):
        done[name] = analyses.BY_KEY[name].compute(trace, {"source": {}, **done})
    return analyses, (trace, done)


def _drop_shared_values(analyses: Any, trace: Any) -> None:
    """Forget the trace's shared derived values but the event columns (computed again on the next ask)."""
    derived = importlib.import_module(f"{analyses.__name__}.derived")
    families = {derived.memo_family(key) for key in derived.memo_keys(trace)} - {"event_columns"}
    derived.forget(trace, families)


def _own_memos(analyses: Any, section: str) -> list[str]:
    """The shared values (memo families) ``section`` computes in analyze: those it reads that no section before it
    in analyze's order reads."""
    order = analyses.run_order(analyses.SECTIONS)
    before = set(order[: order.index(section)]) if section in order else set(order)
    return [f for f, readers in analyses.MEMO_READERS.items() if section in readers and not readers & before]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument(
        "--tree", required=True, help="the other source tree (its tracelens/ with built extensions)"
    )
    parser.add_argument(
        "--section", action="append", default=[], help="sections to time (default: whatif, steps)"
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--cold",
        action="store_true",
        help="drop the trace's shared derived values (all but the event columns) before each timed computation, "
        "so that a section's time includes the shared values it reads (launch pairs, host rows, one-time work...)",
    )
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="the process's CPU time (default), or wall time (time.perf_counter: what a section that runs work "
        "on two threads gains)",
    )
    parser.add_argument(
        "--own-memos",
        action="store_true",
        help="forget, before each timing, the shared values analyze has the section compute (those no section "
        "before it in analyze's order reads: the op tree for ops), so that their work is timed with it",
    )
    opts = parser.parse_args()
    clock = time.process_time if opts.clock == "cpu" else time.perf_counter
    sections = opts.section or ["whatif", "steps"]
    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(Path(opts.tree) / "tracelens", Path(folder) / OTHER)
        sys.path[:0] = [str(REPO_ROOT), folder]
        this, other = importlib.import_module("tracelens"), importlib.import_module(OTHER)
        from tracelens.memory import reusing_array_pages

        sides = {"this tree": _prepared(this, opts.trace), Path(opts.tree).name: _prepared(other, opts.trace)}
        times: dict[str, dict[str, list[float]]] = {s: {side: [] for side in sides} for s in sections}
        with reusing_array_pages():
            for round_ in range(opts.rounds):
                names = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
                for section in sections:
                    for side in names:
                        analyses, (trace, done) = sides[side]
                        compute = analyses.BY_KEY[section].compute
                        if opts.cold:
                            _drop_shared_values(analyses, trace)
                        elif opts.own_memos:
                            forget = importlib.import_module(f"{analyses.__name__}.derived").forget
                            forget(trace, _own_memos(analyses, section))
                        start = clock()
                        compute(trace, {"source": {}, **done})
                        times[section][side].append(clock() - start)
    rows = [
        [section]
        + [f"{statistics.median(v):.3f} (min {min(v):.3f})" for v in (times[section][side] for side in sides)]
        for section in sections
    ]
    what = "CPU" if opts.clock == "cpu" else "wall"
    print(f"\n{Path(opts.trace).name}: {what} seconds, median (min) of {opts.rounds}, one process\n")
    print(markdown_table(["section"] + list(sides), rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
