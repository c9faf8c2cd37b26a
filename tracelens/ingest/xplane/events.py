"""The events of an XSpace read: where each selected line's XEvents lie in the files' bytes, and their fields
(metadata id, times, wanted stats) decoded for all events at once with numpy (:mod:`.wire`), never one Python
object per event."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from ...trace import MAX_TIME_NS
from . import wire
from .lines import Lines, select_lines
from .names import event_names
from .space import Host
from .stats import StatColumns, decode_stats, wanted_stat_filter


@dataclass
class Events:
    """Every event of the selected lines, one entry per event in each array."""

    planes: list[Any]  # the selected lines' planes (global plane index -> plane)
    n: int
    stats: StatColumns
    name_index: np.ndarray  # into ``names``
    names: list[str]  # every plane's event metadata names, then "" for an unknown id
    line_kind: np.ndarray  # lines.LINE_*
    start_ns: np.ndarray  # on the host's clock (unix ns when every host has a Task Environment start time)
    end_ns: np.ndarray
    ident: np.ndarray  # a GPU event's stream, a host event's thread
    host: np.ndarray
    device: np.ndarray  # -1 on host lines
    aggregated: np.ndarray  # num_occurrences > 0: a count, not a time
    out_of_range: np.ndarray  # a start or end beyond +-MAX_TIME_NS: a corrupt time, not on the timeline
    have_unix: bool
    line: np.ndarray  # each event's line, an index into ``line_names``
    line_names: list[str]  # the selected lines' names

    @property
    def untimed(self) -> np.ndarray:
        """Events with no place on the timeline: aggregated, or at a corrupt time."""
        return self.aggregated | self.out_of_range


def walk_events(hosts: list[Host]) -> Events:
    """Every event of the hosts' selected lines, decoded."""
    planes: list[Any] = []
    lines = select_lines(hosts, planes)
    counts = np.fromiter((len(ev) for ev in lines.events), dtype=np.int64, count=len(lines.events))
    located = _locate_events(hosts, lines, counts)
    if located is not None:
        buf, starts, ends = located
    else:  # bytes not laid out as expected: take each event's bytes from upb (one Python object each)
        event_bytes = list(chain.from_iterable(lines.events))
        lengths = np.fromiter(map(len, event_bytes), dtype=np.int64, count=len(event_bytes))
        buf = wire.joined_padded(event_bytes)
        del event_bytes
        ends = np.cumsum(lengths)
        starts = ends - lengths
    n = int(starts.size)

    event_line = np.repeat(np.arange(counts.size), counts)
    line_plane = np.asarray(lines.plane, np.int64)
    event_plane = line_plane[event_line] if n else np.empty(0, np.int64)

    line_kind = np.asarray(lines.kind, np.int64)[event_line]
    decoded = wire.walk_events(
        buf, starts, ends, wanted_stat_filter(event_plane.astype(np.int64), line_kind, planes)
    )
    mid, offset_ps, duration_ps, occurrences = (
        v.view(np.int64)
        for v in (decoded.metadata_id, decoded.offset_ps, decoded.duration_ps, decoded.num_occurrences)
    )
    stats = decode_stats(
        buf, decoded.stat_event, decoded.stat_start, decoded.stat_length, event_plane, planes, n
    )
    del decoded

    # names: (plane, metadata id) -> metadata name
    name_index, names_all = event_names(planes, event_plane, mid)

    # A line timestamp past MAX_TIME_NS / 2 is no profile-relative or Unix time (a corrupt line): its events are
    # out of range, and it is read as 0 so that no sum below wraps around int64.
    line_ts_all = np.asarray(lines.timestamp_ns, np.int64)
    bad_line = np.abs(line_ts_all) >= MAX_TIME_NS // 2
    line_ts = np.where(bad_line, 0, line_ts_all)[event_line]
    # Integer ns: floor of the exact picosecond start and end (end is not start + floor(duration)). The end's
    # floor((offset + duration) / 1000) is taken in parts, as offset_ps + duration_ps may pass 2^63.
    start_ns = line_ts + np.floor_divide(offset_ps, 1000)
    end_ns = (
        start_ns
        + np.floor_divide(duration_ps, 1000)
        + (np.remainder(offset_ps, 1000) + np.remainder(duration_ps, 1000)) // 1000
    )
    ident = np.asarray(lines.ident, np.int64)[event_line]
    host_of = np.asarray(lines.host, np.int64)[event_line]
    device_of = np.asarray(lines.device, np.int64)[event_line]

    # Absolute clock: per host profile_start_time (unix ns) when the Task Environment plane gives it.
    host_start = np.asarray([h.start_time_ns or 0 for h in hosts], np.int64)
    have_unix = all(h.start_time_ns for h in hosts)
    if have_unix:
        start_ns = start_ns + host_start[host_of]
        end_ns = end_ns + host_start[host_of]

    aggregated = occurrences > 0  # aggregated events carry a count, not a time: not on the timeline
    # (|line time| < 2^61 and |offset or duration / 1000| < 2^54, plus a start time below 2^62: no overflow above)
    out_of_range = bad_line[event_line] | (np.abs(start_ns) >= MAX_TIME_NS) | (np.abs(end_ns) >= MAX_TIME_NS)

    return Events(
        planes=planes,
        n=n,
        stats=stats,
        name_index=name_index,
        names=names_all,
        line_kind=line_kind,
        start_ns=start_ns,
        end_ns=end_ns,
        ident=ident,
        host=host_of,
        device=device_of,
        aggregated=aggregated,
        out_of_range=out_of_range,
        have_unix=have_unix,
        line=event_line,
        line_names=lines.name,
    )


def _locate_events(
    hosts: list[Host], lines: Lines, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Every selected line's XEvents as byte ranges of the files' own bytes (one buffer for all hosts).

    Planes and lines are few: their fields are walked one by one; the events inside each line are found
    by :func:`.wire.field_starts` over the line's bytes. Every count is checked against what upb
    parsed; None (the caller then asks upb for each event's bytes) when anything disagrees.
    """
    if len(hosts) == 1 and hosts[0].buffer is not None:
        data, buf = hosts[0].data, hosts[0].buffer
    else:
        data = b"".join(h.data for h in hosts)
        buf = wire.padded(data)
    base = np.cumsum([0] + [len(h.data) for h in hosts]).tolist()
    try:
        line_ranges: dict[tuple[int, int, int], tuple[int, int]] = {}
        wanted_planes = {(h, p) for h, p, _ in lines.where}
        for h, host in enumerate(hosts):
            top = wire.scalar_fields(data, base[h], base[h + 1])
            plane_ranges = [(s, e) for number, wt, s, e in top if number == 1 and wt == 2]
            if len(plane_ranges) != len(host.space.planes):
                return None
            for p, (s, e) in enumerate(plane_ranges):
                if (h, p) not in wanted_planes:
                    continue
                ranges = [
                    (ls, le)
                    for number, wt, ls, le in wire.scalar_fields(data, s, e)
                    if number == 3 and wt == 2
                ]
                if len(ranges) != len(host.space.planes[p].lines):
                    return None
                for i, r in enumerate(ranges):
                    line_ranges[(h, p, i)] = r
        bounds = np.asarray([line_ranges[w] for w in lines.where], np.int64).reshape(-1, 2)
        if bounds.size and (np.diff(bounds[:, 0]) <= 0).any():
            return None
        pos = wire.field_starts(buf, data, bounds[:, 0], bounds[:, 1], seed_tag=0x22)
        pos = pos[buf[pos] == 0x22]  # field 4 (events), length-delimited
        owner = np.searchsorted(bounds[:, 0], pos, side="right") - 1
        if not np.array_equal(np.bincount(owner, minlength=counts.size), counts):
            return None
        length, start = wire.read_varints(buf, pos + 1)
        return buf, start, start + length.astype(np.int64)
    except wire.WireError:
        return None
