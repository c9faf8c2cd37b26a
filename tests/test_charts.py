"""Mermaid charts in the markdown report (tracelens/report/charts.py): numbers derived by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tracelens.analyses import analyze
from tracelens.report.charts import lost_time_chart, rebinned, utilization_chart
from tracelens.report.markdown import render_markdown
from tracelens.trace import Trace, TraceMetadata

CAUSES = Path(__file__).resolve().parent.parent / "fixtures" / "causes"


def _doc(case: str) -> dict:
    data = json.loads((CAUSES / f"{case}.json").read_text())
    return analyze(
        Trace.from_rows(data["rows"], data["devices"], TraceMetadata("handmade", framework="pytorch"))
    )


def test_lost_time_by_cause_bars():
    # startup case: startup 10 ms, unexplained_idle 0.08 ms (tests/test_diagnosis.py); axis top 10 x 1.1 = 11.
    assert lost_time_chart(_doc("startup")) == [
        "```mermaid",
        "xychart-beta horizontal",
        '    title "Lost GPU time by cause (ms)"',
        "    x-axis [startup, unexplained_idle]",
        '    y-axis "ms" 0 --> 11',
        "    bar [10, 0.08]",
        "```",
    ]
    assert lost_time_chart(_doc("healthy_gemm")) == []  # nothing lost: no chart


def test_rebinning_onto_one_axis():
    # GPU 0: buckets [0,10) busy 100%, [10,20) idle; GPU 1: one bucket [10,30) at 50%.
    # Shared axis [0,30) in 3 bins: GPU 0 -> 1, 0, 0 (idle outside its span); GPU 1 -> 0, 0.5, 0.5.
    grid, values = rebinned([(0, [0, 10, 20], [1.0, 0.0]), (1, [10, 30], [0.5])], buckets=3)
    assert grid.tolist() == [0, 10, 20, 30]
    assert np.allclose(values[0], [1, 0, 0]) and np.allclose(values[1], [0, 0.5, 0.5])
    # A bin covering part of a device bucket takes the overlap-weighted mean: buckets [0,10) 100%, [10,30) 0%
    # in two bins [0,15) and [15,30): 10/15 and 0.
    _, halves = rebinned([(0, [0, 10, 30], [1.0, 0.0])], buckets=2)
    assert halves[0].tolist() == pytest.approx([10 / 15, 0.0])


def test_utilization_line_from_the_document():
    doc = _doc("graph_step")
    lines = utilization_chart(doc)
    assert lines[0] == "```mermaid" and lines[-1] == "```"
    assert lines[2] == '    title "GPU busy over time (%)"'
    values = [float(v) for v in lines[-2].split("[", 1)[1].rstrip("]").split(",")]
    assert len(values) == 50
    # Busy 2000 of 2020 ns: the bins' mean is the busy share.
    assert np.mean(values) == pytest.approx(100 * 2000 / 2020, abs=0.1)


def test_report_embeds_both_charts_and_can_leave_them_out():
    doc = _doc("startup")
    text = render_markdown(doc)
    assert text.count("```mermaid") == 2
    assert "```mermaid" not in render_markdown(doc, charts=False)


def test_chart_numbers_are_numbers_mermaid_reads():
    """Mermaid's xychart lexer reads a number as [+-]?(digits[.digits] | .digits), no exponent (its xychart.jison).
    A cause that lost under 100 ns (0.00005 ms) was written "5e-05": the chart failed to render on GitHub. Three
    significant digits, positional, whatever the size."""
    number = re.compile(r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)")
    doc = {
        "diagnosis": {
            "causes": [{"cause": "memcpy", "lost_ns": 50}, {"cause": "startup", "lost_ns": 12_345}]
        },
        "gaps": {
            "devices": [{"device": 0, "timeline": {"edges_ns": [0, 40, 80], "utilization": [1.0, 0.5]}}]
        },
    }
    lines = lost_time_chart(doc) + utilization_chart(doc)
    assert "    bar [0.00005, 0.0123]" in lines  # 50 ns and 12,345 ns in ms
    assert '    y-axis "ms" 0 --> 0.0136' in lines  # 0.012345 x 1.1
    assert '    x-axis "ms since the first GPU op" 0 --> 0.00008' in lines
    for line in lines:
        values = re.findall(r"\[([^\]]*)\]|--> (\S+)", line)
        for listed, top in values:
            for value in listed.split(", ") if listed else [top]:
                if value and value[0].isdigit():
                    assert number.fullmatch(value), (value, line)
