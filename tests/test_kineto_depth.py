"""The Kineto reader's host nesting ``depth``: a DeferredColumn computed from the store's own columns on first
read. It must equal what the reader computes eagerly from its float pid/tid at load (the path it still takes
when ids are fractional or too large for int64), and hand-derived depths on a small trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_params

import tracelens
from tracelens.ingest.kineto import native, prepare
from tracelens.trace import DeferredColumn

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _kineto_fixtures() -> list:
    # not the cause specs (fixtures/causes: event rows, not traces) nor the recordings' .facts.json
    paths = sorted(
        p
        for p in FIXTURES.rglob("*.json*")
        if p.name.endswith((".json", ".json.gz"))
        and p.parent.name != "causes"
        and not p.name.endswith(".facts.json")
    )
    return [pytest.param(p, id=str(p.relative_to(FIXTURES))) for p in paths]


def _eager_depth(path: Path, monkeypatch: pytest.MonkeyPatch) -> np.ndarray | None:
    """The depth column as the reader computes it at load (its float ids taken as not int64-exact)."""
    with monkeypatch.context() as patch:
        patch.setattr(prepare, "stored_exactly", lambda ids, data=None: False)
        # the numpy steps (the scanner's prepared blocks decide exactness in C)
        patch.setattr(prepare, "scanner", lambda: None)
        patch.setattr(
            native,
            "_prepared_columns",
            lambda s, flags=None: prepare.prepare_block(native._scanned_columns(s)),
        )
        store = tracelens.load(path).store
    assert not isinstance(store.columns.get("depth"), DeferredColumn)
    return store.column("depth").to_numpy(zero_copy_only=False) if store.has("depth") else None


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz", "*.json") + _kineto_fixtures())
def test_deferred_depth_equals_eager(path: Path | None, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracelens.load(path)
    if trace.metadata.source_format != "kineto":
        pytest.skip("not a Kineto trace")
    eager = _eager_depth(path, monkeypatch)
    store = trace.store
    if eager is None:  # no host interval with a thread: neither path stores a depth
        assert not store.has("depth")
        return
    assert isinstance(store.columns["depth"], DeferredColumn)
    deferred = store.column("depth").to_numpy(zero_copy_only=False)
    assert not isinstance(store.columns["depth"], DeferredColumn)  # computed once, then kept
    np.testing.assert_array_equal(deferred, eager)  # NaN (null) on the same rows
    # the documented table shows the same values
    np.testing.assert_array_equal(trace.events.column("depth").to_numpy(zero_copy_only=False), eager)


def _op(cat: str, name: str, ts: float, dur: float, pid: float = 1, tid: float | None = 10, **args) -> dict:
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "ts": ts, "dur": dur, "args": args}
    if tid is not None:
        event["tid"] = tid
    return event


# Host intervals on three threads plus a kernel; depth = ops on the same (pid, tid) that contain it.
HAND_EVENTS = [
    _op("cpu_op", "A", 0, 100),  # outermost on (1, 10): 0
    _op("cpu_op", "B", 10, 50),  # in A: 1
    _op("cpu_op", "C", 10, 20),  # same start as B, shorter: B's child, 2
    _op("cpu_op", "D", 20, 0),  # zero length at 20, inside C [10, 30]: 3
    _op("cuda_runtime", "cudaLaunchKernel", 40, 4, correlation=1),  # in A and B (C ended at 30): 2
    _op("cpu_op", "E", 60, 30),  # B ended at 60, so only in A: 1
    _op("cpu_op", "F", 60, 30),  # same start and end as E, after it in the file: E's child, 2
    _op("cpu_op", "G", 5, 200, tid=11),  # another thread: 0
    _op("cpu_op", "H", 50, 10, tid=11),  # in G: 1
    _op("cpu_op", "I", 15, 10, pid=2),  # same tid, another pid: its own thread, 0
    _op("user_annotation", "J", 0, 10, tid=None),  # no thread: no depth
    _op("kernel", "K", 41, 5, pid=0, tid=7, device=0, stream=7, correlation=1),  # GPU: no depth
]
HAND_DEPTHS = {
    "A": 0, "B": 1, "C": 2, "D": 3, "cudaLaunchKernel": 2, "E": 1, "F": 2,
    "G": 0, "H": 1, "I": 0, "J": None, "K": None,
}  # fmt: skip


def _hand_depths(tmp_path: Path, events: list[dict]) -> tuple[dict, object]:
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    trace = tracelens.load(path)
    stored = trace.store.columns.get("depth")
    table_ = trace.events
    depth = table_.column("depth").to_pylist()
    return dict(zip(table_.column("name").to_pylist(), depth, strict=True)), stored


def test_hand_built_depths(tmp_path: Path) -> None:
    depths, stored = _hand_depths(tmp_path, HAND_EVENTS)
    assert isinstance(stored, DeferredColumn)
    assert depths == HAND_DEPTHS


def test_fractional_tids_keep_their_own_threads(tmp_path: Path) -> None:
    # tids 10.25 and 10.75 both store as 10; the reader's rule tells them apart (two threads), so it computes
    # the depth at load from its float ids. On one thread "inner" would be inside "outer" (depth 1).
    events = [_op("cpu_op", "outer", 0, 100, tid=10.25), _op("cpu_op", "inner", 10, 10, tid=10.75)]
    depths, stored = _hand_depths(tmp_path, events)
    assert not isinstance(stored, DeferredColumn)
    assert depths == {"outer": 0, "inner": 0}
