"""Which lines of an XSpace's planes are read, and what each is: a host thread, a GPU stream, a GPU plane's
``Steps`` line or its XLA op lines (the profiler's other derived lines repeat stream activity)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .space import Host

_STREAM_LINE = re.compile(r"^Stream #(\d+)")
STEPS_LINE = "Steps"
# The HLO ops the profiler derives from the kernels of a GPU plane: read as ``gpu_annotation`` rows (never GPU
# activity), so that kernels inside an XLA collective op (all-reduce, all-gather, ...) count as collectives.
XLA_OP_LINES = frozenset({"XLA Ops", "Async XLA Ops"})
# Lines the profiler derives from the stream lines (ops, modules, name scopes, steps): never GPU activity.
DERIVED_LINES = frozenset(
    {
        "TensorFlow Ops",
        "TensorFlow Name Scope",
        "XLA Ops",
        "XLA Modules",
        "Steps",
        "Framework Ops",
        "Framework Name Scope",
        "Source code",
        "Launch Stats",
        "Async XLA Ops",
        "XLA TraceMe",
    }
)

# What a selected line is (Lines.kind).
LINE_HOST, LINE_STREAM, LINE_STEPS, LINE_XLA_OPS = 0, 1, 2, 3


@dataclass
class Lines:
    """Per selected line: owner plane (global index), kind, timestamp, tid/stream, host."""

    plane: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    timestamp_ns: list[int] = field(default_factory=list)
    ident: list[int] = field(default_factory=list)
    host: list[int] = field(default_factory=list)
    device: list[int] = field(default_factory=list)  # -1 on host lines
    events: list[Any] = field(default_factory=list)  # repeated-bytes containers
    name: list[str] = field(default_factory=list)
    where: list[tuple[int, int, int]] = field(default_factory=list)  # (host, plane in space, line in plane)


def _stream_id(line: Any) -> int:
    match = _STREAM_LINE.match(line.name) or _STREAM_LINE.match(line.display_name)
    number = int(match.group(1)) if match else None
    # the stream column is int64: a number past it in a line's name (no CUDA/HIP stream id) gives way to the line id
    return number if number is not None and number < 1 << 63 else int(line.id)


def select_lines(hosts: Sequence[Host], planes: list[Any]) -> Lines:
    """The lines whose events are read (``planes`` collects their planes, in order): host threads, GPU streams,
    and the GPU planes' ``Steps`` and XLA op lines."""
    lines = Lines()
    for host_pos, host in enumerate(hosts):
        for (plane, gpu), in_space in zip(host.planes, host.plane_index, strict=True):
            plane_index = len(planes)
            planes.append(plane)
            for line_pos, line in enumerate(plane.lines):
                if gpu is None:
                    if line.name in DERIVED_LINES:
                        continue
                    kind, ident, device = LINE_HOST, int(line.id), -1
                elif _STREAM_LINE.match(line.name) or _STREAM_LINE.match(line.display_name):
                    kind, ident, device = LINE_STREAM, _stream_id(line), host.device_offset + gpu
                elif line.name == STEPS_LINE:
                    kind, ident, device = LINE_STEPS, int(line.id), host.device_offset + gpu
                elif line.name in XLA_OP_LINES or line.display_name in XLA_OP_LINES:
                    kind, ident, device = LINE_XLA_OPS, int(line.id), host.device_offset + gpu
                else:
                    continue  # derived lines (TensorFlow Ops, XLA Modules, ...) repeat stream activity
                lines.plane.append(plane_index)
                lines.kind.append(kind)
                lines.timestamp_ns.append(int(line.timestamp_ns))
                lines.ident.append(ident)
                lines.host.append(host.ordinal)
                lines.device.append(device)
                lines.events.append(line.events)
                lines.name.append(line.name or line.display_name)
                lines.where.append((host_pos, in_space, line_pos))
    return lines
