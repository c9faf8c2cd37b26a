"""The native Kineto scanner alone (tracelens/ingest/_kineto_scan.c): CPU time per byte of JSON.

Reads an uncompressed Kineto trace (or the first ``--mib`` MiB of it) into memory, cuts it at Kineto's event
separator into blocks of ``--block-mib`` MiB as tracelens.ingest.kineto.split does, and times
``scan_events`` over every block with ``time.thread_time`` (the scanner's own CPU; no decompression, no
table building). ``--so`` adds other builds of the scanner (a path to a ``_kineto_scan*.so``), timed in the
same process, rounds alternating, so that before/after figures come from the same conditions.

    python3 benchmarks/bench_kineto_scan.py benchmarks/data/kineto_tiled_406mb/rank-0.tiled.pt.trace.json \
        --so /work/main/tracelens/ingest/_kineto_scan.cpython-311-x86_64-linux-gnu.so
"""

from __future__ import annotations

import argparse
import gzip
import importlib.machinery
import importlib.util
import resource
import statistics
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SEPARATOR = b"\n  },\n  {"


def load_scanner(path: Path, label: str) -> Any:
    """A scanner build loaded from its file under a module name of its own (the init function's name is
    taken from the last component, so several builds live side by side)."""
    name = f"_bench_{label}._kineto_scan"
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def blocks(data: bytes, block_bytes: int) -> list[memoryview]:
    """The events of the document cut at Kineto's separator into bare event sequences of about
    ``block_bytes``, each from an event's '{' to its '}'."""
    first = data.index(b"[", data.index(b'"traceEvents"')) + 1
    first = data.index(b"{", first)
    last = data.rindex(b"\n  }") + 4  # the end of the last event in Kineto's layout
    view = memoryview(data)
    out = []
    start = first
    while start < last:
        cut = data.rfind(SEPARATOR, start, start + block_bytes)
        if cut < 0 or start + block_bytes >= last:
            cut = last - 4
        out.append(view[start : cut + 4])
        start = cut + len(SEPARATOR) - 1
    return out


def scan_cpu(scanner: Any, pieces: list[memoryview]) -> tuple[float, float, int]:
    """CPU seconds of the scans (this thread's, user and system: the page faults of the columns written are
    system time), the system part alone, and the rows read."""
    import msgspec

    from tracelens.ingest.kineto.blocks import to_number

    rows = 0
    before = resource.getrusage(resource.RUSAGE_THREAD)
    for piece in pieces:
        result = scanner.scan_events((piece,), to_number, msgspec.json.decode)
        if result is None:
            raise SystemExit("the scanner declined a block")
        rows += result["rows"]
        del result  # its columns freed, as the reader frees most of them
    after = resource.getrusage(resource.RUSAGE_THREAD)
    system = after.ru_stime - before.ru_stime
    return after.ru_utime - before.ru_utime + system, system, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "path",
        nargs="?",
        default=str(REPO_ROOT / "benchmarks/data/kineto_tiled_406mb/rank-0.tiled.pt.trace.json"),
    )
    parser.add_argument("--mib", type=int, default=0, help="only the first MiB of the file (0: all)")
    parser.add_argument("--block-mib", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--so", action="append", default=[], help="another scanner build to time alongside")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO_ROOT))
    from tracelens.ingest import _kineto_scan

    path = Path(args.path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read(args.mib * 2**20 if args.mib else -1)
    pieces = blocks(data, args.block_mib * 2**20)
    size = sum(len(p) for p in pieces)
    scanners = {"this tree": _kineto_scan}
    for i, so in enumerate(args.so):
        scanners[f"{so}"] = load_scanner(Path(so), f"other{i}")
    times: dict[str, list[float]] = {label: [] for label in scanners}
    system: dict[str, list[float]] = {label: [] for label in scanners}
    rows: dict[str, int] = {}
    for _ in range(args.rounds):
        for label, scanner in scanners.items():
            cpu, sys_cpu, rows[label] = scan_cpu(scanner, pieces)
            times[label].append(cpu)
            system[label].append(sys_cpu)
    print(f"{path.name}: {size / 1e6:.0f} MB of events in {len(pieces)} blocks, {args.rounds} rounds")
    for label, cpu in times.items():
        best, median = min(cpu), statistics.median(cpu)
        print(
            f"  {label}: scan CPU best {best:.3f} s, median {median:.3f} s "
            f"(system part of the best {system[label][cpu.index(best)]:.3f} s; "
            f"{size / best / 1e6:.0f} MB/s per core at best), {rows[label]} rows"
        )


if __name__ == "__main__":
    main()
