"""tracelens against the physical floor of each input format, in one run (issue 28, item 1).

The floor is what any faithful reader of the file must do, with nothing of tracelens in it:
- Nsight Systems export: SQLite reading the raw columns the reader needs, one aggregate (``max``) per column of
  each table it reads (``StringIds`` included), no joins, no expressions, no rows returned;
- Kineto JSON (.json.gz): ISA-L (``isal.igzip``) decompression of the file, the bytes discarded;
- xplane: protobuf ``ParseFromString`` of the file with the full published XSpace schema (read included).

Per input, in interleaved rounds of fresh processes (``common.measure``): the floor, ``tracelens.load`` and
``tracelens analyze --format json`` end to end (the CLI's own entry point, JSON written). Reported: the median of
the rounds for each, and the ratios of those medians to the floor. Inputs (generated under ``benchmarks/data/``
on first use by the other benchmarks' generators): the Nsight export replicated ``--nsys-replicas`` times
(``bench_nsys_ingest.synthesize``), the 520 MB Kineto tile (``bench_kineto_ingest.make_tiled_trace``) gzipped
with ISA-L, and the >= 200 MB XSpace of ``bench_xplane_ingest.synthesize``.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_floors.py [--nsys-replicas 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import statistics
import time
from pathlib import Path

from common import DATA_DIR, machine_description, markdown_table, measure, mib, write_result

# ------------------------------------------------------------------------------ floors (run in the child)


def nsys_floor(path: str) -> dict:
    """Per table the reader reads, ``SELECT count(*), max(col), ...`` over the raw columns its query names."""
    from tracelens.ingest.nsys import NsysReader

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tables: dict[str, set[str]] = {}
    for table, (sql, _names) in NsysReader(Path(path)).queries().items():
        columns = {r[1] for r in conn.execute(f"PRAGMA table_info('{table}')")}
        tables[table] = {word for word in re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', sql) if word in columns}
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'StringIds'").fetchone():
        tables["StringIds"] = {"id", "value"}
    rows = 0
    for table, columns in tables.items():
        aggregates = ", ".join(f'max("{c}")' for c in sorted(columns))
        rows += conn.execute(f'SELECT count(*), {aggregates} FROM "{table}"').fetchone()[0]
    conn.close()
    return {"rows": rows, "tables": len(tables)}


def isal_floor(path: str) -> dict:
    """ISA-L decompression of the whole file, in 8 MiB pieces (the bytes are discarded)."""
    from isal import igzip

    total = 0
    with igzip.open(path, "rb") as fh:
        while piece := fh.read(8 << 20):
            total += len(piece)
    return {"bytes": total}


def protobuf_floor(path: str) -> dict:
    """Read the file and parse it with the full published XSpace schema."""
    from tracelens.ingest.xplane.schema import xspace_class

    space = xspace_class(lite=False)()
    space.ParseFromString(Path(path).read_bytes())
    return {"planes": len(space.planes)}


def load(path: str) -> dict:
    import tracelens

    return {"events": tracelens.load(path).num_events}


def analyze_json(path: str) -> dict:
    from tracelens.cli import main

    out = DATA_DIR / "floors_analysis.json"
    code = main(["analyze", "--format", "json", path, "-o", str(out)])
    size = out.stat().st_size
    out.unlink()
    if code:
        raise RuntimeError(f"analyze exited {code}")
    return {"json_bytes": size}


# ------------------------------------------------------------------------------------------- inputs


def kineto_gz() -> Path:
    from bench_kineto_ingest import make_tiled_trace
    from isal import igzip

    plain = make_tiled_trace(520 * 2**20)
    out = plain.with_suffix(".json.gz")
    if not out.exists():
        partial = out.with_suffix(".partial")
        with plain.open("rb") as src, igzip.open(partial, "wb", compresslevel=2) as dst:
            while piece := src.read(8 << 20):
                dst.write(piece)
        partial.replace(out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nsys-replicas", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("nsys", "kineto", "xplane"), action="append")
    opts = parser.parse_args()
    from bench_nsys_ingest import synthesize as nsys_export
    from bench_xplane_ingest import synthesize as xspace

    inputs = {
        "nsys": (
            lambda: nsys_export(opts.nsys_replicas),
            "bench_floors:nsys_floor",
            "SQLite: max() of each raw column the reader reads, per table",
        ),
        "kineto": (kineto_gz, "bench_floors:isal_floor", "ISA-L decompression of the .json.gz"),
        "xplane": (lambda: xspace()[0], "bench_floors:protobuf_floor", "protobuf parse, full XSpace schema"),
    }
    rows = []
    for fmt, (make, floor_ref, floor_what) in inputs.items():
        if opts.only and fmt not in opts.only:
            continue
        path = make()
        size = path.stat().st_size
        runs: dict[str, list] = {"floor": [], "load": [], "analyze": []}
        refs = {"floor": floor_ref, "load": "bench_floors:load", "analyze": "bench_floors:analyze_json"}
        for r in range(opts.rounds):
            order = list(refs) if r % 2 == 0 else list(reversed(refs))
            for label in order:
                m = measure(label, refs[label], str(path), timeout_s=900)
                if not m.ok:
                    raise SystemExit(f"{fmt} {label} failed: {m.error}")
                runs[label].append(m)
                print(
                    f"{fmt} round {r + 1} {label}: {m.wall_s:.2f} s, peak {mib(m.peak_rss_bytes)}", flush=True
                )
        med = {k: statistics.median(m.wall_s for m in v) for k, v in runs.items()}
        rss = {k: statistics.median(m.peak_rss_bytes for m in v) for k, v in runs.items()}
        spread = {
            k: f"{min(m.wall_s for m in v):.2f}-{max(m.wall_s for m in v):.2f}" for k, v in runs.items()
        }
        rows.append(
            [
                fmt,
                f"{path.name} ({mib(size)})",
                floor_what,
                f"{med['floor']:.2f} s ({spread['floor']})",
                f"{med['load']:.2f} s ({spread['load']})",
                f"{med['analyze']:.2f} s ({spread['analyze']})",
                f"{med['load'] / med['floor']:.1f}x",
                f"{med['analyze'] / med['floor']:.1f}x",
                f"{mib(rss['load'])} ({rss['load'] / size:.2f}x)",
                f"{mib(rss['analyze'])} ({rss['analyze'] / size:.2f}x)",
            ]
        )
    table = markdown_table(
        [
            "format",
            "input",
            "floor",
            "floor wall",
            "load wall",
            "analyze wall",
            "load / floor",
            "analyze / floor",
            "load peak RSS (/ file)",
            "analyze peak RSS (/ file)",
        ],
        rows,
    )
    try:
        load_avg = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        load_avg = ["?"]
    text = (
        f"# Against the physical floor (`bench_floors.py`)\n\n{machine_description()}; load average at the "
        f"end {' '.join(load_avg)} (the machine's 2 cores are shared with other jobs, so walls swing).\n"
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {opts.rounds} interleaved rounds of "
        "fresh processes; each cell the median (min-max in brackets); ratios are of the medians.\n\n" + table
    )
    print(text)
    write_result("floors", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
