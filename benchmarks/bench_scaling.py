"""How analyze's cost grows with the trace (issue 28, item 5): time and memory at 1x, 10x, 100x (1000x) replication.

The Nsight export ``h100x2_fastvideo_window_nsys2026.2.sqlite`` is replicated REPLICAS times by
``bench_nsys_ingest.synthesize`` (every event table at the real file's proportion), and
``tracelens analyze --format json`` runs end to end on each in a fresh process (``common.measure``: wall time of
the call, peak RSS of the process; the median of ``--rounds``). The slope of log(time) and log(peak RSS above
the interpreter's own) against log(events) between consecutive sizes says how the cost grows: 1 is linear, 2
quadratic. Writes ``results/scaling.md`` and ``results/scaling.png`` (log-log).

The whatif section's replay has a size limit (``whatif.MAX_POINTS``; past it the section is empty with its
reason): the table's last column says, for each size, whether the replay ran or why not, so a size that skips
it is not mistaken for a cheaper analyze.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_scaling.py [--replicas 1 10 100 1000] [--rounds 3]
(all four sizes by default; the x10/x100/x1000 exports are made once in benchmarks/data/, ~2 GiB at x1000.)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from common import DATA_DIR, RESULTS_DIR, machine_description, markdown_table, measure, mib, write_result


def analyze_json(path: str) -> dict:
    from tracelens.cli import main

    out = DATA_DIR / "scaling_analysis.json"
    code = main(["analyze", "--format", "json", path, "-o", str(out)])
    doc = json.loads(out.read_text())
    out.unlink()
    if code:
        raise RuntimeError(f"analyze exited {code}")
    whatif = doc.get("whatif") or {}
    replayed = whatif.get("reason") is None and whatif.get("critical_path") is not None
    return {
        "events": doc["source"]["event_count"],
        "whatif": "replayed" if replayed else f"not replayed: {whatif.get('reason') or 'no whatif section'}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    from bench_nsys_ingest import SOURCE, synthesize

    started = time.perf_counter()

    points = []
    for replicas in opts.replicas:
        path = SOURCE if replicas == 1 else synthesize(replicas)
        runs = [
            measure("analyze", "bench_scaling:analyze_json", str(path), timeout_s=900)
            for _ in range(opts.rounds)
        ]
        bad = [r for r in runs if not r.ok]
        if bad:
            raise SystemExit(f"x{replicas}: {bad[0].error}")
        wall = statistics.median(r.wall_s for r in runs)
        peak = statistics.median(r.peak_rss_bytes for r in runs)
        above = statistics.median(r.peak_rss_bytes - r.baseline_rss_bytes for r in runs)
        events = runs[0].result["events"]
        points.append(
            {
                "replicas": replicas,
                "bytes": path.stat().st_size,
                "events": events,
                "wall_s": wall,
                "peak": peak,
                "above": above,
                "whatif": runs[0].result["whatif"],
            }
        )
        print(
            f"x{replicas}: {events:,} events, {wall:.2f} s, peak {mib(peak)} ({mib(above)} above imports); "
            f"whatif {points[-1]['whatif']}",
            flush=True,
        )

    def slope(a: dict, b: dict, key: str) -> str:
        if a[key] <= 0 or b[key] <= 0:
            return "n/a"
        return f"{math.log(b[key] / a[key]) / math.log(b['events'] / a['events']):.2f}"

    rows = []
    for i, p in enumerate(points):
        prev = points[i - 1] if i else None
        rows.append(
            [
                f"x{p['replicas']}",
                f"{p['events']:,}",
                mib(p["bytes"]),
                f"{p['wall_s']:.2f} s",
                mib(p["peak"]),
                mib(p["above"]),
                slope(prev, p, "wall_s") if prev else "",
                slope(prev, p, "above") if prev else "",
                p["whatif"].replace("|", "\\|"),
            ]
        )
    first, last = points[0], points[-1]
    overall = (
        (
            f"Slope from x{first['replicas']} to x{last['replicas']}: time {slope(first, last, 'wall_s')}, "
            f"memory above imports {slope(first, last, 'above')}."
        )
        if len(points) > 1
        else ""
    )
    _plot(points)
    try:
        load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load_avg = "?"
    text = (
        "# analyze cost against trace size (`bench_scaling.py`)\n\n"
        f"{machine_description()}; load average at the end {load_avg} (2 cores shared with other jobs). "
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} (took "
        f"{(time.perf_counter() - started) / 60:.1f} min, exports made once included); each size the median of {opts.rounds} fresh "
        "processes of `tracelens analyze --format json` on the replicated Nsight export. Slopes are "
        "d log(cost) / d log(events) from the previous size (1 = linear).\n\n"
        + markdown_table(
            [
                "size",
                "events",
                "export",
                "analyze wall",
                "peak RSS",
                "above imports",
                "time slope",
                "memory slope",
                "whatif",
            ],
            rows,
        )
        + f"\n{overall}\n\n![log-log](scaling.png)\n"
    )
    print(text)
    write_result("scaling", text)
    return 0


def _plot(points: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = [p["events"] for p in points]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(events, [p["wall_s"] for p in points], "o-", label="analyze wall (s)")
    ax.loglog(events, [p["above"] / 2**30 for p in points], "s-", label="peak RSS above imports (GiB)")
    ref = events[0]
    ax.loglog(
        events, [points[0]["wall_s"] * e / ref for e in events], ":", color="grey", label="linear from 1x"
    )
    ax.set_xlabel("events in the trace")
    ax.set_title("tracelens analyze --format json, replicated Nsight export")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS_DIR / "scaling.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
