"""``report`` (markdown + plot) and the terminal summary on every real trace in ../shared/traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES, shared_params
from tests.test_markdown import assert_details_balanced, assert_only_our_tags, assert_tables_well_formed
from tracelens.cli import main
from tracelens.report import markdown, terminal

ALL_TRACES = (shared_params("nsys", "*.sqlite") + shared_params("pytorch", "*.json.gz")
              + shared_params("tf", "*.xplane.pb"))


def _analyze(path: Path) -> dict:
    import tracelens

    try:
        trace = tracelens.load(path)
    except (ImportError, NotImplementedError) as err:  # that format's reader has not landed yet
        pytest.skip(f"reader not available: {err}")
    return tracelens.analyze(trace)


@pytest.mark.parametrize("path", ALL_TRACES)
def test_report_and_summary_render(path: Path, tmp_path: Path) -> None:
    doc = _analyze(path)
    out = tmp_path / "review.md"
    text = markdown.render(doc, output=str(out), plots=True)
    assert text.startswith(f"# tracelens report: {markdown.md(path.name)}\n")
    assert assert_tables_well_formed(text) >= 3
    assert_details_balanced(text)
    assert_only_our_tags(text)
    if doc.get("devices"):
        assert "- **GPU utilization:**" in text
        assert (tmp_path / "review.utilization.png").read_bytes()[:4] == b"\x89PNG"
    if (doc.get("diagnosis") or {}).get("primary"):
        assert "**Primary cause:**" in text
    summary = terminal.render(doc)
    assert max(len(line) for line in summary.split("\n")) <= terminal.WIDTH
    if (doc.get("diagnosis") or {}).get("primary"):
        # The diagnosis comes first, before any table.
        assert 0 <= summary.find("\nDiagnosis:") < summary.find("GPU utilization")


def test_cli_report_writes_markdown_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    trace = SHARED_TRACES / "nsys" / "rtx3080_tiny_nsys2026.1.sqlite"
    if not trace.exists():
        pytest.skip("../shared/traces not present")
    out = tmp_path / "review.md"
    assert main(["report", str(trace), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out}\n"
    assert "](review.utilization.png)" in out.read_text()
    assert (tmp_path / "review.utilization.png").exists()
    out2 = tmp_path / "plain.md"
    assert main(["report", str(trace), "-o", str(out2), "--no-plots"]) == 0
    assert not (tmp_path / "plain.utilization.png").exists()
    assert "utilization.png" not in out2.read_text()
    # analyze --format markdown prints the same report (no plot without an output file).
    assert main(["analyze", str(trace), "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith("# tracelens report: rtx3080")


def test_cli_report_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    assert main(["report", str(empty), "-o", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err == f"tracelens: {empty}: file is empty\n"
    assert not (tmp_path / "r.md").exists()
