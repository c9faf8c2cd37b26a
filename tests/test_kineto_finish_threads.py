"""Columns.finish (kineto/table.py) builds independent columns on a pool of two threads beside the calling thread:
the table it makes must not depend on that schedule. Each trace is read with finish's pool replaced by the inline
executor (every task run at once, in submission order, on the calling thread), by the two-thread pool, and by a
two-thread pool whose tasks start after a seeded random delay (other interleavings of the same tasks); the
event store (each column's values and whether it is stored sparse, with its rows), the device table and the
metadata must be equal."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pytest

from tracelens.errors import InputError
from tracelens.ingest import kineto
from tracelens.ingest.kineto import table, threads
from tracelens.trace import SparseColumn

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACES = sorted((FIXTURES / "kineto").glob("*.json")) + [
    FIXTURES / "demo.pt.trace.json.gz",
    FIXTURES / "pytorch_cpu_train.pt.trace.json.gz",
]


class _Delayed(Executor):
    """The reader's two-thread pool (threads.pool), each task started after a seeded random delay (up to 2 ms)."""

    def __init__(self, seed: int) -> None:
        self._pool = threads.pool(2)
        self._random = random.Random(seed)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        delay = self._random.random() * 0.002

        def late(*a: Any, **k: Any) -> Any:
            time.sleep(delay)
            return fn(*a, **k)

        return self._pool.submit(late, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[int], Executor]) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(table, "executor", make)
        return kineto.read(path)


def _layout(trace: Any) -> dict[str, tuple[str, Any]]:
    """Each stored column's form: sparse (with its rows' positions and dtype), dense, or another (a deferred
    depth, computed from the other columns on first read)."""
    out: dict[str, tuple[str, Any]] = {}
    for name, column in trace.store.columns.items():
        if isinstance(column, SparseColumn):
            out[name] = ("sparse", (column.rows.dtype.str, column.rows.tolist()))
        elif column is None or hasattr(column, "type"):
            out[name] = ("dense", None if column is None else str(column.type))
        else:
            out[name] = (type(column).__name__, None)
    return out


def _assert_same(serial: Any, parallel: Any) -> None:
    assert parallel.events.equals(serial.events)
    assert _layout(parallel) == _layout(serial)
    assert parallel.devices.equals(serial.devices)
    assert parallel.metadata == serial.metadata


_SCHEDULES: dict[str, Callable[[int], Executor]] = {
    "pool": lambda threads_: threads.executor(2),
    "delayed-1": lambda threads_: _Delayed(1),
    "delayed-2": lambda threads_: _Delayed(2),
}


@pytest.mark.parametrize("schedule", sorted(_SCHEDULES))
@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_parallel_finish_equals_the_inline_one(
    path: Path, schedule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = _read(path, monkeypatch, lambda threads_: threads.Inline())
    _assert_same(serial, _read(path, monkeypatch, _SCHEDULES[schedule]))


def _write(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


_KERNEL_ARGS: dict[str, Any] = {
    "device": 0,
    "stream": 7,
    "correlation": 1,
    "grid": [1, 2, 3],
    "block": [4, 1, 1],
}
_KERNEL: dict[str, Any] = {
    "ph": "X",
    "cat": "kernel",
    "name": "k",
    "pid": 0,
    "tid": 7,
    "ts": 10,
    "dur": 2,
    "args": _KERNEL_ARGS,
}
_LAUNCH: dict[str, Any] = {
    "ph": "X",
    "cat": "cuda_runtime",
    "name": "cudaLaunchKernel",
    "pid": 5,
    "tid": 6,
    "ts": 8,
    "dur": 1,
    "args": {"correlation": 1},
}
_OP: dict[str, Any] = {
    "ph": "X",
    "cat": "cpu_op",
    "name": "aten::mm",
    "pid": 5,
    "tid": 6,
    "ts": 7,
    "dur": 5,
    "args": {},
}


@pytest.mark.parametrize(
    "events",
    [
        [_KERNEL],  # one row, a GPU row
        [_OP],  # one row, a host row
        [_KERNEL, _LAUNCH],  # the device row's pid from its launch
        [
            _KERNEL,
            _LAUNCH,
            _OP,
            {**_OP, "ts": 7, "dur": 1},
            {**_LAUNCH, "ts": 8},
        ],  # ties, a shared correlation id
        [{**_KERNEL, "ts": 10 - i % 3, "args": {**_KERNEL_ARGS, "correlation": i}} for i in range(50)],
    ],
    ids=["one-kernel", "one-op", "kernel-launch", "ties", "fifty-kernels"],
)
@pytest.mark.parametrize("schedule", sorted(_SCHEDULES))
def test_parallel_finish_equals_the_inline_one_on_small_traces(
    tmp_path: Path, events: list[dict[str, Any]], schedule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, events)
    serial = _read(path, monkeypatch, lambda threads_: threads.Inline())
    _assert_same(serial, _read(path, monkeypatch, _SCHEDULES[schedule]))


@pytest.mark.parametrize("events", [[], [{"ph": "i", "name": "marker", "pid": 0, "tid": 0, "ts": 1}]])
def test_a_trace_without_timed_events_fails_the_same_either_way(
    tmp_path: Path, events: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, events)
    messages = []
    for make in (lambda threads_: threads.Inline(), _SCHEDULES["pool"]):
        with pytest.raises(InputError) as caught:
            _read(path, monkeypatch, make)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
