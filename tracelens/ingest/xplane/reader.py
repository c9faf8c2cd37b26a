"""Reading XSpace files: :func:`read` (a file, a run directory or a TensorBoard logdir) and :func:`read_files`
(the files of one run, one host each)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...trace import Trace
from ..tf_common import discover
from . import wire
from .build import build_trace
from .space import Host, load_host


def read(path: Path, fmt: str = "xplane", run: str | None = None, **_: Any) -> Trace:
    """Read a ``.xplane.pb``, a run directory or a TensorBoard logdir (all hosts of one run) as a Trace.

    A run that holds only legacy ``trace.json.gz`` files is read by :mod:`..tf_trace_json`
    (:func:`tracelens.load` and :func:`..tf_profile.read` choose between the two)."""
    path = Path(path)
    files, run_name = discover(path, run)
    xplanes = [f for f in files if not f.name.endswith(".trace.json.gz")]
    if fmt == "tf-trace-json" or not xplanes:
        raise InputError(
            "holds legacy trace.json.gz files, not an XSpace: read it with tracelens.load", path=path
        )
    return read_files(xplanes, source=path, run=run_name)


def read_files(files: Sequence[Path], source: Path, run: str | None = None) -> Trace:
    """One Trace from the XSpace files of one run: host ``i`` is ``files[i]``, its GPUs numbered after the
    previous hosts' GPUs."""
    hosts: list[Host] = []
    device_offset = 0
    for ordinal, file in enumerate(files):
        host, device_count = load_host(file, ordinal, device_offset)
        device_offset += device_count
        hosts.append(host)
    try:
        return build_trace(hosts, source, run)
    except wire.WireError as err:
        raise InputError(f"corrupt XEvent bytes ({err})", path=source) from None
