"""Multi-rank analysis: 64 ranks synthesized from one real Kineto trace, parallel vs sequential.

    flock /tmp/tracelens-bench.lock python3 benchmarks/bench_multirank.py [--ranks 64] [--no-dask]

Inputs: copies of ``../shared/traces/pytorch/v100_ns_resolution_2024.json.gz`` under
``benchmarks/data/multirank<N>/``, each with its own ``distributedInfo`` rank and every timestamp shifted
by rank x 7 µs (a small skew, so the files differ as real ranks do).

Measured, each in a fresh process (``common.measure``):
- single: ``load`` + ``analyze`` of one rank (its peak RSS is the reference for the memory bound);
- sequential: the same for all N ranks one after another in one process (the baseline);
- run (local): ``tracelens.run.analyze_run`` with 2 worker processes and an empty cache;
- run (cached): the same again, reading the Parquet cache instead of the JSON;
- run (dask): ``engine="dask"`` on a local 2-process cluster (cluster start included).
Peak RSS of a run: the parent's own high-water mark and the largest worker's (each worker reports its
``ru_maxrss``; see ``worker_peak_rss_bytes`` in the run document).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from common import DATA_DIR, REPO_ROOT, machine_description, markdown_table, measure, mib, write_result  # noqa: E402

SOURCE = REPO_ROOT.parent / "shared" / "traces" / "pytorch" / "v100_ns_resolution_2024.json.gz"
SKEW_US = 7.0


def synthesize(n_ranks: int) -> Path:
    """Write N rank files (skipped when they are already there)."""
    out = DATA_DIR / f"multirank{n_ranks}"
    done = out / ".complete"
    if done.is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with gzip.open(SOURCE, "rb") as fh:
        base = orjson.loads(fh.read())
    events = base["traceEvents"]
    original_ts = [e.get("ts") for e in events]
    for rank in range(n_ranks):
        shift = rank * SKEW_US
        for event, ts in zip(events, original_ts, strict=True):
            if isinstance(ts, (int, float)):
                event["ts"] = ts + shift
        base["distributedInfo"] = {**(base.get("distributedInfo") or {}), "rank": rank, "world_size": n_ranks}
        with gzip.open(out / f"rank-{rank}.pt.trace.json.gz", "wb", compresslevel=1) as fh:
            fh.write(orjson.dumps(base))
    done.write_text("ok")
    return out


# ---- callables run in fresh processes by common.measure (arguments and results are JSON-able)


def single(path: str) -> dict[str, Any]:
    import tracelens

    doc = tracelens.analyze(tracelens.load(path))
    return {"events": doc["source"]["event_count"]}


def sequential(directory: str) -> dict[str, Any]:
    import tracelens

    files = sorted(Path(directory).glob("rank-*.pt.trace.json.gz"))
    utilization = []
    for f in files:
        doc = tracelens.analyze(tracelens.load(f))
        utilization.append(doc["devices"][0]["utilization"])
    return {"traces": len(files), "utilization": utilization}


def per_trace(directory: str, count: int) -> dict[str, Any]:
    """Seconds per trace of the per-rank work (load, cache, analyze) over the first ``count`` ranks."""
    import tempfile
    import time

    from tracelens.run import ingest_and_summarize

    files = sorted(
        Path(directory).glob("rank-*.pt.trace.json.gz"), key=lambda f: int(f.name.split("-")[1].split(".")[0])
    )
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files[:count]:
            started = time.perf_counter()
            ingest_and_summarize(str(f), str(Path(tmp) / f"{f.name}.parquet"), False)
            times.append(time.perf_counter() - started)
    steady = times[1:] or times  # the first pays one-time costs
    return {"seconds_per_trace": sum(steady) / len(steady)}


def cli_runs(directory: str) -> dict[str, Any]:
    """``tracelens analyze FILE --format json`` once per rank, one process after another: what a user
    without the multi-rank mode would run."""
    import subprocess

    files = sorted(Path(directory).glob("rank-*.pt.trace.json.gz"))
    for f in files:
        subprocess.run(
            [sys.executable, "-m", "tracelens.cli", "analyze", str(f), "--format", "json"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return {"traces": len(files)}


def run(directory: str, cache: str, engine: str, workers: int) -> dict[str, Any]:
    from tracelens.run import analyze_run

    doc, failures = analyze_run([directory], workers=workers, engine=engine, cache_dir=cache, progress=False)
    peaks = [r["worker_peak_rss_bytes"] for r in doc["ranks"] if r.get("worker_peak_rss_bytes")]
    return {
        "ranks": len(doc["ranks"]),
        "failures": len(failures),
        "cached": sum(r["cached"] for r in doc["ranks"]),
        "worker_peak_rss_bytes": max(peaks) if peaks else None,
        "utilization": [r["utilization"] for r in doc["ranks"]],
        "straggler": (doc["stragglers"]["steps"].get("straggler") or {}).get("rank"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    if not SOURCE.is_file():
        sys.exit(f"missing {SOURCE}")
    directory = synthesize(args.ranks)
    first = str(directory / "rank-0.pt.trace.json.gz")
    cache = DATA_DIR / f"multirank{args.ranks}-cache"
    shutil.rmtree(cache, ignore_errors=True)

    load_before = os.getloadavg()
    one = measure("single", "bench_multirank:single", first)
    # best of two, alternating, so that a burst of load from other jobs does not decide the ratio
    seq_runs, local_runs = [], []
    for _ in range(2):
        seq_runs.append(measure("sequential", "bench_multirank:sequential", str(directory)))
        shutil.rmtree(cache, ignore_errors=True)
        local_runs.append(
            measure("run local", "bench_multirank:run", str(directory), str(cache), "local", args.workers)
        )
    seq = min((m for m in seq_runs if m.ok), key=lambda m: m.wall_s, default=seq_runs[-1])
    local = min((m for m in local_runs if m.ok), key=lambda m: m.wall_s, default=local_runs[-1])
    cached = measure("run cached", "bench_multirank:run", str(directory), str(cache), "local", args.workers)
    runs = [local, cached]
    if not args.no_dask:
        dask_cache = DATA_DIR / f"multirank{args.ranks}-dask-cache"
        shutil.rmtree(dask_cache, ignore_errors=True)
        runs.append(
            measure("run dask", "bench_multirank:run", str(directory), str(dask_cache), "dask", args.workers)
        )
    cli = measure("cli", "bench_multirank:cli_runs", str(directory))
    # The CPUs' own scaling limit: the per-rank work alone, then on every core at once.
    from concurrent.futures import ThreadPoolExecutor

    # Best of two each, alternating, like the runs above.
    alone_runs, together_runs = [], []
    for _ in range(2):
        alone_runs.append(measure("alone", "bench_multirank:per_trace", str(directory), 17))
        with ThreadPoolExecutor(args.workers) as pool:
            together_runs.append(
                list(
                    pool.map(
                        lambda _: measure("together", "bench_multirank:per_trace", str(directory), 17),
                        range(args.workers),
                    )
                )
            )
    alone = min(alone_runs, key=lambda m: m.result["seconds_per_trace"] if m.ok else float("inf"))
    together = min(
        together_runs, key=lambda ms: max(m.result["seconds_per_trace"] if m.ok else float("inf") for m in ms)
    )
    load_after = os.getloadavg()
    for m in (one, seq, *runs, cli, alone, *together):
        if not m.ok:
            sys.exit(f"{m.label} failed: {m.error}")
        print(f"{m.label}: {m.wall_s:.1f} s, peak {mib(m.peak_rss_bytes)}", flush=True)

    # the same numbers whichever way they were computed
    assert local.result["utilization"] == seq.result["utilization"], "run and sequential disagree"
    assert cached.result["cached"] == args.ranks and local.result["failures"] == 0

    single_peak = one.peak_rss_bytes
    rows = [
        ["single trace (load + analyze)", f"{one.wall_s:.1f}", "-", mib(one.peak_rss_bytes), "-", "1.00"],
        [
            f"{args.ranks} traces sequential (baseline)",
            f"{seq.wall_s:.1f}",
            "1.00",
            mib(seq.peak_rss_bytes),
            "-",
            f"{seq.peak_rss_bytes / single_peak:.2f}",
        ],
    ]
    for m in runs:
        worker = m.result["worker_peak_rss_bytes"]
        largest = max(m.peak_rss_bytes, worker or 0)
        rows.append(
            [
                f"{args.ranks} traces, {m.label} ({args.workers} workers)",
                f"{m.wall_s:.1f}",
                f"{seq.wall_s / m.wall_s:.2f}",
                mib(m.peak_rss_bytes),
                mib(worker),
                f"{largest / single_peak:.2f}",
            ]
        )
    per_alone = alone.result["seconds_per_trace"]
    per_together = sum(m.result["seconds_per_trace"] for m in together) / len(together)
    ceiling = args.workers * per_alone / per_together
    rows.append(
        [
            f"{args.ranks} x `tracelens analyze FILE` (one process each)",
            f"{cli.wall_s:.1f}",
            f"{seq.wall_s / cli.wall_s:.2f}",
            "-",
            "-",
            "-",
        ]
    )
    text = "\n".join(
        [
            "# Multi-rank analysis: parallel per-rank work, bounded memory",
            "",
            f"Machine: {machine_description()}. Input: {args.ranks} ranks synthesized from "
            f"`{SOURCE.name}` ({SOURCE.stat().st_size / 2**20:.1f} MiB gzip, "
            f"{one.result['events']:,} events each) by `benchmarks/bench_multirank.py`.",
            "",
            "Each line ran in a fresh process (sequential and run local: the better of two runs, alternating). "
            "Wall time excludes interpreter start-up; speedup is the sequential "
            "baseline's wall time divided by the line's. Peak RSS: the measuring process's high-water mark (the "
            "parent, for runs) and the largest worker's own `ru_maxrss`; the last column is the larger of the two "
            "over the single-trace peak.",
            "",
            f"Load average (1 min) {load_before[0]:.1f} before and {load_after[0]:.1f} after the measurements: "
            "other jobs shared the CPUs, so wall times are noisy; the ratios compare lines measured back to back.",
            "",
            markdown_table(
                [
                    "what",
                    "wall s",
                    "speedup",
                    "peak RSS (parent)",
                    "peak RSS (largest worker)",
                    "largest peak / single",
                ],
                rows,
            ),
            f"Scaling ceiling of this machine: one rank's work (load, cache, analyze) takes {per_alone:.3f} s alone "
            f"and {per_together:.3f} s when {args.workers} processes run it at once, so "
            f"{args.workers} workers can at best be {ceiling:.2f}x faster than one. The run reaches "
            f"{seq.wall_s / local.wall_s:.2f}x, {seq.wall_s / local.wall_s / ceiling:.0%} of that ceiling. Against "
            f"{args.ranks} separate `tracelens analyze` runs (interpreter start and imports each time) the run is "
            f"{cli.wall_s / local.wall_s:.1f}x faster.",
            "",
            "Notes:",
            "- Workers receive paths and return small summaries (the devices section and idle by cause, a few KB), "
            "never event tables; each worker holds one trace at a time, so a worker's peak is one trace's peak, and "
            "the parent's peak is its own imports plus DuckDB scanning a few columns of the Parquet cache.",
            "- `run cached` reads the Parquet cache written by `run local` (manifest: source size + mtime), so "
            "no JSON is parsed; the per-rank analyses still run.",
            "- Worker processes are forked from a forkserver that imported tracelens once; the pool's start-up "
            "(~0.7 s) is inside the run's wall time, as is the Dask local cluster's start-up.",
            "- Below the ceiling: fixed costs the sequential loop does not have (pool start-up, the Parquet cache "
            "writes, the cross-rank DuckDB queries over all ranks' Parquet, re-running the representative rank's "
            "diagnosis: about 1.5 s together); they are amortized on longer runs.",
            "- Parent peak = interpreter and imports + reading one rank's Parquet back to re-run its diagnosis with "
            "the run's imbalance (one trace) + DuckDB; it does not grow with the number of ranks. A Dask worker "
            "carries the `distributed` runtime (~70 MiB more than a pool worker), hence its larger peak, and the "
            "local cluster's start-up and task round trips make it slower than the pool on one machine: it is "
            "there for runs larger than one machine.",
            "",
        ]
    )
    path = write_result("multirank", text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
