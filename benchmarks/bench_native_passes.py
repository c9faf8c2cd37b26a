"""The two compiled helpers of the analysis against their fallbacks, on the same export in one run:

- the numpy memory handler (``tracelens/_array_pages.c``, ``memory.reusing_array_pages``): ``analyze`` of a
  loaded trace with the handler (``TRACELENS_ARRAY_PAGES=1``) and without (``=0``, numpy's own allocator):
  wall, user and system CPU, page faults and peak RSS of the analysis (the load is measured apart and left out);
- the op tree's per-thread pass (``tracelens/analyses/_op_tree.c``): ``ops.tree._compute_op_tree`` with the C
  pass and with the numpy searches (the module's ``_compiled`` set to None), same loaded trace, alternating.

Each configuration runs in fresh processes, alternating, medians of ``--rounds``.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_native_passes.py [--rounds 3] [EXPORT...]
(default: benchmarks/data/nsys_x100.sqlite). Writes benchmarks/results/native_passes.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from common import DATA_DIR, REPO_ROOT, machine_description, markdown_table, mib, run_child, write_result

_ANALYZE = r"""
import json, resource, sys, time
import tracelens
from tracelens.analyses import analyze
from tracelens.memory import array_pages_counters
trace = tracelens.load(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF)
started = time.perf_counter()
analyze(trace)
wall = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF)
counters = array_pages_counters() or {}
print(json.dumps({"wall_s": wall, "user_s": after.ru_utime - before.ru_utime,
                  "sys_s": after.ru_stime - before.ru_stime, "faults": after.ru_minflt - before.ru_minflt,
                  "peak_rss_bytes": after.ru_maxrss * 1024,
                  "reused_bytes": counters.get("reused_bytes", 0), "fresh_bytes": counters.get("fresh_bytes", 0)}))
"""

_OP_TREE = r"""
import json, sys, time
import numpy as np
import tracelens
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.ops import tree
from tracelens.analyses.ops.tree import framework_op_rows
trace = tracelens.load(sys.argv[1])
launch_pairs(trace), framework_op_rows(trace)  # shared inputs, computed before the clock starts
if sys.argv[2] == "numpy":
    tree._compiled = None
cpu, started = time.process_time(), time.perf_counter()
result = tree._compute_op_tree(trace)
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
digest = [int(np.asarray(a, np.int64).sum() % 1000003) for a in result] + [int(result[0].size)]
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "digest": digest}))
"""


def alternate(script: str, configs: dict[str, tuple[dict[str, str], tuple[str, ...]]], rounds: int) -> dict:
    runs: dict[str, list[dict]] = {name: [] for name in configs}
    names = list(configs)
    for r in range(rounds):
        for name in names if r % 2 == 0 else list(reversed(names)):
            env, args = configs[name]
            runs[name].append(run_child(script, REPO_ROOT, *args, env=env))
            print(name, runs[name][-1], flush=True)
    return runs


def median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="*", type=Path, default=[DATA_DIR / "nsys_x100.sqlite"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    handler_rows, tree_rows = [], []
    for path in args.exports:
        runs = alternate(
            _ANALYZE,
            {
                "handler": ({"TRACELENS_ARRAY_PAGES": "1"}, (str(path),)),
                "numpy": ({"TRACELENS_ARRAY_PAGES": "0"}, (str(path),)),
            },
            args.rounds,
        )
        for name, label in (("handler", "reusing handler"), ("numpy", "numpy's allocator")):
            r = runs[name]
            handler_rows.append(
                [
                    path.name,
                    label,
                    f"{median(r, 'wall_s'):.2f} s",
                    f"{median(r, 'user_s'):.2f} s",
                    f"{median(r, 'sys_s'):.2f} s",
                    f"{median(r, 'user_s') + median(r, 'sys_s'):.2f} s",
                    f"{median(r, 'faults'):,.0f}",
                    mib(median(r, "peak_rss_bytes")),
                    f"{median(r, 'reused_bytes') / 2**30:.1f} / {median(r, 'fresh_bytes') / 2**30:.1f} GiB",
                ]
            )
        cpu = {name: median(runs[name], "user_s") + median(runs[name], "sys_s") for name in runs}
        handler_rows.append(
            [
                path.name,
                "numpy / handler",
                f"{median(runs['numpy'], 'wall_s') / median(runs['handler'], 'wall_s'):.2f}x",
                "",
                "",
                f"{cpu['numpy'] / cpu['handler']:.2f}x",
                "",
                "",
                "",
            ]
        )
        tree = alternate(
            _OP_TREE, {"C": ({}, (str(path), "c")), "numpy": ({}, (str(path), "numpy"))}, args.rounds
        )
        assert len({json.dumps(run["digest"]) for runs_ in tree.values() for run in runs_}) == 1, (
            "the C pass and the numpy path built different op trees"
        )
        for name in ("C", "numpy"):
            tree_rows.append(
                [
                    path.name,
                    name,
                    f"{median(tree[name], 'wall_s'):.2f} s",
                    f"{median(tree[name], 'cpu_s'):.2f} s",
                ]
            )
        tree_rows.append(
            [
                path.name,
                "numpy / C",
                f"{median(tree['numpy'], 'wall_s') / median(tree['C'], 'wall_s'):.2f}x",
                f"{median(tree['numpy'], 'cpu_s') / median(tree['C'], 'cpu_s'):.2f}x",
            ]
        )
    text = "\n".join(
        [
            "# The analysis's compiled helpers against their fallbacks",
            "",
            f"Machine: {machine_description()}. Generated by `benchmarks/bench_native_passes.py`, medians of "
            f"{args.rounds} alternating rounds of fresh processes.",
            "",
            "## numpy memory handler (`_array_pages.c`): `analyze` of a loaded trace (the load left out)",
            "",
            "Reused / fresh: the bytes of big arrays (4 MiB and more) served from freed arrays' pages and from new "
            "pages.",
            "",
            markdown_table(
                [
                    "export",
                    "allocator",
                    "wall",
                    "user",
                    "system",
                    "CPU",
                    "page faults",
                    "peak RSS",
                    "reused / fresh",
                ],
                handler_rows,
            ),
            "## Op tree (`_op_tree.c`): `ops.tree._compute_op_tree` (its shared inputs computed before)",
            "",
            markdown_table(["export", "pass", "wall", "CPU"], tree_rows),
        ]
    )
    out = write_result("native_passes", text)
    print(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
