"""The terminal summary at 80, 100 and 160 columns: golden files, nothing past the width, and every headline
figure of the JSON output (the document's ``summary``) whole in the 80-column text.

Regenerate the goldens after an intended change with ``TRACELENS_REGEN_GOLDEN=1 python3 -m pytest
tests/test_terminal_width.py`` and review the diff of ``tests/golden/terminal/`` like code.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, shared_traces
from tests.test_diagnosis import load_case
from tests.test_report_golden import check_golden, full_doc
from tracelens import load
from tracelens.analyses import analyze
from tracelens.report import terminal
from tracelens.report.compute import fmt_flops
from tracelens.report.units import fmt_bytes, fmt_ns, fmt_pct

WIDTHS = (80, 100, 160)
GOLDEN_FIXTURES = {
    "demo": "demo.pt.trace.json.gz",  # the README's demo: cuDNN kernels whose cut names printed alike
    "transformer_bf16": "gpu/transformer_bf16_cuda.pt.trace.json.gz",  # ops, modules, FLOPs
    "imbalance": "causes/multi_gpu_imbalance.json",  # several GPUs: wide per-device tables
}
ALL_FIXTURES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz", ".pb"))
                      and not p.name.endswith(".facts.json"))
SHARED = [p for sub in ("nsys", "pytorch", "tf") for p in shared_traces(sub)]


@cache
def _doc(path: Path) -> dict:
    # fixtures/causes/ holds rows for Trace.from_rows (make_causes.py), the rest are traces
    doc = analyze(load_case(path.stem) if path.parent.name == "causes" else load(path))
    doc["source"]["path"] = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return doc


def _golden_doc(case: str) -> dict:
    return full_doc() if case == "handmade" else _doc(FIXTURES / GOLDEN_FIXTURES[case])


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", ["handmade", *GOLDEN_FIXTURES])
def test_terminal_golden_widths(case: str, width: int) -> None:
    text = terminal.render(_golden_doc(case), width=width)
    assert max(len(line) for line in text.split("\n")) <= width
    check_golden(f"terminal/{case}.{width}.txt", text)


def headline_figures(summary: dict) -> list[tuple[str, str]]:
    """(key, text) for every figure of the JSON ``summary`` block, written the way the summary prints them."""
    out: list[tuple[str, str]] = []

    def add(key: str, value: object, fmt) -> None:  # type: ignore[no-untyped-def]
        if value is not None:
            out.append((key, fmt(value)))

    count = "{:,}".format
    add("device_count", summary.get("device_count"), count)
    add("gpu_utilization", summary.get("gpu_utilization"), fmt_pct)
    for key in ("gpu_busy_ns", "gpu_span_ns", "kernel_ns", "memcpy_ns", "memcpy_exposed_ns", "memset_ns",
                "primary_lost_ns"):
        add(key, summary.get(key), fmt_ns)
    for key in ("kernel_count", "kernel_names", "memcpy_count"):
        add(key, summary.get(key), count)
    add("memcpy_bytes", summary.get("memcpy_bytes"), fmt_bytes)
    add("primary_cause", summary.get("primary_cause"), str)
    steps = summary.get("steps") or {}
    add("steps.count", steps.get("count"), count)
    for key in ("mean_ns", "min_ns", "max_ns"):
        add(f"steps.{key}", steps.get(key), fmt_ns)
    for group in ("step_host_ns", "idle_by_cause"):
        for cause, value in (summary.get(group) or {}).items():
            add(f"{group}.{cause}", value, fmt_ns)
    add("flops", summary.get("flops"), fmt_flops)
    add("mfu", summary.get("mfu"), fmt_pct)
    return out


def assert_headline_whole(doc: dict, text: str) -> None:
    lines = text.split("\n")
    assert max(len(line) for line in lines) <= 80
    summary = doc["summary"]
    if not summary.get("device_count"):  # no GPU: the GPU figures are null or zero and not drawn
        summary = {k: v for k, v in summary.items() if k in ("primary_cause", "primary_lost_ns", "steps",
                                                              "step_host_ns")}
    for key, value in headline_figures(summary):
        # whole on one line: not cut, not wrapped between number and unit, not part of a longer number
        pattern = re.compile(r"(?<![\w.,])" + re.escape(value) + r"(?![\w.,]\w)")
        assert any(pattern.search(line) for line in lines), f"{key} = {value!r} is not whole in the 80-column output"


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.relative_to(FIXTURES).as_posix())
def test_headline_whole_at_80_fixtures(path: Path) -> None:
    doc = _doc(path)
    assert_headline_whole(doc, terminal.render(doc, width=80))


@pytest.mark.parametrize("path", SHARED or [pytest.param(None, marks=pytest.mark.skip(
    reason="../shared/traces not present"))], ids=lambda p: p.name if p else "none")
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
    busy = fmt_ns(doc["summary"]["gpu_busy_ns"])
    with pytest.raises(AssertionError, match="gpu_busy_ns"):
        assert_headline_whole(doc, text.replace(busy, busy.replace(" ", "\n")))
