"""Which run of a TensorBoard logdir is read, and that the output says so when there is a choice."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens


def _space() -> bytes:
    kernel = pb.event(1, 1_000_000, 2_000_000)
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 100, [kernel])], {1: "k"}, {})
    return pb.space([gpu])


def _run(logdir: Path, *parts: str) -> None:
    folder = logdir.joinpath(*parts)
    folder.mkdir(parents=True)
    (folder / "host0.xplane.pb").write_bytes(_space())


def test_newest_of_several_runs_is_named_in_a_warning(tmp_path: Path) -> None:
    for run in ("2024_01_01_00_00_00", "2024_06_01_00_00_00", "2024_03_01_00_00_00"):
        _run(tmp_path, "plugins", "profile", run)
    trace = tracelens.load(tmp_path)
    assert trace.metadata.extra["run"] == "2024_06_01_00_00_00"
    notes = [w for w in trace.metadata.warnings if "profile runs" in w]
    assert len(notes) == 1, trace.metadata.warnings
    note = notes[0]
    assert "2024_06_01_00_00_00" in note and "3 profile runs" in note and "newest" in note and "--run" in note
    assert "2024_01_01_00_00_00" in note and "2024_03_01_00_00_00" in note


def test_runs_in_several_logdirs_name_the_folder_read(tmp_path: Path) -> None:
    _run(tmp_path, "exp_a", "plugins", "profile", "2024_01_01_00_00_00")
    _run(tmp_path, "exp_b", "plugins", "profile", "2024_02_01_00_00_00")
    trace = tracelens.load(tmp_path)
    assert trace.metadata.extra["run"] == "2024_02_01_00_00_00"
    (note,) = [w for w in trace.metadata.warnings if "profile runs" in w]
    assert "exp_b/plugins/profile/2024_02_01_00_00_00" in note


def test_one_run_or_a_chosen_run_adds_no_warning(tmp_path: Path) -> None:
    _run(tmp_path / "one", "plugins", "profile", "2024_01_01_00_00_00")
    assert tracelens.load(tmp_path / "one").metadata.warnings == []
    _run(tmp_path / "two", "plugins", "profile", "2024_01_01_00_00_00")
    _run(tmp_path / "two", "plugins", "profile", "2024_02_01_00_00_00")
    chosen = tracelens.load(tmp_path / "two", run="2024_01_01_00_00_00")
    assert chosen.metadata.warnings == []


def test_a_host_of_a_run_without_gpu_activity_is_named(tmp_path: Path) -> None:
    # Two hosts of one run, the second recorded only host events (its GPU tracer failed, or a CPU-only
    # coordinator): its absence from every GPU figure was not said.
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "a.xplane.pb").write_bytes(_space())
    host = pb.plane(0, "/host:CPU", [pb.line(1, "python3", 0, [pb.event(1, 0, 5_000_000)])], {1: "train"}, {})
    (run / "b.xplane.pb").write_bytes(pb.space([host]))
    trace = tracelens.load(run)
    notes = [w for w in trace.metadata.warnings if "b.xplane.pb" in w]
    assert notes == [
        "b.xplane.pb: no GPU activity recorded on this host (1 of 2 hosts): not in the GPU figures"
    ]
    assert not any("a.xplane.pb" in w for w in trace.metadata.warnings)


@pytest.mark.parametrize("newest", ["empty folder", "empty file"])
def test_newest_run_without_a_profile_reads_the_newest_with_one(tmp_path: Path, newest: str, capsys) -> None:
    """A profile that failed or was interrupted leaves a newest run with no profile (an empty folder, or a 0-byte
    <host>.xplane.pb): the logdir was refused, exit 2 ('the newest profile run ... holds no .xplane.pb' or 'file is
    empty'), though it holds a profile. The newest run with one is read (as TensorBoard lists only runs with data),
    and the warning names it and the run passed over; --run still reads the empty one, and says why it cannot."""
    from tracelens.cli import main

    _run(tmp_path, "plugins", "profile", "2024_01_01_00_00_00")
    empty = tmp_path / "plugins" / "profile" / "2024_02_01_00_00_00"
    empty.mkdir()
    if newest == "empty file":
        (empty / "host0.xplane.pb").write_bytes(b"")
    trace = tracelens.load(tmp_path)
    assert trace.metadata.extra["run"] == "2024_01_01_00_00_00"
    assert trace.num_events == 1  # _space: one kernel
    (note,) = [w for w in trace.metadata.warnings if "profile runs" in w]
    assert "the newest with a profile is 2024_01_01_00_00_00" in note and "2024_02_01_00_00_00" in note
    assert main(["analyze", str(tmp_path), "-f", "json"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(tmp_path), "--run", "2024_02_01_00_00_00", "-f", "json"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and ("empty" in lines[0] or "no profile found" in lines[0]), lines


def test_the_plugins_profile_folder_itself_is_a_logdir(tmp_path: Path) -> None:
    # Pointing at <logdir>/plugins/profile (the folder TensorBoard writes the runs into) or at <logdir>/plugins
    # was "no profile found", though the runs lie right there.
    _run(tmp_path, "plugins", "profile", "2024_01_01_00_00_00")
    _run(tmp_path, "plugins", "profile", "2024_02_01_00_00_00")
    for folder in (tmp_path / "plugins" / "profile", tmp_path / "plugins"):
        trace = tracelens.load(folder)
        assert trace.metadata.extra["run"] == "2024_02_01_00_00_00"
        (note,) = [w for w in trace.metadata.warnings if "profile runs" in w]
        assert "2 profile runs" in note and "--run" in note and "2024_01_01_00_00_00" in note
    chosen = tracelens.load(tmp_path / "plugins" / "profile", run="2024_01_01_00_00_00")
    assert chosen.metadata.extra["run"] == "2024_01_01_00_00_00"


def test_the_plugins_profile_folder_given_as_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tmp_path, "plugins", "profile", "2024_01_01_00_00_00")
    monkeypatch.chdir(tmp_path / "plugins" / "profile")
    assert tracelens.load(Path(".")).metadata.extra["run"] == "2024_01_01_00_00_00"


def test_a_logdir_of_gzipped_xplanes_is_read(tmp_path: Path) -> None:
    """A logdir whose run holds <host>.xplane.pb.gz (gzipped to share it) said "no profile found (expected
    plugins/profile/<run>/<host>.xplane.pb ...)": the run is read, every host of it. Two hosts: a 2 us kernel
    (_space) and a 3 us one: 2 kernels, 5,000 ns; a host with both the raw and the gzipped file is read once."""
    import gzip

    import pyarrow.compute as pc

    kernel = pb.event(1, 1_000_000, 3_000_000)
    other = pb.space([pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 100, [kernel])], {1: "k"}, {})])
    folder = tmp_path / "plugins" / "profile" / "2024_01_01_00_00_00"
    folder.mkdir(parents=True)
    (folder / "host0.xplane.pb.gz").write_bytes(gzip.compress(_space()))
    (folder / "host1.xplane.pb").write_bytes(other)
    (folder / "host1.xplane.pb.gz").write_bytes(gzip.compress(other))
    trace = tracelens.load(tmp_path)
    kernels = trace.events.filter(pc.equal(trace.events["kind"], "kernel"))
    assert (
        kernels.num_rows == 2 and pc.sum(pc.subtract(kernels["end_ns"], kernels["start_ns"])).as_py() == 5_000
    )


@pytest.mark.parametrize("layout", ["beside the xplane", "logdir top"])
def test_a_kineto_trace_in_the_folder_is_named_not_read(tmp_path: Path, layout: str) -> None:
    """A folder holding a TF/JAX profile and a PyTorch capture (torch's tensorboard_trace_handler writes
    <worker>.<ts>.pt.trace.json.gz to the logdir TensorBoard's profile plugin also writes to): the xplane was read
    and the Kineto trace left out without a word. It still reads the xplane (one kernel: _space), and a warning names
    the trace left out; a config.json (no trace) is not named. At the logdir's top, the .pt.trace.json.gz was taken
    for TF's legacy <host>.trace.json.gz and read instead of the run: "holds no host or GPU events", exit 2."""
    import shutil

    from tests.conftest import FIXTURES

    if layout == "beside the xplane":
        (tmp_path / "host0.xplane.pb").write_bytes(_space())
    else:
        _run(tmp_path, "plugins", "profile", "2024_01_01_00_00_00")
    shutil.copy(FIXTURES / "demo.pt.trace.json.gz", tmp_path / "worker0.1700000000.pt.trace.json.gz")
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    trace = tracelens.load(tmp_path)
    assert trace.metadata.source_format == "xplane" and trace.num_events == 1
    (note,) = [w for w in trace.metadata.warnings if "another format" in w]
    assert "worker0.1700000000.pt.trace.json.gz" in note and "not read" in note and "config.json" not in note


def test_a_truncated_newest_run_names_the_older_run(tmp_path: Path, capsys) -> None:
    """Profiling interrupted while the newest run's only xplane was written (a truncated file): exit 2 naming the
    file, and nothing said of the older run that holds a whole profile. The line now names it (--run R)."""
    from tracelens.cli import main

    _run(tmp_path, "plugins", "profile", "2024_01_01_00_00_00")
    newest = tmp_path / "plugins" / "profile" / "2024_02_01_00_00_00"
    newest.mkdir()
    data = _space()
    (newest / "host0.xplane.pb").write_bytes(data[: len(data) // 2])
    assert main(["analyze", str(tmp_path), "-f", "json"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "host0.xplane.pb" in lines[0] and "truncated or corrupt" in lines[0]
    assert "--run 2024_01_01_00_00_00" in lines[0]
    assert main(["analyze", str(tmp_path), "--run", "2024_01_01_00_00_00", "-f", "json"]) == 0


def test_one_run_name_in_two_logdirs_is_not_dropped(tmp_path: Path, capsys) -> None:
    """train/ and eval/ each with a profile run of the same timestamp: the runs were keyed by name alone, so eval's
    hid train's without a word (train/ never read, --run could not name it). Each is keyed by its folder; the
    warning names the other; --run with the bare name is refused naming both; --run <folder> reads that one.
    train's run holds one 2 us kernel (_space), eval's one 3 us kernel."""
    from tracelens.cli import main

    _run(tmp_path, "train", "plugins", "profile", "2024_01_01_00_00_00")
    eval_run = tmp_path / "eval" / "plugins" / "profile" / "2024_01_01_00_00_00"
    eval_run.mkdir(parents=True)
    kernel = pb.event(1, 1_000_000, 3_000_000)
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 100, [kernel])], {1: "k"}, {})
    (eval_run / "host0.xplane.pb").write_bytes(pb.space([gpu]))
    trace = tracelens.load(tmp_path)
    read = trace.metadata.extra["run"]
    assert read in ("train/plugins/profile/2024_01_01_00_00_00", "eval/plugins/profile/2024_01_01_00_00_00")
    other = next(x for x in ("train", "eval") if not read.startswith(x))
    (note,) = [w for w in trace.metadata.warnings if "profile runs" in w]
    assert "2 profile runs" in note and f"{other}/plugins/profile/2024_01_01_00_00_00" in note
    durations = {}
    for name in ("train", "eval"):
        chosen = tracelens.load(tmp_path, run=f"{name}/plugins/profile/2024_01_01_00_00_00")
        durations[name] = int((chosen.events["end_ns"][0].as_py()) - chosen.events["start_ns"][0].as_py())
    assert durations == {"train": 2_000, "eval": 3_000}
    assert main(["analyze", str(tmp_path), "--run", "2024_01_01_00_00_00", "-f", "json"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        "2 runs have this name" in line and "train/plugins/profile" in line and "eval/plugins/profile" in line
    )


def test_gzipped_xplanes_are_trace_files_of_a_run(tmp_path: Path, capsys) -> None:
    """Once .xplane.pb.gz files are read: a glob of them matched nothing ('no trace file matches this pattern'). And
    -o onto one inside the logdir read stays refused (it is an input), the file untouched."""
    import gzip

    from tracelens.cli import main

    folder = tmp_path / "plugins" / "profile" / "2024_01_01_00_00_00"
    folder.mkdir(parents=True)
    host = folder / "host0.xplane.pb.gz"
    host.write_bytes(gzip.compress(_space()))
    before = host.read_bytes()
    assert main(["analyze", str(folder / "*.xplane.pb.gz"), "-f", "json"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(tmp_path), "-o", str(host), "-f", "json"]) == 2
    assert host.read_bytes() == before
