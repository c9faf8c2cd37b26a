"""Bad Kineto input through the real CLI: exit code 2, one line on stderr naming the file, no traceback."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

import tracelens
from tracelens.cli import main
from tracelens.errors import InputError

ROOT = Path(__file__).resolve().parent.parent


@cache
def kineto_text(n_events: int) -> str:
    """A valid trace in Kineto's own layout (one event per indented block), big enough to span gzip blocks."""
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"aten::op{i % 7}",
            "pid": 1,
            "tid": 1,
            "ts": 1000 + i,
            "dur": 1,
            "args": {"External id": i},
        }
        for i in range(n_events)
    ]
    body = ",\n".join("  " + json.dumps(e) for e in events)
    return '{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + body + "\n  ]\n}\n"


@cache
def gzipped_text(n_events: int) -> bytes:
    return gzip.compress(kineto_text(n_events).encode(), compresslevel=1)


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def bad_inputs(tmp: Path) -> dict[str, Path]:
    whole_gzip = gzipped_text(20000)
    (tmp / "no_trace_dir").mkdir()
    (tmp / "no_trace_dir" / "notes.txt").write_text("nothing here")
    return {
        "missing": tmp / "does_not_exist.pt.trace.json",
        "empty": write(tmp / "empty.json", b""),
        "whitespace": write(tmp / "blank.json", "  \n "),
        "truncated_gzip": write(tmp / "cut.json.gz", whole_gzip[: len(whole_gzip) // 2]),
        "truncated_gzip_tiny": write(tmp / "tiny_cut.json.gz", whole_gzip[:40]),
        "corrupt_gzip": write(tmp / "corrupt.json.gz", b"\x1f\x8b" + b"not really deflate data" * 10),
        "truncated_json": write(tmp / "cut.json", kineto_text(5000)[:-20000]),
        "truncated_json_gzip": write(
            tmp / "cut_inside.json.gz", gzip.compress(kineto_text(5000)[:-9000].encode())
        ),
        "not_json": write(tmp / "text.json", "hello, world\n"),
        "object_not_trace": write(tmp / "object.json", '{"a": 1}'),
        "list_of_numbers": write(tmp / "numbers.json", "[1, 2, 3]"),
        "list_of_non_events": write(tmp / "objects.json", '[{"a": 1}, {"b": [2]}]'),
        "trace_events_not_list": write(tmp / "te.json", '{"traceEvents": 5}'),
        "zero_events": write(tmp / "zero.json", '{"traceEvents": []}'),
        "metadata_only": write(
            tmp / "meta.json",
            json.dumps(
                {
                    "traceEvents": [
                        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}
                    ]
                }
            ),
        ),
        "directory_without_trace": tmp / "no_trace_dir",
    }


CASES = [
    "missing",
    "empty",
    "whitespace",
    "truncated_gzip",
    "truncated_gzip_tiny",
    "corrupt_gzip",
    "truncated_json",
    "truncated_json_gzip",
    "not_json",
    "object_not_trace",
    "list_of_numbers",
    "list_of_non_events",
    "trace_events_not_list",
    "zero_events",
    "metadata_only",
    "directory_without_trace",
]


@pytest.mark.parametrize("case", CASES)
def test_cli_reports_bad_input_in_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_inputs(tmp_path)[case]
    code = main(["analyze", str(path)])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2
    assert len(lines) == 1, captured.err
    assert path.name in lines[0]
    assert lines[0].startswith("tracelens: ")
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize("case", ["truncated_gzip", "truncated_json", "object_not_trace", "zero_events"])
def test_library_raises_input_error_naming_the_file(case: str, tmp_path: Path) -> None:
    path = bad_inputs(tmp_path)[case]
    with pytest.raises(InputError) as info:
        tracelens.load(path)
    assert info.value.path == str(path)


def test_messages_say_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = bad_inputs(tmp_path)
    expected = {
        "empty": "empty",
        "truncated_gzip": "gzip",
        "truncated_json": "truncated JSON",
        "object_not_trace": "traceEvents",
        "zero_events": "no events",
        "metadata_only": "no timed events",
    }
    for case, words in expected.items():
        assert main(["analyze", str(inputs[case])]) == 2
        assert words in capsys.readouterr().err, case


def test_a_trace_without_gpu_activity_is_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "cpu.json", kineto_text(10))
    assert main(["analyze", "--format", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices"] == []
    assert doc["source"]["event_count"] == 10


def test_python_dash_m_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.pt.trace.json", kineto_text(3000)[:-5000])
    proc = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "broken.pt.trace.json" in lines[0] and "truncated" in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_values_of_any_type_or_size_are_read_loosely_never_crash(tmp_path: Path, engine: str) -> None:
    """Found by a type-level fuzz of the fixtures: each of these once raised out of the reader."""
    from tracelens.ingest import kineto

    if engine == "native" and not kineto.native_scanner_built():
        pytest.skip("native scanner not built")
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": "k",
        "pid": 0,
        "tid": 7,
        "ts": 100,
        "dur": 5,
        "args": {"device": 0, "stream": 7, "correlation": 1},
    }
    events = [
        {**kernel, "ts": 100},
        {**kernel, "ts": 1e300},  # beyond the int64 ns timeline: dropped like a missing ts
        {**kernel, "ts": 200, "dur": 1e300},  # such a duration counts as 0
        {**kernel, "ts": 300, "args": {**kernel["args"], "correlation": 2**70, "device": 2**70}},  # -> nulls
        {"ph": ["X"], "name": "a list phase", "ts": 1},  # not "X": not a row, counted as another phase
        {**kernel, "ts": 400, "name": ["a", "list"], "cat": {"not": "a string"}},  # null name, kind other
        {**kernel, "ts": 500, "pid": [1, 2, 3], "tid": [4, 5, 6]},  # every number column a 3-list: nulls
    ]
    doc = {"deviceProperties": 5, "traceEvents": events}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    trace = kineto.read(path, engine=engine)
    assert trace.metadata.warnings  # read loosely, and said so
    df = trace.df.sort_values("start_ns")
    # Hand-derived: 6 complete events with a placeable ts (100, 200, 300, 400, 500 and the a-list-phase one
    # is not "X"); origin = 100 µs.
    assert (df["start_ns"] // 1000).tolist() == [0, 100, 200, 300, 400]
    assert (df["end_ns"] - df["start_ns"]).tolist() == [5000, 0, 5000, 5000, 5000]
    assert df["correlation_id"].isna().tolist() == [False, False, True, True, False]  # the 4th: kind other
    assert df["device"].isna().tolist() == [False, False, True, True, False]
    assert df["name"].isna().tolist() == [False, False, False, True, False]
    assert trace.metadata.extra["counts"]["other_phase"] == 1
    assert trace.metadata.extra["device_properties"] == 0
    assert trace.devices.column("id").to_pylist() == [0]
