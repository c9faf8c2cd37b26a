"""Where the peak memory of ``tracelens analyze --format json`` is: the resident-set high-water mark of each
stage of the Nsight (or any) load and of each analysis section, in one fresh process.

The kernel's own high-water mark (``VmHWM`` in ``/proc/self/status``) is read at the end of each stage and then
reset (``5`` written to ``/proc/self/clear_refs``), so each row is the exact peak reached during that stage (no
sampling: a peak between two samples cannot be missed), whatever thread allocated it. The stages are marked by
wrapping the reader's steps (strings, each table's rows as it arrives, assembly, devices, metadata), each
section's ``section`` function, and the JSON rendering; the run itself is the CLI's ``analyze --format json``
(``--load-only``: ``tracelens.load`` alone). ``RSS after`` is the resident set when the stage ends.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_peak_rss.py TRACE [--load-only]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from common import REPO_ROOT, markdown_table

_CHILD = r"""
import functools, importlib, json, os, sys, time
sys.path.insert(0, ".")
path, load_only, extra = sys.argv[1], sys.argv[2] == "1", json.loads(sys.argv[3])
stages = []
last = [time.perf_counter()]

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024

def mark(label):
    now = time.perf_counter()
    stages.append((label, status("VmHWM"), status("VmRSS"), now - last[0]))
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    last[0] = time.perf_counter()

def wrap(owner, name, label):
    original = getattr(owner, name)
    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        mark(f"before {label}")
        try:
            return original(*args, **kwargs)
        finally:
            mark(label)
    setattr(owner, name, wrapped)

import tracelens
from tracelens.ingest.nsys import reader, fetch
from tracelens import analyses as A
mark("imports")
wrap(reader.Strings, "load", "load: StringIds")
wrap(reader, "fetch_parts", "load: fetch tables + build parts")
wrap(reader, "assemble", "load: assemble the store")
wrap(reader, "devices", "load: devices")
wrap(reader, "extra", "load: metadata extra")
original_builders = reader.NsysReader._builders
def builders(self, db, strings):
    out = original_builders(self, db, strings)
    def one(table, build):
        def run(box):
            mark(f"load: fetching (until {table} arrived)")
            part = build(box)
            mark(f"load: rows of {table}")
            return part
        return run
    return {table: one(table, build) for table, build in out.items()}
reader.NsysReader._builders = builders
original_read = reader.NsysReader.read
store_mib = []
def read(self):
    trace = original_read(self)
    store_mib.append(trace.store.nbytes / 2**20)
    return trace
reader.NsysReader.read = read
for key in A.SECTIONS:
    module = importlib.import_module(f"tracelens.analyses.{key}")
    wrap(module, "section", f"section {key}")
for ref in extra:  # "module:attr" or "module:Class.attr"
    module_name, attr = ref.split(":")
    owner = importlib.import_module(module_name)
    *outer, name = attr.split(".")
    for part in outer:
        owner = getattr(owner, part)
    wrap(owner, name, f"  {ref}")
from tracelens import cli
if load_only:
    trace = tracelens.load(path)
    mark("load: rest")
else:
    from tracelens.report import json_renderer
    wrap(json_renderer, "render", "JSON text")
    out = os.environ.get("TMPDIR", "/tmp") + f"/bench_peak_rss_{os.getpid()}.json"
    code = cli.main(["analyze", "--format", "json", path, "-o", out])
    os.unlink(out)
    mark("rest (CLI)")
if store_mib:
    stages.append((f"(the event store holds {store_mib[0]:,.0f} MiB)", 0, 0, 0))
print(json.dumps(stages))
"""


def run(
    trace: str, load_only: bool, tree: Path = REPO_ROOT, extra: list[str] | None = None
) -> list[tuple[str, float, float, float]]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, trace, "1" if load_only else "0", json.dumps(extra or [])],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise SystemExit(proc.stderr.strip()[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument("--tree", default=str(REPO_ROOT), help="the source tree to run (default: this one)")
    parser.add_argument(
        "--mark",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="also mark a function's calls (e.g. tracelens.analyses.host_split:priority_split); a function "
        "imported by name elsewhere is marked only where it is looked up in its own module",
    )
    opts = parser.parse_args()
    stages = run(str(Path(opts.trace).resolve()), opts.load_only, Path(opts.tree).resolve(), opts.mark)
    size = Path(opts.trace).stat().st_size / 2**20
    rows = []
    note = ""
    previous_rss = 0.0
    for label, hwm, rss, wall in stages:
        if label.startswith("("):
            note = label
            continue
        rose = hwm - previous_rss
        previous_rss = rss
        if label.startswith("before ") and wall < 0.05 and rose < 5:
            continue  # nothing happened between two stages
        label = label.replace("before ", "between stages, before ")
        rows.append([label, f"{hwm:,.0f}", f"{hwm / size:.2f}x", f"{rss:,.0f}", f"{wall:.2f}"])
    peak = max(s[1] for s in stages if not s[0].startswith("("))
    print(
        f"\n{Path(opts.trace).name} ({size:,.0f} MiB); peak {peak:,.0f} MiB = {peak / size:.2f}x the file\n"
    )
    print(markdown_table(["stage", "peak RSS (MiB)", "/ file", "RSS after (MiB)", "wall (s)"], rows))
    if note:
        print(f"\n{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
