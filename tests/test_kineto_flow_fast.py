"""The native Kineto scanner's flow-event templates (``tracelens/ingest/_kineto_scan.c``, flow_template_skip):
a flow event ("ph" "s" or "f": no row, checked only) of a shape Kineto writes is checked whole against a
template learnt from an earlier one; any other goes through the member by member check. Each case here scans
the same block with the templates off (the member by member check alone, the reference) and on, and requires
the scanner's whole output (columns, counts, or the decline) to be the same, for well-formed flows and every
malformed variant; on well-formed blocks also the msgspec reader's columns.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kineto_native import assert_same_block, native, needs_scanner, plain_output, reference

from tracelens.ingest import kineto
from tracelens.ingest.kineto import native as native_engine

pytestmark = needs_scanner

HEAD = '{\n    "ph":"%s"'
FLOW_F = (
    ',"id":1234567,"pid":1102,"tid":1262,"ts":1712195495519695.8,"cat":"ac2g","name":"ac2g","bp":"e"\n  }'
)
FLOW_S = ',"id":1234567,"pid":1102,"tid":1262,"ts":1712195495519695.8,"cat":"ac2g","name":"ac2g"\n  }'
ROW = (
    '{\n    "ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1102,"tid":1262,'
    '"ts":1712195495519690.3,"dur":4.5,"args":{"External id":11,"cbid":211,"correlation":1234567}\n  }'
)


@pytest.fixture
def scanner() -> Iterator[Any]:
    module = kineto._kineto_scan
    module._flow_templates(True)
    yield module
    module._flow_templates(True)


def _scan(module: Any, text: bytes, templates: bool) -> tuple[Any, int]:
    """scan_events' whole output for one block, with the templates on or off, and how many flows they took."""
    module._flow_templates(templates)
    scanned = plain_output(module.scan_events((text,), native_engine.to_number, msgspec.json.decode))
    return scanned, module._flow_templates(True)


def _same_both_ways(module: Any, text: bytes) -> tuple[Any, int]:
    off, hits_off = _scan(module, text, False)
    on, hits = _scan(module, text, True)
    assert hits_off == 0
    assert on == off, text
    return on, hits


def _same_as_msgspec(text: bytes) -> None:
    """The reader's block columns from the scanner (templates on) are msgspec's."""
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))


def _block(*events: str) -> bytes:
    """Events in Kineto's layout (a list, each on its lines), a row last: every flow has 128 bytes after it."""
    return ("[\n  " + ",\n  ".join([*events, ROW]) + "\n]").encode()


def _flow(phase: str, rest: str) -> str:
    return HEAD % phase + rest


GOOD_F = _flow("f", FLOW_F)
GOOD_S = _flow("s", FLOW_S)


def test_kineto_flows_are_taken_by_templates_with_the_same_output(scanner: Any) -> None:
    events = [ROW, GOOD_S, GOOD_F, GOOD_S.replace("1234567", "7654321"), GOOD_F.replace("1102", "9876")]
    text = _block(*events * 3)
    scanned, hits = _same_both_ways(scanner, text)
    assert scanned is not None and scanned["flow"] == 12
    assert hits >= 10  # each shape's first flow learns its template (taken at once, or by the members)
    _same_as_msgspec(text)


def test_flows_near_the_end_of_a_block_go_by_the_members(scanner: Any) -> None:
    text = ("[\n  " + ",\n  ".join([ROW, GOOD_F]) + "\n]").encode()
    scanned, hits = _same_both_ways(scanner, text)
    assert scanned is not None and scanned["flow"] == 1
    assert hits == 0  # fewer than 128 bytes after their "ph": not tried


@pytest.mark.parametrize(
    "rest",
    [
        FLOW_F.replace("1234567", "1", 1),
        FLOW_F.replace("1234567", "0", 1),
        FLOW_F.replace("1234567", "-0", 1),
        FLOW_F.replace("1234567", "-12", 1),
        FLOW_F.replace("1234567", "1234567890123456", 1),  # 16 digits
        FLOW_F.replace("1102", "0", 1).replace("1262", "7", 1),
        FLOW_F.replace("1262", "-123456789", 1),
        FLOW_F.replace('"ac2g","name":"ac2g"', '"fwdbwd","name":"fwdbwd"'),
        FLOW_F.replace('"ac2g","name":"ac2g"', '"","name":"a b~!"'),
        FLOW_F.replace('"bp":"e"', '"bp":""'),
        FLOW_F.replace("\n  }", "}"),
        FLOW_F.replace("\n  }", " \t\r\n}"),
        FLOW_S,
    ],
)
def test_other_well_formed_shapes_learn_their_own_templates(scanner: Any, rest: str) -> None:
    flow = _flow("f", rest)
    text = _block(GOOD_F, flow, GOOD_S, flow, flow)
    scanned, hits = _same_both_ways(scanner, text)
    assert scanned is not None and scanned["flow"] == 5
    assert hits >= 3
    _same_as_msgspec(text)


def _variants() -> list[str]:
    """Flow members each made malformed or unusual (a flow's "ph" then one change to Kineto's shape)."""
    out = []
    for old, news in [
        (
            "1234567",  # the id
            [
                "01",
                "00",
                "-01",
                "-",
                "1.5",
                "1e3",
                "1E3",
                "1.",
                '"1234567"',
                "null",
                "true",
                "[]",
                "{}",
                "",
                " 1234567",
                "12345678901234567",
                "123456789012345678901234567890",
                "1234567x",
                "+1",
                "0x1",
            ],
        ),
        ("1102", ["01102", '"1102"', '"1\\u0031"', "1102.0", "1e309", "1.5e400", "-", "null", "'1'", ""]),
        ("1262", ["-01262", '"a"', "12.62", "1262e0", "[1262]", "NaN", "Infinity", "", "12 62"]),
        (
            "1712195495519695.8",
            [
                "0712195495519695.8",
                "1712195495519695",
                "1712195495519695.",
                "1712195495519695.85",
                "171219549551969.8",
                "17121954955196951.8",
                "1712195495519695.8e1",
                "1712195495519695.8E-1",
                "-1712195495519695.8",
                '"1712195495519695.8"',
                "1712195495519695,8",
                "1e400",
                "null",
                "",
            ],
        ),
        (
            '"ac2g","name"',
            ['"ac\\u0032g","name"', '"\\"","name"', '"é","name"', '"\xff","name"', 'null,"name"', '5,"name"'],
        ),
        (
            '"bp":"e"',
            ['"bp":1', '"bp":null', '"bp":{}', '"bp":[1,"x"]', '"bp":"\\n"', '"bp":"e', '"bp":"e"}'],
        ),
    ]:
        out += [FLOW_F.replace(old, new, 1) for new in news]
    members = FLOW_F[: -len("\n  }")].split(",")[1:]
    for k in range(len(members)):  # each member missing
        out.append("," + ",".join(members[:k] + members[k + 1 :]) + "\n  }")
    for k in range(len(members) - 1):  # two neighbours swapped
        swapped = [*members]
        swapped[k], swapped[k + 1] = swapped[k + 1], swapped[k]
        out.append("," + ",".join(swapped) + "\n  }")
    out += [
        FLOW_F.replace("\n  }", ',"bp":"e"\n  }'),  # a member twice
        FLOW_F.replace("\n  }", ',"args":{}\n  }'),
        FLOW_F.replace("\n  }", ',"ph":"X","dur":1\n  }'),  # a complete event after all: read again as a row
        FLOW_F.replace("\n  }", ',"ph":"i"\n  }'),
        FLOW_F.replace("\n  }", ",\n  }"),
        FLOW_F.replace("\n  }", "\n  ]"),
        FLOW_F.replace("\n  }", "\n  "),
        FLOW_F.replace(',"pid"', ' ,"pid"'),
        FLOW_F.replace('"pid":', '"pid" :'),
        FLOW_F.replace('"pid":', '"pid": '),
        FLOW_F.replace('"pid"', '"pi\\u0064"'),
        FLOW_F.replace('"pid"', '"PID"'),
        FLOW_F.replace(',"id"', ""),
        FLOW_F.replace(",", ", "),
        FLOW_F.replace(",", "\n,"),
        FLOW_F.replace('"ac2g"', '"a\x01"', 1),
        FLOW_F.replace('"ac2g"', '"ac2g\\u0000"', 1),
    ]
    return out


VARIANTS = _variants()


@pytest.mark.parametrize("rest", VARIANTS)
@pytest.mark.parametrize("phase", ["f", "s"])
def test_every_malformed_or_unusual_flow_is_read_as_without_templates(
    scanner: Any, phase: str, rest: str
) -> None:
    flow = _flow(phase, rest)
    good = GOOD_F if phase == "f" else GOOD_S
    for events in [(good, flow, good), (flow, good, flow), (flow, flow, flow)]:
        _same_both_ways(scanner, _block(*events))


@pytest.mark.parametrize("good", [GOOD_F, GOOD_S], ids=["f", "s"])
def test_every_byte_of_a_learnt_shape_replaced_deleted_or_doubled(scanner: Any, good: str) -> None:
    """Each byte after the flow's "ph" member replaced by others (a leading zero, a digit for a constant, a
    non-digit for a digit...), deleted, or inserted again: the template learnt from the flow before it either
    takes the changed one as the members do or leaves it to them."""
    data = good.encode()
    start = len(HEAD % "f")
    for at in range(start, len(data)):
        changed = [data[:at] + bytes([byte]) + data[at + 1 :] for byte in ALPHABET if byte != data[at]]
        changed += [data[:at] + data[at + 1 :], data[:at] + data[at : at + 1] + data[at:]]
        for flow in changed:
            text = b"[\n  " + b",\n  ".join([data, flow, data, flow, ROW.encode()]) + b"\n]"
            _same_both_ways(scanner, text)


@pytest.mark.parametrize("cut", range(1, len(GOOD_F) + 1, 3))
def test_a_flow_cut_short_is_declined_either_way(scanner: Any, cut: int) -> None:
    text = (
        ("[\n  " + ",\n  ".join([GOOD_F, ROW, GOOD_F]) + ",\n  ").encode()
        + GOOD_F[:cut].encode()
        + b" " * 200
    )
    scanned, _ = _same_both_ways(scanner, text)
    assert scanned is None


def _with_ids(rest: str, flow_id: int, pid: int, tid: int) -> str:
    return rest.replace('"id":1234567,"pid":1102,"tid":1262', f'"id":{flow_id},"pid":{pid},"tid":{tid}')


ALPHABET = b'0123456789-+.eE"\\ ,:{}[]\nxa\x00\x7f\xc3\xa9\xff'


@st.composite
def mutated_flows(draw: st.DrawFn) -> bytes:
    """A real flow (either phase, the other shapes' lengths) with a few bytes replaced, inserted or deleted."""
    phase = draw(st.sampled_from(["f", "s"]))
    rest = _with_ids(FLOW_F if phase == "f" else FLOW_S, *(draw(st.integers(0, 10**9)) for _ in range(3)))
    if draw(st.booleans()):
        rest = rest.replace('"ac2g","name":"ac2g"', '"fwdbwd","name":"fwdbwd"')
    flow = bytearray(_flow(phase, rest).encode())
    digits = [k for k, byte in enumerate(flow) if 0x30 <= byte <= 0x39]
    for _ in range(draw(st.integers(1, 3))):
        anywhere = st.integers(len(HEAD) - 2, len(flow) - 1)
        at = draw(st.one_of(anywhere, st.sampled_from(digits))) if digits else draw(anywhere)
        at = min(at, len(flow) - 1)
        byte = draw(st.sampled_from(ALPHABET))
        edit = draw(st.sampled_from(["replace", "insert", "delete"]))
        if edit == "replace":
            flow[at] = byte
        elif edit == "insert":
            flow.insert(at, byte)
        else:
            del flow[at]
    return bytes(flow)


@settings(max_examples=600, deadline=None)
@given(mutated_flows())
def test_mutated_real_flows_are_read_as_without_templates(flow: bytes) -> None:
    module = kineto._kineto_scan
    good, row = GOOD_F.encode(), ROW.encode()
    text = b"[\n  " + b",\n  ".join([good, flow, good, flow, row]) + b"\n]"
    try:
        _same_both_ways(module, text)
    finally:
        module._flow_templates(True)


def test_random_flows_of_many_shapes_in_one_block(scanner: Any) -> None:
    """Many shapes in one block (more than the templates' sets hold: they are replaced as they come)."""
    rng = random.Random(28)
    events = []
    for _ in range(600):
        phase = rng.choice("fs")
        ids = [rng.choice([0, 7, rng.randrange(10 ** rng.randrange(1, 17))]) for _ in range(3)]
        rest = _with_ids(FLOW_F if phase == "f" else FLOW_S, *ids)
        events.append(_flow(phase, rest))
        if rng.random() < 0.1:
            events.append(ROW)
    text = _block(*events)
    scanned, hits = _same_both_ways(scanner, text)
    assert scanned is not None and scanned["flow"] == 600
    assert hits > 300
    _same_as_msgspec(text)
