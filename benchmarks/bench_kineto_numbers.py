"""Kineto scanner number parsing: builds of ``_kineto_scan.c`` compared on real traces, in one run.

    python3 benchmarks/bench_kineto_numbers.py [--build LABEL=FLAGS ...] [--module LABEL=PATH ...] [--repeat 7]

Each build (the current source compiled with extra compiler flags, into a temporary directory) or prebuilt
module is timed on every real trace in ``../shared/traces/pytorch`` (gunzipped in memory first):

- ``scan_document``: the scanner alone on the whole document, one call on one thread (best of --repeat);
- ``kineto.read``: the whole native load of the file (gunzip, blocks on worker threads, columns; best of
  --repeat), with the module swapped into ``tracelens.ingest.kineto``;

and on a synthetic block of Kineto 2024 events (19-digit absolute timestamps, 3-decimal durations) through
``scan_events``. For builds that have ``_parse_number``, every JSON number of each trace is classified by
how the scanner decides it (integer, Clinger's fast path, Eisel-Lemire, or deferred to Python's float()).

The default builds: the source as ``pip install`` compiles it, and the same with x87 extended precision
unavailable (``-mfpmath=sse -mlong-double-64``: long double is double, as on ARM64 and MSVC) and with the
plain C 64x64-bit multiply (``-DTRACELENS_PORTABLE_ARITHMETIC``). Prints a markdown table; writes nothing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import importlib.util
import io
import random
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE = REPO_ROOT / "tracelens" / "ingest" / "_kineto_scan.c"
SHARED = (REPO_ROOT.parent / "shared" / "traces" / "pytorch").resolve()
DEFAULT_BUILDS = {
    "as installed (-O2 default flags)": "",
    "no x87: -mfpmath=sse -mlong-double-64": "-mfpmath=sse -mlong-double-64",
    "no x87, portable multiply": "-mfpmath=sse -mlong-double-64 -DTRACELENS_PORTABLE_ARITHMETIC",
}
NUMBER = re.compile(rb"(?<=[:\[,\s])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=[,\]\}\s])")

sys.path.insert(0, str(REPO_ROOT))


def build(flags: str, out_dir: Path) -> Path:
    """The current source compiled as setuptools compiles the extension, plus ``flags``."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    ext = Extension("_kineto_scan", [str(SOURCE)], extra_compile_args=shlex.split(flags))
    command = build_ext(Distribution({"name": "kineto-scan-bench", "ext_modules": [ext]}))
    command.build_lib = str(out_dir)
    command.build_temp = str(out_dir / "temp")
    command.ensure_finalized()
    with contextlib.redirect_stdout(io.StringIO()):  # setuptools' log of the commands it runs
        command.run()
    return Path(command.get_ext_fullpath("_kineto_scan"))


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("_kineto_scan", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interleaved(function, modules: dict[str, ModuleType], repeat: int) -> dict[str, float]:
    """The best time of function(module) for each module, the modules taking turns (a busy machine slows
    them alike)."""
    times: dict[str, list[float]] = {label: [] for label in modules}
    for _ in range(repeat):
        for label, module in modules.items():
            start = time.perf_counter()
            function(module)
            times[label].append(time.perf_counter() - start)
    return {label: min(values) for label, values in times.items()}


def synthetic_block(events: int) -> bytes:
    rng = random.Random(1)
    rows = []
    for i in range(events):
        ts = f"{1712195495519689 + 7 * i}.{rng.randrange(1000):03d}"
        rows.append(
            f'{{"ph": "X", "cat": "kernel", "name": "k{i % 50}", "pid": 0, "tid": 7, "ts": {ts}, '
            f'"dur": {rng.randrange(10**4)}.{rng.randrange(1000):03d}, "args": {{"device": 0, '
            f'"stream": 7, "correlation": {i}, "grid": [1, 2, 3], "block": [4, 5, 6]}}}}'
        )
    return ("[" + ",\n".join(rows) + "]").encode()


def number_paths(module: ModuleType, data: bytes) -> collections.Counter:
    paths: collections.Counter = collections.Counter()
    for token in NUMBER.findall(data):
        parsed = module._parse_number(token)
        paths["declined" if parsed is None else parsed[1]] += 1
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="LABEL=FLAGS",
        help="compile the current source with these extra flags (repeatable)",
    )
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="a prebuilt _kineto_scan module to compare (repeatable)",
    )
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (best kept)")
    parser.add_argument("--events", type=int, default=200_000, help="events in the synthetic block")
    args = parser.parse_args(argv)

    import msgspec

    from tracelens.ingest import kineto
    from tracelens.ingest.kineto.blocks import to_number

    builds = dict(item.split("=", 1) for item in args.build) if args.build or args.module else DEFAULT_BUILDS
    modules: dict[str, ModuleType] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, flags) in enumerate(builds.items()):
            modules[label] = load(build(flags, Path(tmp) / str(i)))
        for item in args.module:
            label, path = item.split("=", 1)
            modules[label] = load(Path(path))

        traces = sorted(SHARED.glob("*.json.gz"))
        documents = {path: gzip.open(path).read() for path in traces}
        block = synthetic_block(args.events)
        decode = msgspec.json.decode
        print(
            f"Python {sys.version.split()[0]}; best of {args.repeat}, the builds taking turns; scanner alone on one thread "
            f"(scan_document / scan_events), whole native load (kineto.read).\n"
        )
        header = ["trace", "JSON MiB"] + [f"{label}: scan ms (MB/s) / read ms" for label in modules]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        # The reader's scanner attribute is swapped on purpose: this benchmark times other builds of the
        # extension through the reader, which no public API offers.
        original = kineto._kineto_scan
        try:
            for path, data in documents.items():
                for module in modules.values():
                    assert module.scan_document(data, to_number, decode) is not None, path

                def scan(module, data=data):
                    module.scan_document(data, to_number, decode)

                def read(module, path=path):
                    kineto._kineto_scan = module
                    try:
                        kineto.read(path, engine="native")
                    finally:
                        kineto._kineto_scan = original

                scans, reads = (
                    interleaved(scan, modules, args.repeat),
                    interleaved(read, modules, args.repeat),
                )
                cells = [path.name, f"{len(data) / 2**20:.1f}"]
                cells += [
                    f"{scans[label] * 1e3:.1f} ({len(data) / scans[label] / 1e6:.0f}) / {reads[label] * 1e3:.0f}"
                    for label in modules
                ]
                print("| " + " | ".join(cells) + " |")
            for module in modules.values():
                assert module.scan_events((block,), to_number, decode) is not None
            scans = interleaved(
                lambda module: module.scan_events((block,), to_number, decode), modules, args.repeat
            )
            cells = [f"synthetic: {args.events:,} events, 19-digit ts", f"{len(block) / 2**20:.1f}"]
            cells += [
                f"{scans[label] * 1e3:.1f} ({len(block) / scans[label] / 1e6:.0f}) / -" for label in modules
            ]
            print("| " + " | ".join(cells) + " |")
        finally:
            kineto._kineto_scan = original

        print("\nHow each JSON number of the trace is decided (first build with _parse_number):\n")
        module = next((m for m in modules.values() if hasattr(m, "_parse_number")), None)
        if module is not None:
            for path, data in list(documents.items()) + [(Path("synthetic"), block)]:
                paths = number_paths(module, data)
                total = sum(paths.values())
                shares = ", ".join(f"{name} {count:,}" for name, count in paths.most_common())
                print(
                    f"- {path.name}: {total:,} numbers: {shares} "
                    f"(deferred to Python: {paths['python'] / max(total, 1):.4%})"
                )


if __name__ == "__main__":
    main()
