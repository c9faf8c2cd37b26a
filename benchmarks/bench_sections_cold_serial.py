"""The sections analyze runs beside whatif (every section but whatif), each from cold shared values, in one process.

One warm-up ``analyze`` of every section in analyze's order, then ROUNDS times: every memo but the event columns
forgotten, freed pages released, and inside ``reusing_array_pages`` each section computed in analyze's order (so a
section computes the shared values it is the first to read, as in analyze), its CPU time taken
(``time.process_time``: threads a section starts count). Prints the median and least per section.

Run from a tree root:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_sections_cold_serial.py TRACE 5
"""

from __future__ import annotations

import statistics
import sys
import time

sys.path.insert(0, ".")

import tracelens  # noqa: E402
from tracelens import analyses  # noqa: E402
from tracelens.analyses import derived  # noqa: E402
from tracelens.memory import release_free_memory, reusing_array_pages, small_pages  # noqa: E402


def main() -> int:
    path, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    order = analyses.run_order(analyses.SECTIONS)
    sections = [s for s in order if s != "whatif"]
    times: dict[str, list[float]] = {s: [] for s in sections}
    with small_pages():
        trace = tracelens.load(path)
        done: dict = {}
        for name in order:
            done[name] = analyses.BY_KEY[name].compute(trace, {"source": {}, **done})
        with reusing_array_pages():
            for _ in range(rounds):
                families = {derived.memo_family(k) for k in derived.memo_keys(trace)} - {"event_columns"}
                derived.forget(trace, families)
                release_free_memory()
                for name in sections:
                    begin = time.process_time()
                    analyses.BY_KEY[name].compute(trace, {"source": {}, **done})
                    times[name].append(time.process_time() - begin)
    for name, values in times.items():
        print(f"{name:14s} {statistics.median(values) * 1000:7.1f} ms  min {min(values) * 1000:6.1f}")
    print(f"{'sum':14s} {sum(statistics.median(v) for v in times.values()) * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
