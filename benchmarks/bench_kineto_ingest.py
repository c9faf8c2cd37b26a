"""Kineto ingest: tracelens.load vs HTA's TraceAnalysis vs json.loads vs orjson.loads, in one run.

    flock /tmp/tracelens-bench.lock python3 benchmarks/bench_kineto_ingest.py [--target-mb 520] [--skip-hta]

Inputs: the largest real Kineto trace in ../shared/traces/pytorch (read in place; HTA gets a directory
holding a symlink to it), and a synthetic trace of >= --target-mb MB of uncompressed JSON made by tiling the
steps of ``v100_ns_resolution_2024.json.gz`` end to end with shifted timestamps and ids (written once under
``benchmarks/data/``, git-ignored, in Kineto's own layout).

Each measurement runs in a fresh process (``common.measure``): wall time of the call (imports excluded) and
the process's peak RSS. The baselines read the same bytes: read (and gunzip) the file, then parse it.
Results: ``benchmarks/results/kineto_ingest.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from common import (
    DATA_DIR,
    REPO_ROOT,
    Measurement,
    best_of,
    machine_description,
    markdown_table,
    measure,
    mib,
    write_result,
)

SHARED = (REPO_ROOT.parent / "shared" / "traces" / "pytorch").resolve()
TILE_SOURCE = SHARED / "v100_ns_resolution_2024.json.gz"
HTA_TIMEOUT_S = 600


# --- the callables measured in child processes (arguments and results are JSON-able) ------------------


def _read_bytes(path: str) -> bytes:
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return fh.read()
    return Path(path).read_bytes()


def import_tracelens() -> None:
    import tracelens
    import tracelens.enrich
    import tracelens.ingest.kineto  # noqa: F401

    try:
        import duckdb  # noqa: F401

        import tracelens.analyses.occupancy  # noqa: F401
    except ImportError:
        pass


def import_hta() -> None:
    from hta.trace_analysis import TraceAnalysis  # noqa: F401


def import_orjson() -> None:
    import orjson  # noqa: F401


def load_tracelens(path: str) -> int:
    import tracelens

    return tracelens.load(path).num_events


def analyze_tracelens(path: str) -> int:
    """``tracelens analyze --format json`` end to end through the CLI entry point (load, every section, JSON)."""
    import json
    import tempfile

    from tracelens.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "analysis.json"
        if main(["analyze", "--format", "json", path, "-o", str(out)]):
            raise RuntimeError("analyze failed")
        return int(json.loads(out.read_text())["source"]["event_count"])


def load_tracelens_msgspec(path: str) -> int:
    import tracelens

    return tracelens.load(path, engine="msgspec").events.num_rows


def load_json(path: str) -> int:
    return len(json.loads(_read_bytes(path))["traceEvents"])


def load_orjson(path: str) -> int:
    import orjson

    return len(orjson.loads(_read_bytes(path))["traceEvents"])


def load_hta(trace_dir: str) -> int:
    import logging

    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=trace_dir)
    return int(sum(len(analysis.t.get_trace(rank)) for rank in analysis.t.get_ranks()))


# --- inputs ------------------------------------------------------------------------------------------------


def make_tiled_trace(target_bytes: int) -> Path:
    """Tile the source trace's events end to end until the JSON reaches ``target_bytes`` (made once)."""
    out_dir = DATA_DIR / f"kineto_tiled_{target_bytes // 2**20}mb"
    out = out_dir / "rank-0.tiled.pt.trace.json"
    if out.exists():
        return out
    import orjson

    doc = json.loads(gzip.open(TILE_SOURCE).read())
    events = doc.pop("traceEvents")
    timed = [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    metadata = [e for e in events if e.get("ph") == "M"]
    first = min(e["ts"] for e in timed)
    last = max(e["ts"] + e.get("dur", 0) for e in timed)
    period_us = float(int(last - first) + 1000)  # whole µs: shifting keeps float64 fractions exact
    id_stride = 10 * max(
        max(e.get("args", {}).get("correlation", 0) for e in timed),
        max(e.get("args", {}).get("External id", 0) for e in timed),
        max(e.get("id", 0) for e in timed if isinstance(e.get("id"), int)),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    written = 0
    with open(tmp, "wb") as fh:
        head = dict(doc)
        fh.write(b"{\n")
        for key, value in head.items():
            fh.write(b"  " + orjson.dumps(key) + b": " + orjson.dumps(value) + b",\n")
        fh.write(b'  "traceEvents": [\n')
        fh.write(b",\n".join(b"  {\n    " + orjson.dumps(e)[1:-1] + b"\n  }" for e in metadata))
        tile = 0
        while written < target_bytes:
            chunk = []
            for e in timed:
                e = dict(e, ts=e["ts"] + tile * period_us)
                if "args" in e:
                    args = dict(e["args"])
                    for key in ("correlation", "External id"):
                        if isinstance(args.get(key), int):
                            args[key] += tile * id_stride
                    e["args"] = args
                if isinstance(e.get("id"), int):
                    e["id"] += tile * id_stride
                if e.get("name", "").startswith("ProfilerStep#"):
                    e["name"] = f"ProfilerStep#{int(e['name'].split('#')[1]) + 100 * tile}"
                chunk.append(b"  {\n    " + orjson.dumps(e)[1:-1] + b"\n  }")
            data = b",\n" + b",\n".join(chunk)
            fh.write(data)
            written = fh.tell()
            tile += 1
        fh.write(b"\n  ]\n}\n")
    tmp.rename(out)
    return out


def hta_dir_for(path: Path) -> Path:
    """HTA reads a directory: give it one holding only a symlink to ``path`` (never a copy)."""
    folder = DATA_DIR / f"hta_{path.name.split('.')[0]}"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / path.name
    if not link.exists():
        link.symlink_to(path)
    return folder


# --- the run -----------------------------------------------------------------------------------------------


def uncompressed_size(path: Path) -> int:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return sum(len(b) for b in iter(lambda: fh.read(2**24), b""))
    return path.stat().st_size


def run_input(label: str, path: Path, *, repeat: int, skip_hta: bool) -> list[Measurement]:
    args = (str(path),)
    ours = "bench_kineto_ingest:import_tracelens"
    results = [
        best_of("tracelens.load", "bench_kineto_ingest:load_tracelens", *args, repeat=repeat, setup=ours),
        best_of(
            "tracelens.load (msgspec engine)",
            "bench_kineto_ingest:load_tracelens_msgspec",
            *args,
            repeat=repeat,
            setup=ours,
        ),
        best_of(
            "tracelens analyze --format json, end to end",
            "bench_kineto_ingest:analyze_tracelens",
            *args,
            repeat=repeat,
            setup=ours,
        ),
        best_of("json.loads", "bench_kineto_ingest:load_json", *args, repeat=repeat),
        best_of(
            "orjson.loads",
            "bench_kineto_ingest:load_orjson",
            *args,
            repeat=repeat,
            setup="bench_kineto_ingest:import_orjson",
        ),
    ]
    if not skip_hta:
        results.append(
            measure(
                "HTA TraceAnalysis",
                "bench_kineto_ingest:load_hta",
                str(hta_dir_for(path)),
                timeout_s=HTA_TIMEOUT_S,
                setup="bench_kineto_ingest:import_hta",
            )
        )
    for r in results:
        state = f"{r.wall_s:.2f} s, peak {mib(r.peak_rss_bytes)}" if r.ok else r.error
        print(f"  {label:>10} {r.label:<32} {state}", file=sys.stderr)
    return results


def table(results: list[Measurement], size: int) -> str:
    ours = results[0]
    rows = []
    for r in results:
        if not r.ok:
            rows.append([r.label, "failed", r.error, "", "", ""])
            continue
        ratio = f"{r.wall_s / ours.wall_s:.1f}x" if ours.ok and r is not ours else "1.0x"
        rows.append(
            [
                r.label,
                f"{r.wall_s:.2f}",
                ratio,
                mib(r.peak_rss_bytes),
                mib(r.peak_rss_bytes - r.baseline_rss_bytes),
                f"{r.peak_rss_bytes / size:.2f}",
                f"{r.result:,}",
            ]
        )
    return markdown_table(
        [
            "reader",
            "wall s",
            "time vs tracelens",
            "peak RSS",
            "above imports",
            "peak RSS / JSON size",
            "events/rows",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--target-mb", type=int, default=520, help="size of the tiled trace (uncompressed MB)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per reader on the real trace (best kept)")
    parser.add_argument("--skip-hta", action="store_true", help="leave HTA out (it takes minutes at 500 MB)")
    opts = parser.parse_args(argv)
    if not SHARED.is_dir():
        sys.exit(f"{SHARED} not found: the benchmark needs the shared real traces")

    started = time.time()
    largest = max(SHARED.glob("*.json.gz"), key=lambda p: p.stat().st_size)
    tiled = make_tiled_trace(opts.target_mb * 2**20)
    sections: list[str] = []
    for label, path, repeat in (("real", largest, opts.repeat), ("tiled", tiled, 1)):
        size = uncompressed_size(path)
        print(f"{label}: {path.name} ({size / 2**20:,.0f} MiB of JSON)", file=sys.stderr)
        results = run_input(label, path, repeat=repeat, skip_hta=opts.skip_hta)
        shown = path.name if label == "real" else f"benchmarks/data/.../{path.name} (tiled, generated)"
        sections.append(
            f"### {shown}: {path.stat().st_size / 2**20:,.1f} MiB on disk, "
            f"{size / 2**20:,.1f} MiB of JSON\n\n" + table(results, size) + _verdict(results, size)
        )
    text = (
        "# Kineto ingest benchmark\n\n"
        "`flock /tmp/tracelens-bench.lock python3 benchmarks/bench_kineto_ingest.py` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}; {machine_description()}).\n\n"
        "Each cell is one fresh process (best of the repeats for the real trace, one run for the tiled one): "
        "wall time of the call, the library imports excluded (done untimed first); peak RSS of the whole "
        "process (interpreter and imports included). `json.loads`/`orjson.loads` read (and gunzip) the same "
        "file and parse it, nothing more; tracelens.load also builds the event table, device table and "
        "derived columns (default engine: the native scanner, `tracelens/ingest/_kineto_scan.c`, blocks scanned "
        "on one worker thread per core; the msgspec row forces the reference msgspec decoder, the path taken "
        "where the scanner was not built); HTA's `TraceAnalysis(trace_dir=...)` "
        "parses and builds its DataFrames. *above imports*: peak RSS minus the RSS after imports, the memory the "
        "load itself needed (the ratio to the JSON size is only meaningful for the big input). The machine is "
        "shared with other jobs: compare within a table.\n\n" + "\n".join(sections)
    )
    path = write_result("kineto_ingest", text)
    print(f"wrote {path}", file=sys.stderr)


def _verdict(results: list[Measurement], size: int) -> str:
    by = {r.label: r for r in results}
    ours = by["tracelens.load"]
    if not ours.ok:
        return "\n"
    lines = []
    for label, target in (("HTA TraceAnalysis", 20.0), ("json.loads", 3.0)):
        other = by.get(label)
        if other is not None and other.ok:
            ratio = other.wall_s / ours.wall_s
            lines.append(
                f"- vs {label}: {ratio:.1f}x faster (target >= {target:.0f}x: "
                f"{'met' if ratio >= target else 'NOT met'})"
            )
    rss = ours.peak_rss_bytes / size
    own = (ours.peak_rss_bytes - ours.baseline_rss_bytes) / size
    lines.append(
        f"- tracelens peak RSS = {rss:.2f}x the JSON size (target <= 2x: {'met' if rss <= 2 else 'NOT met'}); "
        f"the load's own memory (peak above imports) = {own:.2f}x "
        f"({'met' if own <= 2 else 'NOT met'}; at a few MiB the interpreter alone outweighs the trace)"
    )
    whole, floor = by.get("tracelens analyze --format json, end to end"), by.get("json.loads")
    if whole is not None and whole.ok and floor is not None and floor.ok:
        # Measured as the Nsight export is (issue 15): the whole job against the least any reader does (parse
        # the JSON), and its peak memory against the input.
        lines.append(
            f"- `tracelens analyze --format json` end to end = {whole.wall_s / floor.wall_s:.2f}x json.loads "
            f"(the parse floor) and {whole.wall_s / ours.wall_s:.2f}x tracelens.load; peak RSS "
            f"{whole.peak_rss_bytes / size:.2f}x the JSON size"
        )
    return "\n" + "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
