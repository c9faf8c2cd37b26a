"""analyses/startup.py's shared values (host_categories, one_time_work) as first written against as they are now, on
one loaded trace, in one process.

The earlier code is the reference copy in tests/test_startup_row_fast_paths.py (``ref_host_category_codes`` for
the host categories; ``ref_one_time_work``, given the memoized host categories as the code read them). Each side
is timed (process CPU time) ``--rounds`` times, alternately, with the memo of the value dropped before each run of
the current code (the values it derives from, launch pairs, device busy, steps, stay computed: both sides read
them). One process, so the two sides see the same machine load; the results are checked equal.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_startup.py benchmarks/data/nsys_x400.sqlite
      [--rounds 5]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import numpy as np  # noqa: E402
from test_startup_row_fast_paths import ref_host_category_codes, ref_one_time_work  # noqa: E402

import tracelens  # noqa: E402
from tracelens.analyses import startup  # noqa: E402
from tracelens.analyses.columns import event_columns  # noqa: E402
from tracelens.analyses.derived import forget  # noqa: E402


def cpu(fn):  # noqa: ANN001, ANN201
    t = time.process_time()
    value = fn()
    return time.process_time() - t, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    t, trace = cpu(lambda: tracelens.load(args.trace))
    print(f"{Path(args.trace).name}: {len(trace.events):,} events, load {t:.1f} s CPU", flush=True)
    cols = event_columns(trace)
    startup.one_time_work(
        trace
    )  # the values it derives from (launch pairs, device busy, steps), computed once
    times: dict[str, list[float]] = {"hc_old": [], "hc_new": [], "otw_old": [], "otw_new": []}
    for _ in range(args.rounds):
        t, old_hc = cpu(lambda: ref_host_category_codes(cols.kind, cols.name, cols.names))
        times["hc_old"].append(t)
        forget(trace, ["host_categories"])
        t, new_hc = cpu(lambda: startup.host_categories(trace))
        times["hc_new"].append(t)
        assert np.array_equal(old_hc, new_hc)
        base = startup.host_categories(trace)
        t, old = cpu(lambda: ref_one_time_work(trace, base))  # noqa: B023
        times["otw_old"].append(t)
        forget(trace, ["one_time_work"])
        t, new = cpu(lambda: startup.one_time_work(trace))
        times["otw_new"].append(t)
        assert np.array_equal(old.reason, new.reason)
        assert np.array_equal(old.first_api_rows, new.first_api_rows)
        assert np.array_equal(old.first_call_rows, new.first_call_rows)
    for label, old_key, new_key in (
        ("host_categories", "hc_old", "hc_new"),
        ("one_time_work", "otw_old", "otw_new"),
    ):
        old_s, new_s = statistics.median(times[old_key]), statistics.median(times[new_key])
        print(
            f"{label:16s} before {old_s:.3f} s  after {new_s:.3f} s  ({old_s / new_s:.1f}x)   "
            f"before {' '.join(f'{x:.3f}' for x in times[old_key])} | after {' '.join(f'{x:.3f}' for x in times[new_key])}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
