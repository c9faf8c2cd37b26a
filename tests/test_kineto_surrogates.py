"""Unpaired UTF-16 surrogate escapes in a Kineto trace's strings ("\\ud800" alone): valid JSON syntax that Python's
json reads (as a lone surrogate), msgspec refuses. Read by both engines with U+FFFD in the escape's place, and said
in one warning; the expected names here come from Python's json, each lone surrogate then replaced by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tracelens
from tests.kineto_events import both_engines, complete_event  # noqa: F401 (both_engines: the fixture)
from tracelens.ingest import kineto

# Each name as written in the file's JSON text (escapes and all), in the order of the kernels' start times.
RAW_NAMES = [
    r"gemm\ud800",  # a high surrogate ending the string (msgspec: "Input data was truncated")
    r"relu\udc00x",  # a low one alone
    r"add\ud800\u0041",  # a high one followed by an escape that is no low one
    r"emoji\ud83d\ude00",  # a pair: one character, kept
    r"lit\\ud800",  # an escaped backslash, then the text "ud800": no escape
    r"two\\\ud800",  # an escaped backslash, then an unpaired escape
    r"low\udc00\ud800",  # low then high: two unpaired
]


def _expected(raw: str) -> str:
    """What Python's json reads, each lone surrogate left replaced by U+FFFD."""
    value = json.loads('"' + raw + '"')
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)


def _trace_text(raw_names: list[str], *, kernels: int = 0) -> str:
    """Kernels named ``raw_names`` (spliced into the JSON text as written), then ``kernels`` plain ones."""
    events = []
    for i, raw in enumerate(raw_names + [f"plain{i}" for i in range(kernels)]):
        event = complete_event("kernel", f"@NAME{i}@", 0, 7, 10 + 3 * i, 2, device=0, stream=7, correlation=i)
        events.append("  " + json.dumps(event).replace(f'"@NAME{i}@"', '"' + raw + '"'))
    return '{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + ",\n".join(events) + "\n  ]\n}\n"


def _kernel_names(trace: tracelens.Trace) -> list[str]:
    kernels = trace.of_kind("kernel").sort_values("start_ns")
    return [str(n) for n in kernels["name"]]


def test_unpaired_surrogates_read_as_replacement_characters(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "surrogates.json"
    path.write_text(_trace_text(RAW_NAMES))
    trace = kineto.read(path, engine=engine)
    assert _kernel_names(trace) == [_expected(raw) for raw in RAW_NAMES]
    assert _kernel_names(trace)[3] == "emoji\U0001f600" and _kernel_names(trace)[4] == "lit\\ud800"
    # 1 + 1 + 1 + 0 + 0 + 1 + 2 unpaired escapes
    (warning,) = [w for w in trace.metadata.warnings if "surrogate" in w]
    assert warning.startswith("6 unpaired")


def test_unpaired_surrogate_in_a_block_of_a_long_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """In the middle of a trace read in many blocks (decoded apart from the document's rest), with workers."""
    path = tmp_path / "long.json"
    text = _trace_text([], kernels=3000)
    text = text.replace('"plain1500"', '"plain1500\\ud800"', 1)
    path.write_text(text)
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", 4096)
    trace = kineto.read(path, engine=engine)
    names = _kernel_names(trace)
    assert len(names) == 3000 and names[1500] == "plain1500\ufffd" and names[1499] == "plain1499"
    assert any(w.startswith("1 unpaired") for w in trace.metadata.warnings)


def test_unpaired_surrogate_in_the_header_and_args(tmp_path: Path, engine: str) -> None:
    """In a top-level string before the events (the header piece) and in a kernel's args."""
    text = _trace_text(["k"]).replace('"schemaVersion": 1,', '"schemaVersion": 1, "traceName": "run\\udfff",')
    text = text.replace('"stream": 7', '"stream": 7, "note": "a\\ud800"')
    path = tmp_path / "header.json"
    path.write_text(text)
    trace = kineto.read(path, engine=engine)
    assert _kernel_names(trace) == ["k"]
    assert trace.metadata.extra["trace_name"] == "run\ufffd"


def test_the_cli_reads_it(tmp_path: Path) -> None:
    from tracelens.cli import main

    path = tmp_path / "surrogates.json"
    path.write_text(_trace_text(RAW_NAMES))
    assert main(["analyze", str(path), "-f", "json", "-o", str(tmp_path / "out.json")]) == 0
    doc = json.loads((tmp_path / "out.json").read_text())
    assert any("surrogate" in w for w in doc["source"]["warnings"])


def test_replacement_keeps_byte_positions_and_other_errors() -> None:
    """The escape that replaces an unpaired one is as long (msgspec's byte positions stay the file's); a piece
    without any is left for msgspec's own error."""
    from tracelens.ingest.kineto.msgspec_engine import paired_surrogates

    raw = b'["a\\ud800", "\\\\ud800", "\\ud83d\\ude00", "\\\\\\udc01"]'
    fixed, count = paired_surrogates(raw)
    assert count == 2 and len(fixed) == len(raw)
    assert fixed == b'["a\\ufffd", "\\\\ud800", "\\ud83d\\ude00", "\\\\\\ufffd"]'
    assert paired_surrogates(b'["a", "\\ud83d\\ude00", "\\\\udc00"]') is None
    assert re.search(rb"ud800", fixed)  # the escaped backslash's text untouched
