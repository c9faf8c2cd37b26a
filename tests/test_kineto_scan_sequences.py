"""The native Kineto scanner's expected sequences (``tracelens/ingest/_kineto_scan.c``): the args members read
in the orders Kineto writes them (CPU ops, runtime calls, kernels, copies), Kineto's timestamps recognized by
their shape (16 digits, a point, one digit), and the event boundaries of Kineto's layout ("{" and the first
key, the closing line, the comma and the next "{") recognized by word compares. Each against msgspec's typed
decoder (the reference reader) on generated blocks: in those orders and shapes, where the fast paths run, and
with every break of them (a member dropped, swapped, repeated, of another type; whitespace near the words
compared; numbers of a shape next to Kineto's), where the general paths take over.
"""

from __future__ import annotations

import re
import struct

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kineto_native import SOURCE, assert_same_block, native, needs_scanner, reference

from tracelens.ingest import kineto
from tracelens.ingest.kineto import fields
from tracelens.ingest.kineto import native as native_engine

pytestmark = needs_scanner

# Values of the args members: mostly of their field's type, sometimes of another (a string stream, a null
# grid, a float where msgspec wants an int, an object), which the readers decline or read as msgspec does.
integers = st.integers(0, 2**40).map(str)
numbers = st.one_of(
    integers,
    st.builds(lambda w, d: f"{w}.{d}", st.integers(0, 10**6), st.integers(0, 999)),
    st.sampled_from(["-1", "0", "1e3", "1E-2", "-0.0", "12345678", "123456789012345678901"]),
)
others = st.sampled_from(['"7"', '"stream 7"', "null", "true", "[]", "{}", '{"a":[1,2]}', '"x\\u00e9"'])
triples = st.one_of(
    st.lists(st.integers(-(2**31), 2**31), min_size=3, max_size=3).map(
        lambda v: "[" + ",".join(map(str, v)) + "]"
    ),
    st.sampled_from(["null", "[1,2]", "[1,2,3,4]", "[1.5,1,1]", "[]"]),
)
MEMBER_VALUES = {
    "External id": numbers,
    "Ev Idx": numbers,
    "Sequence number": numbers,
    "Fwd thread id": numbers,
    "cbid": numbers,
    "correlation": numbers,
    "queued": numbers,
    "device": numbers,
    "context": numbers,
    "stream": st.one_of(numbers, st.just('"stream 7"')),
    "registers per thread": numbers,
    "shared memory": numbers,
    "blocks per SM": numbers,
    "warps per SM": numbers,
    "grid": triples,
    "block": triples,
    "est. achieved occupancy %": numbers,
    "bytes": numbers,
    "memory bandwidth (GB/s)": numbers,
}
# The orders scan_args reads in sequence.
ARGS_ORDERS = [
    ["External id", "Ev Idx"],
    ["External id", "Sequence number", "Fwd thread id", "Ev Idx"],
    ["External id", "cbid", "correlation"],
    [
        "External id",
        "queued",
        "device",
        "context",
        "stream",
        "correlation",
        "registers per thread",
        "shared memory",
        "blocks per SM",
        "warps per SM",
        "grid",
        "block",
        "est. achieved occupancy %",
    ],
    ["External id", "device", "context", "stream", "correlation", "bytes", "memory bandwidth (GB/s)"],
]


@st.composite
def kineto_args(draw: st.DrawFn) -> str:
    """An args object in one of Kineto's orders, or that order broken at one member."""
    keys = list(draw(st.sampled_from(ARGS_ORDERS)))
    values = [draw(st.one_of(MEMBER_VALUES[k], MEMBER_VALUES[k], MEMBER_VALUES[k], others)) for k in keys]
    members = list(zip(keys, values, strict=True))
    change = draw(
        st.sampled_from(["none", "none", "drop", "swap", "repeat", "insert", "space", "colon", "cut"])
    )
    i = draw(st.integers(0, len(members) - 1))
    j = draw(st.integers(0, len(members) - 1))
    if change == "drop":
        del members[i]
    elif change == "swap":
        members[i], members[j] = members[j], members[i]
    elif change == "repeat":
        members.insert(j, (members[i][0], draw(st.one_of(MEMBER_VALUES[members[i][0]], others))))
    elif change == "insert":
        members.insert(j, (draw(st.sampled_from(["flops", "Input Dims", "unknown", "cuda_sync_kind"])), "1"))
    elif change == "cut":
        members = members[:i]
    separators = [","] * max(len(members) - 1, 0)
    if change == "space" and separators:
        separators[min(i, len(separators) - 1)] = draw(st.sampled_from([" ,", ", ", ",\n    "]))
    colon = " : " if change == "colon" else ":"
    body = "".join(
        (separators[k - 1] if k else "") + f'"{key}"{colon if k == i else ":"}{value}'
        for k, (key, value) in enumerate(members)
    )
    return "{" + body + "}"


def _event(args: str, ts: str = "1712195504612945.5") -> str:
    return f'{{"ph":"X","cat":"kernel","name":"k","pid":1102,"tid":7,"ts":{ts},"dur":0.841,"args":{args}}}'


def _kineto_layout(events: list[str]) -> str:
    return "[\n" + ",\n".join("  {\n    " + e[1:-1] + "\n  }" for e in events) + "\n]"


def _compare(text: str) -> None:
    """The scanner reads text as msgspec does, or declines it where msgspec would not read it typed; an
    accepted block's float columns equal bit for bit (so that -0.0 and NaN payloads count too)."""
    try:
        want = reference(text)
    except msgspec.DecodeError:
        assert native(text) is None, text
        return
    got = native(text)
    assert got is not None, text
    assert_same_block(got, want)
    for key, value in want.items():
        array = np.asarray(value) if not isinstance(value, tuple) else None
        if array is not None and array.dtype == np.float64:
            assert np.asarray(got[key], dtype=np.float64).tobytes() == array.tobytes(), key


@needs_scanner
@settings(max_examples=150, deadline=None)
@given(st.lists(kineto_args(), min_size=1, max_size=5), st.booleans())
def test_args_in_kineto_orders_and_every_break_of_them_are_read_as_msgspec_reads_them(
    args: list[str], kineto_layout: bool
) -> None:
    events = [_event(a) for a in args]
    _compare(_kineto_layout(events) if kineto_layout else "[" + ",".join(events) + "]")


def test_the_args_sequences_read_the_fields_fields_py_declares() -> None:
    """Each member of scan_args's sequences is read by the reader of its field's type into its field's slot
    (as the general loop reads it), or skipped when it is no field of kineto/fields.py."""
    source = SOURCE.read_text()
    sequence = source[source.index('if (expect_bytes(s, "\\"External id\\":", 14))') :]
    sequence = sequence[: sequence.index("return args_members(")]
    readers = (
        "read_float_cold|read_float_or_text|read_float|read_id|read_triple_or_null|skip_member_value|skip_id"
    )
    read = re.findall(rf'\\"([^"\\]+)\\":"[^;]*?({readers})\(s(?:, (?:f, F_|&f\[F_)(\w+))?', sequence)
    arg_fields = {f.key: f for f in fields.ARG_FIELDS}
    assert {key for key, _, _ in read} == {k for order in ARGS_ORDERS for k in order}
    for key, reader, slot in read:
        if reader in ("skip_member_value", "skip_id"):
            assert key not in arg_fields, key
            continue
        field = arg_fields[key]
        want_reader = {
            fields.NUMBER: "read_float",
            fields.NUMBER_OR_TEXT: "read_float_or_text",
            fields.TRIPLE: "read_triple_or_null",
        }[field.type]
        # read_float_cold: read_float out of line; read_id: read_float with the integer's length predicted
        assert {"read_float_cold": "read_float", "read_id": "read_float"}.get(
            reader, reader
        ) == want_reader, key
        assert slot.lower() == (f"{field.name}_x" if field.type == fields.TRIPLE else field.name), key


# Timestamps: Kineto's shape and every shape next to it (more or fewer digits on either side of the point, an
# exponent, a sign, what follows the number), in the expected sequence's place for "ts".
timestamps = st.one_of(
    st.builds(lambda w, d: f"{w}.{d}", st.integers(10**15, 10**16 - 1), st.integers(0, 9)),
    st.builds(
        lambda w, d, k: f"{w}.{d:0{k}d}"[: len(str(w)) + 1 + k],
        st.integers(10**14, 10**17),
        st.integers(0, 999),
        st.integers(1, 3),
    ),
    st.builds(
        lambda w, d, e: f"{w}.{d}{e}",
        st.integers(10**15, 10**16 - 1),
        st.integers(0, 9),
        st.sampled_from(["e0", "E1", "e-3"]),
    ),
    st.builds(lambda w, d: f"-{w}.{d}", st.integers(10**15, 10**16 - 1), st.integers(0, 9)),
    st.integers(10**15, 10**17).map(str),
    st.sampled_from(["0.5", "1.5", "9007199254740993.5", "9999999999999999.9", "1000000000000000.0"]),
)


@needs_scanner
@settings(max_examples=300, deadline=None)
@given(st.lists(timestamps, min_size=1, max_size=6), st.sampled_from(["", " ", "\n  "]))
def test_timestamps_of_kineto_shape_and_next_to_it_are_pythons_float(ts: list[str], after: str) -> None:
    """Whitespace after ts: the word compare of the next key fails and the general loop reads the rest."""
    events = [_event('{"External id":1,"Ev Idx":2}', t).replace(',"dur"', after + ',"dur"') for t in ts]
    text = _kineto_layout(events)
    _compare(text)
    # the scanner's own ts column (a row per complete event, in the file's order): Python's float bit for bit
    scanned = kineto._kineto_scan.scan_events((text.encode(),), native_engine.to_number, msgspec.json.decode)
    if scanned is not None:
        want = [float(t) for t in ts]
        assert bytes(scanned["floats"][0]) == struct.pack(f"<{len(want)}d", *want)


# Whitespace at the event boundaries: Kineto's own (which the word compares take) and the layouts next to it
# (one space more or less, tabs, CRLF, nothing), between events of a list and of a bare piece of a block.
starts = st.sampled_from(["\n    ", "\n     ", "\n   ", "\n\t", "\r\n    ", "", " "])
ends = st.sampled_from(["\n  ", "\n   ", "\n ", "\n", "", " ", "\r\n  "])
separators = st.sampled_from([",\n  ", ",\n ", ",\n   ", ", ", ",", " ,\n  ", ",\n\n  "])
short_events = st.sampled_from(
    [
        '"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":2,"ts":1712195504612945.5,"dur":3.25,'
        '"args":{"External id":5,"Ev Idx":6}',
        '"ph":"f","id":7,"pid":1,"tid":2,"ts":1712195504612946.5,"cat":"ac2g","name":"ac2g","bp":"e"',
        '"ph":"s","id":7,"pid":1,"tid":2,"ts":1712195504612944.5,"cat":"ac2g","name":"ac2g"',
        '"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":1712195504612945.5,'
        '"dur":5.8,"args":{"External id":5,"cbid":211,"correlation":9}',
        '"phx":"X","ph":"X","cat":"a","name":"b","pid":1,"tid":2,"ts":1.5',
        '"pid":1,"ph":"X","tid":2,"ts":3',
        "",
    ]
)


@needs_scanner
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(starts, short_events, ends, separators), min_size=1, max_size=6), st.booleans())
def test_event_boundaries_in_every_whitespace_are_read_as_msgspec_reads_them(
    events: list[tuple[str, str, str, str]], bare: bool
) -> None:
    body = ""
    for k, (start, members, end, separator) in enumerate(events):
        body += ("" if k == 0 else separator) + "{" + start + members + end + "}"
    listed = "[\n  " + body + "\n]"
    _compare(listed)
    if bare:  # a block's piece: the events alone, as kineto.split cuts them
        try:
            want = reference(listed)
        except msgspec.DecodeError:
            assert native(body) is None
            return
        got = native(body)
        assert got is not None, body
        assert_same_block(got, want)


# The ids read or skipped with their length predicted (pid, tid, External id, correlation; a flow's id, Ev Idx,
# cbid: as long as the same field's last one) and the categories recognized by their bytes: in a block, each
# field's values drawn from a shape and its neighbours (one digit more or less, a point, an exponent, a sign, a
# leading zero, a string; a category one letter longer or shorter, escaped, of another case), so that a length
# learned on one event meets every other shape on the next.
ids = st.sampled_from(
    [
        "1102",
        "1103",
        "110",
        "11020",
        "1102.5",
        "1102e1",
        "1102E+1",
        "0",
        "01",
        "-1102",
        '"1102"',
        "12345678",
        "87654321",
        "123456789",
        "1234567",
        "12345678.0",
        "123456780",
        "0.5",
        "9",
        "99999999999999999999",
        "10",
        "02",
        "00",
        "01234567",
    ]
)
categories = st.sampled_from(
    [
        '"cpu_op"',
        '"cpu_opx"',
        '"cpu_o"',
        '"cuda_runtime"',
        '"cuda_runtimes"',
        '"cuda_runtim"',
        '"kernel"',
        '"Kernel"',
        '"kern\\u0065l"',
        '"ac2g"',
        '"ac2gg"',
        '"ac2"',
        '"fwdbwd"',
        '"gpu_memcpy"',
        '"gpu_memcpyx"',
        '"gpu_memset"',
        '"Trace"',
        "null",
        '"cpu_op\\""',
        '"é"',
    ]
)


@st.composite
def id_events(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        args = draw(
            st.sampled_from(
                [
                    '{{"External id":{0},"Ev Idx":{1}}}',
                    '{{"External id":{0},"cbid":{1},"correlation":{2}}}',
                    '{{"External id":{0},"Sequence number":1,"Fwd thread id":0,"Ev Idx":{1}}}',
                ]
            )
        ).format(draw(ids), draw(ids), draw(ids))
        return (
            f'{{"ph":"X","cat":{draw(categories)},"name":"n","pid":{draw(ids)},"tid":{draw(ids)},'
            f'"ts":1712195504612945.5,"dur":0.5,"args":{args}}}'
        )
    return (
        f'{{"ph":"{draw(st.sampled_from("fs"))}","id":{draw(ids)},"pid":{draw(ids)},"tid":{draw(ids)},'
        f'"ts":1712195504612945.5,"cat":{draw(categories)},"name":"ac2g","bp":"e"}}'
    )


@needs_scanner
@settings(max_examples=250, deadline=None)
@given(st.lists(id_events(), min_size=2, max_size=8))
def test_ids_and_categories_next_to_the_shapes_last_read_are_read_as_msgspec_reads_them(
    events: list[str],
) -> None:
    _compare(_kineto_layout(events))
