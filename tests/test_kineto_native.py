"""The native Kineto scanner (``tracelens/ingest/_kineto_scan.c``) against msgspec, the reference reader.

The scanner either gives exactly the block columns msgspec's typed decoder gives, or declines (None) so that
msgspec reads the block. Every case here is checked against msgspec (or, for numbers, against Python's own
correctly rounded ``float``), never against the scanner itself.
"""

from __future__ import annotations

import json
import random
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from tracelens.errors import InputError
from tracelens.ingest import kineto

needs_scanner = pytest.mark.skipif(kineto._kineto_scan is None, reason="native scanner not built (no C compiler)")


def native(text: str | bytes) -> dict | None:
    data = text.encode() if isinstance(text, str) else text
    return kineto._native_block_columns((data,))


def reference(text: str | bytes) -> dict:
    data = text.encode() if isinstance(text, str) else text
    return kineto._block_columns(kineto._EVENTS_DECODER.decode(data))


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


def event_list(*events: str) -> str:
    return "[\n" + ",\n".join(events) + "\n]"


KERNEL = ('{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2, '
          '"args": {"device": 0, "stream": 7, "correlation": 3, "grid": [1, 2, 3], "block": [4, 5, 6], '
          '"registers per thread": 32, "shared memory": 0, "est. achieved occupancy %": 50}}')
LAUNCH = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 10, '
          '"dur": 1, "args": {"correlation": 3, "External id": 1}}')

READ_NATIVELY = {
    "kernel and launch": [KERNEL, LAUNCH],
    "escapes in names": ['{"ph": "X", "cat": "cpu_op", "name": "a\\"b\\\\c\\u00e9\\n\\/", "pid": 1, "tid": 1, "ts": 1}',
                         '{"ph": "X", "cat": "cpu_op", "name": "\\ud83d\\ude00 surrogate pair", "pid": 1, "tid": 1, "ts": 2}'],
    "raw UTF-8 and its escaped twin": ['{"ph": "X", "cat": "cpu_op", "name": "é名", "pid": 1, "tid": 1, "ts": 1}',
                                       '{"ph": "X", "cat": "cpu_op", "name": "\\u00e9\\u540d", "pid": 1, "tid": 1, "ts": 2}'],
    "numbers as strings": ['{"ph": "X", "cat": "kernel", "name": "k", "pid": "0x1f", "tid": "stream 7", "ts": 1, '
                           '"args": {"stream": "0x0", "device": 0}}',
                           '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": " 12 ", "tid": "Spans", "ts": 2}'],
    "number shapes": ['{"ph": "X", "cat": "cpu_op", "name": "a", "pid": -0, "tid": 1e3, "ts": 1712195495519689.047, "dur": 1E-2}',
                      '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 123456789012345678901234, "tid": 0.1, '
                      '"ts": 1712195495519689.125, "dur": 5e-324}',
                      '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 9007199254740993, "tid": -7.25e-3, '
                      '"ts": 0.30000000000000004441, "dur": 1.7976931348623157e308}'],
    "defaults and drops": ['{"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 1, "tid": 1, "ts": 5}',
                           '{"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1}',
                           '{"ph": "X", "name": "no category", "pid": 1, "tid": 1, "ts": 6}',
                           '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 1, "ts": 0}',
                           '{"ph": "X", "cat": null, "name": null, "pid": 1, "tid": 1, "ts": 7}'],
    "grids that are not triples": [KERNEL.replace("[1, 2, 3]", "[1, 2]"), KERNEL.replace("[1, 2, 3]", "[1, 2, 3, 4]"),
                                   KERNEL.replace("[1, 2, 3]", "null"), KERNEL.replace("[1, 2, 3]", "[]"),
                                   KERNEL.replace("[1, 2, 3]", "[-1, 0, 9223372036854775807]")],
    "unknown keys of every JSON type": [KERNEL.replace('"args": {', '"x": [1, {"b": null, "c": [true, false]}], "y": {}, '
                                                      '"z": "s", "w": -1.5e7, "args": {"u": {"v": [[], {}]}, ')],
    "phases other than X": ['{"ph": "M", "name": "process_name", "pid": "Traces", "tid": 0, "args": {"name": "x"}}',
                            '{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"}',
                            '{"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g", "bp": "e"}',
                            '{"ph": "i", "s": "t", "pid": 1, "tid": 1, "ts": 1, "name": "mark"}',
                            '{"ph": "B", "pid": 1, "tid": 1, "ts": 1, "name": "begin"}', "{}", LAUNCH],
    "2021 lowercase external id and sync kinds": [
        LAUNCH.replace('"External id"', '"external id"'),
        '{"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 11, "dur": 1, '
        '"args": {"device": 0, "stream": 7, "cuda_sync_kind": "stream sync", "correlation": 4}}',
        '{"ph": "X", "cat": "cpu_op", "name": "host", "pid": 1, "tid": 1, "ts": 11, "args": {"cuda_sync_kind": "ignored"}}'],
    "whitespace everywhere": ['\t{ "ph" :\r\n"X" , "cat":"kernel" ,"name" : "k","pid":0,"tid":7,"ts":1,"args":{ } }  '],
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
    assert_same_block(kineto._native_block_columns((bare,)), want)
    cut = bare.index(b",\n", len(events[0]) + 5)  # a piece boundary between two events, as _split makes
    assert_same_block(kineto._native_block_columns((bare[:cut], memoryview(bare)[cut + 1:])), want)


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
    assert kineto._native_block_columns((text,)) is None
    try:  # msgspec's typed decoder rejects it too (the reader then goes lenient or reports the error)
        kineto._EVENTS_DECODER.decode(text)
    except (kineto.msgspec.ValidationError, kineto.msgspec.DecodeError):
        return
    pytest.fail("msgspec's typed decoder reads what the scanner declined")


@needs_scanner
@pytest.mark.parametrize("text", ["[1] 2", "[{}] ]", "[{},]", "[{}", "", "   ", "{} {}", "[{}]x"])
def test_lists_with_anything_after_or_missing_are_declined(text: str) -> None:
    assert kineto._native_block_columns((text.encode(),)) is None


def _kineto_layout(events: list[str]) -> str:
    """The document as Kineto writes it: one event per "  {" ... "  }" block (what _split cuts at)."""
    return '{\n  "traceEvents": [\n' + ",\n".join("  {\n    " + e[1:-1] + "\n  }" for e in events) + "\n  ]\n}\n"


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
    assert kineto._native_block_columns((("[" + event + "]").encode("latin-1"),)) is None
    path = tmp_path / "rare.json"
    path.write_bytes(_kineto_layout([KERNEL, event, LAUNCH]).encode("latin-1"))
    trace = kineto.read(path, engine="native")
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 1
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)


@pytest.mark.parametrize("engine", ["native", "msgspec", "duckdb"])
@pytest.mark.parametrize("where", ["first block", "last event"])
def test_a_name_that_is_not_utf8_is_one_input_error(tmp_path: Path, engine: str, where: str) -> None:
    if engine == "native" and kineto._kineto_scan is None:
        pytest.skip("native scanner not built")
    if engine == "duckdb":
        pytest.importorskip("duckdb")
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


def _decimal_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        shape = i % 6
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
        else:  # exponents
            texts.append(f"{rng.randrange(1, 10**8)}e{rng.randrange(-40, 40)}")
    return texts


@needs_scanner
def test_numbers_are_the_correctly_rounded_doubles_python_reads() -> None:
    texts = _decimal_texts(seed=7, count=6000)
    # In dur and correlation: ts must lie on the timeline (|ts| < 2**62 ns), and these numbers go far beyond.
    events = [f'{{"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 1, "dur": {t}, '
              f'"args": {{"correlation": {t}}}}}' for t in texts]
    block = native(event_list(*events))
    want = np.array([float(t) for t in texts])
    assert block["dur"].tobytes() == want.tobytes()  # bit for bit, signs of zero included
    assert block["correlation"].tobytes() == want.tobytes()
    timestamps = native(event_list(*(e.replace('"ts": 1,', f'"ts": {t},') for e, t in zip(events, texts, strict=True))))
    placeable = [t for t in texts if abs(float(t)) < 2.0**62 / 1000]
    assert timestamps["ts"].tobytes() == np.array([float(t) for t in placeable]).tobytes()


def _mutations(text: bytes, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    alphabet = b'{}[]",:.-+eE0123456789 \n\\ntfalsu\xff'
    # Escapes and bytes where JSON and UTF-8 have rules: lone and paired surrogates, overlong and valid forms.
    snippets = [b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\\u00e9", b"\xed\xa0\x80", b"\xc0\xaf", b"\xc3\xa9",
                b"\xf4\x90\x80\x80", b"\xe2\x82"]
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
                if not data:
                    data = bytearray(b"[")
        out.append(bytes(data))
    return out


@needs_scanner
def test_mutated_blocks_never_crash_and_what_is_read_equals_msgspec() -> None:
    events = READ_NATIVELY["kernel and launch"] + READ_NATIVELY["numbers as strings"] + READ_NATIVELY["escapes in names"]
    text = event_list(*events).encode()
    read = 0
    for mutated in _mutations(text, seed=11, count=3000):
        got = kineto._native_block_columns((mutated,))
        if got is None:
            continue
        read += 1
        assert_same_block(got, reference(mutated))  # msgspec must read it too, to the same columns
    assert read > 100  # mutations inside values and whitespace still read (the comparison above ran)


def test_engine_names_and_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="unknown Kineto engine"):
        kineto._engine("simdjson", 10)
    monkeypatch.setattr(kineto, "_kineto_scan", None)
    with pytest.raises(ValueError, match="not built"):
        kineto._engine("native", 10)
    assert kineto._engine("auto", kineto.DUCKDB_MIN_BYTES - 1) == "msgspec"
    with_duckdb = kineto._duckdb_module() is not None
    assert kineto._engine("auto", kineto.DUCKDB_MIN_BYTES) == ("duckdb" if with_duckdb else "msgspec")


@needs_scanner
def test_auto_prefers_the_native_scanner() -> None:
    assert kineto._engine("auto", 10) == "native"
    assert kineto._engine("auto", 10 * 2**30) == "native"


def test_native_scanner_is_built_where_a_compiler_exists() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) here: the reader uses msgspec")
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        pytest.skip("no Python headers here (python3-dev): the reader uses msgspec")
    assert kineto._kineto_scan is not None, ("a C compiler and Python's headers are here but "
                                             "tracelens/ingest/_kineto_scan.c was not built: reinstall with "
                                             "`pip install -e .` and read its output")
    assert kineto._kineto_scan.N_FLOATS == len(kineto._NATIVE_FIELDS)


@needs_scanner
def test_duplicate_keys_keep_the_last_value_as_msgspec_does() -> None:
    text = event_list('{"ph": "M", "name": "a", "ph": "X", "cat": "cpu_op", "name": "b", "pid": "7", "pid": 1, '
                      '"tid": 2, "tid": "stream 3", "ts": 1, "ts": 2, "args": {"grid": [1, 2, 3], "grid": null}}')
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
    text = {"minified": lambda: json.dumps(doc, separators=(",", ":")),
            "indent4": lambda: json.dumps(doc, indent=4),
            "bare list": lambda: json.dumps(doc["traceEvents"])}[layout]()
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
    assert trace.metadata.extra == {**reference_trace.metadata.extra,
                                    "counts": {**reference_trace.metadata.extra["counts"], "msgspec_blocks": 0}}
    if layout != "bare list":
        assert trace.metadata.extra["trace_name"] == "after the events"


@needs_scanner
@pytest.mark.parametrize("document", [
    '{"traceEvents": [], "traceEvents": []}',  # twice: left to msgspec
    '{"traceName": "x"}',  # no events at all
    '{"traceEvents": null}',
    '{"traceEvents": {}}',
    '{"traceEvents": [{"ph": "X", "ts": 1}]} trailing',
    '   ',
])
def test_documents_the_scanner_declines_get_msgspecs_answer(tmp_path: Path, document: str) -> None:
    path = tmp_path / "odd.json"
    path.write_text(document)
    assert kineto._kineto_scan.scan_document(document.encode(), kineto._to_number, kineto.msgspec.json.decode) is None
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
    text = ('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": '
            + event_list(*events) + ', "traceName": "t"}').encode()
    read = 0
    for mutated in _mutations(text, seed=13, count=1500):
        got = kineto._native_document(mutated)
        if got is None:
            continue
        read += 1
        block, fields = got
        events_read, fields_read = kineto._decode_rest(mutated, Path("mutated.json"))
        assert_same_block(block, kineto._block_columns(events_read))
        assert fields == fields_read
    assert read > 50


# JSON string bodies (escapes as written in the file).
TRICKY_NAMES = ['a},{\\"b', 'quote \\" inside', "brackets [ ] { }", "comma, comma", "back\\\\slash\\\\", "é },{ ü"]


def _tricky_events(count: int) -> list[str]:
    """Kernel events whose names hold the characters a naive cut would split on."""
    return [json.dumps({"ph": "X", "cat": "kernel", "name": json.loads(f'"{TRICKY_NAMES[i % len(TRICKY_NAMES)]}"'),
                        "pid": 0, "tid": 7, "ts": 10 + 3 * i, "dur": 2,
                        "args": {"device": 0, "stream": 7, "correlation": i, "grid": [1, 2, 3],
                                 "nested": {"list": [[1, {"x": "},{"}], []]}}}, ensure_ascii=i % 2 == 0)
            for i in range(count)]


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
@pytest.mark.parametrize("engine", ["native", "msgspec", "duckdb"])
@pytest.mark.parametrize("layout", ["minified", "indent4", "bare list"])
def test_other_layouts_are_cut_into_blocks_with_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               engine: str, layout: str) -> None:
    if engine == "duckdb":
        pytest.importorskip("duckdb")
    events = [json.loads(e) for e in _tricky_events(600)]
    doc = {"schemaVersion": 1, "traceEvents": events, "traceName": "after"}
    text = {"minified": lambda: json.dumps(doc, separators=(",", ":")),
            "indent4": lambda: json.dumps(doc, indent=4),
            "bare list": lambda: json.dumps(events)}[layout]()
    path = tmp_path / "other.json"
    path.write_text(text)
    whole = kineto.read(path, engine="msgspec")  # one block: the whole file in one piece
    monkeypatch.setattr(kineto, "BLOCK_BYTES", 4096)  # now ~40+ blocks, cut at event boundaries
    monkeypatch.setattr(kineto, "MAX_WORKERS", 3)
    trace = kineto.read(path, engine=engine)
    assert trace.events.equals(whole.events)
    kernels = trace.of_kind("kernel")
    assert kernels["correlation_id"].tolist() == list(range(600))  # hand-made: kernel i has correlation i
    assert sorted(set(kernels["name"])) == sorted(json.loads(f'"{n}"') for n in TRICKY_NAMES)
    if engine == "native":
        assert trace.metadata.extra["counts"]["msgspec_blocks"] == 0


@needs_scanner
def test_an_unclosed_string_in_another_layout_is_one_input_error(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"traceEvents": [json.loads(e) for e in _tricky_events(400)]}, separators=(",", ":"))
    bad_at = text.index('"name":', len(text) // 3) + len('"name":')
    text = text[:bad_at] + '"never closed ' + text[bad_at + 1:].replace('"', "'", 40)  # swallows many events
    path = tmp_path / "unclosed.json"
    path.write_text(text)
    monkeypatch.setattr(kineto, "BLOCK_BYTES", 4096)
    for engine in ("native", "msgspec"):
        with pytest.raises(InputError, match="invalid JSON|truncated"):
            kineto.read(path, engine=engine)
