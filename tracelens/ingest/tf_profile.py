"""A TensorFlow/JAX profile (a file, a run directory or a TensorBoard logdir): :func:`.tf_common.discover`
finds the run's files, then :mod:`.xplane` reads ``<host>.xplane.pb`` files and :mod:`.tf_trace_json` a run
that holds only legacy ``<host>.trace.json.gz`` files (TF 2.2-2.10 without an xplane).

A TensorBoard plugin file given by name (``<host>.overview_page.pb``, ``.input_pipeline.pb``, ...: summaries
the profiler plugin derived, not traces), or a legacy ``<host>.trace.json.gz`` with an xplane beside it, is
read as the ``.xplane.pb`` beside it, with a warning in the trace saying so; a plugin file with no xplane
beside it is refused in one line naming what to pass instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from ..trace import Trace
from . import tf_trace_json, xplane
from .tf_common import (
    DERIVED_FILE_SUFFIXES,
    discover,
    older_runs,
    other_traces,
    run_choice_note,
    xplane_files,
)


def read(path: Path, fmt: str = "xplane", run: str | None = None, **_: Any) -> Trace:
    """Read the profile at ``path`` (all hosts of one run) as a Trace."""
    path = Path(path)
    beside = _xplanes_instead_of(path)
    if beside is not None:
        trace = xplane.read_files(beside, source=path.parent, run=path.parent.name)
        what = (
            "a TensorBoard plugin file (a summary, not a trace)"
            if path.name.endswith(DERIVED_FILE_SUFFIXES)
            else "the legacy trace JSON of a run that also has an xplane (the full profile)"
        )
        trace.metadata.warnings.append(
            f"{path.name} is {what}: read {', '.join(f.name for f in beside)} beside it"
        )
        return trace
    files, run_name = discover(path, run)
    try:
        if fmt == "tf-trace-json" or all(f.name.endswith(".trace.json.gz") for f in files):
            trace = tf_trace_json.read_files(files, source=path, run=run_name)
        else:
            trace = xplane.read_files(
                [f for f in files if not f.name.endswith(".trace.json.gz")], source=path, run=run_name
            )
    except InputError as err:
        # The newest run of a logdir, unreadable (a profile interrupted while written: a truncated file): the older
        # runs are a --run away, and the line says so
        older = older_runs(path, run, run_name)
        if not older:
            raise
        raise InputError(
            f"{err.message} (in the newest profile run, {run_name}; older runs hold a profile: --run {older[0]} "
            f"reads the newest of them)",
            path=err.path,
        ) from None
    note = run_choice_note(path, run, run_name)
    if note:
        trace.metadata.warnings.append(note)
    others = other_traces(path)
    if others:
        named = ", ".join(f.name for f in others[:4]) + (
            f", … ({len(others) - 4} more)" if len(others) > 4 else ""
        )
        trace.metadata.warnings.append(
            f"this folder also holds {len(others)} trace file{'s' if len(others) > 1 else ''} of another format "
            f"({named}), not read: only the TensorFlow/JAX profile was; pass a file by name to read it"
        )
    return trace


def _xplanes_instead_of(path: Path) -> list[Path] | None:
    """The ``.xplane.pb`` files to read in place of a plugin file or a legacy trace JSON given by name."""
    if not path.is_file():
        return None
    plugin = path.name.endswith(DERIVED_FILE_SUFFIXES)
    if not (plugin or path.name.endswith(".trace.json.gz")):
        return None
    xplanes = xplane_files(path.parent)
    if plugin and not xplanes:
        raise InputError(
            "a TensorBoard profile plugin file (a summary the plugin derived, not a trace), and no "
            ".xplane.pb lies beside it: pass the run's <host>.xplane.pb, its folder or the logdir",
            path=path,
        )
    return xplanes or None
