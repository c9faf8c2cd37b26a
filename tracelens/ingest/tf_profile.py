"""A TensorFlow/JAX profile (a file, a run directory or a TensorBoard logdir): :func:`.tf_common.discover`
finds the run's files, then :mod:`.xplane` reads ``<host>.xplane.pb`` files and :mod:`.tf_trace_json` a run
that holds only legacy ``<host>.trace.json.gz`` files (TF 2.2-2.10 without an xplane)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..trace import Trace
from . import tf_trace_json, xplane
from .tf_common import discover


def read(path: Path, fmt: str = "xplane", run: str | None = None, **_: Any) -> Trace:
    """Read the profile at ``path`` (all hosts of one run) as a Trace."""
    path = Path(path)
    files, run_name = discover(path, run)
    if fmt == "tf-trace-json" or all(f.name.endswith(".trace.json.gz") for f in files):
        return tf_trace_json.read_files(files, source=path, run=run_name)
    return xplane.read_files([f for f in files if not f.name.endswith(".trace.json.gz")], source=path, run=run_name)
