"""Where in its code a section reaches its peak memory: the resident set line by line.

One process loads TRACE, runs the sections of ``--before`` (for the shared values they leave, as analyze would
have them), then each section of SECTIONS with a line tracer on the modules named by ``--modules`` (file names
without ``.py``, under ``tracelens/``). At each traced line it reads VmRSS and VmHWM from /proc/self/status and
resets the peak (writing "5" to /proc/self/clear_refs, Linux): each line gets the RSS as it starts, the highest
RSS while it ran (calls into untraced code count for the calling line) and the RSS after it. Printed, in order,
are the lines where either moved by ``--step`` MiB or more since the last line printed, each relative to the RSS
before the section: where its arrays are made and let go, and which line holds its peak.

Run with ``TRACELENS_ARRAY_PAGES=0`` to see arrays freed as they are (the page cache of ``reusing_array_pages``
keeps freed pages resident until the section ends, so its RSS only climbs). The tracer costs CPU (a read of
/proc per line): the seconds printed are not the section's. A tool to find what to cut; bench_section_peaks.py
measures the sections themselves.

Run:  TRACELENS_ARRAY_PAGES=0 flock /tmp/tracelens-bench.lock python3 benchmarks/bench_section_lines.py TRACE
      attribution [--before occupancy] [--modules attribution,host_split,startup,window_split] [--step 25]
"""

from __future__ import annotations

import argparse
import linecache
import os
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def _status() -> dict[str, int]:
    """VmRSS and VmHWM in MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                out[line.split(":")[0]] = int(line.split()[1]) // 1024
    return out


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


class LineTracer:
    """sys.settrace hooks recording, per executed line of the chosen files, (file, line, function, RSS at its
    start, peak while it ran, RSS after it), in order."""

    def __init__(self, files: tuple[str, ...]) -> None:
        self.files = files
        self.lines: list[tuple[str, int, str, int, int, int]] = []
        self._last: tuple[str, int, str] | None = None
        self._rss = 0

    def start(self) -> None:
        self._last, self._rss = None, _status()["VmRSS"]
        _reset_peak()
        sys.settrace(self._global)

    def stop(self) -> None:
        sys.settrace(None)

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        return self._local if "tracelens" in name and name.endswith(self.files) else None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event in ("line", "return"):
            now = _status()
            if self._last is not None:
                self.lines.append((*self._last, self._rss, now["VmHWM"], now["VmRSS"]))
            self._rss = now["VmRSS"]
            self._last = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
            _reset_peak()
        return self._local


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace")
    parser.add_argument("sections", help="comma-separated section keys to trace, in order")
    parser.add_argument("--before", default="", help="comma-separated section keys to run first, untraced")
    parser.add_argument(
        "--modules",
        default="attribution,host_split,startup,window_split,columns,launch,occupancy,enrich,host,devices,sync",
        help="comma-separated module file names (without .py) whose lines are traced",
    )
    parser.add_argument(
        "--step", type=int, default=25, help="MiB a line must move RSS or peak by to be printed"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO_ROOT))
    os.chdir(REPO_ROOT)
    import tracelens
    from tracelens import analyses
    from tracelens.memory import release_free_memory, reusing_array_pages

    trace = tracelens.load(args.trace)
    done: dict[str, Any] = {"source": {"path": args.trace}}
    tracer = LineTracer(tuple(f"{m}.py" for m in args.modules.split(",") if m))
    with reusing_array_pages():
        for key in filter(None, args.before.split(",")):
            done[key] = analyses.BY_KEY[key].compute(trace, done)
        for key in filter(None, args.sections.split(",")):
            release_free_memory()
            before = _status()["VmRSS"]
            tracer.lines.clear()
            cpu = time.process_time()
            tracer.start()
            done[key] = analyses.BY_KEY[key].compute(trace, done)
            tracer.stop()
            cpu = time.process_time() - cpu
            peak = max((line[4] for line in tracer.lines), default=before)
            print(f"== {key}: RSS before {before:,} MiB, peak +{peak - before:,}, CPU {cpu:.2f} s (traced)")
            shown_rss = shown_peak = before
            for name, number, function, start, high, after in tracer.lines:
                if abs(high - shown_peak) >= args.step or abs(after - shown_rss) >= args.step:
                    text = linecache.getline(name, number).strip()[:100]
                    print(
                        f"  rss {start - before:+6d} peak {high - before:+6d} -> {after - before:+6d}  "
                        f"{Path(name).name}:{number} {function} | {text}"
                    )
                    shown_rss, shown_peak = after, high


if __name__ == "__main__":
    main()
