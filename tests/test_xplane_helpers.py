"""Test-side protobuf wire code for XSpace, written independently of tracelens's reader.

A tiny encoder (to hand-build XSpace files with known numbers) and a plain per-message decoder (to
compute expectations from real files). Field numbers from tsl/profiler/protobuf/xplane.proto.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

# ------------------------------------------------------------------------------------------ encoder


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 are written as 10-byte two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def vfield(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def lfield(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return varint((number << 3) | 2) + varint(len(data)) + data


def stat(
    metadata_id: int,
    *,
    int64: int | None = None,
    uint64: int | None = None,
    string: str | None = None,
    ref: int | None = None,
    double: float | None = None,
) -> bytes:
    out = vfield(1, metadata_id)
    if double is not None:
        out += varint((2 << 3) | 1) + struct.pack("<d", double)
    if uint64 is not None:
        out += vfield(3, uint64)
    if int64 is not None:
        out += vfield(4, int64)
    if string is not None:
        out += lfield(5, string)
    if ref is not None:
        out += vfield(7, ref)
    return out


def event(
    metadata_id: int,
    offset_ps: int | None = None,
    duration_ps: int = 0,
    stats: list[bytes] = (),
    num_occurrences: int | None = None,
) -> bytes:
    out = vfield(1, metadata_id)
    if offset_ps is not None:
        out += vfield(2, offset_ps)
    if duration_ps:
        out += vfield(3, duration_ps)
    for s in stats:
        out += lfield(4, s)
    if num_occurrences is not None:
        out += vfield(5, num_occurrences)
    return out


def line(line_id: int, name: str, timestamp_ns: int, events: list[bytes]) -> bytes:
    out = vfield(1, line_id) + lfield(2, name) + vfield(3, timestamp_ns)
    for e in events:
        out += lfield(4, e)
    return out


def plane(
    plane_id: int,
    name: str,
    lines: list[bytes],
    event_names: dict[int, str],
    stat_names: dict[int, str],
    stats: list[bytes] = (),
) -> bytes:
    out = vfield(1, plane_id) + lfield(2, name)
    for ln in lines:
        out += lfield(3, ln)
    for key, nm in event_names.items():
        out += lfield(4, vfield(1, key) + lfield(2, vfield(1, key) + lfield(2, nm)))
    for key, nm in stat_names.items():
        out += lfield(5, vfield(1, key) + lfield(2, vfield(1, key) + lfield(2, nm)))
    for s in stats:
        out += lfield(6, s)
    return out


def space(planes: list[bytes], hostnames: list[str] = ()) -> bytes:
    out = b"".join(lfield(1, p) for p in planes)
    for h in hostnames:
        out += lfield(4, h)
    return out


# ------------------------------------------------------------------------------------------ decoder


def fields(data: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of each field; value is int, or bytes for length-delimited."""
    pos, end = start, len(data) if end is None else end
    while pos < end:
        tag, pos = _read_varint(data, pos)
        number, wt = tag >> 3, tag & 7
        if wt == 0:
            value, pos = _read_varint(data, pos)
        elif wt == 1:
            value, pos = struct.unpack_from("<Q", data, pos)[0], pos + 8
        elif wt == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wt == 5:
            value, pos = struct.unpack_from("<I", data, pos)[0], pos + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield number, wt, value


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def signed(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def decode_space(data: bytes) -> list[dict]:
    """Planes as dicts: name, stat_names {id: name}, event_names {id: name}, lines [{id, name, ts, events}]."""
    planes = []
    for number, _, value in fields(data):
        if number == 1:
            planes.append(_decode_plane(value))
    return planes


def _decode_plane(data: bytes) -> dict:
    out: dict = {"name": "", "lines": [], "event_names": {}, "stat_names": {}}
    for number, _, value in fields(data):
        if number == 2:
            out["name"] = value.decode()
        elif number == 3:
            out["lines"].append(_decode_line(value))
        elif number in (4, 5):
            key, name = 0, ""
            for n2, _, v2 in fields(value):
                if n2 == 1:
                    key = signed(v2)
                elif n2 == 2:
                    for n3, _, v3 in fields(v2):
                        if n3 == 2:
                            name = v3.decode()
            out["event_names" if number == 4 else "stat_names"][key] = name
    return out


def _decode_line(data: bytes) -> dict:
    out: dict = {"id": 0, "name": "", "ts": 0, "events": []}
    for number, _, value in fields(data):
        if number == 1:
            out["id"] = signed(value)
        elif number == 2:
            out["name"] = value.decode()
        elif number == 3:
            out["ts"] = signed(value)
        elif number == 4:
            ev: dict = {"mid": 0, "offset_ps": 0, "duration_ps": 0, "occurrences": 0, "stats": {}}
            for n2, _, v2 in fields(value):
                if n2 == 1:
                    ev["mid"] = signed(v2)
                elif n2 == 2:
                    ev["offset_ps"] = signed(v2)
                elif n2 == 3:
                    ev["duration_ps"] = signed(v2)
                elif n2 == 5:
                    ev["occurrences"] = signed(v2)
                elif n2 == 4:
                    sid, sval = 0, None
                    for n3, _wt3, v3 in fields(v2):
                        if n3 == 1:
                            sid = v3
                        else:
                            sval = ("ref", v3) if n3 == 7 else v3
                    ev["stats"][sid] = sval
            out["events"].append(ev)
    return out
