"""Head-to-head against the peers (issue 28, item 4): same file, same run, whole-process wall time and peak RSS.

    flock /tmp/tracelens-bench.lock python3 benchmarks/bench_peers.py [--replicas 1512] [--rounds 3]
        [--slow-s 180] [--nsys-ai-modes auto direct] [--kineto-mb 406] [--small-kineto-mb 35]
        [--skip nsys-ai hta]

Three comparisons, each contender in a fresh process, rounds interleaved (A B C, A B C, ...), the median of
``--rounds``; a peer whose first run takes longer than ``--slow-s`` runs once only (the table says so;
tracelens always runs every round). CPU time (user + system, from the same ``wait4``) is reported beside the
wall time: steadier than wall on a shared machine.

1. Nsight: ``tracelens analyze --format json`` against nsys-ai 0.3.0 ``diagnose --format json`` on the
   full-proportion export ``bench_nsys_ingest.synthesize(REPLICAS)`` (x1512: 2.8 GiB). nsys-ai runs as
   installed (``auto``: it builds its DuckDB/Parquet cache beside the file when the disk has room, else
   queries the SQLite file through DuckDB) and with each ``NSYS_AI_CACHE_MODE`` given in ``--nsys-ai-modes``
   (``direct``: DuckDB attached to the SQLite file, no cache; ``parquet``: cache always built). Every
   nsys-ai run is cold: its cache directory is removed first. nsys-ai opens the export read-write (it may
   add indexes) and writes its cache beside it, so it gets its own copy (``cp``) of the export in
   ``benchmarks/data/peers-scratch/``, made afresh before each of its runs (untimed); tracelens reads the
   original, which is never modified (its size and mtime are checked after the run).
2. Kineto, ``--kineto-mb`` (406 MB) tile of ``bench_kineto_ingest.make_tiled_trace``, gzipped:
   ``tracelens analyze --format json`` against HTA 0.5.0 ``TraceAnalysis(trace_dir=...)`` +
   ``get_temporal_breakdown(visualize=False)`` + ``get_idle_time_breakdown(visualize=False)``, the calls
   HTA's documentation gives for "where did the GPU time go".
3. Kineto load alone, ``--small-kineto-mb`` (35 MB) tile: ``tracelens.load`` against HTA's
   ``TraceAnalysis(trace_dir=...)``, timed inside the process around the call (imports excluded; goal
   >= 30x) and as whole processes.

Wall time is the whole child process (interpreter start and imports included) from ``fork`` to exit; peak
RSS is the child's ``ru_maxrss`` from ``os.wait4`` (the process's own high-water mark). The peers are
installed by this script into ``benchmarks/data/peers-venv/<peer>/`` (git-ignored), one venv each, with the
pinned versions below; a pin that cannot be installed is reported and that peer skipped. HTA reads a
directory holding a symlink to the trace. Goal: >= 5x faster than each peer with <= 1/3 of its peak RSS.
Results: ``results/peers.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import DATA_DIR, REPO_ROOT, machine_description, markdown_table, mib, write_result

PINS = {
    "nsys-ai": ["nsys-ai==0.3.0", "duckdb==2.0.1"],
    "nsys-ai-duckdb": ["nsys-ai==0.3.0", "duckdb==1.5.5", "duckdb-extension-sqlite-scanner==1.5.5"],
    "hta": ["HolisticTraceAnalysis==0.5.0"],
}
VENV_ROOT = DATA_DIR / "peers-venv"
SCRATCH = DATA_DIR / "peers-scratch"
RUN_TIMEOUT_S = 1800
MARKER = "@@PEERS@@"

# Child programs. Each prints one MARKER line with the timings it measured itself (JSON).
_TRACELENS_LOAD = f"""
import json, sys, time
from tracelens.ingest import load  # the reader's modules imported before the clock, as HTA's are
t0 = time.perf_counter()
trace = load(sys.argv[1])
print({MARKER!r} + json.dumps({{"load_s": time.perf_counter() - t0}}))
"""

_HTA = f"""
import json, logging, sys, time
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t0 = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
phases = {{"load_s": time.perf_counter() - t0}}
if sys.argv[2] == "full":
    t1 = time.perf_counter()
    temporal = analysis.get_temporal_breakdown(visualize=False)
    phases["temporal_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    idle = analysis.get_idle_time_breakdown(visualize=False)
    phases["idle_s"] = time.perf_counter() - t2
    phases["idle_pct"] = float(temporal["idle_time_pctg"].iloc[0])
print({MARKER!r} + json.dumps(phases))
"""


# --------------------------------------------------------------------------------------------- processes


@dataclass
class Run:
    wall_s: float | None
    peak_rss: int | None
    inner: dict = field(default_factory=dict)
    cpu_s: float | None = None  # user + system CPU of the process (and any children it waited for)
    error: str | None = None


def run_process(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` to completion; its wall time and peak RSS (``ru_maxrss`` from ``wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env={**os.environ, **(env or {})}, stdout=out, stderr=err, start_new_session=True
        )
        deadline = started + RUN_TIMEOUT_S
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                return Run(None, None, error=f"timed out after {RUN_TIMEOUT_S} s")
            time.sleep(0.01)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    if proc.returncode != 0:
        tail = (stderr.strip().splitlines() or stdout.strip().splitlines() or ["no output"])[-1]
        return Run(None, None, error=f"exit {proc.returncode}: {tail[:200]}")
    inner = {}
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            inner = json.loads(line[len(MARKER) :])
    return Run(wall, usage.ru_maxrss * 1024, inner, usage.ru_utime + usage.ru_stime)


@dataclass
class Contender:
    label: str
    cmd: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    before: object = None  # untimed preparation before each run (a fresh copy, a removed cache)
    after: object = None  # a check after each run (input untouched)
    runs: list[Run] = field(default_factory=list)
    capped: bool = False  # ran once only: its first run exceeded --slow-s

    def ok_runs(self) -> list[Run]:
        return [r for r in self.runs if r.error is None]

    def wall(self) -> float | None:
        good = self.ok_runs()
        return statistics.median(r.wall_s for r in good) if good else None

    def peak(self) -> float | None:
        good = self.ok_runs()
        return statistics.median(r.peak_rss for r in good) if good else None

    def cpu(self) -> float | None:
        good = self.ok_runs()
        return statistics.median(r.cpu_s for r in good) if good else None

    def inner(self, key: str) -> float | None:
        values = [r.inner[key] for r in self.ok_runs() if key in r.inner]
        return statistics.median(values) if values else None


def run_interleaved(contenders: list[Contender], rounds: int, slow_s: float) -> None:
    """Round r runs every contender once, in order; a peer (not tracelens, the first contender) whose first
    run took longer than ``slow_s`` runs once only."""
    for round_no in range(rounds):
        for c in contenders:
            if c.capped or (c.runs and c.runs[-1].error):
                continue
            if c.before:
                c.before()
            run = run_process(c.cmd, cwd=c.cwd, env=c.env)
            if c.after and run.error is None:
                problem = c.after(run)
                if problem:
                    run.error = problem
            c.runs.append(run)
            shown = (
                f"{run.wall_s:.2f} s (CPU {run.cpu_s:.1f} s), {mib(run.peak_rss)}"
                if run.error is None
                else run.error
            )
            print(f"  round {round_no + 1}: {c.label}: {shown}", flush=True)
            if (
                run.error is None
                and round_no == 0
                and rounds > 1
                and c is not contenders[0]
                and run.wall_s > slow_s
            ):
                c.capped = True


# ------------------------------------------------------------------------------------------------- peers


def peer_python(venv_name: str) -> tuple[Path | None, str]:
    """The venv's interpreter, creating the venv and installing its pins on first use."""
    venv = VENV_ROOT / venv_name
    python = venv / "bin" / "python"
    stamp = venv / ".pinned"
    pins = PINS[venv_name]
    shown = " + ".join(pins)
    if stamp.is_file() and stamp.read_text() == shown:
        return python, shown
    print(f"installing {shown} into {venv} ...", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("WARNING: Location")]
        reason = (lines or ["pip failed"])[-1]
        print(f"could not install {shown}: {reason}; skipping it", file=sys.stderr)
        return None, f"{shown}: not installable ({reason})"
    home = venv / "home"
    home.mkdir(exist_ok=True)
    for pin in pins:
        if pin.startswith("duckdb-extension-"):
            # DuckDB autoloads extensions from ~/.duckdb/extensions/v<version>/<platform>/: put the wheel's there.
            version = pin.split("==")[1]
            package = pin.split("==")[0].replace("-", "_")
            probe = (
                f"import {package}, duckdb, os; print(os.path.dirname({package}.__file__)); "
                "print(duckdb.sql('PRAGMA platform').fetchone()[0])"
            )
            site, platform = subprocess.run(
                [str(python), "-c", probe], capture_output=True, text=True, check=True
            ).stdout.split()
            for ext in Path(site).glob(f"extensions/v{version}/*.duckdb_extension"):
                dest = home / ".duckdb" / "extensions" / f"v{version}" / platform
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(ext, dest / ext.name)
    stamp.write_text(shown)
    return python, shown


def hta_dir_for(trace: Path) -> Path:
    """HTA reads every trace in a directory: one holding only a symlink to ``trace`` (never a copy)."""
    folder = SCRATCH / f"hta_{trace.parent.name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / trace.name).symlink_to(trace)
    return folder


def tracelens_analyze(path: Path, out_name: str) -> Contender:
    out = SCRATCH / out_name
    return Contender(
        "tracelens analyze --format json",
        [sys.executable, "-m", "tracelens", "analyze", "--format", "json", str(path), "-o", str(out)],
        REPO_ROOT,  # `python -m` from the repository root imports this checkout's tracelens
    )


def unchanged(path: Path):  # noqa: ANN201
    """A check that ``path`` (a tracelens input) still has the size and mtime it had before the run."""
    before = path.stat()

    def check(run: Run) -> str | None:
        now = path.stat()
        if (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            return f"{path} was modified during the run"
        return None

    return check


# ----------------------------------------------------------------------------------------- comparisons


NSYS_AI_VARIANTS = {
    # name: (venv, label, extra environment)
    "installed": ("nsys-ai", "nsys-ai diagnose (as installed)", {}),
    "duckdb": ("nsys-ai-duckdb", "nsys-ai diagnose (DuckDB engine)", {}),
    "duckdb-direct": (
        "nsys-ai-duckdb",
        "nsys-ai diagnose (DuckDB engine, direct)",
        {"NSYS_AI_CACHE_MODE": "direct"},
    ),
}


def compare_nsys(opts: argparse.Namespace) -> tuple[str, list[Contender]]:
    from bench_nsys_ingest import SOURCE, synthesize

    export = (SOURCE if opts.replicas == 1 else synthesize(opts.replicas)).resolve()
    contenders = [tracelens_analyze(export, "tracelens_nsys.json")]
    contenders[0].after = unchanged(export)
    copy = SCRATCH / f"nsys-ai_{export.name}"
    cache = copy.with_suffix(".nsys-cache")
    workdir = SCRATCH / "nsys-ai-cwd"  # diagnose publishes a session under ./.nsys-ai

    def fresh_copy() -> None:
        for leftover in (cache, workdir):
            shutil.rmtree(leftover, ignore_errors=True)
        copy.with_suffix(".nsys-cache.build.lock").unlink(missing_ok=True)
        workdir.mkdir(parents=True)
        # nsys-ai opens the file read-write (its sqlite3 fallback adds indexes): every run starts from a
        # pristine copy, whose size and mtime we set equal to the export's to tell it was left as it was.
        now, src = (copy.stat() if copy.exists() else None), export.stat()
        if now is None or (now.st_size, now.st_mtime_ns) != (src.st_size, src.st_mtime_ns):
            shutil.copyfile(export, copy)
            os.utime(copy, ns=(src.st_atime_ns, src.st_mtime_ns))

    def engine_used(run: Run) -> None:
        run.inner["engine"] = "Parquet cache" if (cache / ".cache_version").exists() else "no cache"

    pins = []
    for variant in opts.nsys_ai:
        venv, label, env = NSYS_AI_VARIANTS[variant]
        python, pin = peer_python(venv) if "nsys-ai" not in opts.skip else (None, "skipped (--skip)")
        pins.append(f"{label}: {pin}")
        if python is None:
            continue
        contenders.append(
            Contender(
                label,
                [
                    str(python),
                    "-m",
                    "nsys_ai",
                    "diagnose",
                    str(copy),
                    "--format",
                    "json",
                    "-o",
                    str(SCRATCH / "nsys-ai_findings.json"),
                ],
                workdir,
                # HOME: its own, so DuckDB finds (or misses) extensions the same way on every machine.
                env={"HOME": str(VENV_ROOT / venv / "home"), **env},
                before=fresh_copy,
                after=engine_used,
            )
        )
    size = export.stat().st_size
    print(f"Nsight: {export.name} ({mib(size)})", flush=True)
    run_interleaved(contenders, opts.rounds, opts.slow_s)
    engines = [
        f"{c.label}: {', '.join(sorted({r.inner.get('engine', '?') for r in c.ok_runs()}))}"
        for c in contenders[1:]
        if c.ok_runs()
    ]
    head = (
        f"### Nsight: `{export.name}` ({mib(size)}, the Nsight export replicated x{opts.replicas} at full "
        "proportion)\n\n"
        + "".join(f"- {p}\n" for p in pins)
        + "".join(f"- engine used by {e}\n" for e in engines)
        + "\nnsys-ai 0.3.0 queries through DuckDB's `sqlite_scanner` extension, which DuckDB downloads on "
        "first use; this machine has no network, so as installed (`pip install nsys-ai==0.3.0`, DuckDB 2.0.1) "
        "the download fails (it waits on the network twice, ~12 s in all on the 2 MiB export) and nsys-ai falls back to Python's sqlite3 (it "
        "then adds indexes to the file). The DuckDB-engine variant installs DuckDB 1.5.5 and the matching "
        "extension from PyPI (`duckdb-extension-sqlite-scanner`), put where DuckDB looks for it (a HOME "
        "of its own); nsys-ai then builds its Parquet cache beside the file (`auto`) or, with "
        "`NSYS_AI_CACHE_MODE=direct`, queries the SQLite file through DuckDB. nsys-ai runs on its own copy "
        "of the export, pristine before each run, its cache removed (cold); tracelens reads the original "
        "(checked unmodified after each run).\n\n"
    )
    return head, contenders


def compare_kineto(
    opts: argparse.Namespace, target_mb: int, *, load_only: bool
) -> tuple[str, list[Contender]]:
    from bench_kineto_ingest import make_tiled_trace

    plain = make_tiled_trace(target_mb * 2**20)
    trace = plain.with_name(plain.name + ".gz")
    if not trace.exists():
        print(f"gzipping {plain.name} ...", flush=True)
        with open(plain, "rb") as src, gzip.open(trace.with_suffix(".partial"), "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 2**24)
        trace.with_suffix(".partial").rename(trace)
    trace = trace.resolve()
    if load_only:
        contenders = [
            Contender("tracelens.load", [sys.executable, "-c", _TRACELENS_LOAD, str(trace)], REPO_ROOT)
        ]
    else:
        contenders = [tracelens_analyze(trace, "tracelens_kineto.json")]
    contenders[0].after = unchanged(trace)
    python, pin = peer_python("hta") if "hta" not in opts.skip else (None, "skipped (--skip)")
    if python is not None:
        label = "HTA TraceAnalysis (load)" if load_only else "HTA load + temporal + idle breakdown"
        contenders.append(
            Contender(
                label,
                [str(python), "-c", _HTA, str(hta_dir_for(trace)), "load" if load_only else "full"],
                SCRATCH,
            )
        )
    json_size = plain.stat().st_size
    print(
        f"Kineto: {trace.name} ({mib(json_size)} JSON, {mib(trace.stat().st_size)} gzipped); {pin}",
        flush=True,
    )
    run_interleaved(contenders, opts.rounds, opts.slow_s)
    what = "load alone" if load_only else "analyze"
    head = (
        f"### Kineto {what}: `{trace.name}` ({mib(json_size)} of JSON, {mib(trace.stat().st_size)} gzipped, "
        f"a tile of `bench_kineto_ingest.make_tiled_trace`)\n\n{pin}; HTA reads a directory holding a symlink "
        "to the file.\n\n"
    )
    return head, contenders


# ------------------------------------------------------------------------------------------------ report


def table(contenders: list[Contender], inner_key: str | None = None) -> str:
    """One row per contender; ``inner_key``: also the in-process timing of that phase and its ratio."""
    ours = contenders[0]
    rows = []
    header = [
        "contender",
        "runs (wall each)",
        "wall (whole process)",
        "peak RSS",
        "wall / tracelens's",
        "peak RSS / tracelens's",
        "CPU (user+sys)",
        "CPU / tracelens's",
        "phases in process (median)",
    ]
    if inner_key:
        header.append(f"{inner_key} / tracelens's")
    for c in contenders:
        if not c.ok_runs():
            rows.append(
                [c.label, "0", c.runs[-1].error if c.runs else "not run", "", "", "", "", "", ""]
                + ([""] if inner_key else [])
            )
            continue
        wall, peak = c.wall(), c.peak()
        walls = ", ".join(f"{r.wall_s:.1f}" for r in c.ok_runs())
        runs = f"{len(c.ok_runs())} ({walls} s)" + (" (first run over --slow-s: once)" if c.capped else "")
        row = [c.label, runs, f"{wall:.2f} s", mib(peak)]
        if c is ours or ours.wall() is None:
            row += ["1", "1", f"{c.cpu():.1f} s", "1"]
        else:
            row += [
                f"{wall / ours.wall():.2f}",
                f"{peak / ours.peak():.2f}",
                f"{c.cpu():.1f} s",
                f"{c.cpu() / ours.cpu():.2f}",
            ]
        keys = [k for k in c.ok_runs()[0].inner if k.endswith("_s")]
        row.append(", ".join(f"{k[:-2]} {c.inner(k):.2f} s" for k in keys))
        if inner_key:
            inner, ours_inner = c.inner(inner_key), ours.inner(inner_key)
            row.append("1" if c is ours else (f"{inner / ours_inner:.1f}" if inner and ours_inner else ""))
        rows.append(row)
    return markdown_table(header, rows)


def verdict(
    contenders: list[Contender], goal_time: float, goal_mem: float, inner_key: str | None = None
) -> str:
    ours = contenders[0]
    lines = []
    for c in contenders[1:]:
        if not c.ok_runs() or ours.wall() is None:
            continue
        t = c.wall() / ours.wall()
        m = c.peak() / ours.peak()
        line = f"- vs {c.label}: {t:.1f}x faster (goal >= {goal_time:g}x: {'met' if t >= goal_time else 'NOT met'})"
        if goal_mem:
            line += f", {1 / m:.2f} of its memory (goal <= {1 / goal_mem:.2f}: {'met' if m >= goal_mem else 'NOT met'})"
        if inner_key and c.inner(inner_key) and ours.inner(inner_key):
            r = c.inner(inner_key) / ours.inner(inner_key)
            line += f"; {inner_key} in process {r:.1f}x (goal >= {goal_time:g}x: {'met' if r >= goal_time else 'NOT met'})"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--replicas", type=int, default=1512, help="Nsight export replication (1512: 2.8 GiB)"
    )
    parser.add_argument("--kineto-mb", type=int, default=406)
    parser.add_argument("--small-kineto-mb", type=int, default=35)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--slow-s", type=float, default=180.0, help="a contender whose first run takes longer runs once only"
    )
    parser.add_argument(
        "--nsys-ai",
        nargs="+",
        default=["installed", "duckdb"],
        choices=list(NSYS_AI_VARIANTS),
        help="nsys-ai variants (duckdb-direct: DuckDB engine without its Parquet cache)",
    )
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["nsys-ai", "hta", "nsys", "kineto", "load"],
        help="peers (nsys-ai, hta) or comparisons (nsys, kineto, load) to leave out",
    )
    parser.add_argument("--name", default="peers", help="results/<name>.md")
    opts = parser.parse_args()
    SCRATCH.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    t0 = time.perf_counter()
    sections = []
    if "nsys" not in opts.skip:
        head, cs = compare_nsys(opts)
        sections.append(head + table(cs) + "\n" + verdict(cs, 5, 3))
    if "kineto" not in opts.skip:
        head, cs = compare_kineto(opts, opts.kineto_mb, load_only=False)
        sections.append(head + table(cs) + "\n" + verdict(cs, 5, 3))
    if "load" not in opts.skip:
        head, cs = compare_kineto(opts, opts.small_kineto_mb, load_only=True)
        sections.append(head + table(cs, "load_s") + "\n" + verdict(cs, 30, 0, "load_s"))
    load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    text = (
        "# tracelens against its peers (`bench_peers.py`)\n\n"
        f"{machine_description()}. Run started {started}, took {(time.perf_counter() - t0) / 60:.1f} min; "
        f"load average at the end {load_avg}. Each contender a fresh process per run, rounds interleaved, "
        f"median of {opts.rounds} (a peer whose first run took over {opts.slow_s:g} s ran once). Wall = "
        "whole process (interpreter start and imports included); peak RSS = the process's `ru_maxrss`; CPU = "
        "its user + system time (steadier than wall on a shared machine, but DuckDB's threads use both cores, "
        "so wall is what a user waits). Goal: "
        ">= 5x faster than each peer with <= 1/3 of its memory; tracelens.load >= 30x HTA's load at 35 MB.\n\n"
        f"Command: `python3 benchmarks/bench_peers.py {' '.join(sys.argv[1:])}`\n\n" + "\n".join(sections)
    )
    print(text)
    write_result(opts.name, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
