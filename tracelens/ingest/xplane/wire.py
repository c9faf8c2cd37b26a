"""Vectorized protobuf wire-format walking for many small messages at once (numpy, no per-message Python).

The xplane reader lets upb split each line into its serialized events (``repeated bytes``), joins them
into one buffer and walks every event's fields here in lock step: iteration *k* reads the *k*-th field
of every event that still has bytes left. An XEvent has a handful of fields, so the loop runs a few
dozen times whatever the number of events. Same for the stats inside events.

Malformed input (a length running past its message, an unknown wire type, a varint over 10 bytes)
raises :class:`WireError`; the reader turns it into an ``InputError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Zero bytes appended to the buffer so that reads a few bytes past a message's end stay in bounds.
PAD = 16


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def padded(blob: bytes) -> np.ndarray:
    """The blob as uint8 with :data:`PAD` trailing zeros (the walkers read up to 10 bytes ahead)."""
    buf = np.zeros(len(blob) + PAD, dtype=np.uint8)
    buf[: len(blob)] = np.frombuffer(blob, dtype=np.uint8)
    return buf


def joined_padded(parts: list[bytes]) -> np.ndarray:
    """``padded(b"".join(parts))`` with one copy fewer (read-only view of the joined bytes)."""
    parts.append(bytes(PAD))
    try:
        return np.frombuffer(b"".join(parts), dtype=np.uint8)
    finally:
        parts.pop()


_HIGH_BITS = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)


def _words(buf: np.ndarray) -> np.ndarray:
    """An unaligned little-endian uint64 view starting at every byte of ``buf`` (no copy)."""
    return np.ndarray(shape=(buf.size - 7,), dtype="<u8", buffer=buf, offset=0, strides=(1,))


def read_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode the varint starting at each position: (values as uint64, position after each varint).

    Reads 8 bytes per position as one uint64 and folds the 7-bit groups with shifts and masks (no
    per-byte loop); the rare varints longer than 8 bytes (>= 2**56, negative int64) take a byte loop.
    """
    pos = np.asarray(pos, dtype=np.int64)
    first = buf[pos]
    multi = np.flatnonzero(first >= 0x80)
    if multi.size == 0:  # tags, lengths and small ids: one byte
        return first.astype(np.uint64), pos + 1
    if multi.size < pos.size:
        values = first.astype(np.uint64)
        after = pos + 1
        values[multi], after[multi] = _read_multibyte_varints(buf, pos[multi])
        return values, after
    return _read_multibyte_varints(buf, pos)


def _read_multibyte_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    words = _words(buf)[pos]
    terminal = ~words
    terminal &= _HIGH_BITS  # high bit clear marks a varint's last byte
    mask = terminal & (~terminal + np.uint64(1))  # lowest set bit, 0 when no last byte in 8
    found = mask != 0
    mask <<= np.uint64(1)
    mask -= np.uint64(1)  # ones over the bytes up to and including the last one
    words &= mask
    words &= _LOW7
    x = words
    x = ((x & np.uint64(0x7F007F007F007F00)) >> np.uint64(1)) | (x & np.uint64(0x007F007F007F007F))
    x = ((x & np.uint64(0x3FFF00003FFF0000)) >> np.uint64(2)) | (x & np.uint64(0x00003FFF00003FFF))
    values = ((x & np.uint64(0x0FFFFFFF00000000)) >> np.uint64(4)) | (x & np.uint64(0x000000000FFFFFFF))
    after = pos + (np.bitwise_count(mask) >> 3).astype(np.int64)
    if not found.all():
        long = np.flatnonzero(~found)
        values[long], after[long] = _read_long_varints(buf, pos[long])
    return values, after


def _read_long_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.zeros(pos.size, dtype=np.uint64)
    after = np.full(pos.size, -1, dtype=np.int64)
    for k in range(10):
        byte = buf[pos + k]
        undone = after < 0
        values[undone] |= (byte[undone] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        after[undone & (byte < 0x80)] = pos[undone & (byte < 0x80)] + k + 1
    if (after < 0).any():
        raise WireError("varint longer than 10 bytes")
    return values, after


@dataclass
class Fields:
    """Every field of every walked message, flattened: message index, field number and value.

    For varint fields ``value`` holds the number (uint64; reinterpret as int64 for signed fields);
    for fixed64 fields the raw 8 bytes as uint64; for length-delimited fields ``start``/``length``
    locate the payload in the buffer (``value`` is 0).
    """

    message: np.ndarray  # int64 index into the walked messages
    field: np.ndarray  # int64 field number
    wire: np.ndarray  # int8 wire type
    value: np.ndarray  # uint64
    start: np.ndarray  # int64
    length: np.ndarray  # int64


def walk(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, keep_fields: tuple[int, ...] | None = None
) -> Fields:
    """Walk the top-level fields of the messages ``buf[starts[i]:ends[i]]``, all messages at once.

    ``keep_fields`` limits the returned records to those field numbers (all are still walked).
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    limit = buf.size - PAD
    if starts.size and (ends.max() > limit or (ends < starts).any()):
        raise WireError("message extends past the end of the buffer")
    pos = starts.copy()
    active = np.flatnonzero(pos < ends)
    chunks: list[tuple[np.ndarray, ...]] = []
    while active.size:
        p = pos[active]
        tag, p = read_varints(buf, p)
        field = (tag >> np.uint64(3)).astype(np.int64)
        wire = (tag & np.uint64(7)).astype(np.int8)
        value = np.zeros(active.size, dtype=np.uint64)
        data_start = np.zeros(active.size, dtype=np.int64)
        data_len = np.zeros(active.size, dtype=np.int64)
        nxt = np.empty(active.size, dtype=np.int64)

        is_varint = wire == 0
        if is_varint.any():
            v, after = read_varints(buf, p[is_varint])
            value[is_varint] = v
            nxt[is_varint] = after
        is_fixed64 = wire == 1
        if is_fixed64.any():
            at = p[is_fixed64]
            raw = buf[at[:, None] + np.arange(8)].copy().view("<u8").ravel()
            value[is_fixed64] = raw
            nxt[is_fixed64] = at + 8
        is_len = wire == 2
        if is_len.any():
            ln, after = read_varints(buf, p[is_len])
            if (ln > np.uint64(1 << 40)).any():
                raise WireError("length-delimited field longer than the buffer")
            ln = ln.astype(np.int64)
            data_start[is_len] = after
            data_len[is_len] = ln
            nxt[is_len] = after + ln
        is_fixed32 = wire == 5
        if is_fixed32.any():
            at = p[is_fixed32]
            value[is_fixed32] = buf[at[:, None] + np.arange(4)].copy().view("<u4").ravel().astype(np.uint64)
            nxt[is_fixed32] = at + 4
        if not (is_varint | is_fixed64 | is_len | is_fixed32).all():
            raise WireError("unsupported or invalid wire type (groups or corrupt bytes)")
        if (nxt > ends[active]).any() or (field <= 0).any():
            raise WireError("field runs past the end of its message")

        keep = np.ones(active.size, dtype=bool) if keep_fields is None else np.isin(field, keep_fields)
        if keep.any():
            chunks.append(
                (active[keep], field[keep], wire[keep], value[keep], data_start[keep], data_len[keep])
            )
        pos[active] = nxt
        active = active[nxt < ends[active]]
    if not chunks:
        empty = np.empty(0, np.int64)
        return Fields(empty, empty, np.empty(0, np.int8), np.empty(0, np.uint64), empty, empty)
    cols = [np.concatenate(c) for c in zip(*chunks, strict=True)]
    return Fields(*cols)


def last_value_per_message(
    fields: Fields, field_number: int, n_messages: int, missing: int = 0
) -> np.ndarray:
    """Per message, the value of a singular varint field (protobuf: the last occurrence wins)."""
    out = np.full(n_messages, missing, dtype=np.uint64)
    sel = fields.field == field_number
    # Fields were appended in walk order (k-th field of every message per round), so a later
    # assignment to the same message is a later occurrence: plain fancy assignment keeps the last.
    out[fields.message[sel]] = fields.value[sel]
    return out


def gather_strings(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte ranges into (Arrow-style int32/int64 offsets, data bytes) without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return offsets, np.empty(0, np.uint8)
    # index of every output byte = its range's start + its position inside the range
    ramp = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    data = buf[np.repeat(np.asarray(starts, np.int64), lengths) + ramp]
    return offsets, data


@dataclass
class Events:
    """Decoded XEvent fields (uint64 raw varints, reinterpret as int64) and every stat's byte range."""

    metadata_id: np.ndarray
    offset_ps: np.ndarray
    duration_ps: np.ndarray
    num_occurrences: np.ndarray
    stat_event: np.ndarray  # event index of each stat record
    stat_start: np.ndarray  # payload start in the buffer
    stat_length: np.ndarray


_XEVENT_VARINTS = ((1, 0x08), (2, 0x10), (3, 0x18))  # field number, one-byte tag (wire type 0)
_XEVENT_STATS_TAG = 0x22  # field 4, length-delimited
_XEVENT_OCCURRENCES_TAG = 0x28  # field 5, varint


StatFilter = Callable[[np.ndarray, np.ndarray], np.ndarray]


def walk_events(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, stat_filter: StatFilter | None = None
) -> Events:
    """Decode serialized XEvents, specialised for the canonical field order protobuf writers use
    (metadata_id, offset_ps, duration_ps, stats..., num_occurrences; zero fields omitted).

    Each step tests one expected tag across all events at once; an event whose bytes deviate from that
    order is decoded again by the general :func:`walk`, so any valid encoding gives the same result.

    ``stat_filter(event_index, stat_metadata_id) -> keep mask`` drops unneeded stat records as they are
    found (most events carry stats nobody reads). A stat whose metadata id cannot be read from its first
    bytes (not the first field, or longer than two bytes) is always kept.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    n = starts.size
    if n and (ends.max() > buf.size - PAD or (ends < starts).any()):
        raise WireError("message extends past the end of the buffer")
    values = {number: np.zeros(n, np.uint64) for number in (1, 2, 3, 5)}
    pos = starts.copy()
    for number, tag in _XEVENT_VARINTS:
        present = buf[pos] == tag
        present &= pos < ends
        if present.all():  # the usual case: no index arrays
            values[number], pos = read_varints(buf, pos + 1)
            continue
        has = np.flatnonzero(present)
        if has.size:
            values[number][has], pos[has] = read_varints(buf, pos[has] + 1)
    if (pos > ends).any():
        raise WireError("field runs past the end of its message")
    words = _words(buf)
    byte = np.uint64(0xFF)
    stat_event, stat_start, stat_length = [], [], []
    active = np.flatnonzero(pos < ends)
    while active.size:
        at = pos[active]
        # 8 bytes from the tag: [0x22, length, 0x08, id, (id), ...] for a short canonical stat
        w = words[at]
        is_stat = (w & byte) == _XEVENT_STATS_TAG
        if not is_stat.all():
            active, at, w = active[is_stat], at[is_stat], w[is_stat]
            if not active.size:
                break
        b1 = ((w >> np.uint64(8)) & byte).astype(np.int64)
        short = b1 < 0x80
        length = b1
        data = at + 2
        if not short.all():
            slow = np.flatnonzero(~short)
            long_len, data[slow] = read_varints(buf, at[slow] + 1)
            length[slow] = long_len.view(np.int64)
        nxt = data + length
        end = ends[active]
        if (nxt > end).any() or (length < 0).any():
            raise WireError("stat runs past the end of its event")
        if stat_filter is None:
            keep = slice(None)
        else:
            b2 = (w >> np.uint64(16)) & byte
            b3 = (w >> np.uint64(24)) & byte
            b4 = (w >> np.uint64(32)) & byte
            two = b3 >= 0x80
            readable = short & (b2 == 0x08) & (length > 1) & ~(two & (b4 >= 0x80))
            mid = (b3 & np.uint64(0x7F)) | np.where(two, (b4 & np.uint64(0x7F)) << np.uint64(7), np.uint64(0))
            keep = ~readable | stat_filter(active, mid)
        stat_event.append(active[keep])
        stat_start.append(data[keep])
        stat_length.append(length[keep])
        pos[active] = nxt
        more = nxt < end
        active = active[more]
    has = np.flatnonzero((pos < ends) & (buf[pos] == _XEVENT_OCCURRENCES_TAG))
    if has.size:
        values[5][has], pos[has] = read_varints(buf, pos[has] + 1)
    event_idx = np.concatenate(stat_event) if stat_event else np.empty(0, np.int64)
    start = np.concatenate(stat_start) if stat_start else np.empty(0, np.int64)
    length = np.concatenate(stat_length) if stat_length else np.empty(0, np.int64)
    if (pos > ends).any():
        raise WireError("field runs past the end of its message")
    odd = np.flatnonzero(pos != ends)
    if odd.size:  # not in canonical order (or unknown fields): decode those events the general way
        fields = walk(buf, starts[odd], ends[odd])
        for number in (1, 2, 3, 5):
            values[number][odd] = last_value_per_message(fields, number, odd.size)
        is_stat = (fields.field == 4) & (fields.wire == 2)
        redo = np.isin(event_idx, odd)
        event_idx = np.concatenate([event_idx[~redo], odd[fields.message[is_stat]]])
        start = np.concatenate([start[~redo], fields.start[is_stat]])
        length = np.concatenate([length[~redo], fields.length[is_stat]])
    return Events(values[1], values[2], values[3], values[5], event_idx, start, length)


# ------------------------------------------------------------------ field boundaries in long messages


def scalar_fields(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """Top-level fields of ``data[start:end]`` as (field number, wire type, payload start, payload end),
    walked one field at a time in Python: for messages with few fields (an XSpace's planes, an XPlane's
    lines and metadata), never for events."""
    out = []
    p = start
    while p < end:
        tag, p = _scalar_varint(data, p)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            q = p
            _, p = _scalar_varint(data, p)
            out.append((number, 0, q, p))
            continue
        if wire_type == 2:
            length, p = _scalar_varint(data, p)
            q, p = p, p + length
        elif wire_type == 1:
            q, p = p, p + 8
        elif wire_type == 5:
            q, p = p, p + 4
        else:
            raise WireError("unsupported or invalid wire type (groups or corrupt bytes)")
        if number == 0 or p > end:
            raise WireError("field runs past the end of its message")
        out.append((number, wire_type, q, p))
    return out


def _scalar_varint(data: bytes, p: int) -> tuple[int, int]:
    value = shift = 0
    for k in range(10):
        if p + k >= len(data):
            break
        byte = data[p + k]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, p + k + 1
        shift += 7
    raise WireError("truncated or overlong varint")


def _skip_field(buf: np.ndarray, pos: np.ndarray, tag_byte: int = 0x22) -> np.ndarray:
    """Position after the field whose tag is at each position; -1 where the bytes cannot be a field.

    Fields with the one-byte length-delimited tag ``tag_byte`` and a length under 2**14 (nearly all in
    an XLine: its events) take one 8-byte read; the others are decoded in full."""
    w = _words(buf)[pos]
    b0 = (w & np.uint64(0xFF)).astype(np.int64)
    b1 = ((w >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int64)
    b2 = ((w >> np.uint64(16)) & np.uint64(0xFF)).astype(np.int64)
    one = b1 < 0x80
    nxt = np.where(one, pos + 2 + b1, pos + 3 + ((b1 & 0x7F) | (b2 << 7)))
    fast = (b0 == tag_byte) & (one | (b2 < 0x80))
    if fast.all():
        return nxt
    slow = np.flatnonzero(~fast)
    nxt[slow] = _skip_field_any(buf, pos[slow])
    return nxt


def _skip_field_any(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    tag, at = read_varints(buf, pos)
    wire_type = tag & np.uint64(7)
    nxt = np.full(pos.size, -1, np.int64)
    for wt, width in ((1, 8), (5, 4)):
        sel = wire_type == wt
        nxt[sel] = at[sel] + width
    sel = np.flatnonzero(wire_type == 0)
    if sel.size:
        nxt[sel] = read_varints(buf, at[sel])[1]
    sel = np.flatnonzero(wire_type == 2)
    if sel.size:
        ln, after = read_varints(buf, at[sel])
        nxt[sel] = np.where(
            ln > np.uint64(1 << 40), -1, after + np.minimum(ln, np.uint64(1 << 40)).astype(np.int64)
        )
    nxt[tag < np.uint64(8)] = -1  # field number 0
    return nxt


def field_starts(
    buf: np.ndarray, data: bytes, starts: np.ndarray, ends: np.ndarray, seed_tag: int, chunk: int = 1 << 14
) -> np.ndarray:
    """Tag position of every top-level field of the long messages ``buf[starts[i]:ends[i]]``, in order.

    Finding where each field starts is a chain (each field's length gives the next tag), so the messages
    are cut into chunks of ``chunk`` bytes and every chunk is walked at once, in lock step, from a guessed
    start (the first ``seed_tag`` byte in it; a chunk's guessed chain and the true one meet at the first
    field they share, after which they are the same). Walking the chunks in order then keeps, in each,
    the guessed chain from the true entry on; a chunk whose guess never meets the true chain (rare) is
    walked field by field from the true entry. ``data`` holds the same bytes as ``buf`` (for that walk).
    """
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if starts.size == 0:
        return np.empty(0, np.int64)
    if ends.max() > buf.size - PAD or (ends < starts).any():
        raise WireError("message extends past the end of the buffer")
    n_chunks = np.maximum((ends - starts + chunk - 1) // chunk, 1)
    region = np.repeat(np.arange(starts.size), n_chunks)
    first = np.concatenate([[0], np.cumsum(n_chunks)[:-1]])
    k = np.arange(region.size) - first[region]
    lo = starts[region] + k * chunk
    hi = np.minimum(lo + chunk, ends[region])
    hard = ends[region]
    # seeds: the first seed_tag byte in the first 256 bytes of each chunk (a chunk's own start when first)
    window = lo[:, None] + np.arange(256)
    hits = (buf[np.minimum(window, buf.size - 1)] == seed_tag) & (window < hi[:, None])
    has = hits.any(axis=1)
    seed = lo + hits.argmax(axis=1)
    seed[first] = lo[first]
    has[first] = True
    # walk every chain until it leaves its chunk (exit) or hits bytes that are no field (dead)
    n = lo.size
    exit_pos = np.full(n, -1, np.int64)
    pos = seed.copy()
    alive = np.flatnonzero(has & (seed < hi))
    exit_pos[first[lo[first] >= hi[first]]] = lo[first[lo[first] >= hi[first]]]  # empty messages
    visited_chain, visited_pos = [], []
    while alive.size:
        p = pos[alive]
        visited_chain.append(alive)
        visited_pos.append(p)
        nxt = _skip_field(buf, p)
        dead = (nxt < 0) | (nxt > hard[alive])
        done = ~dead & (nxt >= hi[alive])
        exit_pos[alive[done]] = nxt[done]
        pos[alive] = nxt
        alive = alive[~dead & ~done]
    walked = np.concatenate(visited_chain) if visited_chain else np.empty(0, np.int64)
    counts = np.bincount(walked, minlength=n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    # by chain, then walk order (= position order): the k-th step of chain c goes to ptr[c] + k
    step = np.repeat(np.arange(len(visited_chain)), [a.size for a in visited_chain])
    vpos = np.empty(walked.size, np.int64)
    vpos[ptr[walked] + step] = np.concatenate(visited_pos) if visited_pos else np.empty(0, np.int64)
    chain = np.repeat(np.arange(n, dtype=np.int64), counts)
    # the usual case, for all chunks at once: the previous chunk's guessed exit is on this chunk's chain
    entry = np.empty(n, np.int64)
    entry[1:] = exit_pos[:-1]
    entry[first] = lo[first]
    key = (chain << 40) | vpos
    wanted = (np.arange(n, dtype=np.int64) << 40) | np.maximum(entry, 0)
    at = np.minimum(np.searchsorted(key, wanted), max(key.size - 1, 0))
    on_chain = (key[at] == wanted) & (entry >= 0) & (exit_pos >= 0) if key.size else np.zeros(n, bool)
    # follow the true chain through the chunks (a loop over chunks, not fields)
    marks = np.zeros(vpos.size + 1, np.int64)
    extra: list[int] = []
    region_l, lo_l, hi_l, exit_l, ptr_l = (
        region.tolist(),
        lo.tolist(),
        hi.tolist(),
        exit_pos.tolist(),
        ptr.tolist(),
    )
    entry_l, on_chain_l, at_l = entry.tolist(), on_chain.tolist(), at.tolist()
    ends_l = ends.tolist()
    e = -1
    for c in range(n):
        if c and region_l[c] != region_l[c - 1] and e != ends_l[region_l[c - 1]]:
            raise WireError("field runs past the end of its message")
        if c == 0 or region_l[c] != region_l[c - 1]:
            e = lo_l[c]
        h = hi_l[c]
        if e >= h:
            continue
        a, b = ptr_l[c], ptr_l[c + 1]
        if e == entry_l[c] and on_chain_l[c]:
            marks[at_l[c]] += 1
            marks[b] -= 1
            e = exit_l[c]
            continue
        while e < h:
            if exit_l[c] >= 0 and a < b:
                j = a + int(np.searchsorted(vpos[a:b], e))
                if j < b and vpos[j] == e:  # on the guessed chain: the rest of the chunk is that chain
                    marks[j] += 1
                    marks[b] -= 1
                    e = exit_l[c]
                    break
            extra.append(e)
            e = _scalar_skip(data, e)
            if e > ends_l[region_l[c]]:
                raise WireError("field runs past the end of its message")
    if e != ends_l[region_l[-1]]:
        raise WireError("field runs past the end of its message")
    keep = np.cumsum(marks[:-1]) > 0
    out = vpos[keep]
    if extra:
        out = np.sort(np.concatenate([out, np.asarray(extra, np.int64)]))
    return out


def _scalar_skip(data: bytes, p: int) -> int:
    tag, p = _scalar_varint(data, p)
    wire_type = tag & 7
    if tag >> 3 == 0:
        raise WireError("field number 0")
    if wire_type == 0:
        return _scalar_varint(data, p)[1]
    if wire_type == 1:
        return p + 8
    if wire_type == 5:
        return p + 4
    if wire_type == 2:
        length, p = _scalar_varint(data, p)
        return p + length
    raise WireError("unsupported or invalid wire type (groups or corrupt bytes)")
