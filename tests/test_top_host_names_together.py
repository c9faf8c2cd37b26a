"""diagnosis.cause: the top host names of the categories the diagnosis reads, summed together in one pass over the
event rows (each row's (category, name) slot where it stands), equal each category's own sum over its picked rows
(the path of big tables), in chunks of a few rows too; and top_host_names gives the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens.analyses.diagnosis import cause

TRACES = [
    FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz",
    FIXTURES / "gpu" / "resnet18_train_cuda.pt.trace.json.gz",
    FIXTURES / "gpu" / "jax_mlp_cuda.xplane.pb",
    FIXTURES / "nsys" / "handmade_nsys2026.sqlite",
]


@pytest.mark.parametrize("chunk", [7, 1 << 22])
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_summed_together_equals_each_category_alone(
    path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not path.exists():
        pytest.skip(f"{path.name} absent")
    trace = tracelens.load(path)
    monkeypatch.setattr(cause, "ROW_CHUNK", chunk)
    for limit in (1, 5, 100):
        together = cause._top_host_names_of(trace, cause.SUMMED_TOGETHER, limit)
        alone = {
            category: cause._top_host_names(trace, category, limit) for category in cause.SUMMED_TOGETHER
        }
        assert together == alone


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_top_host_names_the_same_on_either_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not path.exists():
        pytest.skip(f"{path.name} absent")
    together = {c: cause.top_host_names(tracelens.load(path), c) for c in cause.SUMMED_TOGETHER}
    monkeypatch.setattr(cause, "TOGETHER_ROWS", 0)  # each category alone, as on a big table
    assert {c: cause.top_host_names(tracelens.load(path), c) for c in cause.SUMMED_TOGETHER} == together
