"""The XSpace of one ``.xplane.pb`` file: its bytes, the parsed planes, and which of them tracelens reads
(``/host:CPU``, ``/device:GPU:N``, the ``Task Environment`` start time)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ...values import int_or_none
from . import wire
from .schema import xspace_class

HOST_PLANE = "/host:CPU"
TASK_ENV_PLANE = "Task Environment"
_GPU_PLANE = re.compile(r"^/device:GPU:(\d+)$")
MAX_GPU_INDEX = 1 << 20  # GPUs of one host; every host's are numbered after the previous hosts' (int32 ids)


def parse_xspace(data: bytes | memoryview, path: Path) -> Any:
    """Parse bytes as an XSpace (lite schema) or raise InputError naming the file."""
    from google.protobuf.message import DecodeError

    space = xspace_class(lite=True)()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        raise InputError(
            "truncated or corrupt protobuf: not a readable XSpace (.xplane.pb)", path=path
        ) from None
    names = [plane.name for plane in space.planes]
    if not any(n.startswith(("/host:", "/device:")) or n == TASK_ENV_PLANE for n in names):
        raise InputError("not a TensorFlow/JAX profiler XSpace (no /host: or /device: planes)", path=path)
    return space


def stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(stat, kind)
    return stat_names.get(value, "") if kind == "ref_value" else value


def plane_stats(plane: Any) -> dict[str, Any]:
    """A plane's own stats by name (few per plane: device properties, profile times)."""
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    return {names.get(s.metadata_id, str(s.metadata_id)): stat_value(s, names) for s in plane.stats}


@dataclass
class Host:
    """One host's planes and where its rows go (pid = host ordinal, devices shifted by an offset)."""

    path: Path
    ordinal: int
    device_offset: int
    space: Any
    start_time_ns: int | None = None  # Task Environment profile_start_time (unix ns)
    planes: list[tuple[Any, int | None]] = field(default_factory=list)  # (plane, GPU index or None=host)
    data: Any = b""  # the file's bytes (events are located in them, not copied out one by one)
    buffer: np.ndarray | None = None  # the same bytes as uint8 plus wire.PAD zeros
    plane_index: list[int] = field(default_factory=list)  # each of ``planes``' position in space.planes
    # device planes of other kinds that hold lines (``/device:TPU:0``, ``/device:CUSTOM:…``): not read
    unread_devices: list[str] = field(default_factory=list)
    # planes left out as copies of an earlier plane of the same name (its id aside: a writer or merge that wrote
    # one plane twice): read, every event counted twice (kernel time past the busy time)
    copied_planes: list[str] = field(default_factory=list)


def _read_padded(file: Path) -> np.ndarray:
    """The file's bytes as uint8 followed by ``wire.PAD`` zeros, read in place (no second copy)."""
    with open(file, "rb", buffering=0) as handle:
        size = os.fstat(handle.fileno()).st_size
        buffer = np.empty(size + wire.PAD, np.uint8)
        view = buffer.data  # a writable memoryview of the array
        got = 0
        while got < size:
            step = handle.readinto(view[got:size])
            if not step:
                break
            got += step
        if got != size or handle.read(1):  # not a regular file, or it changed size while being read
            handle.seek(0)
            return wire.padded(handle.readall())
    buffer[size:] = 0
    return buffer


def _gunzipped(file: Path) -> np.ndarray:
    """A gzip-compressed XSpace's bytes inflated, followed by ``wire.PAD`` zeros; a truncated or corrupt stream is an
    InputError naming the file (a copy cut short), not an internal error."""
    from ..compression import GZIP_ERRORS, gzip_reader

    try:
        with open(file, "rb") as raw, gzip_reader(raw) as stream:
            return wire.padded(stream.read())
    except GZIP_ERRORS as err:
        raise InputError(f"truncated or corrupt gzip stream ({err})", path=file) from None


def _content(plane: Any) -> bytes:
    """A plane's bytes but its ``id`` (field 1): two planes of equal content are one plane written twice."""
    if not plane.id:
        return plane.SerializeToString()
    clone = type(plane)()
    clone.CopyFrom(plane)
    clone.id = 0
    return clone.SerializeToString()


def load_host(file: Path, ordinal: int, device_offset: int) -> tuple[Host, int]:
    """One file's XSpace as host ``ordinal`` (its GPUs numbered from ``device_offset``), and how many device
    numbers it takes (its highest GPU index + 1)."""
    try:
        buffer = _read_padded(file)
        data = buffer.data[: buffer.size - wire.PAD]
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", path=file) from None
    if not data:
        raise InputError("file is empty", path=file)
    if bytes(data[:2]) == b"\x1f\x8b":  # gzip magic: never a valid XSpace start (0x1f is an invalid tag)
        buffer = _gunzipped(file)  # an .xplane.pb.gz (gzipped to be shared): the XSpace is inside
        data = buffer.data[: buffer.size - wire.PAD]
        if not data:
            raise InputError("gzip-compressed file that holds nothing (an empty .xplane.pb)", path=file)
    space = parse_xspace(data, file)
    host = Host(
        path=file, ordinal=ordinal, device_offset=device_offset, space=space, data=data, buffer=buffer
    )
    max_gpu = -1
    seen: dict[
        str, list[bytes]
    ] = {}  # the read planes' serialized bytes by name, kept only where names repeat
    first_of: dict[str, Any] = {}
    for in_space, plane in enumerate(space.planes):
        match = _GPU_PLANE.match(plane.name)
        if (plane.name == HOST_PLANE or match) and plane.name in first_of:
            # XProf looks a named plane up as the first of that name (FindPlaneWithName); its device tools take
            # every GPU plane and would count a copy twice. A copy (the same content, whatever its plane id: a merge
            # may number the copy anew) is read once; a same-named plane
            # of other content is read as well, its events on the same device (as a plane split in two).
            copies = seen.setdefault(plane.name, [_content(first_of[plane.name])])
            mine = _content(plane)
            if mine in copies:
                host.copied_planes.append(plane.name)
                continue
            copies.append(mine)
        first_of.setdefault(plane.name, plane)
        if plane.name == HOST_PLANE:
            host.planes.append((plane, None))
            host.plane_index.append(in_space)
        elif match:
            if int(match.group(1)) > MAX_GPU_INDEX:
                raise InputError(
                    f"GPU plane {plane.name!r}: index out of range (over {MAX_GPU_INDEX})", path=file
                )
            host.planes.append((plane, int(match.group(1))))
            host.plane_index.append(in_space)
            max_gpu = max(max_gpu, int(match.group(1)))
        elif plane.name.startswith("/device:") and len(plane.lines):
            host.unread_devices.append(plane.name)
        elif plane.name == TASK_ENV_PLANE:
            start = int_or_none(plane_stats(plane).get("profile_start_time"))
            # unix ns, added to int64 times: past 2^62 (year 2116) it is no start time
            host.start_time_ns = start if start is not None and 0 < start < 1 << 62 else None
    return host, max_gpu + 1
