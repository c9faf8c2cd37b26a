"""The optimizer step evidence's foreach / fused test, a block of op rows at a time stopping at the first found
(``evidence._fused_in_steps``), against the whole test it replaces (every op row's name gathered, every fused op
searched in the steps), on real traces, with blocks of a few rows (many blocks, the first hit anywhere), and with
the steps cut down (a fused op outside every step: False)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses.columns import event_columns, thread_key
from tracelens.analyses.ops import evidence
from tracelens.analyses.ops.tree import framework_op_rows, op_names, thread_range_at
from tracelens.trace import ALL_KINDS, ANNOTATION, CPU_OP

TRACES = [
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/pytorch_healthy_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


def _steps(trace: Any) -> np.ndarray:
    """The optimizer step rows as optimizer_step finds them (sorted by thread and start)."""
    cols = event_columns(trace)
    matches = evidence._name_matches(cols.names, evidence._OPTIMIZER_STEP)
    ann = np.flatnonzero(matches[cols.name])
    ann = ann[
        np.isin(cols.kind[ann], [ALL_KINDS.index(ANNOTATION), ALL_KINDS.index(CPU_OP)]) & (cols.tid[ann] >= 0)
    ]
    return ann[np.lexsort((cols.start[ann], thread_key(cols.pid[ann], cols.tid[ann])))]


def _whole(trace: Any, steps: np.ndarray) -> bool:
    cols = event_columns(trace)
    cpu = framework_op_rows(trace)
    names = op_names(trace)
    fused = cpu[evidence._name_matches(names.names, evidence._FOREACH_OR_FUSED)[names.code][cols.name[cpu]]]
    return bool(
        (thread_range_at(cols, steps, cols.pid[fused], cols.tid[fused], cols.start[fused]) >= 0).any()
    )


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("block", [evidence.FUSED_BLOCK, 1, 7])
def test_fused_in_steps_equals_the_whole_test(name: str, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(fixture_path(name))
    monkeypatch.setattr(evidence, "FUSED_BLOCK", block)
    steps = _steps(trace)
    for kept in (steps, steps[:1], steps[-1:], steps[:0]):  # all steps, one, none
        assert evidence._fused_in_steps(trace, kept) == _whole(trace, kept)


def test_a_trace_with_fused_ops_in_steps_is_among_them() -> None:
    """At least one of the traces above has a foreach / fused op in a step (the test compares a True)."""
    found = []
    for name in TRACES:
        trace = tracelens.load(fixture_path(name))
        found.append(evidence._fused_in_steps(trace, _steps(trace)))
    assert any(found)
