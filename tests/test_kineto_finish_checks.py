"""What the Kineto table build (kineto/table.py, Columns.finish) finds for the steps after it, checked against those
steps' own answers on the built trace: whether the GPU ops' ends ascend in table order (then
stream_order.cut_impossible_ends has nothing to cut and the reader does not look again; where they do not, as
where ops of two streams overlap, the reader's check runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_kineto_handmade import _stream_order_trace, fast_engine

from tests.conftest import shared_params
from tests.kineto_events import complete_event, write_trace
from tracelens.ingest.kineto import reader, stream_order
from tracelens.trace import KERNEL, MEMCPY, MEMSET, Trace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACES = (
    sorted((FIXTURES / "kineto").glob("*.json"))
    + sorted((FIXTURES / "gpu").glob("*.pt.trace.json.gz"))
    + [FIXTURES / "demo.pt.trace.json.gz", FIXTURES / "pytorch_cpu_train.pt.trace.json.gz"]
)


def _read_with_flag(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Trace, bool, Trace]:
    """(the trace finish built, the flag it set, the reader's result)."""
    seen: dict[str, object] = {}
    finish = reader.Columns.finish

    def spy(self: reader.Columns, document: dict) -> Trace:
        built = finish(self, document)
        seen["built"], seen["columns"] = built, self
        return built

    with monkeypatch.context() as patch:
        patch.setattr(reader.Columns, "finish", spy)
        result = reader.read(path)
    columns = seen["columns"]
    assert isinstance(columns, reader.Columns)
    built = seen["built"]
    assert isinstance(built, Trace)
    return built, columns.gpu_op_ends_ascending, result


def _some_op_outlasts_a_later_one(trace: Trace) -> bool:
    """Independently: some GPU op (kernel, memcpy, memset) ends after an op in a later row ends (a pairwise walk
    over the ops in row order, keeping the latest end so far)."""
    kinds = trace.store.column("kind").to_pylist()
    ends = trace.store.column("end_ns").to_pylist()
    latest = None
    for kind, end in zip(kinds, ends, strict=True):
        if kind not in (KERNEL, MEMCPY, MEMSET):
            continue
        if latest is not None and latest > end:
            return True
        latest = end if latest is None else max(latest, end)
    return False


def _check(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, Trace]:
    built, flag, result = _read_with_flag(path, monkeypatch)
    assert flag == (not _some_op_outlasts_a_later_one(built))
    if flag:  # the check's own first pass, without the flag, finds nothing either
        assert stream_order.cut_impossible_ends(built) is built
        assert result.events.equals(built.events)
    return flag, result


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_ends_flag_is_the_stream_checks_answer(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(path, monkeypatch)


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_the_ends_flag_on_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (ops of other streams overlap in most: the flag is then False, and the reader's own check runs)
    _check(path, monkeypatch)


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_a_late_end_clears_the_flag_and_is_cut(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_engine(engine)
    path = _stream_order_trace(tmp_path / "late_end.json")
    built, flag, result = _read_with_flag(path, monkeypatch)
    assert not flag
    assert _some_op_outlasts_a_later_one(built)
    # cut by the reader's check: k0 at k1's start (the nccl op of another stream still spans k1 and k2)
    names, ends = result.store.column("name").to_pylist(), result.store.column("end_ns").to_pylist()
    starts = result.store.column("start_ns").to_pylist()
    assert ends[names.index("k0")] == starts[names.index("k1")]
    assert any("later op of the same stream" in w for w in result.metadata.warnings)


def test_equal_ends_keep_the_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # two kernels of one stream ending at the same time (the second starting later): nothing outlasts anything
    events = [
        complete_event("kernel", name, 0, 7, ts, dur, device=0, stream=7, correlation=corr)
        for name, ts, dur, corr in (("a", 100, 20, 1), ("b", 110, 10, 2))
    ]
    events += [
        complete_event("cuda_runtime", "cudaLaunchKernel", 1, 1, ts, 2, correlation=corr)
        for ts, corr in ((90, 1), (95, 2))
    ]
    path = write_trace(tmp_path, events)
    _, flag, result = _read_with_flag(path, monkeypatch)
    assert flag
    assert not any("later op" in w for w in result.metadata.warnings)
    kinds = result.store.column("kind").to_pylist()
    ends = [e for k, e in zip(kinds, result.store.column("end_ns").to_pylist(), strict=True) if k == KERNEL]
    assert ends == [30_000, 30_000]  # both at 120 µs, the origin at the first launch (90 µs)
