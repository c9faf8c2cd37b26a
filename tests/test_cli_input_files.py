"""Every command on an input path that is no readable trace file: one line on stderr naming the path, exit 2, no
traceback, never a hang; and a path whose name is not UTF-8 read like any other, its name shown as its bytes.

The cases: a named pipe (reading it would wait for a writer; its size reads 0, which said "file is empty"), a
character device (/dev/null), a file without read permission (was "internal error: PermissionError", exit 3), and
a file or run directory named with bytes that are not UTF-8 (Python hands such a name over with lone surrogates:
the JSON, a markdown file and a run's cache key could not encode it, "internal error: UnicodeEncodeError").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tracelens.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRACE = FIXTURES / "kineto" / "overlapping_streams.json"


def commands(path: str, out: Path) -> list[list[str]]:
    """Each command that reads a trace, on ``path`` (``out``: a folder for their output files)."""
    return [
        ["analyze", path],
        ["analyze", path, "--format", "json"],
        ["report", path, "-o", str(out / "r.md")],
        ["convert", path, "-o", str(out / "t.parquet")],
        ["annotate", path, "-o", str(out / "a.json")],
        ["diff", str(TRACE), path],
        ["diff", path, str(TRACE)],
    ]


def _one_line_exit_2(argv: list[str], path: str, capsys: pytest.CaptureFixture[str], reason: str) -> None:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"tracelens: {path}: "), (argv, err)
    assert reason in err, (argv, err)


def test_a_named_pipe_is_refused_without_reading_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)  # no writer: opening it for reading would wait forever
    for argv in commands(str(fifo), tmp_path):
        _one_line_exit_2(argv, str(fifo), capsys, "not a regular file (a named pipe)")


def test_a_device_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in commands("/dev/null", tmp_path):
        _one_line_exit_2(argv, "/dev/null", capsys, "not a regular file (a character device)")


@pytest.mark.parametrize("shape", ["two links", "itself"])
def test_a_symbolic_link_loop_is_named_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    """A path whose links loop (the OS says ELOOP; Path.exists says False, as for a missing file): was "no such
    file or directory"; now what it is, on every command (and through the library: tracelens.load)."""
    import tracelens
    from tracelens.errors import InputError

    loop = tmp_path / "trace.json"
    if shape == "two links":
        os.symlink(tmp_path / "other.json", loop)
        os.symlink(loop, tmp_path / "other.json")
    else:
        os.symlink(loop, loop)
    for argv in commands(str(loop), tmp_path):
        _one_line_exit_2(argv, str(loop), capsys, "a symbolic link loop (too many levels of symbolic links)")
    with pytest.raises(InputError, match="symbolic link loop"):
        tracelens.load(loop)


def test_a_link_to_a_missing_file_names_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "trace.json"
    os.symlink("moved/trace.json", link)
    for argv in commands(str(link), tmp_path):
        _one_line_exit_2(argv, str(link), capsys, "a symbolic link to a missing file (moved/trace.json)")


@pytest.mark.parametrize(
    ("name", "compress", "reason"),
    [
        ("trace.json.zst", lambda b: b"\x28\xb5\x2f\xfd" + b"\x00" * 64, "zstd-compressed"),
        ("trace.json.xz", lambda b: __import__("lzma").compress(b), "xz-compressed"),
        ("trace.json.bz2", lambda b: __import__("bz2").compress(b), "bzip2-compressed"),
        ("trace.sqlite.gz", None, "a gzip-compressed SQLite database: decompress it first"),
    ],
)
def test_a_compression_tracelens_does_not_read_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, compress: object, reason: str
) -> None:
    """Was "not JSON (does not start with '{' or '[')", "unknown trace format" or, for a gzipped Nsight export,
    "corrupt or truncated SQLite database": the file is fine, only compressed."""
    import gzip

    path = tmp_path / name
    if compress is None:
        path.write_bytes(gzip.compress(b"SQLite format 3\x00" + b"\x00" * 4000))
    else:
        path.write_bytes(compress(TRACE.read_bytes()))  # type: ignore[operator]
    for argv in commands(str(path), tmp_path)[:3]:
        _one_line_exit_2(argv, str(path), capsys, reason)


def test_standard_input_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """``analyze -`` read "-: no such file or directory"."""
    _one_line_exit_2(["analyze", "-"], "-", capsys, "reading a trace from standard input is not supported")


def _without_read_permission(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The CLI run where file permissions apply: as root, without the capabilities that bypass them."""
    cmd = [sys.executable, "-m", "tracelens", *argv]
    if os.geteuid() == 0:
        if shutil.which("capsh") is None:
            pytest.skip("root reads every file, and capsh (which drops that) is not installed")
        cmd = ["capsh", "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", 'exec "$@"', "sh", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("which", ["file", "inside a run directory"])
def test_a_file_without_read_permission_is_named(tmp_path: Path, which: str) -> None:
    """Every command: one line naming the file, exit 2 (was exit 3, "internal error: PermissionError")."""
    if which == "file":
        target = locked = tmp_path / "trace.json"
        shutil.copy(TRACE, locked)
    else:  # a rank of a run: the directory lists, the file does not read
        target = tmp_path / "run"
        target.mkdir()
        shutil.copy(TRACE, target / "rank0.json")
        locked = target / "rank1.json"
        shutil.copy(TRACE, locked)
    locked.chmod(0)
    argvs = commands(str(target), tmp_path)
    if (
        which != "file"
    ):  # a run: every command reads the other rank, names this one, exits 1 (annotate exited 2)
        argvs = [
            ["analyze", str(target), "--cache", str(tmp_path / "cache")],
            ["annotate", str(target), "-o", str(tmp_path / "a.json")],
        ]
    for argv in argvs:
        child = _without_read_permission(argv)
        lines = [line for line in child.stderr.splitlines() if not line.startswith("wrote ")]
        assert len(lines) == 1, (argv, child.stderr)
        if which == "file":
            assert child.returncode == 2, (argv, child.stderr)
            assert lines[0].startswith(f"tracelens: {locked}: ") and "ermission denied" in lines[0], argv
        else:
            assert child.returncode == 1, (argv, child.stderr)
            assert lines[0].startswith("tracelens: 1 of 2 traces failed (the others were analyzed): "), lines
            assert f"{locked}: cannot read: Permission denied" in lines[0], lines


NON_UTF8 = b"tr\xffce\xfe"  # a Latin-1 era name: not UTF-8
SHOWN = "tr\\xffce\\xfe"  # how tracelens writes it: each byte that is not UTF-8 as \xNN


def test_a_file_named_with_non_utf8_bytes_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = os.fsdecode(os.path.join(os.fsencode(tmp_path), NON_UTF8 + b".json"))
    shutil.copy(TRACE, path)
    assert main(["analyze", path, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["path"] == f"{tmp_path}/{SHOWN}.json"
    out = tmp_path / "r.md"
    assert main(["report", path, "-o", str(out)]) == 0
    assert f"# tracelens report: {SHOWN}.json" in out.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["diff", str(TRACE), path, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["head"]["path"] == f"{tmp_path}/{SHOWN}.json"
    # The error line names it the same way.
    missing = os.fsdecode(os.path.join(os.fsencode(tmp_path), NON_UTF8 + b"-missing.json"))
    assert main(["analyze", missing]) == 2
    assert (
        capsys.readouterr().err == f"tracelens: {tmp_path}/{SHOWN}-missing.json: no such file or directory\n"
    )


def test_a_run_directory_named_with_non_utf8_bytes_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACELENS_CACHE_DIR", str(tmp_path / "cache"))
    run = os.fsdecode(os.path.join(os.fsencode(tmp_path), NON_UTF8))
    os.mkdir(run)
    for rank in (0, 1):
        shutil.copy(TRACE, os.path.join(run, f"rank{rank}.json"))
    assert main(["analyze", run, "--format", "json", "--workers", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in doc["ranks"]] == [f"{tmp_path}/{SHOWN}/rank{r}.json" for r in (0, 1)]


# --------------------------------------------------------------------------- --png where no PNG can be written


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["analyze", str(TRACE), "--png"], "a markdown report written to a file"),  # terminal, stdout
        (["analyze", str(TRACE), "--png", "-f", "markdown"], "a markdown report written to a file"),  # stdout
        (["analyze", str(TRACE), "--png", "-o", "{tmp}/a.json"], "a markdown report written to a file"),
        (["report", str(TRACE), "--png"], "a markdown report written to a file"),
        (["report", str(TRACE), "--png", "-o", "-"], "a markdown report written to a file"),
        (["report", str(TRACE), "--png", "-o", "{tmp}/r.json"], "a markdown report written to a file"),
        (["report", str(TRACE), "--png", "--no-plots", "-o", "{tmp}/r.md"], "--no-plots"),
    ],
)
def test_png_where_no_png_can_be_written_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    """--png was ignored without a word (no PNG written, exit 0) without -o FILE.md, or with --no-plots."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tracelens: --png") and reason in err, err
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_png_of_a_trace_without_a_gpu_timeline_says_none_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.md"
    assert main(["report", str(FIXTURES / "completeness" / "cpu_only.json"), "--png", "-o", str(out)]) == 0
    assert (
        capsys.readouterr().err
        == f"tracelens: --png: no plot written: the trace has no GPU timeline\nwrote {out}\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]


def test_convert_of_a_run_directory_names_the_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """convert writes one trace's table; on a directory of ranks' traces named as torch.profiler names them it said
    "trace.json holds no host or GPU events" (the directory read as a TensorFlow logdir, whose hosts write
    <host>.trace.json.gz)."""
    run = tmp_path / "run"
    run.mkdir()
    for rank in (0, 1):
        shutil.copy(FIXTURES / "demo.pt.trace.json.gz", run / f"rank{rank}.pt.trace.json.gz")
    _one_line_exit_2(
        ["convert", str(run), "-o", str(tmp_path / "t.parquet")],
        str(run),
        capsys,
        "directory holds 2 traces, one per rank (rank0.pt.trace.json.gz, rank1.pt.trace.json.gz): convert writes "
        "one trace's table; name the one to convert",
    )
    assert not (tmp_path / "t.parquet").exists()


@pytest.mark.parametrize("out", ["a file", "under a file"])
def test_record_into_a_folder_it_cannot_create_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    """record --out naming a file (or a folder under one) was "internal error: FileExistsError" (exit 3)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text("#!/bin/sh\nexit 0\n")  # never reached: the folder comes first
    (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    existing = tmp_path / "existing"
    existing.write_text("")
    target = existing if out == "a file" else existing / "sub"
    _one_line_exit_2(
        ["record", "--out", str(target), "--", "true"], str(target), capsys, "cannot create the folder"
    )


@pytest.mark.parametrize("command", ["convert", "annotate"])
def test_a_saved_analysis_document_is_no_trace_to_convert_or_annotate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """convert and annotate need the events: on a document saved with analyze --format json they said "not a
    PyTorch profiler trace: JSON object without a 'traceEvents' list", as if the file were a broken trace."""
    doc = tmp_path / "analysis.json"
    assert main(["analyze", str(TRACE), "--format", "json", "-o", str(doc)]) == 0
    capsys.readouterr()
    out = tmp_path / ("t.parquet" if command == "convert" else "a.json")
    _one_line_exit_2(
        [command, str(doc), "-o", str(out)],
        str(doc),
        capsys,
        f"a tracelens analysis document (analyze --format json), not a trace: {command} needs the trace it was made from",
    )
    assert not out.exists()


def test_a_report_written_under_a_non_utf8_name_links_its_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """report -o <non-UTF-8 name>.md --png was "internal error: UnicodeEncodeError" (the plot's link could not be
    percent-encoded). The link encodes the file name's bytes (%FF), so it opens the PNG written beside it."""
    out = os.fsdecode(os.path.join(os.fsencode(tmp_path), NON_UTF8 + b".md"))
    assert main(["report", str(FIXTURES / "demo.pt.trace.json.gz"), "-o", out, "--png"]) == 0
    assert capsys.readouterr().err == f"wrote {tmp_path}/{SHOWN}.md\n"
    plot = os.path.join(os.fsencode(tmp_path), NON_UTF8 + b".utilization.png")
    assert open(plot, "rb").read(4) == b"\x89PNG"
    assert "](tr%FFce%FE.utilization.png)" in Path(out).read_text(encoding="utf-8")
