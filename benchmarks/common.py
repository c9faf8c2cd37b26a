"""Helpers shared by the benchmark scripts: run one callable in a fresh process, report wall time and peak RSS.

Each measurement runs in its own interpreter so that peak RSS belongs to that callable alone (a process's
high-water mark never goes down, so measuring several things in one process would hide the smaller ones).

    from common import measure, markdown_table
    m = measure("tracelens", "bench_kineto_ingest:load_tracelens", "/path/trace.json.gz")
    print(m.wall_s, m.peak_rss_bytes)

``func_ref`` is ``"module:function"``; the module is imported in the child with the ``benchmarks/``
directory and the repository root on ``sys.path``. Arguments and the return value must be JSON-able.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DATA_DIR = BENCH_DIR / "data"


def ensure_bytecode(tree: Path = REPO_ROOT) -> None:
    """Compile ``tree``'s tracelens package to ``__pycache__`` before anything is timed.

    ``pip install`` compiles a package's modules when it installs them, so a user's first run never compiles
    source; an editable install under ``PYTHONDONTWRITEBYTECODE=1`` (as on this machine) would compile every
    changed module again in every timed process, a cost no user sees. ``compileall`` skips modules whose
    bytecode is current, so this costs little when nothing changed."""
    import compileall

    compileall.compile_dir(str(tree / "tracelens"), quiet=2)


ensure_bytecode()

_CHILD = r"""
import importlib, json, resource, sys, time
sys.path[:0] = json.loads(sys.argv[1])
module_name, func_name = sys.argv[2].split(":")
args = json.loads(sys.argv[3])
func = getattr(importlib.import_module(module_name), func_name)
if sys.argv[4]:  # untimed setup, e.g. importing the library under test
    setup_module, setup_name = sys.argv[4].split(":")
    getattr(importlib.import_module(setup_module), setup_name)()
# ru_maxrss is a high-water mark in KiB on Linux: read it after imports to know the interpreter's share.
baseline_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
result = func(*args)
wall = time.perf_counter() - t0
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stdout.write("\n@@MEASUREMENT@@" + json.dumps(
    {"wall_s": wall, "peak_kib": peak_kib, "baseline_kib": baseline_kib, "result": result}, default=str))
"""


@dataclass
class Measurement:
    """One run of one callable in its own process."""

    label: str
    wall_s: float | None  # time inside the callable (imports excluded); None when it failed
    peak_rss_bytes: int | None  # the child's peak resident set size over its whole life
    baseline_rss_bytes: int | None  # peak RSS after imports and setup, before the call
    process_wall_s: float  # whole child process, interpreter start and imports included
    result: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def measure(
    label: str,
    func_ref: str,
    *args: Any,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    setup: str | None = None,
) -> Measurement:
    """Run ``func_ref(*args)`` in a fresh Python process; return its wall time and peak RSS.

    ``setup`` ("module:function", no arguments) runs first in the same process, untimed: put imports of
    heavy libraries there so that the wall time is the work alone (its memory still counts in the peak).
    """
    paths = [str(BENCH_DIR), str(REPO_ROOT)]
    cmd = [sys.executable, "-c", _CHILD, json.dumps(paths), func_ref, json.dumps(list(args)), setup or ""]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **(env or {})},
            cwd=str(REPO_ROOT),
        )
    except subprocess.TimeoutExpired:
        return Measurement(
            label, None, None, None, time.perf_counter() - started, error=f"timed out after {timeout_s:.0f} s"
        )
    process_wall = time.perf_counter() - started
    marker = proc.stdout.rfind("\n@@MEASUREMENT@@")
    if proc.returncode != 0 or marker < 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Measurement(label, None, None, None, process_wall, error=f"exit {proc.returncode}: {tail}")
    data = json.loads(proc.stdout[marker + len("\n@@MEASUREMENT@@") :])
    return Measurement(
        label,
        data["wall_s"],
        data["peak_kib"] * 1024,
        data["baseline_kib"] * 1024,
        process_wall,
        result=data["result"],
    )


def best_of(label: str, func_ref: str, *args: Any, repeat: int = 3, **kwargs: Any) -> Measurement:
    """The fastest of ``repeat`` fresh-process runs (peak RSS from that same run)."""
    runs = [measure(label, func_ref, *args, **kwargs) for _ in range(repeat)]
    good = [r for r in runs if r.ok]
    return min(good, key=lambda r: r.wall_s) if good else runs[-1]


def mib(n_bytes: float | None) -> str:
    return "n/a" if n_bytes is None else f"{n_bytes / 2**20:,.0f} MiB"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table (cells converted with ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_description() -> str:
    """CPU count, memory and Python version: enough to tell two result files' machines apart."""
    try:
        mem_kib = int(
            next(
                line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
            ).split()[1]
        )
        mem = f"{mem_kib / 2**20:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        mem = "RAM unknown"
    return f"{os.cpu_count()} CPUs, {mem}, Python {sys.version.split()[0]}"


def write_result(name: str, text: str) -> Path:
    """Write ``benchmarks/results/<name>.md`` (committed, so figures travel with the code)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def measure_on_built_input(
    description: str, build: Callable[[int], Path], label: str, func_ref: str, default_kernels: int
) -> tuple[Path, float, Measurement]:
    """The main() of the benchmarks on a synthetic input: parse ``--kernels``, build (or reuse) the input,
    run ``func_ref(path)`` in a fresh process; return the input, its build time and the measurement."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--kernels", type=int, default=default_kernels)
    args = parser.parse_args()
    t0 = time.perf_counter()
    path = build(args.kernels)
    built = time.perf_counter() - t0
    m = measure(label, func_ref, str(path), timeout_s=900)
    if not m.ok:
        raise SystemExit(f"benchmark failed: {m.error}")
    return path, built, m


def run_child(script: str, tree: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``script`` (Python source) in a fresh process from ``tree``'s root (so it imports that tree's
    tracelens), with ``env`` added to the environment, and return the JSON object its last output line holds."""
    ensure_bytecode(Path(tree))
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if proc.returncode:
        raise SystemExit(f"{tree} {' '.join(args)}: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def alternating(script: str, trees: Sequence[Path], rounds: int, *args: str) -> dict[Path, list[dict]]:
    """:func:`run_child` of ``script`` for each tree, ``rounds`` times, the trees' order reversed every other
    round (so neither tree always runs first on a warming machine)."""
    results: dict[Path, list[dict]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else list(reversed(trees)):
            results[tree].append(run_child(script, tree, *args))
    return results
