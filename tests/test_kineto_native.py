"""The native Kineto scanner (``tracelens/ingest/_kineto_scan.c``) against msgspec, the reference reader.

The scanner either gives exactly the block columns msgspec's typed decoder gives, or declines (None) so that
msgspec reads the block. Every case here is checked against msgspec (or, for numbers, against Python's own
correctly rounded ``float``), never against the scanner itself.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import platform
import random
import re
import shutil
import struct
import sysconfig
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import pytest

from tracelens.errors import InputError
from tracelens.ingest import kineto
from tracelens.ingest.kineto import blocks, fields, msgspec_engine, reader
from tracelens.ingest.kineto import native as native_engine

# `kineto._kineto_scan` below is the compiled extension module itself (tracelens.ingest._kineto_scan, as the
# reader holds it): these tests exercise the scanner directly because it is the unit under test, and its
# contract with msgspec (same columns, same numbers, or a decline) is only observable there.
needs_scanner = pytest.mark.skipif(
    not kineto.native_scanner_built(), reason="native scanner not built (no C compiler)"
)


def native(text: str | bytes) -> dict | None:
    data = text.encode() if isinstance(text, str) else text
    return native_engine.scan_block_columns((data,))


def reference(text: str | bytes) -> dict:
    data = text.encode() if isinstance(text, str) else text
    return msgspec_engine.block_columns(msgspec_engine.EVENTS_DECODER.decode(data))


def assert_same_block(got: dict, want: dict) -> None:
    assert got["counts"] == want["counts"]
    assert set(got) == set(want)
    for key, value in want.items():
        if key == "counts":
            continue
        if isinstance(value, tuple):  # (codes, distinct strings): compare the strings each row holds
            want_codes, want_values = value
            got_codes, got_values = got[key]
            as_text = lambda codes, values: [values[c] if c >= 0 else None for c in codes]  # noqa: E731
            assert as_text(got_codes, got_values) == as_text(want_codes, want_values), key
            # As sets: the scanner keys strings by their JSON text, so one string written two ways ("é" and
            # "\u00e9") may be listed twice in a block; the reader's interner merges them by value.
            assert set(got_values) == set(want_values), key
        else:
            np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(value), err_msg=key)


def assert_as_msgspec_reads(text: str | bytes) -> None:
    """The scanner's block of ``text`` is msgspec's, or the scanner declines it: always where msgspec's typed
    decoder rejects the text; elsewhere it may leave a block to msgspec, never read one differently."""
    got = native(text)
    try:
        want = reference(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        assert got is None, text
        return
    if got is not None:
        assert_same_block(got, want)


def plain_output(value: Any) -> Any:
    """The scanner's raw output (``scan_events``) made comparable: buffers as their bytes, containers as lists and
    dicts of those."""
    if isinstance(value, dict):
        return {key: plain_output(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_output(item) for item in value]
    try:
        return bytes(memoryview(value))
    except TypeError:
        return value


def event_list(*events: str) -> str:
    return "[\n" + ",\n".join(events) + "\n]"


KERNEL = (
    '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2, '
    '"args": {"device": 0, "stream": 7, "correlation": 3, "grid": [1, 2, 3], "block": [4, 5, 6], '
    '"registers per thread": 32, "shared memory": 0, "est. achieved occupancy %": 50}}'
)
LAUNCH = (
    '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 10, '
    '"dur": 1, "args": {"correlation": 3, "External id": 1}}'
)

READ_NATIVELY = {
    "kernel and launch": [KERNEL, LAUNCH],
    "escapes in names": [
        '{"ph": "X", "cat": "cpu_op", "name": "a\\"b\\\\c\\u00e9\\n\\/", "pid": 1, "tid": 1, "ts": 1}',
        '{"ph": "X", "cat": "cpu_op", "name": "\\ud83d\\ude00 surrogate pair", "pid": 1, "tid": 1, "ts": 2}',
    ],
    "raw UTF-8 and its escaped twin": [
        '{"ph": "X", "cat": "cpu_op", "name": "é名", "pid": 1, "tid": 1, "ts": 1}',
        '{"ph": "X", "cat": "cpu_op", "name": "\\u00e9\\u540d", "pid": 1, "tid": 1, "ts": 2}',
    ],
    "numbers as strings": [
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": "0x1f", "tid": "stream 7", "ts": 1, '
        '"args": {"stream": "0x0", "device": 0}}',
        '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": " 12 ", "tid": "Spans", "ts": 2}',
    ],
    "number shapes": [
        '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": -0, "tid": 1e3, "ts": 1712195495519689.047, "dur": 1E-2}',
        '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 123456789012345678901234, "tid": 0.1, '
        '"ts": 1712195495519689.125, "dur": 5e-324}',
        '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 9007199254740993, "tid": -7.25e-3, '
        '"ts": 0.30000000000000004441, "dur": 1.7976931348623157e308}',
    ],
    "defaults and drops": [
        '{"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 1, "tid": 1, "ts": 5}',
        '{"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1}',
        '{"ph": "X", "name": "no category", "pid": 1, "tid": 1, "ts": 6}',
        '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 1, "ts": 0}',
        '{"ph": "X", "cat": null, "name": null, "pid": 1, "tid": 1, "ts": 7}',
    ],
    "grids that are not triples": [
        KERNEL.replace("[1, 2, 3]", "[1, 2]"),
        KERNEL.replace("[1, 2, 3]", "[1, 2, 3, 4]"),
        KERNEL.replace("[1, 2, 3]", "null"),
        KERNEL.replace("[1, 2, 3]", "[]"),
        KERNEL.replace("[1, 2, 3]", "[-1, 0, 9223372036854775807]"),
    ],
    "unknown keys of every JSON type": [
        KERNEL.replace(
            '"args": {',
            '"x": [1, {"b": null, "c": [true, false]}], "y": {}, '
            '"z": "s", "w": -1.5e7, "args": {"u": {"v": [[], {}]}, ',
        )
    ],
    "phases other than X": [
        '{"ph": "M", "name": "process_name", "pid": "Traces", "tid": 0, "args": {"name": "x"}}',
        '{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"}',
        '{"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g", "bp": "e"}',
        '{"ph": "i", "s": "t", "pid": 1, "tid": 1, "ts": 1, "name": "mark"}',
        '{"ph": "B", "pid": 1, "tid": 1, "ts": 1, "name": "begin"}',
        "{}",
        LAUNCH,
    ],
    "2021 lowercase external id and sync kinds": [
        LAUNCH.replace('"External id"', '"external id"'),
        '{"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 11, "dur": 1, '
        '"args": {"device": 0, "stream": 7, "cuda_sync_kind": "stream sync", "correlation": 4}}',
        '{"ph": "X", "cat": "cpu_op", "name": "host", "pid": 1, "tid": 1, "ts": 11, "args": {"cuda_sync_kind": "ignored"}}',
    ],
    "numbers Python's float() decides": [  # deferred one by one (the block stays native)
        '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1e-70, "tid": 5e-324, "ts": 1, "dur": 2.4703282292062328e-324, '
        '"args": {"correlation": 1e300, "stream": 123456789012345678901234567890e-100, "External id": 9e99}}',
        '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1e-70, "pid": 3, "tid": "stream 7", "tid": 1e-80, "ts": 2, '
        '"dur": 1e-90, "dur": 1e-91, "args": {"stream": 7e77, "stream": "0x1f", "device": 1e-65, "device": 2}}',
        '{"ph": "i", "pid": 1e-70, "tid": 1, "ts": 1e-300, "name": "dropped with its event"}',
        '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3, "unknown": 1e400, '
        '"args": {"ignored": [1e999, -1e-999]}}',
        '{"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 4, '
        '"dur": 0.1000000000000000055511151231257827021181583404541015625}',
    ],
    "op and collective args": [  # JSON values kept as their text, made canonical by both engines alike
        '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "args": {"Input Dims": '
        '[[8, 64],\n [64 , 32]], "Input type": ["float", "c10::BFloat16"], "Concrete Inputs": ["", "[1, 1]"], '
        '"flops": 65536}}',
        '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "args": {"Input Dims": [[8,64],[64,32]], '
        '"Input type": ["\\u00e9\\"\\\\", "\\u540d", "é"], "Concrete Inputs": [1.0, 1e3, -0, {"k": [true, null]}]}}',
        '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3, "args": {"Input Dims": null, '
        '"Input type": [], "Concrete Inputs": "text", "dtype": null}}',
        '{"ph": "X", "cat": "cpu_op", "name": "only a null", "pid": 1, "tid": 1, "ts": 4, "args": {"Input Dims": null}}',
        '{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 5, "args": '
        '{"In msg nelems": 2049000, "Out msg nelems": 4098000, "dtype": "Float", "Group size": 2}}',
        KERNEL.replace(
            '"args": {',
            '"args": {"In msg nelems": 7, "dtype": "BFloat16", "Group size": 8, "flops": 1.5e12, ',
        ),
        '{"ph": "M", "name": "not kept", "pid": 1, "tid": 1, "args": {"Input Dims": [[1]], "flops": 1e-70}}',
        # The 2021 key "Input dims" fills input_dims where "Input Dims" is missing; the collective's own record.
        '{"ph": "X", "cat": "Operator", "name": "2021 mm", "pid": 1, "tid": 1, "ts": 6, "args": {"Input dims": '
        '[[8, 64], [64, 32]], "Input type": []}}',
        '{"ph": "X", "cat": "cpu_op", "name": "both", "pid": 1, "tid": 1, "ts": 7, "args": {"Input dims": [[1]], '
        '"Input Dims": [[2]]}}',
        KERNEL.replace('"name": "k"', '"name": "nccl k"').replace(
            '"args": {',
            '"args": {"Collective name": "allreduce", "Process Group Name": "0", '
            '"Process Group Ranks": "[0, 1]", "In msg nelems": 7, ',
        ),
    ],
    "whitespace everywhere": [
        '\t{ "ph" :\r\n"X" , "cat":"kernel" ,"name" : "k","pid":0,"tid":7,"ts":1,"args":{ } }  '
    ],
    "empty list": [],
}


@needs_scanner
@pytest.mark.parametrize("case", READ_NATIVELY)
def test_well_typed_events_read_natively_equal_msgspec(case: str) -> None:
    text = event_list(*READ_NATIVELY[case])
    got = native(text)
    assert got is not None, "the scanner declined a block msgspec reads with its typed decoder"
    assert_same_block(got, reference(text))


@needs_scanner
def test_the_same_events_as_a_bare_sequence_and_in_several_pieces() -> None:
    events = READ_NATIVELY["kernel and launch"] + READ_NATIVELY["phases other than X"]
    want = reference(event_list(*events))
    bare = ",\n".join(events).encode()
    assert_same_block(native_engine.scan_block_columns((bare,)), want)
    cut = bare.index(b",\n", len(events[0]) + 5)  # a piece boundary between two events, as split_stream makes
    assert_same_block(native_engine.scan_block_columns((bare[:cut], memoryview(bare)[cut + 1 :])), want)


def _named_events(count: int) -> list[str]:
    """``count`` complete events whose names and categories take many distinct texts: more than the first
    size of the scanner's string tables (so they grow and rehash mid-block), repeated out of order, long names
    that differ only in their last bytes, escaped twins of raw names, "" and null."""
    odd_names = [
        "",
        "é名 raw",
        "\\u00e9\\u540d raw",  # the escaped twin: another JSON text, the same string
        'quote \\" and \\\\ backslash',
        "\\ud83d\\ude00",
    ]
    events = []
    for i in range(count):
        # 301 names, alike but for their ends
        name = f"{'aten::very_long_operator_name_' * 3}{(i * 11) % 301}"
        if i % 5 == 1:
            name = odd_names[(i // 5) % len(odd_names)]
        name_json = "null" if i % 11 == 3 else f'"{name}"'
        category = "cpu_op" if i % 3 else f"category {(i * 13) % 290}"
        events.append(
            f'{{"ph": "X", "cat": "{category}", "name": {name_json}, "pid": 1, "tid": {i % 4}, "ts": {i}, '
            f'"dur": 1, "args": {{"cuda_sync_kind": "kind {i % 260}"}}}}'
        )
    return events


@needs_scanner
def test_many_distinct_names_and_categories_equal_msgspec() -> None:
    """The row string fields are coded while the bytes are scanned (a hash table of their JSON texts); with
    hundreds of distinct texts per field the tables grow several times within one block."""
    events = _named_events(1500)
    want = reference(event_list(*events))
    assert len(set(want["name"][1])) > 300
    got = native(event_list(*events))
    assert got is not None
    assert_same_block(got, want)
    # The same texts in several pieces of one block (as split_stream hands them over) share their codes.
    bare = ",\n".join(events).encode()
    cuts = [bare.index(b"},\n{", at) + 1 for at in (len(bare) // 3, 2 * len(bare) // 3)]
    pieces = (bare[: cuts[0]], memoryview(bare)[cuts[0] + 2 : cuts[1]], memoryview(bare)[cuts[1] + 2 :])
    in_pieces = native_engine.scan_block_columns(pieces)
    assert_same_block(in_pieces, want)
    # One code per distinct JSON text, whichever piece holds it: the escaped twin of "é名 raw" is the one
    # string that two texts give.
    assert len(in_pieces["name"][1]) == len(set(want["name"][1])) + 1


@needs_scanner
def test_a_name_not_utf8_after_the_string_tables_grew_is_declined() -> None:
    events = _named_events(600)
    events.insert(550, '{"ph": "X", "cat": "cpu_op", "name": "NOT UTF-8", "ts": 1}')
    assert native(event_list(*events).encode().replace(b"NOT UTF-8", b"\xff\xfe")) is None


DECLINED = {
    "ts null": '{"ph": "X", "ts": null}',
    "ts a string": '{"ph": "X", "ts": "12"}',
    "dur a bool": '{"ph": "X", "ts": 1, "dur": true}',
    "args null": '{"ph": "X", "ts": 1, "args": null}',
    "args a list": '{"ph": "X", "ts": 1, "args": []}',
    "grid of floats": '{"ph": "X", "ts": 1, "args": {"grid": [1.0, 2, 3]}}',
    "grid with an exponent": '{"ph": "X", "ts": 1, "args": {"grid": [1e2, 2, 3]}}',
    "grid a string": '{"ph": "X", "ts": 1, "args": {"grid": "1,1,1"}}',
    "category a number": '{"ph": "X", "ts": 1, "cat": 5}',
    "dtype a number": '{"ph": "X", "ts": 1, "args": {"dtype": 6}}',
    "flops a string": '{"ph": "X", "ts": 1, "args": {"flops": "many"}}',
    "Input Dims not JSON": '{"ph": "X", "ts": 1, "args": {"Input Dims": [1,]}}',
    "ph null": '{"ph": null, "ts": 1}',
    "ph a number": '{"ph": 1, "ts": 1}',
    "pid null": '{"ph": "M", "pid": null}',
    "event not an object": "5",
    "raw control character": '{"ph": "X", "name": "a\tb", "ts": 1}',
    "bad escape": '{"ph": "X", "name": "a\\xb", "ts": 1}',
    "short unicode escape": '{"ph": "X", "name": "a\\u00", "ts": 1}',
    "leading zero": '{"ph": "X", "ts": 01}',
    "bare fraction": '{"ph": "X", "ts": .5}',
    "dot without digits": '{"ph": "X", "ts": 1.}',
    "lone minus": '{"ph": "X", "ts": -}',
    "exponent without digits": '{"ph": "X", "ts": 1e}',
    "overflow to infinity": '{"ph": "X", "ts": 1e400}',
    "overflow past the fast paths": '{"ph": "X", "ts": 1, "args": {"stream": -17976931348623159e292}}',
    "overflow in an event not kept": '{"ph": "M", "pid": 1' + "0" * 400 + "}",
    "overflow replaced by a later value": '{"ph": "X", "ts": 1e999, "ts": 1}',
    "overflow replaced by a string": '{"ph": "X", "ts": 1, "args": {"stream": 7e777, "stream": "0x1f"}}',
    "NaN literal": '{"ph": "X", "ts": NaN}',
    "trailing comma in object": '{"ph": "X", "ts": 1,}',
    "missing colon": '{"ph" "X"}',
    "unterminated string": '{"ph": "X',
    "unterminated object": '{"ph": "X", "args": {"device": 0}',
}


@needs_scanner
@pytest.mark.parametrize("case", DECLINED)
def test_what_msgspec_would_not_read_typed_is_declined(case: str) -> None:
    event = DECLINED[case]
    text = b"[" + (event.encode() if isinstance(event, str) else event) + b"]"
    assert native_engine.scan_block_columns((text,)) is None
    try:  # msgspec's typed decoder rejects it too (the reader then goes lenient or reports the error)
        msgspec_engine.EVENTS_DECODER.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return
    pytest.fail("msgspec's typed decoder reads what the scanner declined")


@needs_scanner
@pytest.mark.parametrize("text", ["[1] 2", "[{}] ]", "[{},]", "[{}", "", "   ", "{} {}", "[{}]x"])
def test_lists_with_anything_after_or_missing_are_declined(text: str) -> None:
    assert native_engine.scan_block_columns((text.encode(),)) is None


def _kineto_layout(events: list[str]) -> str:
    """The document as Kineto writes it: one event per "  {" ... "  }" block (what split_stream cuts at)."""
    return (
        '{\n  "traceEvents": [\n' + ",\n".join("  {\n    " + e[1:-1] + "\n  }" for e in events) + "\n  ]\n}\n"
    )


def _kineto_file(path: Path, events: list[str]) -> Path:
    path.write_text(_kineto_layout(events))
    return path


# Rare shapes the scanner leaves to msgspec on purpose, although msgspec reads them typed: the block is
# then read by msgspec, so the table is msgspec's either way.
LEFT_TO_MSGSPEC = {
    "escaped key": '{"ph": "X", "cat": "cpu_op", "\\u0074s": 1}',
    "escaped phase": '{"ph": "\\u0058", "cat": "cpu_op", "ts": 1}',
    "nesting deeper than 512": '{"ph": "X", "cat": "cpu_op", "ts": 1, "deep": ' + "[" * 600 + "]" * 600 + "}",
}


@needs_scanner
@pytest.mark.parametrize("case", LEFT_TO_MSGSPEC)
def test_rare_shapes_are_left_to_msgspec(case: str, tmp_path: Path) -> None:
    event = LEFT_TO_MSGSPEC[case]
    event = event.decode("latin-1") if isinstance(event, bytes) else event
    assert native_engine.scan_block_columns((("[" + event + "]").encode("latin-1"),)) is None
    path = tmp_path / "rare.json"
    path.write_bytes(_kineto_layout([KERNEL, event, LAUNCH]).encode("latin-1"))
    trace = kineto.read(path, engine="native")
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 1
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)


@pytest.mark.parametrize("engine", ["native", "msgspec"])
@pytest.mark.parametrize("where", ["first block", "last event"])
def test_a_name_that_is_not_utf8_is_one_input_error(tmp_path: Path, engine: str, where: str) -> None:
    if engine == "native" and not kineto.native_scanner_built():
        pytest.skip("native scanner not built")
    bad = '{"ph": "X", "cat": "cpu_op", "name": "\xff\xfe", "ts": 1}'
    events = [KERNEL, bad, LAUNCH] if where == "first block" else [KERNEL, LAUNCH, bad]
    path = tmp_path / "latin1.json"
    path.write_bytes(_kineto_layout(events).encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8"):
        kineto.read(path, engine=engine)


@needs_scanner
def test_a_declined_block_is_read_by_msgspec_with_the_same_result(tmp_path: Path) -> None:
    # A string grid in the first block (the last event is read with the document's end, by msgspec).
    events = [KERNEL, KERNEL.replace("[1, 2, 3]", '"1,2,3"'), LAUNCH]
    path = _kineto_file(tmp_path / "odd.json", events)
    trace = kineto.read(path, engine="native")
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 1
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)
    assert trace.metadata.warnings == kineto.read(path, engine="msgspec").metadata.warnings


@needs_scanner
def test_invalid_json_in_a_native_block_is_msgspecs_error(tmp_path: Path) -> None:
    path = _kineto_file(tmp_path / "bad.json", [KERNEL, LAUNCH.replace('"dur": 1', '"dur": @')])
    with pytest.raises(InputError) as native_error:
        kineto.read(path, engine="native")
    with pytest.raises(InputError) as msgspec_error:
        kineto.read(path, engine="msgspec")
    assert str(native_error.value) == str(msgspec_error.value)


def _midpoint(d: float) -> Decimal:
    """The exact midpoint between d and the next double up."""
    return (Decimal(d) + Decimal(math.nextafter(d, math.inf))) / 2


def _decimal_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        shape = i % 10
        if shape == 0:  # Kineto 2024: absolute µs with 3 decimals, 19 significant digits
            texts.append(f"{rng.randrange(10**15, 2 * 10**15)}.{rng.randrange(1000):03d}")
        elif shape == 1:  # exact ties between two doubles at 1.7e15 (spacing 0.25): round half to even
            texts.append(f"{rng.randrange(10**15, 2 * 10**15)}.{rng.choice(['125', '375', '625', '875'])}")
        elif shape == 2:  # durations
            texts.append(f"{rng.randrange(10**6)}.{rng.randrange(1000):03d}")
        elif shape == 3:  # long mantissas: the correctly rounded slow path
            texts.append(f"{rng.randrange(10**25)}.{rng.randrange(10**10)}e-{rng.randrange(30)}")
        elif shape == 4:  # integers up to and past 2**63
            texts.append(str(rng.randrange(-(2**64), 2**64)))
        elif shape == 5:  # exponents
            texts.append(f"{rng.randrange(1, 10**8)}e{rng.randrange(-40, 40)}")
        elif shape == 6:  # exact ties in <= 19 digits with a fraction: Eisel-Lemire's round half to even
            texts.append(f"{_midpoint(float(rng.randrange(2**52, 2**53)) / 2 ** rng.randrange(3)):f}")
        elif shape == 7:  # a midpoint cut to 17-25 digits, its last digit moved: just above or below a tie
            digits = f"{_midpoint(rng.uniform(1, 2) * 10.0 ** rng.randrange(-30, 30)):e}"
            mantissa, exponent = digits.split("e")
            mantissa = mantissa[: rng.randrange(19, 28)]
            mantissa = mantissa[:-1] + str((int(mantissa[-1]) + rng.choice((1, 9))) % 10)
            texts.append(f"{mantissa}e{exponent}")
        elif shape == 8:  # repr of doubles near Kineto's magnitudes (17 digits)
            texts.append(repr(rng.uniform(-1, 1) * 10.0 ** rng.randrange(-20, 20)))
        else:  # what the scanner defers to Python's float(): exponents past its table, subnormals, exact midpoints
            texts.append(
                rng.choice(
                    (
                        f"{rng.randrange(1, 10**17)}e{rng.choice((-1, 1)) * rng.randrange(70, 290)}",
                        f"{rng.randrange(1, 10**6)}e-{rng.randrange(310, 324)}",
                        f"{_midpoint(rng.uniform(1, 2) * 2.0 ** rng.randrange(-40, 40)):f}",
                    )
                )
            )
    return texts


@needs_scanner
def test_numbers_are_the_correctly_rounded_doubles_python_reads() -> None:
    texts = _decimal_texts(seed=7, count=9000)
    # In dur and correlation: ts must lie on the timeline (|ts| < 2**62 ns), and these numbers go far beyond.
    events = [
        f'{{"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 1, "dur": {t}, '
        f'"args": {{"correlation": {t}}}}}'
        for t in texts
    ]
    block = native(event_list(*events))
    want = np.array([float(t) for t in texts])
    assert block["dur"].tobytes() == want.tobytes()  # bit for bit, signs of zero included
    assert block["correlation"].tobytes() == want.tobytes()
    timestamps = native(
        event_list(*(e.replace('"ts": 1,', f'"ts": {t},') for e, t in zip(events, texts, strict=True)))
    )
    placeable = [t for t in texts if abs(float(t)) < 2.0**62 / 1000]
    assert timestamps["ts"].tobytes() == np.array([float(t) for t in placeable]).tobytes()


@needs_scanner
def test_digit_runs_of_every_length_inside_events_are_pythons_float() -> None:
    """Numbers inside a block, where the scanner reads up to eight digits at a time as one word (the bytes
    after a number are there to load): integer and fraction parts of 0 to 24 digits, leading zeros, digits
    up to 19 kept and those past it, each followed by each byte that may end a number."""
    rng = random.Random(11)
    texts = []
    for whole in range(1, 25):
        for fraction in (None, *range(1, 25)):
            head = str(rng.randrange(10 ** (whole - 1), 10**whole)) if whole > 1 else str(rng.randrange(10))
            tail = (
                "" if fraction is None else "." + "".join(rng.choice("0123456789") for _ in range(fraction))
            )
            texts.append(head + tail)
            if fraction is not None:  # a fraction that starts with zeros, after a zero integer part
                texts.append("0." + "0" * rng.randrange(1, 9) + tail[1:] + "1")
    texts += [f"-{t}" for t in texts[::3]] + [f"{t}e{rng.randrange(-30, 30)}" for t in texts[1::4]]
    ends = ("}}", " }}", "\n}}", ', "x": 1}}', ',"x":12345678}}')  # what follows a number, closing the event
    events = [
        '{"ph": "X", "cat": "cpu_op", "name": "n", "ts": 1, "args": {"correlation": '
        + t
        + ends[i % len(ends)]
        for i, t in enumerate(texts)
    ]
    text = event_list(*events)
    got = native(text)
    assert got is not None
    assert got["correlation"].tobytes() == np.array([float(t) for t in texts]).tobytes()
    assert_same_block(got, reference(text))


@needs_scanner
def test_names_of_every_length_differing_in_one_byte_are_distinct() -> None:
    """The scanner codes each name by a hash of its bytes and a compare of whole words: names of 0 to 40
    bytes that differ in one byte only, at each place (first, middle, last, inside each word), stay apart,
    and equal ones share a code."""
    names = []
    for length in range(41):
        base = "".join(chr(ord("a") + (i * 7) % 26) for i in range(length))
        names.append(base)
        for at in range(length):
            names.append(base[:at] + "Z" + base[at + 1 :])
    events = [
        f'{{"ph": "X", "cat": "cpu_op", "name": {json.dumps(n)}, "ts": {i}}}' for i, n in enumerate(names * 2)
    ]
    text = event_list(*events)
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))
    codes, values = got["name"]
    assert [values[c] for c in codes] == names * 2
    assert len(values) == len(set(names))


def _power_of_five(q: int) -> int:
    """5**q as the 128-bit significand of the scanner's POW5_128 table (see the comment there)."""
    if q >= 0:
        power = 5**q
        return (
            power << (128 - power.bit_length())
            if power.bit_length() <= 128
            else power >> (power.bit_length() - 128)
        )
    divisor = 5**-q
    z = (divisor - 1).bit_length()  # the least z with 2**z >= 5**-q
    c = (1 << (z + 127 if q >= -27 else 2 * z + 128)) // divisor + 1
    return c >> max(0, c.bit_length() - 128)


SOURCE = Path(kineto.__file__).parent.with_name("_kineto_scan.c")


def test_the_power_of_five_table_is_its_definition() -> None:
    """Every entry of the table Eisel-Lemire multiplies by, derived again from integers (no compiler needed)."""
    text = SOURCE.read_text()
    low, high = (
        int(re.search(rf"#define {name} \(?(-?\d+)\)?", text).group(1))
        for name in ("POW5_MIN_Q", "POW5_MAX_Q")
    )
    table = text[text.index("POW5_128[POW5_MAX_Q - POW5_MIN_Q + 1][2] = {") :]
    table = table[: table.index("};")]
    entries = [
        (int(a, 16) << 64) | int(b, 16) for a, b in re.findall(r"\{(0x[0-9a-f]+), (0x[0-9a-f]+)\}", table)
    ]
    assert entries == [_power_of_five(q) for q in range(low, high + 1)]
    assert all(entry >> 127 == 1 for entry in entries)
    # Spot checks against well-known values: 5^0 = 1, 5^1 = 0b101, 5^-1 = 0.2 = 0.00110011...b rounded up.
    assert entries[-low] == 1 << 127 and entries[1 - low] == 5 << 125
    assert entries[-1 - low] == int("cccccccccccccccccccccccccccccccd", 16)
    # The binary exponent floor(q * log2(10)) the scanner computes as floor(217706 * q / 2**16).
    for q in range(-399, 400):
        exact = (10**q).bit_length() - 1 if q >= 0 else -((10**-q - 1).bit_length())
        assert (217706 * q) >> 16 == exact, q


def _adversarial_numbers(seed: int, count: int) -> list[str]:
    """Number texts made to be hard: ties and near-ties at every length, long mantissas, the table's edges,
    subnormals and overflow, signs."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        shape = i % 8
        if shape == 0:  # an exact tie, written in full and with a cut, in exponent form
            d = rng.uniform(1, 2) * 2.0 ** rng.randrange(-200, 200)
            text = f"{_midpoint(d):e}" if rng.random() < 0.5 else f"{_midpoint(d):.{rng.randrange(15, 30)}e}"
        elif shape == 1:  # ties that 19 digits hold exactly, with trailing zeros or an exponent
            tie = _midpoint(float(rng.randrange(2**52, 2**53)) * 2.0 ** rng.randrange(-3, 11))
            text = rng.choice(
                (f"{tie:f}", f"{tie:f}000" if "." in f"{tie:f}" else f"{tie:f}.000", f"{tie:e}")
            )
        elif shape == 2:  # the bits of a random double, as repr writes it
            text = repr(struct.unpack("<d", struct.pack("<Q", rng.randrange(1, 0x7FF0000000000000)))[0])
        elif shape == 3:  # mantissas of 1 to 40 digits at exponents around and past the table's edges
            text = f"{rng.randrange(1, 10 ** rng.randrange(1, 40))}e{rng.randrange(-100, 100)}"
        elif shape == 4:
            text = f"{rng.randrange(10**19)}.{rng.randrange(10 ** rng.randrange(1, 25))}e{rng.randrange(-330, 300)}"
        elif shape == 5:  # 19 and 20 nines: the rounding carries into the next power of two
            text = f"{'9' * rng.randrange(15, 22)}e{rng.randrange(-60, 60)}"
        elif shape == 6:
            text = f"0.{'0' * rng.randrange(30)}{rng.randrange(1, 10 ** rng.randrange(1, 22))}"
        else:  # integers past int64
            text = str(rng.randrange(2**63, 2**70))
        out.append(("-" if rng.random() < 0.3 else "") + text)
    return out


def _check_numbers(module: ModuleType, texts: list[str]) -> dict[str, int]:
    """Every text through the module's own number parser, bit for bit Python's float() (None where that is
    out of range: a block holding it is declined); the count of each path taken."""
    paths: dict[str, int] = {}
    for text in texts:
        got, want = module._parse_number(text.encode()), float(text)
        if math.isinf(want):
            assert got is None, text
            continue
        assert got is not None, text
        assert struct.pack("<d", got[0]) == struct.pack("<d", want), (text, got, want)
        paths[got[1]] = paths.get(got[1], 0) + 1
    return paths


@needs_scanner
def test_adversarial_numbers_are_pythons_float_bit_for_bit() -> None:
    paths = _check_numbers(kineto._kineto_scan, _adversarial_numbers(seed=17, count=40_000))
    assert paths["eisel-lemire"] > 10_000 and paths["python"] > 1_000 and paths["integer"] > 1_000


@needs_scanner
def test_typical_kineto_numbers_never_leave_the_fast_paths() -> None:
    """Python's float() is called back only for numbers a profiler does not write: never for Kineto's
    timestamps, durations and ids, nor for Python's repr of a float at Kineto's magnitudes."""
    rng = random.Random(3)
    texts = (
        [f"{rng.randrange(10**15, 2 * 10**15)}.{rng.randrange(1000):03d}" for _ in range(3000)]
        + [f"{rng.randrange(10**7)}.{rng.randrange(1000):03d}" for _ in range(3000)]
        + [str(rng.randrange(-(2**63), 2**63)) for _ in range(3000)]
        + [repr(rng.uniform(-1, 1) * 10.0 ** rng.randrange(-25, 25)) for _ in range(3000)]
    )
    paths = _check_numbers(kineto._kineto_scan, texts)
    assert "python" not in paths, paths


@needs_scanner
def test_a_number_python_decides_leaves_its_block_native() -> None:
    text = event_list(*READ_NATIVELY["numbers Python's float() decides"])
    assert {kineto._kineto_scan._parse_number(t.encode())[1] for t in ("1e-70", "5e-324", "1e300")} == {
        "python"
    }
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))


# Builds of the scanner without x87 extended precision, made here into a temporary directory: long double
# as double (what ARM64 and MSVC have), x87 arithmetic for doubles (double rounding: 32-bit x86 without SSE2),
# the plain C 64x64-bit multiply (compilers without __int128 or its intrinsics; the string hash uses it too),
# and digits read one at a time instead of eight in a word. Machine flags only where
# the compiler takes them (GCC and Clang on x86).
_X86 = platform.machine().lower() in {"x86_64", "amd64", "i386", "i686"}
WITHOUT_X87 = {
    "long double is double": (
        ["-mfpmath=sse", "-mlong-double-64"],
        [],
        {"LDBL_MANT_DIG": 53, "CLINGER_FAST_PATH": 1},
    ),
    "x87 double arithmetic": (["-mfpmath=387"], [], {"FLT_EVAL_METHOD": 2, "CLINGER_FAST_PATH": 0}),
    "portable multiply": (
        ["-mfpmath=sse", "-mlong-double-64"] if _X86 else [],
        [("TRACELENS_PORTABLE_ARITHMETIC", None)],
        {"NATIVE_MULTIPLY": 0},
    ),
    # digits one at a time (big-endian machines, compilers other than GCC and Clang), not eight in a word
    "digit by digit": ([], [("TRACELENS_NO_SWAR", None)], {"WORD_DIGITS": 0}),
}


def _compiler_or_skip() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) here")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python headers here (python3-dev)")
    pytest.importorskip("setuptools")


def _build(out: Path, source: Path, flags: list[str], macros: list[tuple[str, str | None]]) -> Path:
    """source compiled as setuptools compiles the scanner at install, plus flags and macros, into out."""
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extension = Extension("_kineto_scan", [str(source)], extra_compile_args=flags, define_macros=macros)
    command = build_ext(Distribution({"name": "scanner-probe", "ext_modules": [extension]}))
    command.build_lib, command.build_temp = str(out), str(out / "temp")
    command.ensure_finalized()
    with contextlib.redirect_stdout(io.StringIO()):  # setuptools' log of the commands it runs
        command.run()
    return Path(command.get_ext_fullpath("_kineto_scan"))


def _build_scanner(out: Path, flags: list[str], macros: list[tuple[str, str | None]]) -> ModuleType:
    """The scanner built with flags and macros, loaded as a module of its own (the installed one is left
    alone)."""
    spec = importlib.util.spec_from_file_location("_kineto_scan", _build(out, SOURCE, flags, macros))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compiler_takes(flags: list[str], out: Path) -> bool:
    from setuptools.errors import CompileError

    probe = out / "probe" / "probe.c"
    probe.parent.mkdir()
    probe.write_text("double half(double x) { return x / 2; }\n")
    try:
        _build(probe.parent, probe, flags, [])
    except CompileError:
        return False
    return True


@pytest.fixture(scope="module", params=list(WITHOUT_X87))
def scanner_without_x87(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> ModuleType:
    _compiler_or_skip()
    flags, macros, expected = WITHOUT_X87[request.param]
    out = tmp_path_factory.mktemp("scanner")
    if any(flag.startswith("-mfpmath=387") for flag in flags) and not _X86:
        pytest.skip("x87 arithmetic exists on x86 only")
    if flags and not _compiler_takes(flags, out):
        pytest.skip(f"the C compiler does not take {' '.join(flags)}")
    module = _build_scanner(out, flags, macros)
    for name, value in expected.items():  # the build is the configuration it stands for
        assert getattr(module, name) == value, name
    return module


def test_without_x87_numbers_are_pythons_float_bit_for_bit(
    scanner_without_x87: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _check_numbers(scanner_without_x87, _adversarial_numbers(seed=19, count=20_000))
    assert paths["eisel-lemire"] > 5_000
    monkeypatch.setattr(kineto, "_kineto_scan", scanner_without_x87)
    test_numbers_are_the_correctly_rounded_doubles_python_reads()  # 9,000 numbers in ts, dur and correlation
    test_typical_kineto_numbers_never_leave_the_fast_paths()
    test_a_number_python_decides_leaves_its_block_native()


def test_without_x87_blocks_are_read_as_msgspec_reads_them(
    scanner_without_x87: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kineto, "_kineto_scan", scanner_without_x87)
    for case in READ_NATIVELY:
        test_well_typed_events_read_natively_equal_msgspec(case)
    for case in DECLINED:
        test_what_msgspec_would_not_read_typed_is_declined(case)
    test_mutated_blocks_never_crash_and_what_is_read_equals_msgspec()  # 3,000 seeded mutations
    test_mutated_numbers_never_crash_and_what_is_read_equals_msgspec()
    test_mutated_documents_never_crash_and_what_is_read_equals_msgspec()


def _mutations(text: bytes, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabet = b'{}[]",:.-+eE0123456789 \n\\ntfalsu\xff'
    # Escapes and bytes where JSON and UTF-8 have rules: lone and paired surrogates, overlong and valid forms.
    snippets = [
        b"\\ud800",
        b"\\udc00",
        b"\\ud83d\\ude00",
        b"\\u00e9",
        b"\xed\xa0\x80",
        b"\xc0\xaf",
        b"\xc3\xa9",
        b"\xf4\x90\x80\x80",
        b"\xe2\x82",
    ]
    out = []
    for _ in range(count):
        data = bytearray(text)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(data))
            action = rng.randrange(5)
            if action == 4:
                data[at:at] = rng.choice(snippets)
                continue
            if action == 0:
                del data[at]
            elif action == 1:
                data.insert(at, rng.choice(alphabet))
            elif action == 2:
                data[at] = rng.choice(alphabet)
            else:
                del data[at:]
            if not data:  # cut to nothing: start again from a lone bracket
                data = bytearray(b"[")
        out.append(bytes(data))
    return out


@needs_scanner
def test_mutated_blocks_never_crash_and_what_is_read_equals_msgspec() -> None:
    events = (
        READ_NATIVELY["kernel and launch"]
        + READ_NATIVELY["numbers as strings"]
        + READ_NATIVELY["escapes in names"]
    )
    text = event_list(*events).encode()
    read = 0
    for mutated in _mutations(text, seed=11, count=3000):
        got = native_engine.scan_block_columns((mutated,))
        if got is None:
            continue
        read += 1
        assert_same_block(got, reference(mutated))  # msgspec must read it too, to the same columns
    assert read > 100  # mutations inside values and whitespace still read (the comparison above ran)


@needs_scanner
def test_mutated_numbers_never_crash_and_what_is_read_equals_msgspec() -> None:
    # Events with numbers each path decides (Python's float() too), duplicated keys among them.
    events = [KERNEL] + READ_NATIVELY["numbers Python's float() decides"] + READ_NATIVELY["number shapes"]
    text = event_list(*events).encode()
    read = 0
    for mutated in _mutations(text, seed=23, count=3000):
        got = native_engine.scan_block_columns((mutated,))
        if got is None:
            continue
        read += 1
        assert_same_block(got, reference(mutated))
    assert read > 100


def test_engine_names_and_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown Kineto engine"):
        reader.choose_engine("simdjson")
    with pytest.raises(ValueError, match="unknown Kineto engine"):
        reader.choose_engine("duckdb")  # dropped: the native scanner is faster on every trace measured
    monkeypatch.setattr(kineto, "_kineto_scan", None)
    with pytest.raises(ValueError, match="not built"):
        reader.choose_engine("native")
    assert reader.choose_engine("auto") == "msgspec"


@needs_scanner
def test_auto_prefers_the_native_scanner() -> None:
    assert reader.choose_engine("auto") == "native"


def test_native_scanner_is_built_where_a_compiler_exists() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) here: the reader uses msgspec")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python headers here (python3-dev): the reader uses msgspec")
    assert kineto._kineto_scan is not None, (
        "a C compiler and Python's headers are here but "
        "tracelens/ingest/_kineto_scan.c was not built: reinstall with "
        "`pip install -e .` and read its output"
    )
    assert kineto._kineto_scan.N_FLOATS == len(fields.NATIVE_FLOATS)


def test_the_c_scanner_declares_the_fields_of_fields_py() -> None:
    """_kineto_scan.c's enums and key tests list the fields of fields.py: same names, order, JSON keys, types."""
    source = SOURCE.read_text()
    floats = re.search(r"enum \{([^}]*)N_FLOATS\s*\}", source).group(1)
    assert tuple(n.strip()[2:].lower() for n in floats.split(",") if n.strip()) == fields.NATIVE_FLOATS
    strings = re.search(r"enum \{([^}]*)N_STRINGS\s*\}", source).group(1)
    assert tuple(n.strip()[2:].lower() for n in strings.split(",") if n.strip()) == fields.NATIVE_STRINGS
    op_floats = re.search(r"enum \{([^}]*)N_OP_FLOATS\s*\}", source).group(1)
    assert tuple(n.strip()[3:].lower() for n in op_floats.split(",") if n.strip()) == fields.NATIVE_OP_FLOATS
    op_strings = re.search(r"enum \{([^}]*)N_OP_STRINGS\s*\}", source).group(1)
    assert (
        tuple(n.strip()[3:].lower() for n in op_strings.split(",") if n.strip()) == fields.NATIVE_OP_STRINGS
    )
    # Each key test of the event loop and the args loop: the key, the reader called and the slot it fills.
    reader_of = {
        fields.NUMBER: "read_float",
        fields.NUMBER_OR_TEXT: "read_float_or_text",
        fields.TEXT: "read_text_or_null",
        fields.TRIPLE: "read_triple_or_null",
        fields.JSON: "read_json",
    }
    found = {
        key: (reader.removesuffix("_cold"), slot.lower())  # read_float_cold: read_float, out of line
        for key, reader, slot in re.findall(
            r'KEY_IS\(key, "([^"]+)"\)\) rc = (\w+)\(s, (?:f, F_|&f\[F_|&strings\[S_|f, OP_F\(OF_|&strings\[OP_S\(OS_)(\w+)',
            source,
        )
    }
    want = {
        f.key: (reader_of[f.type], f"{f.name}_x" if f.type == fields.TRIPLE else f.name)
        for f in (*fields.EVENT_FIELDS, *fields.ARG_FIELDS)
        if f.type != fields.PHASE
    }
    assert found == want
    assert 'KEY_IS(key, "ph")' in source  # the phase, read on its own
    # The args loop dispatches on the key's length: every key sits under the case of its own length.
    # (the args loop: args_members, scan_args's general path)
    cases = re.findall(r"case (\d+):(.*?)break;", source[source.index("int args_members(") :], re.S)
    assert {key for _, body in cases for key in re.findall(r'KEY_IS\(key, "([^"]+)"\)', body)} == {
        f.key for f in fields.ARG_FIELDS
    }
    for length, body in cases:
        assert all(len(key) == int(length) for key in re.findall(r'KEY_IS\(key, "([^"]+)"\)', body)), length
    # Numbers start as NaN (missing); the ones declared with another default are set after that.
    defaults = {
        name.lower(): float(value) for name, value in re.findall(r"f\[F_(\w+)\] = ([0-9.]+);", source)
    }
    assert defaults == {
        f.name: f.missing
        for f in (*fields.EVENT_FIELDS, *fields.ARG_FIELDS)
        if f.type in (fields.NUMBER, fields.NUMBER_OR_TEXT) and not math.isnan(f.missing)
    }


@needs_scanner
def test_duplicate_keys_keep_the_last_value_as_msgspec_does() -> None:
    text = event_list(
        '{"ph": "M", "name": "a", "ph": "X", "cat": "cpu_op", "name": "b", "pid": "7", "pid": 1, '
        '"tid": 2, "tid": "stream 3", "ts": 1, "ts": 2, "args": {"grid": [1, 2, 3], "grid": null}}'
    )
    got = native(text)
    assert got is not None
    assert_same_block(got, reference(text))
    assert json.loads(text)[0]["name"] == "b"  # and the stdlib agrees on which one is kept


DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo.pt.trace.json.gz"


def _relaid(tmp_path: Path, layout: str) -> Path:
    """The demo trace re-saved in another layout (what a tool other than Kineto might write)."""
    import gzip

    doc = json.loads(gzip.open(DEMO).read())
    doc["traceName"] = "after the events"  # a member after traceEvents, read from the document's end
    text = {
        "minified": lambda: json.dumps(doc, separators=(",", ":")),
        "indent4": lambda: json.dumps(doc, indent=4),
        "bare list": lambda: json.dumps(doc["traceEvents"]),
    }[layout]()
    path = tmp_path / f"{layout.replace(' ', '_')}.json"
    path.write_text(text)
    return path


@needs_scanner
@pytest.mark.parametrize("layout", ["minified", "indent4", "bare list"])
def test_other_layouts_are_read_natively_in_one_piece(tmp_path: Path, layout: str) -> None:
    path = _relaid(tmp_path, layout)
    trace = kineto.read(path, engine="native")
    reference_trace = kineto.read(path, engine="msgspec")
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 0
    assert trace.events.equals(reference_trace.events)
    assert trace.devices.equals(reference_trace.devices)
    assert trace.metadata.time_origin_ns == reference_trace.metadata.time_origin_ns
    assert trace.metadata.extra == {
        **reference_trace.metadata.extra,
        "counts": {**reference_trace.metadata.extra["counts"], "msgspec_blocks": 0},
    }
    if layout != "bare list":
        assert trace.metadata.extra["trace_name"] == "after the events"


@needs_scanner
@pytest.mark.parametrize(
    "document",
    [
        '{"traceEvents": [], "traceEvents": []}',  # twice: left to msgspec
        '{"traceName": "x"}',  # no events at all
        '{"traceEvents": null}',
        '{"traceEvents": {}}',
        '{"traceEvents": [{"ph": "X", "ts": 1}]} trailing',
        "   ",
    ],
)
def test_documents_the_scanner_declines_get_msgspecs_answer(tmp_path: Path, document: str) -> None:
    path = tmp_path / "odd.json"
    path.write_text(document)
    assert kineto._kineto_scan.scan_document(document.encode(), blocks.to_number, msgspec.json.decode) is None
    outcomes = []
    for engine in ("native", "msgspec"):
        try:
            trace = kineto.read(path, engine=engine)
            outcomes.append(("table", trace.events.num_rows))
        except InputError as err:
            outcomes.append(("error", str(err)))
    assert outcomes[0] == outcomes[1]


@needs_scanner
def test_mutated_documents_never_crash_and_what_is_read_equals_msgspec() -> None:
    events = READ_NATIVELY["kernel and launch"] + READ_NATIVELY["numbers as strings"]
    text = (
        '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": '
        + event_list(*events)
        + ', "traceName": "t"}'
    ).encode()
    read = 0
    for mutated in _mutations(text, seed=13, count=1500):
        got = native_engine.scan_document(mutated)
        if got is None:
            continue
        read += 1
        block, fields = got
        events_read, fields_read = msgspec_engine.decode_rest(mutated, Path("mutated.json"))
        assert_same_block(block, msgspec_engine.block_columns(events_read))
        assert fields == fields_read
    assert read > 50


# JSON string bodies (escapes as written in the file).
TRICKY_NAMES = [
    'a},{\\"b',
    'quote \\" inside',
    "brackets [ ] { }",
    "comma, comma",
    "back\\\\slash\\\\",
    "é },{ ü",
]


def _tricky_events(count: int) -> list[str]:
    """Kernel events whose names hold the characters a naive cut would split on."""
    return [
        json.dumps(
            {
                "ph": "X",
                "cat": "kernel",
                "name": json.loads(f'"{TRICKY_NAMES[i % len(TRICKY_NAMES)]}"'),
                "pid": 0,
                "tid": 7,
                "ts": 10 + 3 * i,
                "dur": 2,
                "args": {
                    "device": 0,
                    "stream": 7,
                    "correlation": i,
                    "grid": [1, 2, 3],
                    "nested": {"list": [[1, {"x": "},{"}], []]},
                },
            },
            ensure_ascii=i % 2 == 0,
        )
        for i in range(count)
    ]


@needs_scanner
def test_the_event_boundary_is_the_last_comma_between_two_events() -> None:
    events = _tricky_events(40)
    text = ",\n ".join(events).encode()
    # The commas between events, known from how the text was put together.
    separators, at = [], 0
    for event in events[:-1]:
        at += len(event.encode())
        separators.append(at)
        at += len(b",\n ")
    rng = random.Random(5)
    for end in [len(text)] + [rng.randrange(len(text)) for _ in range(300)]:
        want = max((c for c in separators if c < end), default=-1)
        assert kineto._kineto_scan.last_event_boundary(text[:end]) == want, end
    # The list's end stops the search: commas after "]" belong to the document, not to the list.
    assert kineto._kineto_scan.last_event_boundary(text + b'\n], "traceName": "x", "y": 1}') == separators[-1]


@needs_scanner
@pytest.mark.parametrize("engine", ["native", "msgspec"])
@pytest.mark.parametrize("layout", ["minified", "indent4", "bare list"])
def test_other_layouts_are_cut_into_blocks_with_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, layout: str
) -> None:
    events = [json.loads(e) for e in _tricky_events(600)]
    doc = {"schemaVersion": 1, "traceEvents": events, "traceName": "after"}
    text = {
        "minified": lambda: json.dumps(doc, separators=(",", ":")),
        "indent4": lambda: json.dumps(doc, indent=4),
        "bare list": lambda: json.dumps(events),
    }[layout]()
    path = tmp_path / "other.json"
    path.write_text(text)
    whole = kineto.read(path, engine="msgspec")  # one block: the whole file in one piece
    monkeypatch.setattr(reader, "BLOCK_BYTES", 4096)  # now ~40+ blocks, cut at event boundaries
    monkeypatch.setattr(reader, "MAX_WORKERS", 3)
    trace = kineto.read(path, engine=engine)
    assert trace.events.equals(whole.events)
    kernels = trace.of_kind("kernel")
    assert kernels["correlation_id"].tolist() == list(range(600))  # hand-made: kernel i has correlation i
    assert sorted(set(kernels["name"])) == sorted(json.loads(f'"{n}"') for n in TRICKY_NAMES)
    if engine == "native":
        assert trace.metadata.extra["counts"]["msgspec_blocks"] == 0


@needs_scanner
def test_an_unclosed_string_in_another_layout_is_one_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"traceEvents": [json.loads(e) for e in _tricky_events(400)]}, separators=(",", ":"))
    bad_at = text.index('"name":', len(text) // 3) + len('"name":')
    text = text[:bad_at] + '"never closed ' + text[bad_at + 1 :].replace('"', "'", 40)  # swallows many events
    path = tmp_path / "unclosed.json"
    path.write_text(text)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 4096)
    for engine in ("native", "msgspec"):
        with pytest.raises(InputError, match="invalid JSON|truncated"):
            kineto.read(path, engine=engine)


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_json_args_are_one_canonical_text_however_written(tmp_path: Path, engine: str) -> None:
    """The same value written with spaces, newlines or escapes is one text: compact, escapes only where JSON
    needs them (docs/schema.md); a JSON null is no value."""
    if engine == "native" and not kineto.native_scanner_built():
        pytest.skip("native scanner not built")
    path = _kineto_file(tmp_path / "t.json", READ_NATIVELY["op and collective args"])
    table = kineto.read(path, engine=engine).events
    rows = {n: i for i, n in enumerate(table.column("name").to_pylist())}
    dims, types, concrete = (
        table.column(c).to_pylist() for c in ("input_dims", "input_types", "concrete_inputs")
    )
    assert dims[rows["aten::mm"]] == dims[rows["b"]] == "[[8,64],[64,32]]"
    assert types[rows["aten::mm"]] == '["float","c10::BFloat16"]'
    assert types[rows["b"]] == '["é\\"\\\\","名","é"]'
    assert concrete[rows["b"]] == '[1.0,1000.0,0,{"k":[true,null]}]'
    assert (dims[rows["c"]], types[rows["c"]], concrete[rows["c"]]) == (None, "[]", '"text"')
    assert dims[rows["only a null"]] is None
    comms = rows["record_param_comms"]
    assert [
        table.column(c)[comms].as_py() for c in ("msg_in_elems", "msg_out_elems", "msg_dtype", "group_size")
    ] == [2049000, 4098000, "Float", 2]
    assert [
        table.column(c)[rows["k"]].as_py() for c in ("msg_in_elems", "msg_dtype", "group_size", "flops")
    ] == [7, "BFloat16", 8, 1.5e12]
    assert table.column("flops")[rows["aten::mm"]].as_py() == 65536
    assert (dims[rows["2021 mm"]], dims[rows["both"]]) == ("[[8,64],[64,32]]", "[[2]]")  # "Input Dims" first
    assert [
        table.column(c)[rows["nccl k"]].as_py() for c in ("collective_name", "process_group", "group_ranks")
    ] == ["allreduce", "0", "[0, 1]"]
