"""Bad xplane inputs through the CLI (in-process): exit 2, one stderr line naming the file, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.compute as pc
import pytest
import test_xplane_helpers as pb
from google.protobuf import descriptor_pb2

from tracelens.cli import main


def _run(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["analyze", str(path), "-f", "json"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path) in lines[0]
    return lines[0]


def _valid_space() -> bytes:
    kernel = pb.event(1, 1_000_000, 2_000_000)
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 100, [kernel] * 50)], {1: "k"}, {})
    return pb.space([gpu])


def test_truncated_protobuf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "host.xplane.pb"
    data = _valid_space()
    path.write_bytes(data[: len(data) // 2])
    assert "truncated or corrupt" in _run(path, capsys)


def test_random_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(bytes((i * 97 + 13) % 256 for i in range(4096)))
    message = _run(path, capsys)
    assert "not a readable XSpace" in message or "not a TensorFlow/JAX" in message


def test_serialized_descriptor_is_not_an_xspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(descriptor_pb2.FileDescriptorProto(name="a.proto", package="x").SerializeToString())
    message = _run(path, capsys)
    assert "XSpace" in message


def test_wellformed_protobuf_without_profiler_planes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([pb.plane(1, "something else", [], {}, {})]))
    assert "not a TensorFlow/JAX profiler XSpace" in _run(path, capsys)


def test_corrupt_event_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the XSpace frame is valid but one event's inner length runs past the event
    bad_event = pb.vfield(1, 1) + pb.varint((4 << 3) | 2) + pb.varint(50) + b"\x08\x01"
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 100, [bad_event])], {1: "k"}, {})
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([gpu]))
    assert "corrupt" in _run(path, capsys)


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(b"")
    assert "empty" in _run(path, capsys)


def test_empty_logdir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "logs"
    (logdir / "plugins" / "profile" / "2024_01_01_00_00_00").mkdir(parents=True)
    assert "no profile found" in _run(logdir, capsys)


def test_empty_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "nothing"
    logdir.mkdir()
    _run(logdir, capsys)


def test_logdir_with_only_old_derived_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "logs" / "plugins" / "profile" / "2020_01_01_00_00_00"
    run.mkdir(parents=True)
    for name in ("host.overview_page.pb", "host.input_pipeline.pb", "host.tensorflow_stats.pb"):
        (run / name).write_bytes(b"\x0a\x00")
    message = _run(tmp_path / "logs", capsys)
    assert "wrote no xplane" in message and "TensorFlow >= 2.4" in message and "trace.json.gz" in message


def test_unknown_run_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "h.xplane.pb").write_bytes(_valid_space())
    code = main(["analyze", str(tmp_path), "--run", "nope", "-f", "json"])
    err = capsys.readouterr().err
    assert code == 2 and "no profile run named 'nope'" in err and "r1" in err


def test_input_file_is_not_modified(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(_valid_space())
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    assert main(["convert", str(path), "-o", str(tmp_path / "out.parquet")]) == 0
    capsys.readouterr()
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before


def test_xspace_without_timed_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task_env = pb.plane(9, "Task Environment", [], {}, {1: "profile_start_time"}, [pb.stat(1, uint64=1)])
    aggregated_only = pb.plane(
        0, "/host:CPU", [pb.line(1, "t", 0, [pb.event(1, None, 0, num_occurrences=3)])], {1: "op"}, {}
    )
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(pb.space([task_env, aggregated_only]))
    assert "no timed events" in _run(path, capsys)


@pytest.mark.parametrize("name", ["host.xplane.pb", "host.xplane.pb.gz"])
def test_gzip_compressed_xspace_is_read(name: str, tmp_path: Path) -> None:
    """A gzip'd XSpace (an .xplane.pb.gz gzipped to share it) was first reported as "truncated or corrupt protobuf",
    then refused ("decompress it first"); it is the same profile: read it. The space holds 50 kernels of 2,000,000 ps
    (2 us) each on GPU 0 (hand count from _valid_space)."""
    import gzip

    import tracelens

    path = tmp_path / name
    path.write_bytes(gzip.compress(_valid_space()))
    trace = tracelens.load(path)
    kernels = trace.events.filter(pc.equal(trace.events["kind"], "kernel"))
    assert kernels.num_rows == 50
    assert pc.sum(pc.subtract(kernels["end_ns"], kernels["start_ns"])).as_py() == 50 * 2_000


def test_truncated_gzip_xspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A copy of an .xplane.pb.gz cut short: one line naming the file, exit 2 (not a zlib/EOFError internal error).
    import gzip

    path = tmp_path / "host.xplane.pb.gz"
    data = gzip.compress(_valid_space(), compresslevel=0)  # stored: half the file is half the XSpace
    path.write_bytes(data[: len(data) // 2])
    line = _run(path, capsys)  # (the format check reads the first 4 KiB; the reader the rest)
    assert "gzip" in line and ("truncated" in line or "ended before" in line)
