"""Which traces make up a run: paths, globs and run directories expanded, and one rank per trace."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..ingest.captures import newest_captures

# Files a run directory may hold, one trace each (a TF logdir is one trace, read by the xplane reader).
RUN_FILE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".parquet")
TRACE_FILE_SUFFIXES = (*RUN_FILE_SUFFIXES, ".nsys-rep", ".qdrep", ".xplane.pb", ".xplane.pb.gz")

_RANK_PATTERNS = (
    re.compile(r"(?<![a-z])rank[-_]?(\d+)", re.IGNORECASE),
    re.compile(r"[-_](\d+)\.(?:pt\.)?(?:trace\.)?(?:json|sqlite|parquet|xplane|nsys)", re.IGNORECASE),
    re.compile(r"[-_](\d+)\."),
)


def _is_trace_file(path: Path) -> bool:
    """A trace's name on anything but a directory: also a link to a missing file, a link loop or a pipe (so named,
    it is a trace the run cannot read, named as such: ``analyze_run``), not left out unsaid."""
    return not path.is_dir() and path.name.lower().endswith(TRACE_FILE_SUFFIXES)


def _run_files(directory: Path, newest: bool = True) -> list[Path]:
    """The directory's trace files: not an analysis document saved beside them (``analyze DIR -o DIR/x.json``, a
    diff's JSON), which would read as a rank whose trace failed, the run then exiting 1 on its own output; and
    (``newest``) not a process's earlier Kineto captures where it has several (they are not ranks). An entry named
    as a rank's trace that is no regular file (a link to a missing file, a link loop, a pipe) is one: the run names
    it as a trace it could not read, rather than analyze fewer ranks than the directory holds without a word."""
    from ..document import looks_like_document

    files = [
        f
        for f in directory.iterdir()
        if not f.is_dir()
        and not f.name.startswith(".")
        and f.name.lower().endswith(RUN_FILE_SUFFIXES)
        and not (f.name.lower().endswith(".json") and looks_like_document(f))
    ]
    return newest_captures(files)[0] if newest else files


def capture_notes(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Per run directory among ``paths``, a note per process whose earlier Kineto captures it left out."""
    return [
        note
        for p in paths
        if is_run_directory(p)
        for note in newest_captures(_run_files(Path(p), newest=False))[1]
    ]


def is_run_directory(path: str | os.PathLike[str]) -> bool:
    """A directory holding several trace files (Kineto json/json.gz, nsys sqlite, tracelens parquet) at its
    top level, one per rank; not a TF logdir (xplanes of one run, which the xplane reader takes)."""
    p = Path(path)
    if not p.is_dir():
        return False
    if any(p.rglob("*.xplane.pb")) or any(p.rglob("*.xplane.pb.gz")):
        return False
    return len(_run_files(p)) >= 2


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def expand_paths(paths: Sequence[str | os.PathLike[str]], notes: list[str] | None = None) -> list[Path]:
    """Traces named by ``paths``: files as given, run directories as their trace files, globs expanded
    (shells on some platforms do not). Sorted naturally (rank2 before rank10) within each argument. A file named
    twice (by any path) is read once; ``notes``: a line for each such file appended (a run of two traces named
    ``rank0.json rank0.json``, a slip for rank1, read as one rank without a word)."""
    found: list[Path] = []
    for raw in paths:
        text = str(raw)
        p = Path(text)
        if not p.exists() and glob.has_magic(text):
            matches = [Path(m) for m in glob.glob(os.path.expanduser(text), recursive=True)]
            matches = [m for m in matches if _is_trace_file(m) or (m.is_dir() and not m.name.startswith("."))]
            if not matches:
                raise InputError("no trace file matches this pattern", path=text)
            for m in sorted(matches, key=_natural_key):
                found.extend(sorted(_run_files(m), key=_natural_key) if is_run_directory(m) else [m])
        elif p.is_dir() and is_run_directory(p):
            found.extend(sorted(_run_files(p), key=_natural_key))
        else:
            found.append(p)  # a file or a TF logdir; the reader says when it is neither
    unique: dict[str, Path] = {}
    for f in found:
        first = unique.setdefault(os.path.realpath(f), f)
        if first is not f and notes is not None:
            also = "" if str(first) == str(f) else f" (as {first})"
            notes.append(f"{f}: named more than once{also}: read once")
    return list(unique.values())


def rank_from_name(path: str | os.PathLike[str]) -> int | None:
    """The rank a file name states: ``rank-3``, ``rank_3``, ``rank3`` or a trailing ``_3.``/``-3.``."""
    name = Path(path).name
    for pattern in _RANK_PATTERNS:
        match = pattern.search(name)
        if match:
            return int(match.group(1))
    return None


def resolve_ranks(metadata_ranks: Sequence[int | None], paths: Sequence[Path]) -> tuple[list[int], list[str]]:
    """One distinct rank per trace: the trace's own (``distributedInfo``), else its file name's, else order.

    When the stated ranks are missing or collide, every trace is numbered by its position instead (a
    partial numbering would risk two traces claiming one rank) and a warning says so.
    """
    candidates = [
        meta if meta is not None else rank_from_name(path)
        for meta, path in zip(metadata_ranks, paths, strict=True)
    ]
    if all(c is not None for c in candidates) and len(set(candidates)) == len(candidates):
        return [int(c) for c in candidates], []  # type: ignore[arg-type]
    known = [c for c in candidates if c is not None]
    why = "collide" if len(set(known)) < len(known) else "are missing for some traces"
    warning = f"ranks stated by the traces or their names {why}; numbered by position instead"
    return list(range(len(paths))), [warning]


def read_ranks(path: str | os.PathLike[str], **options: Any) -> tuple[list[Path], list[Any], list[str]]:
    """The traces of the run directory ``path`` read in this process (``tracelens annotate``: one timeline), with
    their files; each that cannot be opened or read is left out and named (one line each), as :func:`analyze_run`
    leaves such a trace out: a run of which no trace reads is bad input. (annotate refused the whole run for one.)"""
    from ..errors import input_problem
    from ..ingest import load

    files, traces, failures = [], [], []
    for file in expand_paths([path]):  # a loop over the run's files
        try:
            problem = input_problem(file)
            if problem is not None:
                raise problem
            traces.append(load(file, **options))
            files.append(file)
        except InputError as err:
            failures.append(str(err))
    if not traces:
        raise InputError("no trace of the run could be read: " + "; ".join(failures))
    return files, traces, failures
