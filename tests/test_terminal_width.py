"""The terminal summary at 80, 100 and 160 columns: golden files, nothing past the width, and every headline
figure of the JSON output (the document's ``summary``) whole in the 80-column text.

Regenerate the goldens after an intended change with ``python3 -m tests.goldens --regen report`` and review
the diff of ``tests/golden/terminal/`` like code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, shared_traces
from tests.goldens import check_text
from tests.test_diagnosis import load_case
from tests.test_report_golden import full_doc
from tracelens import load
from tracelens.analyses import analyze
from tracelens.report import terminal
from tracelens.report.units import fmt_ns

WIDTHS = (80, 100, 160)
GOLDEN_FIXTURES = {
    "demo": "demo.pt.trace.json.gz",  # the README's demo: cuDNN kernels whose cut names printed alike
    "transformer_bf16": "gpu/transformer_bf16_cuda.pt.trace.json.gz",  # ops, modules, FLOPs
    "imbalance": "causes/multi_gpu_imbalance.json",  # several GPUs: wide per-device tables
}
ALL_FIXTURES = sorted(
    p
    for p in FIXTURES.rglob("*")
    if p.is_file() and p.name.endswith((".json", ".json.gz", ".pb")) and not p.name.endswith(".facts.json")
)
SHARED = [p for sub in ("nsys", "pytorch", "tf") for p in shared_traces(sub)]


@cache
def _doc(path: Path) -> dict:
    # fixtures/causes/ holds rows for Trace.from_rows (make_causes.py), the rest are traces
    doc = analyze(load_case(path.stem) if path.parent.name == "causes" else load(path))
    doc["source"]["path"] = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return doc


def _golden_doc(case: str) -> dict:
    return full_doc() if case == "handmade" else _doc(FIXTURES / GOLDEN_FIXTURES[case])


def rendered() -> dict[str, Callable[[], str]]:
    """Golden file name (in tests/golden/) -> its text: what the test compares and `tests.goldens` writes."""
    return {
        f"terminal/{case}.{width}.txt": lambda case=case, width=width: terminal.render(
            _golden_doc(case), width=width
        )
        for case in ("handmade", *GOLDEN_FIXTURES)
        for width in WIDTHS
    }


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", ["handmade", *GOLDEN_FIXTURES])
def test_terminal_golden_widths(case: str, width: int) -> None:
    text = rendered()[f"terminal/{case}.{width}.txt"]()
    assert max(len(line) for line in text.split("\n")) <= width
    check_text(f"terminal/{case}.{width}.txt", text)


def headline_figures(summary: dict) -> list[tuple[str, str]]:
    """(key path, printed text) of every figure in the JSON ``summary`` block, nested objects included: all of
    them, whatever the schema version calls them."""
    out = []
    for key, value in summary.items():
        items = value.items() if isinstance(value, dict) else [(key, value)]
        for inner, v in items:
            if v is not None:
                parent = key if isinstance(value, dict) else ""
                out.append((f"{parent}.{inner}" if parent else key, terminal.summary_value(inner, v, parent)))
    return out


def assert_headline_whole(doc: dict, text: str) -> None:
    lines = text.split("\n")
    assert max(len(line) for line in lines) <= 80
    figures = headline_figures(doc["summary"])
    assert len(figures) >= 4  # the check has something to check
    for key, value in figures:
        # whole on one line: not cut, not wrapped between number and unit, not part of a longer number
        pattern = re.compile(r"(?<![\w.,])" + re.escape(value) + r"(?![\w.,]\w)")
        assert any(pattern.search(line) for line in lines), (
            f"{key} = {value!r} is not whole in the 80-column output"
        )


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_headline_whole_at_80_fixtures(path: Path) -> None:
    doc = _doc(path)
    assert_headline_whole(doc, terminal.render(doc, width=80))


@pytest.mark.parametrize(
    "path",
    SHARED or [pytest.param(None, marks=pytest.mark.skip(reason="../shared/traces not present"))],
    ids=lambda p: p.name if p else "none",
)
def test_headline_whole_at_80_shared(path: Path) -> None:
    doc = _doc(path)
    text = terminal.render(doc, width=80)
    assert_headline_whole(doc, text)
    # and the device names, whole on one line
    for device in doc.get("devices") or []:
        if device.get("name"):
            assert any(device["name"] in line for line in text.split("\n")), device["name"]


def test_headline_check_can_fail() -> None:
    doc = full_doc()
    text = terminal.render(doc, width=80)
    mean = fmt_ns(doc["summary"]["steps"]["mean_ns"])  # 10 ms, printed once per mention
    with pytest.raises(AssertionError, match="steps.mean_ns"):
        assert_headline_whole(doc, text.replace(mean, mean.replace(" ", "\n")))


def test_headline_figures_formatted_by_key() -> None:
    # the conventions of docs/json.md, by hand: *_ns durations, fractions as percentages, bytes, counts
    summary = {
        "device_count": 2,
        "gpu_utilization": 0.5219,
        "device_mean_busy_ns": 7_100_000,
        "kernel_count": 1234,
        "memcpy_bytes": 2 * 1024 * 1024,
        "steps": {"count": 2, "mean_ns": 1.0e7},
        "step_host_ns": {"sync": 4_910_000.0},
        "idle_by_cause": {"input": 8_000_000},
        "mfu": 0.116,
        "primary_cause": "input_pipeline",
        "flops": None,
    }
    assert dict(headline_figures(summary)) == {
        "device_count": "2",
        "gpu_utilization": "52.2%",
        "device_mean_busy_ns": "7.1 ms",
        "kernel_count": "1,234",
        "memcpy_bytes": "2.0 MiB",
        "steps.count": "2",
        "steps.mean_ns": "10 ms",
        "step_host_ns.sync": "4.91 ms",
        "idle_by_cause.input": "8 ms",
        "mfu": "11.6%",
        "primary_cause": "input_pipeline",
    }


def test_cli_width_and_full_names(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from tracelens.cli import main

    demo = str(FIXTURES / "demo.pt.trace.json.gz")
    name = "void cudnn::ampere::scudnn_128x32_dgrad_small_nn_v1(cudnn::conv::ConvParams)"
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["analyze", demo]) == 0
    short = capsys.readouterr().out
    assert max(len(line) for line in short.split("\n")) <= 80
    assert name not in short and "scudnn_128x32_dgrad_small_nn_v1" in short
    assert main(["analyze", demo, "--full-names"]) == 0
    whole = capsys.readouterr().out
    assert max(len(line) for line in whole.split("\n")) <= 80
    table = whole[whole.index("Top kernels") :].split("\n\n\n")[0].split("\n")[4:]  # the rows, under the rule
    cells = "".join(line[1:].split("   ")[0].strip() for line in table)  # the name column, line after line
    assert name.replace(" ", "") in cells  # wrapped and folded over lines, but whole
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["analyze", demo]) == 0
    wide = capsys.readouterr().out
    assert max(len(line) for line in wide.split("\n")) > 100  # the width is used


def test_wide_characters_keep_a_row_on_one_line() -> None:
    """CJK (and other double-width) characters take two terminal cells each: names were shortened to the name
    column's width in characters, so a 44-character CJK name (88 cells) folded onto a second line and broke the
    table's rows. Shortened to the column's width in cells: one line per kernel, nothing past the width."""
    from rich.cells import cell_len

    from tracelens.trace import Trace

    names = [
        "核函数_矩阵乘法_非常长的名字_" * 4,
        "カーネル名前" * 10 + "_b",
        "emoji🔥🚀" * 12,
        "plain_kernel",
    ]
    rows = []
    for i, name in enumerate(names):
        for j in range(3):
            start = (i * 3 + j) * 1000
            rows.append(
                {"kind": "kernel", "name": name, "start_ns": start, "end_ns": start + 500 + i, "device": 0}
            )
    text = terminal.render(analyze(Trace.from_rows(rows)), width=100)
    assert max(cell_len(line) for line in text.split("\n")) <= 100
    lines = text.split("\n")
    top = lines.index(next(line for line in lines if line.startswith("Top kernels")))
    body = lines[
        top + 4 : lines.index("", top + 4)
    ]  # title, blank, header, rule; then the rows up to a blank
    assert len(body) == len(names), body
