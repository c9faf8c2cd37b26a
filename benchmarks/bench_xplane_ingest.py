"""xplane ingest speed: tracelens's full read into the table vs upb ``ParseFromString`` of the same bytes.

Synthesizes a >= 200 MB XSpace under ``benchmarks/data/`` by replicating every line's events of the
v100x8 TF 2.4 trace (shifted in time, so the copies follow each other), then measures in one run, each
in a fresh process:

* baseline: ``XSpace.ParseFromString`` with the full published schema (every event and stat a message);
* the same with tracelens's lite schema (events left as bytes);
* ``tracelens.ingest.xplane.read`` (file read, parse, vectorized event walk, table built);
* ``tracelens.load`` (the same plus the shared enrichment step).

Targets (issue 4): full read <= 3x the baseline parse, >= 1M events/s into the table, peak RSS < 8 GB.
Run heavy: ``flock /tmp/tracelens-bench.lock python3 benchmarks/bench_xplane_ingest.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common import DATA_DIR, best_of, machine_description, markdown_table, mib, write_result

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "tf" / "v100x8_tf2.4_bert_multiworker.xplane.pb"
TARGET_BYTES = 200 * 10**6


def synthesize(target_bytes: int = TARGET_BYTES) -> tuple[Path, int]:
    """Write (once) the replicated XSpace; return its path and its number of XEvents."""
    from tracelens.ingest.xplane_schema import xspace_class

    space = xspace_class(lite=False)()
    space.ParseFromString(SOURCE.read_bytes())
    # only the lines' events are replicated: size the copy count from their share of the file
    line_bytes = sum(line.ByteSize() for plane in space.planes for line in plane.lines)
    other_bytes = SOURCE.stat().st_size - line_bytes
    copies = -(-(target_bytes - other_bytes) // line_bytes)
    out = DATA_DIR / f"xplane_v100x{copies}.xplane.pb"
    count_file = out.with_suffix(".count")
    if out.exists() and count_file.exists():
        return out, int(count_file.read_text())
    total = 0
    for plane in space.planes:
        for line in plane.lines:
            events = list(line.events)
            if not events:
                continue
            span = max(e.offset_ps + e.duration_ps for e in events) - min(e.offset_ps for e in events) + 10**6
            originals = [(e, e.offset_ps) for e in events]
            for r in range(1, copies):
                for e, offset in originals:
                    copy = line.events.add()
                    copy.CopyFrom(e)
                    copy.offset_ps = offset + r * span
            total += len(line.events)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    out.write_bytes(space.SerializeToString())
    count_file.write_text(str(total))
    return out, total


# --- callables run in fresh processes by common.measure -------------------------------------------

def parse_full(path: str) -> int:
    from tracelens.ingest.xplane_schema import xspace_class

    data = Path(path).read_bytes()
    space = xspace_class(lite=False)()
    space.ParseFromString(data)
    return len(space.planes)


def parse_lite(path: str) -> int:
    from tracelens.ingest.xplane_schema import xspace_class

    data = Path(path).read_bytes()
    space = xspace_class(lite=True)()
    space.ParseFromString(data)
    return len(space.planes)


def read_table(path: str) -> int:
    from tracelens.ingest import xplane

    return xplane.read(Path(path)).events.num_rows


def load_enriched(path: str) -> int:
    import tracelens

    return tracelens.load(path).events.num_rows


def read_bytes_only(path: str) -> int:
    return len(Path(path).read_bytes())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not SOURCE.exists():
        print(f"source trace missing: {SOURCE}", file=sys.stderr)
        return 1
    path, n_events = synthesize()
    size = path.stat().st_size
    from tracelens.ingest.xplane_schema import protobuf_backend

    backend = protobuf_backend()
    runs = {
        "read bytes": best_of("read bytes", "bench_xplane_ingest:read_bytes_only", str(path), repeat=args.repeat),
        "parse (full schema)": best_of("parse", "bench_xplane_ingest:parse_full", str(path), repeat=args.repeat),
        "parse (lite schema)": best_of("lite", "bench_xplane_ingest:parse_lite", str(path), repeat=args.repeat),
        "xplane.read": best_of("read", "bench_xplane_ingest:read_table", str(path), repeat=args.repeat),
        "tracelens.load": best_of("load", "bench_xplane_ingest:load_enriched", str(path), repeat=args.repeat),
    }
    for label, m in runs.items():
        if not m.ok:
            print(f"{label} failed: {m.error}", file=sys.stderr)
            return 1
    # parse timings include reading the file in the child; subtract that so the baseline is parsing alone
    read_s = runs["read bytes"].wall_s
    baseline = runs["parse (full schema)"].wall_s - read_s
    rows = []
    for label, m in runs.items():
        ratio = "" if label == "read bytes" else f"{m.wall_s / baseline:.2f}x"
        rate = "" if label in ("read bytes",) else f"{n_events / m.wall_s / 1e6:.2f} M/s"
        rows.append([label, f"{m.wall_s:.2f} s", ratio, rate, mib(m.peak_rss_bytes)])
    read_ratio = runs["xplane.read"].wall_s / baseline
    read_rate = n_events / runs["xplane.read"].wall_s
    text = (
        "# xplane ingest benchmark\n\n"
        f"Machine: {machine_description()}; protobuf backend: `{backend}`.\n\n"
        f"Input: `{path.name}`, {size / 1e6:,.0f} MB, {n_events:,} XEvents (the v100x8 TF 2.4 trace's events "
        f"replicated, shifted in time); {runs['xplane.read'].result:,} rows in the table.\n\n"
        "Each row is the best of "
        f"{args.repeat} fresh processes (`benchmarks/common.py`), measured in the same run. Ratios are against "
        f"upb `ParseFromString` with the full published schema, file read excluded ({baseline:.2f} s); the other "
        "rows include reading the file.\n\n"
        + markdown_table(["step", "wall", "vs parse", "XEvents/s", "peak RSS"], rows)
        + "\n"
        f"Targets: full read <= 3x parse: **{read_ratio:.2f}x** ({'met' if read_ratio <= 3 else 'NOT met'}); "
        f">= 1M events/s: **{read_rate / 1e6:.2f} M/s** ({'met' if read_rate >= 1e6 else 'NOT met'}); "
        f"peak RSS < 8 GB: **{mib(runs['xplane.read'].peak_rss_bytes)}**.\n\n"
        f"Regenerate: `flock /tmp/tracelens-bench.lock python3 benchmarks/bench_xplane_ingest.py`.\n"
    )
    out = write_result("xplane_ingest", text)
    print(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
