"""JSON goldens: the full `analyze` document of every real trace in ../shared/traces and every fixture trace,
stored in tests/golden/json/ and compared key by key, so refactors keep every number (floats to 1e-9 relative).

Regenerate after an intended change with ``TRACELENS_REGEN_GOLDEN=1 python3 -m pytest tests/test_golden_json.py``
and review the diff of ``tests/golden/json/`` like code. Shared-trace goldens skip when ../shared is absent.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

import tracelens
from tests.conftest import SHARED_TRACES
from tracelens.report.json_renderer import render as render_json

ROOT = Path(__file__).resolve().parent.parent
SHARED = SHARED_TRACES
GOLDEN = Path(__file__).parent / "golden" / "json"

FIXTURE_TRACES = sorted(p for p in (ROOT / "fixtures").rglob("*")
                        if p.is_file() and (p.suffix in (".gz", ".pb") or p.parent.name == "kineto"))
SHARED_NAMES = ["nsys/a100_saxpy_nsys2022.2.sqlite", "nsys/h100x2_fastvideo_window_nsys2026.2.sqlite",
                "nsys/rtx3080_tiny_nsys2026.1.sqlite", "pytorch/a100_alexnet_cuda_sync_2023.json.gz",
                "pytorch/a100_nccl_2rank_rank0_2024.json.gz", "pytorch/h100_bert_small_inference_torch2.6.json.gz",
                "pytorch/mi250_rocm6.2_minitoy_train.json.gz", "pytorch/v100_ns_resolution_2024.json.gz",
                "pytorch/v100_resnet50_2021_oldformat.json.gz", "tf/amd_gpu_jax_te_fused_attn.xplane.pb",
                "tf/v100x8_tf2.4_bert_multiworker.xplane.pb"]


def _document(path: Path) -> dict:
    doc = json.loads(render_json(tracelens.analyze(tracelens.load(path))))
    doc["source"]["path"] = path.name  # where the file lies is not part of the result
    return doc


def _differences(got: object, want: object, where: str = "") -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: missing" for k in want if k not in got]
        out += [f"{where}.{k}: unexpected" for k in got if k not in want]
        for k in want:
            if k in got:
                out += _differences(got[k], want[k], f"{where}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, golden {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in _differences(g, w, f"{where}[{i}]")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return [] if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {got!r} != {want!r}"]
    return [] if got == want and type(got) is type(want) else [f"{where}: {got!r} != {want!r}"]


def _check(name: str, doc: dict) -> None:
    path = GOLDEN / (name.replace("/", "__") + ".json")
    if os.environ.get("TRACELENS_REGEN_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    differences = _differences(doc, json.loads(path.read_text(encoding="utf-8")))
    assert differences == [], f"{name}: {len(differences)} differences, first: {differences[:10]}"


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_NAMES)
def test_shared_trace_document_is_unchanged(name: str) -> None:
    path = SHARED / name
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    _check(name, _document(path))


@pytest.mark.parametrize("path", FIXTURE_TRACES, ids=[str(p.relative_to(ROOT / "fixtures")) for p in FIXTURE_TRACES])
def test_fixture_document_is_unchanged(path: Path) -> None:
    _check(str(path.relative_to(ROOT / "fixtures")), _document(path))


def test_the_comparison_catches_changes() -> None:
    golden = {"a": 1, "b": [1.0, {"c": "x"}], "d": 0.5}
    assert _differences(golden, golden) == []
    assert _differences({"a": 1, "b": [1.0 + 1e-12, {"c": "x"}], "d": 0.5}, golden) == []  # float noise
    assert _differences({"a": 2, "b": [1.0], "d": 0.5, "e": 0}, golden) == [".e: unexpected", ".a: 2 != 1",
                                                                              ".b: 1 items, golden 2"]
    assert _differences({"a": 1.0, "b": [1.0, {"c": "x"}], "d": 0.5}, golden) == [".a: 1.0 != 1"]  # type change
