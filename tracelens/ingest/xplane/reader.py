"""Reading XSpace files: :func:`read` (a file, a run directory or a TensorBoard logdir) and :func:`read_files`
(the files of one run, one host each)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...trace import Trace
from ..kineto.stream_order import cut_impossible_ends
from ..tf_common import discover
from . import wire
from .build import build_trace
from .events import walk_events
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
    """One Trace from the XSpace files of one run: host ``i`` is the ``i``-th readable file, its GPUs numbered
    after the previous hosts' GPUs.

    A file of a several-file run that cannot be read (empty, truncated, corrupt, not an XSpace) is left out and
    named: in ``metadata.warnings`` and ``metadata.extra["unread_host_files"]`` (``{file, error}``); the other
    hosts' profiles are whole and answer for their GPUs. A lone file, or a run with no readable file, raises
    :class:`InputError`."""
    loaded: list[tuple[Host, int]] = []
    unread: list[tuple[Path, InputError]] = []
    duplicates: list[str] = []
    for file in files:
        try:
            host, count = load_host(file, len(loaded), 0)
        except InputError as err:
            if len(files) == 1:
                raise
            unread.append((file, err))
            continue
        # A link or a copy of a host file ("latest.xplane.pb") is that host's profile again, not another host: two
        # hosts never write the same bytes (host names, times).
        same = next((h for h, _ in loaded if len(h.data) == len(host.data) and h.data == host.data), None)
        if same is not None:
            duplicates.append(
                f"{file.name}: the same profile as {same.path.name} (a link or a copy): read once"
            )
            continue
        loaded.append((host, count))
    if not loaded:
        raise _none_readable(unread, source)
    try:
        trace = _build(loaded, source, run)
    except wire.WireError as err:
        if len(loaded) == 1 and not unread:
            raise InputError(f"corrupt XEvent bytes ({err})", path=source) from None
        # Which host's events are corrupt: each walked alone (on this error path only), the others read again.
        why = [_corrupt_events(host) for host, _ in loaded]
        if not any(why):  # no one host's bytes alone (never seen): the run as a whole
            raise InputError(f"corrupt XEvent bytes ({err})", path=source) from None
        unread += [
            (host.path, InputError(f"corrupt XEvent bytes ({w})"))
            for (host, _), w in zip(loaded, why, strict=True)
            if w
        ]
        loaded = [pair for pair, w in zip(loaded, why, strict=True) if not w]
        if not loaded:
            raise _none_readable(unread, source) from None
        trace = _build(loaded, source, run)
    trace.metadata.warnings.extend(duplicates)
    if unread:
        total = len(loaded) + len(unread)
        for file, problem in unread:
            trace.metadata.warnings.append(
                f"{file.name}: not read ({problem.message}): this host is not in any figure "
                f"({len(unread)} of {total} host files)"
            )
        trace.metadata.extra["unread_host_files"] = [{"file": str(f), "error": e.message} for f, e in unread]
        trace.metadata.extra["host_files"] = total
    return trace


def _none_readable(unread: list[tuple[Path, InputError]], source: Path) -> InputError:
    shown = "; ".join(f"{f.name}: {err.message}" for f, err in unread[:5])
    more = f"; and {len(unread) - 5} more" if len(unread) > 5 else ""
    return InputError(f"no host file of the run could be read: {shown}{more}", path=source)


def _build(loaded: list[tuple[Host, int]], source: Path, run: str | None) -> Trace:
    """The hosts as one Trace, numbered in order: host ``i`` is pid ``i``, its GPUs after the previous hosts'."""
    offset = 0
    for ordinal, (host, device_count) in enumerate(loaded):
        host.ordinal, host.device_offset = ordinal, offset
        offset += device_count
    # TF's and XLA's GPU tracers read the same CUPTI/ROCm records as Kineto: a lost or corrupt end timestamp makes
    # an op outlast later ops of its stream here too (cut as there, with a warning)
    return cut_impossible_ends(build_trace([host for host, _ in loaded], source, run))


def _corrupt_events(host: Host) -> str | None:
    """Why this host's events cannot be walked (None: they can)."""
    try:
        walk_events([host])
    except wire.WireError as err:
        return str(err)
    return None
