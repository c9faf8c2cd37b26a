"""The CLI writes what the output file's name says, or refuses in one line; report and diff take a run
directory as analyze does."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pyarrow.csv
import pyarrow.parquet as pq
import pytest

from tests.conftest import FIXTURES
from tracelens.cli import main

DEMO = FIXTURES / "demo.pt.trace.json.gz"


def test_report_to_a_json_file_writes_the_json_document(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["report", str(DEMO), "-o", str(tmp_path / "out.json")]) == 0
    written = json.loads((tmp_path / "out.json").read_text())
    assert main(["analyze", str(DEMO), "--format", "json"]) == 0
    analyzed = json.loads(capsys.readouterr().out)
    assert written == analyzed
    assert main(["report", str(DEMO), "-o", str(tmp_path / "out.md")]) == 0
    assert (tmp_path / "out.md").read_text().startswith("# tracelens report: demo.pt.trace.json.gz\n")
    # --format wins over the extension.
    assert main(["report", str(DEMO), "-f", "markdown", "-o", str(tmp_path / "forced.json")]) == 0
    assert (tmp_path / "forced.json").read_text().startswith("# tracelens report")


@pytest.mark.parametrize(
    ("command", "name"), [("report", "out.html"), ("convert", "out.txt"), ("convert", "out.md")]
)
def test_an_output_name_of_another_format_is_refused(
    command: str, name: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / name
    assert main([command, str(DEMO), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and "--format" in err and "Traceback" not in err
    assert not out.exists()


def test_convert_to_csv_writes_csv(tmp_path: Path) -> None:
    assert main(["convert", str(DEMO), "-o", str(tmp_path / "t.csv")]) == 0
    assert main(["convert", str(DEMO), "-o", str(tmp_path / "t.parquet")]) == 0
    csv = pyarrow.csv.read_csv(tmp_path / "t.csv")
    parquet = pq.read_table(tmp_path / "t.parquet")
    assert csv.num_rows == parquet.num_rows and csv.column_names == parquet.column_names
    # Independently of the reader: the kernels of the Kineto file, by name, are the CSV's kernel rows.
    raw = json.loads(gzip.decompress(DEMO.read_bytes()))
    kernels = sorted(e["name"] for e in raw["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X")
    rows = csv.to_pylist()
    assert sorted(r["name"] for r in rows if r["kind"] == "kernel") == kernels
    assert not (tmp_path / "t.csv").read_bytes().startswith(b"PAR1")


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for rank in range(2):
        shutil.copyfile(DEMO, run / f"rank{rank}.pt.trace.json.gz")
    return run


def test_report_and_diff_take_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = _run_dir(tmp_path)
    assert main(["report", str(run), "-o", str(tmp_path / "run.md")]) == 0
    text = (tmp_path / "run.md").read_text()
    assert "\n## Ranks\n" in text
    table = text.split("\n## Ranks\n")[1]
    assert "| 0 | rank0.pt.trace.json.gz |" in table and "| 1 | rank1.pt.trace.json.gz |" in table
    capsys.readouterr()
    assert main(["diff", str(run), str(DEMO), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["base"]["format"] == "run" and result["head"]["format"] == "kineto"
    # Same traces on both sides: every GPU metric equal (the run's two ranks are copies of the demo).
    utilization = next(
        m for m in result["metrics"] if m["base"] is not None and "utilization" in m["label"].lower()
    )
    assert utilization["base"] == pytest.approx(utilization["head"])
