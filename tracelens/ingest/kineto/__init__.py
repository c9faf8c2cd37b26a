"""Reader for PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped, every generation since 2021.

``read(path)`` returns a :class:`~tracelens.trace.Trace`. Field-by-field mapping, generations handled, the time
rounding rule and the engines' figures: ``docs/formats/kineto.md``.

How: the file is decompressed in blocks (:mod:`.split`). Kineto writes each event at a fixed indentation, so
every block is cut after its last complete event (in other layouts, after the last top-level comma the
scanner finds), and the block's events become numpy columns (:mod:`.blocks`), made ready row by row
(:mod:`.prepare`) on whichever thread is free first (:mod:`.shared_steps`: the worker that scanned the block or
the thread that inflates), while the next blocks are read, so peak memory is the columns plus the few blocks in
flight. Two engines make a block's columns, the same
columns (tested on every real trace and fixture):

- native (:mod:`.native`, the default wherever ``pip install`` could compile ``_kineto_scan.c``): a
  columnar scanner that releases the GIL, several blocks at once on worker threads (:mod:`.reader`);
- msgspec (:mod:`.msgspec_engine`, the reference): typed structs holding only the fields read; it reads the
  blocks the scanner declines (invalid JSON, a field of another type), and every block where the scanner
  was not built.

The blocks' columns are then joined in file order into the event table, device table and metadata
(:mod:`.table`), put in the order of their start times (:mod:`.placing`: row columns gathered, and the records
only some rows have placed at their table rows), each column built as the event store keeps it
(:mod:`.stored`: a column few rows carry straight from those rows).
"""

from __future__ import annotations

from .fields import NATIVE_FLOATS, NATIVE_OP_FLOATS, NATIVE_OP_STRINGS, NATIVE_ROW_FLOATS
from .reader import read

# The scanner the native engine uses (native.scanner() reads it here): built from _kineto_scan.c at install
# time when a C compiler is there. Tests and benchmarks swap in other builds by setting this attribute.
try:
    from .. import _kineto_scan
except ImportError:  # pragma: no cover - then msgspec reads every block
    _kineto_scan = None  # type: ignore[assignment]  # the module, or None without one
if _kineto_scan is not None and (
    _kineto_scan.N_FLOATS,
    getattr(_kineto_scan, "N_ROW_FLOATS", -1),
    getattr(_kineto_scan, "N_OP_FLOATS", -1),
    getattr(_kineto_scan, "N_OP_STRINGS", -1),
) != (
    len(NATIVE_FLOATS),
    len(NATIVE_ROW_FLOATS),
    len(NATIVE_OP_FLOATS),
    len(NATIVE_OP_STRINGS),
):  # pragma: no cover
    _kineto_scan = None  # type: ignore[assignment]  # a stale build of the scanner: do not trust its layout


def native_scanner_built() -> bool:
    """Whether the native scanner is there (built at install time with a C compiler, and of this layout)."""
    return _kineto_scan is not None


__all__ = ["native_scanner_built", "read"]
