"""Readers: one module per source format, each returning the same :class:`~tracelens.trace.Trace`.

``load(path)`` detects the format from the file's content (magic bytes, JSON keys), falling back on the
name only where the content cannot tell (a raw protobuf has no magic).
"""

from __future__ import annotations

import gzip
import importlib
import os
import zlib
from codecs import BOM_UTF8
from pathlib import Path
from typing import Any

from ..errors import InputError, UnsupportedFormatError, not_found
from ..trace import Trace
from .captures import newest_captures

# format name -> module under tracelens.ingest that has `read(path, **options) -> Trace`
READERS = {
    "kineto": "kineto",
    "nsys": "nsys",
    "nsys-rep": "nsys",
    "xplane": "tf_profile",  # .xplane.pb files, or a run of legacy trace.json.gz
    "tf-trace-json": "tf_profile",
    "parquet": "parquet",
}

_SQLITE_MAGIC = b"SQLite format 3\x00"
_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
# Bytes near the start of a PyTorch profiler (Kineto) JSON that TensorFlow's trace JSON never has: the
# header keys Kineto writes before traceEvents, or the category of its first events.
_KINETO_MARKERS = (
    b"PyTorch",
    b'"schemaVersion"',
    b'"deviceProperties"',
    b'"distributedInfo"',
    b'"baseTimeNanoseconds"',
    b'"cpu_op"',
    b'"user_annotation"',
    b'"Operator"',
    b'"cuda_runtime"',
    b'"python_function"',
)


# The TF profiler's process names (its trace JSON names processes after the XSpace planes): such a file saved
# under another name than <host>.trace.json.gz is still TensorFlow's, not Kineto's. A TF 1.x RunMetadata timeline
# names them after TF's devices ("/job:localhost/replica:0/task:0/device:CPU:0 Compute"): one of a CPU-only run was
# read as an empty Kineto trace ("record with torch.profiler").
_TF_PROCESS_MARKERS = (b'"/host:CPU"', b'"/device:GPU:', b'"/job:')


# Compressions tracelens does not read, by their magic bytes: named, not "not JSON" or "unknown format".
_OTHER_COMPRESSION = {
    b"\x28\xb5\x2f\xfd": ("zstd", "zstd -d"),
    b"\xfd7zXZ\x00": ("xz", "unxz -k"),
    **{b"BZh" + bytes([d]): ("bzip2", "bunzip2 -k") for d in b"123456789"},
    b"\x04\x22\x4d\x18": ("lz4", "lz4 -d"),
    b"PK\x03\x04": ("zip", "unzip"),
}


def _gzipped(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC


def _peek(path: Path, n: int = 4096) -> bytes:
    with open(path, "rb") as fh:
        head = fh.read(n)
    if head.startswith(_GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as gz:
                return gz.read(n)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"not a readable gzip file ({err})", path=path) from None
    return head


def _has_xplane_files(directory: Path) -> bool:
    # TF 2.2-2.10's <host>.trace.json.gz beside its xplanes; not the .pt.trace.json.gz a Kineto capture is
    # named by tensorboard_trace_handler(use_gzip=True), which read as a TF logdir ("holds no host or GPU events")
    return (
        any(directory.rglob("*.xplane.pb"))
        or any(directory.rglob("*.xplane.pb.gz"))
        or any(not f.name.lower().endswith(".pt.trace.json.gz") for f in directory.rglob("*.trace.json.gz"))
    )


# A directory holding one of these (top level) is that trace: ``nsys profile -o report1 --export sqlite`` leaves
# report1.nsys-rep beside report1.sqlite, a Kineto run one JSON file.
_SINGLE_TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".parquet", ".nsys-rep", ".qdrep")


def _directory_traces(directory: Path, newest: bool = True) -> list[Path]:
    """The trace files at the top of ``directory``, a report left out where its SQLite export sits beside it, and
    (``newest``) a process's earlier Kineto captures where it has several (:mod:`.captures`)."""
    files = [
        f
        for f in sorted(directory.iterdir())
        if f.is_file() and not f.name.startswith(".") and f.name.lower().endswith(_SINGLE_TRACE_SUFFIXES)
    ]
    reports = {f.stem for f in files if f.name.lower().endswith((".nsys-rep", ".qdrep"))}
    # tracelens's own cached export of a report beside it (<stem>.tracelens.sqlite): the report stands for it
    # (and uses it while it is fresh)
    files = [
        f
        for f in files
        if not (f.name.endswith(".tracelens.sqlite") and f.name[: -len(".tracelens.sqlite")] in reports)
    ]
    exported = {f.name[: -len(".sqlite")] for f in files if f.name.lower().endswith(".sqlite")}
    files = [
        f for f in files if not (f.name.lower().endswith((".nsys-rep", ".qdrep")) and f.stem in exported)
    ]
    return newest_captures(files)[0] if newest else files


def single_trace(path: str | os.PathLike[str]) -> Path:
    """``path``, or the one trace file of a directory holding exactly one (not a TF logdir)."""
    p = Path(path)
    if p.is_dir() and not _has_xplane_files(p):
        traces = _directory_traces(p)
        if len(traces) == 1:
            return traces[0]
    return p


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name the format of ``path`` (a key of :data:`READERS`) or raise :class:`InputError`."""
    p = Path(path)
    if not p.exists():
        raise not_found(p)
    if p.is_dir():
        if _has_xplane_files(p):
            return "xplane"
        traces = _directory_traces(p)
        if len(traces) == 1:
            return detect_format(traces[0])
        if any(p.rglob("*.pb")) or any(p.rglob("plugins/profile")):
            # derived files of old TF (overview_page.pb, ...) or an empty TensorBoard logdir: the xplane
            # reader explains what is missing.
            return "xplane"
        if traces:
            named = ", ".join(f.name for f in traces[:4]) + (", ..." if len(traces) > 4 else "")
            raise InputError(f"directory holds {len(traces)} traces ({named}): name the one to read", path=p)
        raise InputError("directory holds no trace (.json[.gz], .sqlite, .nsys-rep or .xplane.pb)", path=p)
    if p.stat().st_size == 0:
        raise InputError("file is empty", path=p)
    if p.name.endswith((".nsys-rep", ".qdrep")):
        return "nsys-rep"
    head = _peek(p)
    if head.startswith((_SQLITE_MAGIC, _PARQUET_MAGIC)) and _gzipped(p):  # the readers open the file itself
        what = "SQLite database" if head.startswith(_SQLITE_MAGIC) else "Parquet file"
        raise InputError(f"a gzip-compressed {what}: decompress it first (gunzip -k)", path=p)
    if head.startswith(_SQLITE_MAGIC):
        return "nsys"
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    for magic, (kind, tool) in _OTHER_COMPRESSION.items():
        if head.startswith(magic):
            raise InputError(
                f"{kind}-compressed: tracelens reads plain or gzip-compressed traces; decompress it first ({tool})",
                path=p,
            )
    stripped = head.removeprefix(
        BOM_UTF8
    ).lstrip()  # a byte-order mark before JSON text may be ignored (RFC 8259)
    if stripped[:1] in (b"{", b"["):
        if (
            (p.name.endswith(".trace.json.gz") or any(marker in head for marker in _TF_PROCESS_MARKERS))
            and b'"traceEvents"' in head
            and not any(marker in head for marker in _KINETO_MARKERS)
        ):
            return "tf-trace-json"
        return "kineto"
    if p.name.endswith(".pb"):
        return "xplane"
    # The name decides before the weak content guess below (a raw protobuf has no magic, only a likely
    # first byte): random bytes named .sqlite are a broken SQLite file, not an xplane.
    if p.suffix in (".sqlite", ".db"):
        raise InputError("not an SQLite database (bad header)", path=p)
    if head[:1] == b"\x0a":
        return "xplane"
    if p.name.endswith((".json", ".json.gz")):
        raise InputError("not JSON (does not start with '{' or '[')", path=p)
    raise UnsupportedFormatError(
        "unknown trace format (expected Kineto JSON, Nsight Systems SQLite/.nsys-rep, or TF .xplane.pb)",
        path=p,
    )


def load(path: str | os.PathLike[str], **options: Any) -> Trace:
    """Read any supported trace into a :class:`Trace`, with derived per-kernel columns filled in."""
    directory = Path(path) if Path(path).is_dir() else None
    path = single_trace(path)  # a directory of one trace: that file (the reader is given the file)
    fmt = detect_format(path)
    module = importlib.import_module(f"{__name__}.{READERS[fmt]}")
    from ..enrich import enrich
    from ..memory import release_free_memory, reusing_array_pages, small_pages

    # A read maps and frees event-sized buffers again and again: big numpy arrays take the pages of those freed
    # before, and new pages come small where fresh huge pages are dear (memory.py).
    try:
        with small_pages(), reusing_array_pages(unmap_at_end=False):
            trace: Trace = module.read(Path(path), fmt=fmt, **options)
            trace = enrich(trace)
        if directory is not None and Path(path) != directory:  # captures of one process: which one was read
            trace.metadata.warnings.extend(newest_captures(_directory_traces(directory, newest=False))[1])
    finally:
        # what the read freed in its threads' heaps (hundreds of MB), before analyses allocate, and the big arrays'
        # cached pages unless the caller holds a scope open for what follows (the CLI): by a thread of their own,
        # the load returning at once (~6 ms of the kernel's page freeing after the 406 MB Kineto tile); also after
        # a read that failed, whose scope left its pages mapped for this
        release_free_memory(cached_pages=False, behind=True)
    return trace
