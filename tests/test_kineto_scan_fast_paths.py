"""The native Kineto scanner's fast paths for the bytes Kineto writes (``tracelens/ingest/_kineto_scan.c``):
event keys recognized by word compares, args keys scanned without escape decoding, skipped values checked
without being converted, Kineto's numbers read in digit runs, and absolute timestamps converted as integer
part plus fraction. Each is checked against an independent reference: Python's ``float()`` bit for bit for
numbers, msgspec's typed decoder (the reference reader) for whole blocks, in Kineto's compact layout, where
the fast paths run, and in spaced layouts, where they give way to the general ones.
"""

from __future__ import annotations

import json
import math
import re
import struct

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kineto_native import SOURCE, assert_same_block, native, needs_scanner, reference

from tracelens.ingest import kineto
from tracelens.ingest.kineto import fields
from tracelens.ingest.kineto import native as native_engine

pytestmark = needs_scanner


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _check(text: str) -> str | None:
    """The text through the scanner's number reader inside a block (padded: the fast path) and at the end
    of a buffer (the general path): both bit for bit Python's float(), or both None when that is out of
    range. The path the padded read took. A JSON integer is an int to msgspec, then a float: float(int(text))
    (the same correctly rounded double as float(text), but for -0, which is 0.0)."""
    integer = not any(c in text for c in ".eE")
    want = float(int(text)) if integer else float(text)
    padded = kineto._kineto_scan._parse_number(text.encode(), True)
    alone = kineto._kineto_scan._parse_number(text.encode())
    if math.isinf(want):
        assert padded is None and alone is None, text
        return None
    assert padded is not None and alone is not None, text
    assert _bits(padded[0]) == _bits(want), (text, padded, want)
    assert _bits(alone[0]) == _bits(want), (text, alone, want)
    return padded[1]


digits = st.text("0123456789", min_size=1, max_size=24)


@st.composite
def json_numbers(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(
        st.one_of(
            st.just("0"),
            st.builds(lambda d, r: d + r, st.sampled_from("123456789"), st.text("0123456789", max_size=22)),
        )
    )
    fraction = draw(st.one_of(st.just(""), digits.map(lambda d: "." + d)))
    exponent = draw(
        st.one_of(
            st.just(""),
            st.builds(
                lambda e, s, d: e + s + str(d),
                st.sampled_from("eE"),
                st.sampled_from(["", "+", "-"]),
                st.integers(0, 400),
            ),
        )
    )
    return sign + whole + fraction + exponent


@needs_scanner
@settings(max_examples=800, deadline=None)
@given(json_numbers())
def test_numbers_of_every_shape_are_pythons_float_inside_a_block_and_at_its_end(text: str) -> None:
    _check(text)


@needs_scanner
def test_integer_plus_fraction_is_correctly_rounded_at_every_power_of_two() -> None:
    """Timestamps as integer part I plus d / 10^k: around each power of two from 2^20 to 2^53 (where the
    spacing of doubles changes, and the rounding boundaries with it), every fraction of 1 to 3 digits, and
    the exact ties between two doubles; bit for bit float(), and the fast path taken where it applies."""
    taken = 0
    for e in range(20, 54):
        for whole in (2**e - 1, 2**e, 2**e + 1):
            for k in (1, 2, 3):
                for d in range(10**k):
                    text = f"{whole}.{d:0{k}d}"
                    path = _check(text)
                    fast = whole >= 10**k and whole < 2**53 and whole * 10**k + d > 2**53
                    assert (path == "integer-and-fraction") == fast, (text, path)
                    taken += fast
    assert taken > 10_000


@needs_scanner
@settings(max_examples=500, deadline=None)
@given(
    st.integers(10**15, 2**53 - 1),
    st.integers(1, 8).flatmap(lambda k: st.tuples(st.just(k), st.integers(0, 10**k - 1))),
    st.sampled_from(["", "-"]),
)
def test_kineto_timestamps_are_pythons_float(whole: int, fraction: tuple[int, int], sign: str) -> None:
    k, d = fraction
    path = _check(f"{sign}{whole}.{d:0{k}d}")
    # The fast path reads up to 19 digits (the mantissa's exact range); longer ones take the general path.
    assert (path == "integer-and-fraction") == (len(str(whole)) + k <= 19)


# --- whole blocks in Kineto's compact layout against msgspec ------------------------------------------------

# Strings that cross the scanner's 16-byte steps at every offset: plain, with escapes (the scanner's string
# end search stops there), raw UTF-8, and quotes, backslashes and escapes at their edges.
pieces = st.sampled_from(
    ["a", "Z", " ", "\\\\", '\\"', "\\n", "\\/", "\\u00e9", "\\ud83d\\ude00", "é", "名", "::", ",", "{", "]"]
)
strings = st.lists(pieces, max_size=40).map("".join)


def _json_value(depth: int) -> st.SearchStrategy[str]:
    scalars = st.one_of(
        json_numbers(),
        strings.map(lambda s: f'"{s}"'),
        st.sampled_from(["true", "false", "null"]),
    )
    if depth == 0:
        return scalars
    inner = _json_value(depth - 1)
    return st.one_of(
        scalars,
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(strings, inner), max_size=4).map(
            lambda members: "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"
        ),
    )


kineto_numbers = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.builds(lambda w, d: f"{w}.{d}", st.integers(10**15, 2 * 10**15), st.integers(0, 999)),
    st.builds(lambda w, d: f"{w}.{d:03d}", st.integers(0, 10**6), st.integers(0, 999)),
    json_numbers(),
)
# An args member: the fields the scanner reads (of their types) and others it skips, nested at any depth.
args_members = st.one_of(
    st.tuples(
        st.sampled_from(
            [
                "External id",
                "correlation",
                "device",
                "stream",
                "bytes",
                "registers per thread",
                "shared memory",
                "est. achieved occupancy %",
                "external id",
                "flops",
                "Group size",
                "In msg nelems",
                "Out msg nelems",
            ]
        ),
        kineto_numbers,
    ),
    st.tuples(
        st.sampled_from(["grid", "block"]),
        st.lists(st.integers(-(2**31), 2**31), min_size=0, max_size=4).map(json.dumps),
    ),
    st.tuples(
        st.sampled_from(
            ["cuda_sync_kind", "dtype", "Collective name", "Process Group Name", "Process Group Ranks"]
        ),
        strings.map(lambda s: f'"{s}"'),
    ),
    st.tuples(st.sampled_from(["Input Dims", "Input dims", "Input type", "Concrete Inputs"]), _json_value(3)),
    st.tuples(
        st.sampled_from(
            [
                "cbid",
                "queued",
                "context",
                "Sequence number",
                "warps per SM",
                "Fwd thread id",
                "Ev Idx",
                "blocks per SM",
                "unknown é",
            ]
        ),
        _json_value(3),
    ),
)


@st.composite
def kineto_events(draw: st.DrawFn) -> str:
    phase = draw(st.sampled_from(["X", "X", "X", "f", "s", "i", "M", "B"]))
    members = [
        ("ph", f'"{phase}"'),
        ("cat", draw(st.one_of(strings.map(lambda s: f'"{s}"'), st.just("null")))),
        ("name", draw(st.one_of(strings.map(lambda s: f'"{s}"'), st.just("null")))),
        ("pid", draw(st.one_of(kineto_numbers, strings.map(lambda s: f'"{s}"')))),
        ("tid", draw(st.one_of(kineto_numbers, strings.map(lambda s: f'"{s}"')))),
        (
            "ts",
            draw(st.builds(lambda w, d: f"{w}.{d}", st.integers(10**15, 2 * 10**15), st.integers(0, 999))),
        ),
        ("dur", draw(kineto_numbers.filter(lambda t: abs(float(t)) < 1e300))),
        ("id", draw(kineto_numbers)),
        ("bp", '"e"'),
        ("args", "{" + ",".join(f'"{k}":{v}' for k, v in draw(st.lists(args_members, max_size=8))) + "}"),
    ]
    members = draw(st.permutations(members))
    members = members[: draw(st.integers(0, len(members)))]
    return "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"


def _kineto_layout(events: list[str]) -> str:
    """The events as Kineto writes them: two spaces before each, its members on the next line."""
    return "[\n" + ",\n".join("  {\n    " + e[1:-1] + "\n  }" for e in events) + "\n]"


@needs_scanner
@settings(max_examples=120, deadline=None)
@given(st.lists(kineto_events(), min_size=1, max_size=8), st.sampled_from(["kineto", "compact", "spaced"]))
def test_kineto_events_of_every_shape_are_read_as_msgspec_reads_them(events: list[str], layout: str) -> None:
    if layout == "kineto":
        text = _kineto_layout(events)
    elif layout == "compact":
        text = "[" + ",".join(events) + "]"
    else:  # whitespace around every key, colon and value: the fast paths give way to the general ones
        text = "[ " + " , ".join(e.replace('":', '" : ').replace(',"', ' , "') for e in events) + " ]"
    try:
        want = reference(text)
    except msgspec.DecodeError:  # msgspec rejects it (a string not UTF-8, a number out of range, ...)
        assert native(text) is None
        return
    got = native(text)
    if got is not None:
        assert_same_block(got, want)


@needs_scanner
@settings(max_examples=80, deadline=None)
@given(st.lists(kineto_events(), min_size=1, max_size=6))
def test_well_typed_kineto_events_are_read_natively(events: list[str]) -> None:
    """Events whose every field has msgspec's type (strings valid, numbers in range): never declined, so
    the fast paths above are the ones compared."""
    text = _kineto_layout(events)
    try:
        want = reference(text)
    except msgspec.DecodeError:  # msgspec would not read it typed: not the events this test is about
        return
    got = native(text)
    assert got is not None, text
    assert_same_block(got, want)


@pytest.mark.parametrize("offset", range(40))
@needs_scanner
def test_escapes_at_every_offset_from_the_scanners_steps(offset: int) -> None:
    """A name and an args key with an escape (or a raw control character, or a quote) at every offset: read
    as msgspec reads it, or declined where msgspec would not read it typed (an escaped key)."""
    for special in ('\\"', "\\\\", "\\u00e9", "\\n", "é"):
        name = "n" * offset + special + "m" * (40 - offset)
        for key in ("External id", "x" * offset + special):
            event = (
                f'{{"ph":"X","cat":"cpu_op","name":"{name}","pid":1,"tid":2,"ts":1712195495519689.5,'
                f'"dur":1.5,"args":{{"{key}":{offset},"correlation":{offset + 1}}}}}'
            )
            text = _kineto_layout([event, event])
            got = native(text)
            if "\\" in key:  # an escaped key: msgspec would unescape it first; the scanner declines
                assert got is None
                continue
            assert got is not None, text
            assert_same_block(got, reference(text))


def test_keys_recognized_by_their_bytes_are_read_as_fields_py_declares() -> None:
    """The keys the scanner recognizes by word compares before its general key dispatch: an event key or
    args key it marks as not read is no field of kineto/fields.py, and each args key it reads is one, read
    by the reader and into the slot of that field's type."""
    source = SOURCE.read_text()
    event_keys = {f.key for f in fields.EVENT_FIELDS}
    arg_fields = {f.key: f for f in fields.ARG_FIELDS}
    skipped_events = re.findall(r'EVENT_KEY_IS\("\\"(\w+)\\":", \d\)\) n = \d, k = EK_SKIPPED', source)
    assert set(skipped_events) == {"id", "bp"} and not event_keys & set(skipped_events)
    recognized = dict(re.findall(r'ARGS_KEY\("([^"]+)", (AK_\w+)\)', source))
    assert recognized  # the table was found
    for key, which in recognized.items():
        if which == "AK_SKIPPED":
            assert key not in arg_fields, key
            continue
        assert key in arg_fields, key
        body = re.search(rf"case {which}: rc = (\w+)\(s, (?:f, F_|&f\[F_)(\w+)", source)
        assert body is not None, which
        reader, slot = body.groups()
        reader = reader.removesuffix("_cold")  # read_float_cold: read_float, out of line
        field = arg_fields[key]
        want_reader = {
            fields.NUMBER: "read_float",
            fields.NUMBER_OR_TEXT: "read_float_or_text",
            fields.TRIPLE: "read_triple_or_null",
        }[field.type]
        assert reader == want_reader, key
        assert slot.lower() == (f"{field.name}_x" if field.type == fields.TRIPLE else field.name), key


@st.composite
def kineto_ordered_events(draw: st.DrawFn) -> str:
    """Events in the member order Kineto writes (complete events: ph cat name pid tid ts dur args; flows:
    ph id pid tid ts cat name [bp]), which the scanner reads as one expected sequence, and that order broken
    at any member: one dropped, two swapped, one repeated elsewhere, an unknown one inserted, whitespace
    after a comma or around a colon."""
    phase = draw(st.sampled_from(["X", "X", "f", "s"]))
    text = strings.map(lambda s: f'"{s}"')
    number_or_text = st.one_of(kineto_numbers, text)
    timestamp = st.builds(lambda w, d: f"{w}.{d}", st.integers(10**15, 2 * 10**15), st.integers(0, 999))
    if phase == "X":
        members = [
            ("ph", '"X"'),
            ("cat", draw(st.one_of(text, st.just("null")))),
            ("name", draw(text)),
            ("pid", draw(number_or_text)),
            ("tid", draw(number_or_text)),
            ("ts", draw(timestamp)),
            ("dur", draw(kineto_numbers.filter(lambda t: abs(float(t)) < 1e300))),
            ("args", "{" + ",".join(f'"{k}":{v}' for k, v in draw(st.lists(args_members, max_size=6))) + "}"),
        ]
    else:
        members = [
            ("ph", f'"{phase}"'),
            ("id", draw(kineto_numbers)),
            ("pid", draw(number_or_text)),
            ("tid", draw(number_or_text)),
            ("ts", draw(timestamp)),
            ("cat", draw(text)),
            ("name", draw(text)),
        ] + ([("bp", '"e"')] if phase == "f" else [])
    separators = [","] * (len(members) - 1)
    change = draw(st.sampled_from(["none", "none", "drop", "swap", "repeat", "insert", "space", "colon"]))
    i = draw(st.integers(0, len(members) - 1))
    j = draw(st.integers(0, len(members) - 1))
    if change == "drop":
        del members[i]
        separators = separators[:-1] if separators else []
    elif change == "swap":
        members[i], members[j] = members[j], members[i]
    elif change in ("repeat", "insert"):
        extra = members[i] if change == "repeat" else ("unknown", draw(_json_value(2)))
        members.insert(j, (extra[0], draw(number_or_text) if extra[0] in ("pid", "tid") else extra[1]))
        separators.append(",")
    elif change == "space" and separators:
        separators[min(i, len(separators) - 1)] = ", \n "
    colon = " : " if change == "colon" else ":"
    body = "".join(
        (separators[k - 1] if k else "") + f'"{key}"{colon if k == i else ":"}{value}'
        for k, (key, value) in enumerate(members)
    )
    return "{" + body + "}"


@needs_scanner
@settings(max_examples=150, deadline=None)
@given(st.lists(kineto_ordered_events(), min_size=1, max_size=8), st.booleans())
def test_kineto_ordered_events_and_every_break_of_the_order_are_read_as_msgspec_reads_them(
    events: list[str], kineto_layout: bool
) -> None:
    text = _kineto_layout(events) if kineto_layout else "[" + ",".join(events) + "]"
    try:
        want = reference(text)
    except msgspec.DecodeError:  # a string not UTF-8, a duplicated key of another type, ...
        assert native(text) is None
        return
    got = native(text)
    assert got is not None, text
    assert_same_block(got, want)


_PROFILER_SPAN = (
    '{{"ph":"X","cat":{cat},"ts":{ts},"dur":578888.534,"pid":"Spans","tid":"PyTorch Profiler",'
    '"name":"PyTorch Profiler (0)","args":{{"Op count":0,"External id":{ext},"stream":"s 3","flops":2,'
    '"Input Dims":[[1]]}}}}'
)
_HOST_EVENT = (
    '{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":{ts},"dur":1.5,'
    '"args":{{"External id":{ext},"flops":4}}}}'
)


@needs_scanner
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.sampled_from(['"Trace"', '"trace"', '"TRACE"', '"Tr\\u0061ce"', '"Traces"', "null"]),
    st.sampled_from(["1712195495406752.8", "1e-70", "1712195495406752"]),
    st.booleans(),
)
def test_the_profilers_own_span_is_no_row_of_the_scanner_and_the_block_is_msgspecs(
    spans: list[bool], category: str, ts: str, kineto_layout: bool
) -> None:
    """A complete event of category "Trace" (the profiler's span, which the reader drops) is left out of the
    scanner's rows, its records and its strings, as the reference drops it: the same block; other spellings
    are left to the reader's drop (or kept: "Traces", null), the same block too. Its numbers still count: a
    deferred one (1e-70) is parsed, an out-of-range one declines the block."""
    events = [
        (_PROFILER_SPAN.format(cat=category, ts=ts, ext=i) if span else _HOST_EVENT.format(ts=10 + i, ext=i))
        for i, span in enumerate(spans)
    ]
    text = _kineto_layout(events) if kineto_layout else "[" + ",".join(events) + "]"
    got, want = native(text), reference(text)
    assert got is not None, text
    assert_same_block(got, want)
    scanned = kineto._kineto_scan.scan_events((text.encode(),), native_engine.to_number, msgspec.json.decode)
    emitted = len(spans) - (sum(spans) if category == '"Trace"' else 0)
    assert scanned["rows"] == emitted and scanned["complete"] == len(spans)
    # its category and name are none of the block's strings (an escaped "Trace" is the reader's to drop)
    kept_span = category != '"Trace"' and any(spans)
    assert ("Trace" in scanned["categories"]) is (kept_span and "\\" in category)
    assert ("PyTorch Profiler (0)" in scanned["names"]) is kept_span
    out_of_range = text.replace("1e-70", "1e400") if "1e-70" in text and any(spans) else None
    if out_of_range is not None:
        with pytest.raises(msgspec.ValidationError):
            reference(out_of_range)
        assert native(out_of_range) is None
