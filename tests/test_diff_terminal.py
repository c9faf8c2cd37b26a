"""`tracelens diff` in the terminal: rich tables (no markdown escapes), the format chosen by --format or the -o
file's extension, kernel names shortened but distinct (whole with --full-names)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_diff import _step_trace
from tracelens.cli import main
from tracelens.diff import compare
from tracelens.report.diff_renderer import fmt_value, render_diff
from tracelens.report.terminal import terminal_width

MS = 1_000_000
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize{}_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas"


def _result(names: list[str]) -> dict:
    """A compare() result whose head adds the given kernels (hand-built documents)."""
    base = {
        "schema_version": 1,
        "source": {"path": "base_trace__mfu.json", "format": "kineto"},
        "devices": [{"id": 0, "busy_ns": 8 * MS, "span_ns": 10 * MS, "kernel_count": 1, "kernel_ns": 8 * MS}],
        "kernels": {
            "count": 1,
            "distinct_names": 1,
            "total_ns": 8 * MS,
            "by_name": [{"name": "k", "count": 1, "total_ns": 8 * MS, "avg_ns": 8 * MS}],
        },
    }
    head = json.loads(json.dumps(base))
    head["source"]["path"] = "head_trace__mfu.json"
    head["devices"][0]["busy_ns"] = 6 * MS
    head["kernels"]["by_name"] += [{"name": n, "count": 2, "total_ns": 2 * MS, "avg_ns": MS} for n in names]
    return compare(base, head)


def test_terminal_diff_has_no_markdown_escapes() -> None:
    result = _result([])
    text = render_diff(result, "terminal", width=80)
    assert "80.0% -> 60.0%" in text  # the verdict reason as written, not "-&gt;"
    assert "base_trace__mfu.json" in text and "\\_" not in text and "&gt;" not in text and "**" not in text
    assert max(len(line) for line in text.split("\n")) <= 80
    util = next(r for r in result["metrics"] if r["key"] == "gpu_utilization")
    line = next(line for line in text.split("\n") if line.lstrip().startswith("GPU utilization"))
    for value in (fmt_value(util["base"], "fraction"), fmt_value(util["head"], "fraction"), "-20.0 pts"):
        assert value in line  # base, head and delta whole on the metric's row


def test_terminal_diff_kernel_names_distinct_and_whole_on_request() -> None:
    names = [GEMM.format(tile) for tile in ("128x128x8", "64x64x8", "64x128x8", "256x128x8")]
    result = _result(names)
    text = render_diff(result, "terminal", width=80)
    rows = [line for line in text.split("\n") if "sm80" in line]
    assert len(rows) == 4 and len({line.split()[0] for line in rows}) == 4
    for tile in ("128x128x8", "64x64x8", "64x128x8", "256x128x8"):
        assert sum(f"tilesize{tile}" in line for line in rows) == 1  # the part that differs is shown
    whole = render_diff(result, "terminal", width=80, full_names=True)
    flat = whole.replace("\n", "")
    for name in names:  # wrapped, not cut: the name reads whole once the lines are joined
        assert all(part in flat for part in name.split("_"))
    assert "…" not in whole


@pytest.fixture
def traces(tmp_path: Path) -> tuple[str, str]:
    healthy, slow = tmp_path / "healthy.parquet", tmp_path / "slow.parquet"
    _step_trace(10_000_000, 8_000_000).save(healthy)
    _step_trace(30_000_000, 8_000_000).save(slow)
    return str(healthy), str(slow)


def test_cli_diff_format_follows_extension(
    traces: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    healthy, slow = traces
    assert main(["diff", healthy, slow]) == 0  # stdout: terminal text
    out = capsys.readouterr().out
    assert out.startswith("tracelens diff: REGRESSED") and "| metric |" not in out
    assert main(["diff", healthy, slow, "--format", "terminal"]) == 0
    assert capsys.readouterr().out == out
    md = tmp_path / "d.md"
    assert main(["diff", healthy, slow, "-o", str(md)]) == 0
    assert md.read_text().startswith("# tracelens diff") and "| metric |" in md.read_text()
    js = tmp_path / "d.json"
    assert main(["diff", healthy, slow, "-o", str(js)]) == 0
    assert json.loads(js.read_text())["verdict"] == "regressed"
    txt = tmp_path / "d.txt"
    assert main(["diff", healthy, slow, "-o", str(txt), "-f", "terminal"]) == 0
    assert txt.read_text() == out


def test_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    class Pipe:
        def isatty(self) -> bool:
            return False

    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width(Pipe()) == 100  # not a terminal: the fixed width
    monkeypatch.setenv("COLUMNS", "160")
    assert terminal_width(Pipe()) == 160
    monkeypatch.setenv("COLUMNS", "40")
    assert terminal_width(Tty()) == 80  # never below 80
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(
        "shutil.get_terminal_size", lambda fallback=(100, 24): __import__("os").terminal_size((132, 40))
    )
    assert terminal_width(Tty()) == 132
    assert terminal_width(None) == 100  # written to a file (-o): the fixed width, whatever the terminal


def test_a_change_that_rounds_to_zero_has_no_sign() -> None:
    """Utilization 50% against 49.99999% (delta -1e-7) printed "-0.0 pts" and "(-0.0 points)": a fall where the two
    figures print alike. A change that rounds to zero at the printed precision is "±0.0"; a real one keeps its
    sign."""
    from tests.test_diff import doc
    from tracelens.diff import compare
    from tracelens.report.diff_renderer import render_diff

    tiny = compare(doc([(500_000_000, 1_000_000_000)]), doc([(499_999_900, 1_000_000_000)]))
    for fmt in ("terminal", "markdown"):
        text = render_diff(tiny, fmt)
        assert "-0.0" not in text and "±0.0 pts" in text and "(±0.0 points)" in text, fmt
    real = compare(doc([(500, 1000)]), doc([(400, 1000)]))
    assert "-10.0 pts" in render_diff(real, "terminal") and "(-10.0 points)" in render_diff(real, "markdown")
