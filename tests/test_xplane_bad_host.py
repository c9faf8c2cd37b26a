"""A run of several host files where one cannot be read: the readable hosts are analyzed, the bad file is named.

One truncated ``<host>.xplane.pb`` of a 64-host run (a host's disk filled while the profile was written) made the
whole run unreadable (exit 2). The other hosts' profiles are whole and answer the question for their GPUs; the
bad file is named in ``metadata.warnings`` and the CLI exits 1 after writing the output (as for a rank of a
multi-trace run that failed). A run with no readable host file is still bad input (exit 2, one line).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.cli import main

KERNEL_PS = 2_000_000  # 2 us


def _space(kernels: int) -> bytes:
    events = [pb.event(1, i * 4_000_000, KERNEL_PS) for i in range(kernels)]
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 1_000, events)], {1: "k"}, {})
    return pb.space([gpu])


def _corrupt_events() -> bytes:
    # a valid XSpace frame whose one event's stat length runs past the event (only the event walk sees it)
    bad_event = pb.vfield(1, 1) + pb.varint((4 << 3) | 2) + pb.varint(50) + b"\x08\x01"
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 100, [bad_event])], {1: "k"}, {})
    return pb.space([gpu])


def _run_dir(tmp_path: Path, files: dict[str, bytes]) -> Path:
    run = tmp_path / "plugins" / "profile" / "2024_01_01_00_00_00"
    run.mkdir(parents=True)
    for name, data in files.items():
        (run / name).write_bytes(data)
    return run


def _truncated() -> bytes:
    data = _space(5)
    return data[: len(data) // 2]


@pytest.mark.parametrize("bad", [_truncated(), b"", _corrupt_events()], ids=["truncated", "empty", "events"])
def test_readable_hosts_are_read_and_the_bad_file_named(tmp_path: Path, bad: bytes) -> None:
    # a.xplane.pb is unreadable; b.xplane.pb (3 kernels of 2 us on its GPU:0) and c.xplane.pb (1 kernel) are read
    run = _run_dir(tmp_path, {"a.xplane.pb": bad, "b.xplane.pb": _space(3), "c.xplane.pb": _space(1)})
    trace = tracelens.load(run)
    kernels = trace.events.to_pandas().query("kind == 'kernel'")
    # the bad host takes no device number: b's GPU:0 is device 0, c's device 1 (each host's after the previous)
    assert kernels.groupby("device").size().to_dict() == {0: 3, 1: 1}
    assert (kernels["end_ns"] - kernels["start_ns"]).sum() == 4 * KERNEL_PS // 1000
    files = [Path(h["file"]).name for h in trace.metadata.extra["hosts"]]
    assert files == ["b.xplane.pb", "c.xplane.pb"]
    (unread,) = trace.metadata.extra["unread_host_files"]
    assert unread["file"] == str(run / "a.xplane.pb") and unread["error"]
    notes = [w for w in trace.metadata.warnings if "a.xplane.pb" in w]
    assert len(notes) == 1, trace.metadata.warnings
    assert "not read" in notes[0] and "1 of 3 host files" in notes[0] and unread["error"] in notes[0]


def test_cli_writes_the_analysis_then_exits_1_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, {"a.xplane.pb": _truncated(), "b.xplane.pb": _space(3)})
    code = main(["analyze", str(run), "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    doc = json.loads(out)
    assert doc["summary"]["kernel_count"] == 3
    assert any("a.xplane.pb" in w for w in doc["source"]["warnings"])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "a.xplane.pb" in lines[0] and "1 of 2 host files" in lines[0] and "truncated" in lines[0]


def test_report_and_diff_exit_1_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, {"a.xplane.pb": _truncated(), "b.xplane.pb": _space(3)})
    assert main(["report", str(run), "-o", str(tmp_path / "r.md")]) == 1
    assert "a.xplane.pb" in capsys.readouterr().err
    assert main(["diff", str(run), str(run), "-f", "json"]) == 1
    assert "a.xplane.pb" in capsys.readouterr().err


def test_a_run_of_only_unreadable_host_files_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, {"a.xplane.pb": _truncated(), "b.xplane.pb": b""})
    code = main(["analyze", str(run), "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "a.xplane.pb" in lines[0] and "b.xplane.pb" in lines[0] and "no host file" in lines[0]


def test_one_bad_file_given_alone_is_still_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, {"a.xplane.pb": _truncated(), "b.xplane.pb": _space(3)})
    assert main(["analyze", str(run / "a.xplane.pb"), "-f", "json"]) == 2
    assert "truncated or corrupt" in capsys.readouterr().err


def test_legacy_trace_json_run_reads_the_readable_hosts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same for a TF 2.2-2.10 run of <host>.trace.json.gz files: one truncated file failed the run.
    import gzip

    events = [
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "Stream #7(Compute)"}},
        {"ph": "X", "pid": 2, "tid": 7, "name": "k", "ts": 10.0, "dur": 4.0},
        {"ph": "X", "pid": 2, "tid": 7, "name": "k", "ts": 20.0, "dur": 4.0},
    ]
    good = gzip.compress(json.dumps({"traceEvents": events}).encode())
    run = _run_dir(tmp_path, {"a.trace.json.gz": good[: len(good) // 2], "b.trace.json.gz": good})
    trace = tracelens.load(run)
    kernels = trace.events.to_pandas().query("kind == 'kernel'")
    assert len(kernels) == 2 and set(kernels["device"]) == {0}
    assert [Path(u["file"]).name for u in trace.metadata.extra["unread_host_files"]] == ["a.trace.json.gz"]
    assert any("a.trace.json.gz: not read" in w and "1 of 2 host files" in w for w in trace.metadata.warnings)
    assert main(["analyze", str(run), "-f", "json"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a.trace.json.gz" in err[0], err


@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_the_same_profile_twice_in_a_run_is_read_once(tmp_path: Path, how: str) -> None:
    # a "latest.xplane.pb" link (or a copy) beside the host file was read as a second host: every GPU twice
    run = _run_dir(tmp_path, {"host.xplane.pb": _space(3)})
    if how == "symlink":
        (run / "latest.xplane.pb").symlink_to("host.xplane.pb")
    else:
        (run / "latest.xplane.pb").write_bytes(_space(3))
    trace = tracelens.load(run)
    kernels = [r for r in trace.events.select(["kind", "device"]).to_pylist() if r["kind"] == "kernel"]
    assert len(kernels) == 3 and {r["device"] for r in kernels} == {0}
    assert [Path(h["file"]).name for h in trace.metadata.extra["hosts"]] == ["host.xplane.pb"]
    notes = [w for w in trace.metadata.warnings if "latest.xplane.pb" in w]
    assert len(notes) == 1 and "host.xplane.pb" in notes[0] and "read once" in notes[0]


def test_legacy_trace_json_copy_is_read_once(tmp_path: Path) -> None:
    import gzip

    events = [
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "Stream #7(Compute)"}},
        {"ph": "X", "pid": 2, "tid": 7, "name": "k", "ts": 10.0, "dur": 4.0},
    ]
    data = gzip.compress(json.dumps({"traceEvents": events}).encode())
    run = _run_dir(tmp_path, {"host.trace.json.gz": data, "latest.trace.json.gz": data})
    trace = tracelens.load(run)
    kernels = [r for r in trace.events.select(["kind", "device"]).to_pylist() if r["kind"] == "kernel"]
    assert kernels == [{"kind": "kernel", "device": 0}]
    assert any(
        "latest.trace.json.gz: the same profile as host.trace.json.gz" in w for w in trace.metadata.warnings
    )


def test_convert_and_annotate_write_then_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # they wrote the run without the bad host and exited 0: a script converting runs never learnt of it
    run = _run_dir(tmp_path, {"a.xplane.pb": _truncated(), "b.xplane.pb": _space(3)})
    for command, out in (("convert", "t.parquet"), ("convert", "t.csv"), ("annotate", "t.json")):
        assert main([command, str(run), "-o", str(tmp_path / out)]) == 1, command
        err = capsys.readouterr().err
        assert (tmp_path / out).exists()
        assert "a.xplane.pb" in err and "1 of 2 host files" in err, err
