"""The CLI's own contract: exit codes, one-line errors, output formats, convert round trip."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tracelens.cli import main
from tracelens.trace import Trace


@pytest.fixture
def parquet_trace(tmp_path):
    # Device 0: kernels [0,400) and [600,1000) on stream 7 -> busy 800, span 1000, utilization 0.8.
    trace = Trace.from_rows(
        [
            {
                "kind": "kernel",
                "name": "gemm",
                "start_ns": 0,
                "end_ns": 400,
                "device": 0,
                "stream": 7,
                "correlation_id": 1,
            },
            {
                "kind": "kernel",
                "name": "gemm",
                "start_ns": 600,
                "end_ns": 1000,
                "device": 0,
                "stream": 7,
                "correlation_id": 2,
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": 0,
                "end_ns": 5,
                "pid": 1,
                "tid": 1,
                "correlation_id": 1,
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": 590,
                "end_ns": 595,
                "pid": 1,
                "tid": 1,
                "correlation_id": 2,
            },
        ],
        devices=[{"id": 0, "name": "Test GPU", "sm_count": 4}],
    )
    path = tmp_path / "t.parquet"
    trace.save(path)
    return path


def test_analyze_json_devices_block(parquet_trace, capsys):
    assert main(["analyze", str(parquet_trace), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"]
    (dev,) = doc["devices"]
    assert (dev["busy_ns"], dev["span_ns"], dev["kernel_count"]) == (800, 1000, 2)
    assert dev["utilization"] == pytest.approx(0.8)


def test_analyze_terminal_mentions_device(parquet_trace, capsys):
    assert main(["analyze", str(parquet_trace)]) == 0
    out = capsys.readouterr().out
    assert "Test GPU" in out and "80.0%" in out


def test_analyze_output_file_format_from_extension(parquet_trace, tmp_path, capsys):
    out = tmp_path / "doc.json"
    assert main(["analyze", str(parquet_trace), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["devices"][0]["busy_ns"] == 800


def test_convert_round_trip(parquet_trace, tmp_path, capsys):
    out = tmp_path / "again.parquet"
    assert main(["convert", str(parquet_trace), "-o", str(out)]) == 0
    import pyarrow.parquet as pq

    table = pq.read_table(out)
    assert table.num_rows == 4
    assert sorted(set(table.column("kind").to_pylist())) == ["kernel", "runtime"]


def test_missing_file_one_line_exit_2(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["analyze", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(missing) in err[0] and "no such file" in err[0]


def test_unknown_format_one_line_exit_2(tmp_path, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01\x02garbage")
    assert main(["analyze", str(junk)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(junk) in err[0]


def test_usage_error_exit_2(capsys):
    assert main(["analyze"]) == 2
    assert main(["no-such-command"]) == 2


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    assert "analyze" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert "tracelens" in capsys.readouterr().out


def test_real_entry_point_subprocess(parquet_trace, tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", str(parquet_trace), "-f", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["devices"][0]["kernel_count"] == 2
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    bad = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- the output file


def _commands_writing(trace, out):
    """Every command that writes a file with -o, each reading ``trace``."""
    return [
        ["analyze", str(trace), "-o", str(out)],
        ["analyze", str(trace), "-f", "json", "-o", str(out)],
        ["report", str(trace), "-f", "markdown", "-o", str(out)],
        ["annotate", str(trace), "-o", str(out)],
        ["convert", str(trace), "-f", "parquet", "-o", str(out)],
        ["diff", str(trace), str(trace), "-f", "json", "-o", str(out)],
    ]


def test_output_onto_the_input_refused(parquet_trace, capsys):
    """-o naming the trace read would replace the user's trace by the output: refused before anything is
    written (one line naming the file, exit 2), the trace left byte for byte as it was."""
    before = parquet_trace.read_bytes()
    for argv in _commands_writing(parquet_trace, parquet_trace):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(parquet_trace) in err[0] and "is a file this command reads" in err[0], (
            argv,
            err,
        )
        assert parquet_trace.read_bytes() == before, argv
    # the same file under another name (a link) is the same file
    link = parquet_trace.parent / "link.parquet"
    link.symlink_to(parquet_trace)
    assert main(["analyze", str(parquet_trace), "-f", "json", "-o", str(link)]) == 2
    assert parquet_trace.read_bytes() == before
    # diff: HEAD as the output is refused too
    other = parquet_trace.parent / "other.parquet"
    other.write_bytes(before)
    assert main(["diff", str(other), str(parquet_trace), "-o", str(parquet_trace)]) == 2
    assert parquet_trace.read_bytes() == before


def test_unwritable_output_one_line_exit_2(parquet_trace, tmp_path, capsys):
    """An output in a folder that does not exist, or an output that is a folder, is the user's to fix: one line
    naming it and why, exit 2 (it was an internal error, exit 3)."""
    for out in (tmp_path / "no such folder" / "out.json", tmp_path):
        for argv in _commands_writing(parquet_trace, out):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and f"{out}: cannot write" in err[0], (argv, err)
            assert "internal error" not in err[0]


def test_run_option_on_a_file_is_a_usage_error(parquet_trace, tmp_path, capsys):
    """--run picks a profile run in a TensorBoard logdir; given with a trace file (or a directory of ranks' traces)
    it was ignored without a word, the file read as if it named that run. One line naming the file, exit 2."""
    for argv in (
        ["analyze", str(parquet_trace), "--run", "2024_01_01"],
        ["report", str(parquet_trace), "--run", "2024_01_01"],
        ["convert", str(parquet_trace), "-o", str(tmp_path / "x.csv"), "--run", "2024_01_01"],
        ["annotate", str(parquet_trace), "-o", str(tmp_path / "x.json"), "--run", "2024_01_01"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(parquet_trace) in err[0] and "--run" in err[0], (argv, err)
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.json").exists()
