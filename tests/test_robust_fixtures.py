"""The hand-built valid-but-unusual traces of fixtures/robust/ (fixtures/make_robust.py): each once stopped
``analyze`` with an internal error; now every section completes and says what the trace supports. Expected
numbers are read off the fixture's events here, independently of the analyses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tracelens
from tracelens.report import render

ROBUST = Path(__file__).resolve().parent.parent / "fixtures" / "robust"


def _events(name: str) -> list[dict]:
    return json.loads((ROBUST / name).read_text())["traceEvents"]


def _analyze(name: str) -> dict:
    doc = tracelens.analyze(tracelens.load(ROBUST / name))
    for fmt in ("terminal", "markdown", "json"):
        assert render(doc, fmt)
    return json.loads(render(doc, "json"))


def _kernel_union_us(events: list[dict]) -> tuple[int, float, float]:
    """(kernel count, busy µs as the union of kernel intervals, span µs) straight from the JSON."""
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "kernel")
    busy, end = 0.0, float("-inf")
    for s, e in kernels:
        busy += max(0.0, e - max(s, end))
        end = max(end, e)
    return len(kernels), busy, kernels[-1][1] - kernels[0][0]


@pytest.mark.parametrize("name", ["shapes_unmodelled.json", "graph_capture_modules.json"])
def test_gpu_figures_match_the_kernels_in_the_file(name: str) -> None:
    events = _events(name)
    count, busy_us, span_us = _kernel_union_us(events)
    doc = _analyze(name)
    # one GPU: the device-means are that GPU's own figures
    assert doc["summary"]["kernel_count"] == count
    assert doc["summary"]["device_mean_busy_ns"] == round(busy_us * 1000)
    assert doc["summary"]["device_mean_span_ns"] == round(span_us * 1000)
    assert doc["diagnosis"]["primary"]["cause"] == "none"


def test_shapes_without_a_flop_model_count_no_flops() -> None:
    """aten::relu recorded its shapes but has no FLOP formula and no recorded flops: nothing is counted,
    MFU is null with a reason (was ``KeyError: 'flops'``)."""
    events = _events("shapes_unmodelled.json")
    assert not any("flops" in e.get("args", {}) for e in events)
    assert any("Input Dims" in e.get("args", {}) for e in events)
    compute = _analyze("shapes_unmodelled.json")["ops"]["compute"]
    assert compute["flops"] == 0.0
    assert compute["mfu"] is None and compute["reason"]


def test_graph_capture_modules_keep_their_recorded_flops() -> None:
    """Module rows with a recorded-flops op and no launch inside any module (was ``KeyError: 'path'``): one
    module row, the innermost module's path, no kernel time, the op's recorded flops."""
    events = _events("graph_capture_modules.json")
    recorded = sum(e["args"]["flops"] for e in events if "flops" in e.get("args", {}))
    modules = [e["name"].removeprefix("nn.Module: ") for e in events if e["name"].startswith("nn.Module: ")]
    doc = _analyze("graph_capture_modules.json")
    assert doc["ops"]["by_module"] == [
        {"path": "/".join(modules), "kernels": 0, "gpu_ns": 0, "copy_ns": 0, "flops": float(recorded)}
    ]
    assert doc["ops"]["compute"]["flops"] == float(recorded)


def test_make_robust_writes_the_committed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_robust", ROBUST.parent / "make_robust.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROBUST_DIR", tmp_path)
    module.main()
    committed = sorted(p.name for p in ROBUST.glob("*.json"))
    assert committed == sorted(p.name for p in tmp_path.glob("*.json")) and committed
    for name in committed:
        assert (tmp_path / name).read_bytes() == (ROBUST / name).read_bytes(), name
