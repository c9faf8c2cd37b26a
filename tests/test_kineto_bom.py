"""A UTF-8 byte-order mark before the JSON text (RFC 8259 lets a parser ignore it; some editors and Windows tools
write one): read as the same trace by both engines, plain or gzipped, in any layout and block size."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tracelens.cli import main
from tracelens.ingest import detect_format, kineto

BOM = b"\xef\xbb\xbf"


def _trace() -> dict:
    events = []
    for i in range(40):
        events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": 1000 + 10 * i, "dur": 4, "args": {"correlation": i}}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "kernel", "name": f"k{i % 3}", "pid": 0, "tid": 7, "ts": 1005 + 10 * i, "dur": 3,
             "args": {"correlation": i, "device": 0, "stream": 7}}
        )  # fmt: skip
    return {"schemaVersion": 1, "traceEvents": events}


def _texts() -> dict[str, bytes]:
    trace = _trace()
    return {
        "kineto_layout": json.dumps(trace, indent=1).encode(),
        "minified": json.dumps(trace).encode(),
        "bare_list": json.dumps(trace["traceEvents"]).encode(),
        "space_after_bom": b"\n  " + json.dumps(trace, indent=1).encode(),
    }


@pytest.mark.parametrize("layout", sorted(_texts()))
@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("engine", ["msgspec", "native"])
def test_a_bom_reads_as_the_same_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, gzipped: bool, engine: str
) -> None:
    if engine == "native" and not kineto.native_scanner_built():
        pytest.skip("native scanner not built")
    text = _texts()[layout]
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    plain.write_bytes(text)
    data = BOM + text
    if gzipped:
        marked = tmp_path / "marked.json.gz"
        data = gzip.compress(data)
    marked.write_bytes(data)
    assert detect_format(marked) == "kineto"
    expected = kineto.read(plain, engine="msgspec").events
    for block_bytes in (None, 512):  # one block, then many (the BOM only in the first)
        if block_bytes:
            monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", block_bytes)
        assert kineto.read(marked, engine=engine).events.equals(expected)


def test_a_bom_through_the_cli_and_a_bom_before_no_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marked = tmp_path / "marked.pt.trace.json"
    marked.write_bytes(BOM + json.dumps(_trace()).encode())
    assert main(["analyze", str(marked)]) == 0
    assert "80 events" in capsys.readouterr().out
    text = tmp_path / "text.json"
    text.write_bytes(BOM + b"hello")
    assert main(["analyze", str(text)]) == 2
    assert "not JSON" in capsys.readouterr().err
