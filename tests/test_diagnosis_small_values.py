"""The small values the diagnosis reads instead of the big shared values (analyses.MEMO_READERS): the ops it names
(``ops.diagnosis_ops``, found by the ops section while the op tree is held) against the functions computing them
on a fresh trace, and the diagnosis the same with or without the ops section in the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_traces

import tracelens
from tracelens.analyses import derived
from tracelens.analyses.ops import diagnosis_ops, gap_ops, launching_ops, optimizer_step, sync_ops

ROOT = Path(__file__).resolve().parent.parent
TRACES = [
    ROOT / "fixtures" / "demo.pt.trace.json.gz",
    *sorted((ROOT / "fixtures").glob("nsys/*.sqlite"))[:2],
    *sorted((ROOT / "fixtures").glob("gpu/*.pt.trace.json.gz"))[:3],
    *shared_traces("pytorch", "*.json.gz")[:2],
]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_ops_the_diagnosis_names_are_the_evidence_functions(path: Path) -> None:
    trace = tracelens.load(path)
    found = diagnosis_ops(trace)
    fresh = tracelens.load(path)
    assert found.launching_ops == launching_ops(fresh)
    assert found.optimizer_step == optimizer_step(fresh)
    assert found.sync_ops == sync_ops(fresh)
    assert found.gap_ops == gap_ops(fresh)
    # each ask a copy: what the diagnosis puts into its document is not the held value
    found.launching_ops.append({"name": "changed"})
    assert diagnosis_ops(trace).launching_ops == launching_ops(fresh)


@pytest.mark.parametrize("path", TRACES[:4], ids=lambda p: p.name)
def test_the_diagnosis_is_the_same_with_or_without_the_ops_section(path: Path) -> None:
    whole = tracelens.analyze(tracelens.load(path), threads=1)
    trace = tracelens.load(path)
    alone = tracelens.analyze(trace, sections=["diagnosis"], threads=1)
    assert "ops" not in alone
    assert alone["diagnosis"] == whole["diagnosis"]


def test_the_op_tree_goes_after_the_ops_section_and_the_what_if_replay() -> None:
    trace = tracelens.load(ROOT / "fixtures" / "demo.pt.trace.json.gz")
    tracelens.analyze(trace, threads=1)
    held = {derived.memo_family(key) for key in derived.memo_keys(trace)}
    assert not held & {"op_tree", "op_names", "gpu_op_name_codes", "emit_nvtx_rows", "framework_op_rows"}
    assert "op_evidence" in held
