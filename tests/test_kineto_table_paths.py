"""kineto/table.py's shortcuts against the ways they replace: the launches indexed in file order (where no two
share a correlation id) against placing them in table order first, the device rows' launch pid where ids repeat
(the first launch in table order), and the device table's distinct device indices by a count against the
sorted set of int() of each."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import devices, msgspec_engine, table

_ROOT = Path("made.json")


def _block(events: list[dict]) -> dict:
    """A block as the msgspec engine gives it (the engine every install has)."""
    payload = b"[" + b",".join(json.dumps(e).encode() for e in events) + b"]"
    return msgspec_engine.block_columns(msgspec_engine.decode_events(payload, _ROOT))


def _event(cat: str, name: str, ts: float, pid: int, correlation: int) -> dict:
    args: dict = {"correlation": correlation}
    if cat == "kernel":
        args.update({"device": 0, "stream": 7, "grid": [1, 1, 1], "block": [32, 1, 1]})
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": 1.0, "pid": pid, "tid": 3, "args": args}


def _events(n: int, repeat_ids: bool) -> list[dict]:
    """Launches and their kernels, in an order other than the time order; with ``repeat_ids`` every other
    launch shares its id with the next (on another pid, earlier in time but later in the file)."""
    events = []
    for i in range(n):
        ts = 1000.0 + 10 * ((i * 7) % n)
        corr = 100 + (i // 2 if repeat_ids else i)
        events.append(_event("cuda_runtime", "cudaLaunchKernel", ts, 10 + i % 3, corr))
        events.append(_event("kernel", "gemm", ts + 2, 0, corr))
    return events


def _columns(trace) -> dict:
    return {name: trace.events.column(name).to_pylist() for name in trace.events.column_names}


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_launches_by_id_equal_the_launches_placed_in_table_order(
    n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build():
        columns = table.Columns(_ROOT)
        for lo in range(0, 2 * n, 6):  # several blocks
            columns.add(_block(_events(n, repeat_ids=False)[lo : lo + 6]))
        return columns.finish({})

    fast = build()
    monkeypatch.setattr(table, "launches_by_id", lambda correlation, pid: None)  # as where ids repeat
    placed = build()
    assert _columns(fast) == _columns(placed)
    assert fast.devices.equals(placed.devices)


def test_a_repeated_correlation_id_gives_the_first_launch_in_table_order() -> None:
    events = [
        _event("cuda_runtime", "cudaLaunchKernel", 2000.0, 21, 5),  # first in the file, second in time
        _event("kernel", "gemm", 2005.0, 0, 5),
        _event("cuda_runtime", "cudaLaunchKernel", 1000.0, 22, 5),  # the first launch of id 5 in table order
        _event("cuda_runtime", "cudaLaunchKernel", 1500.0, 23, 6),
        _event("kernel", "gemm", 1505.0, 0, 6),
    ]
    columns = table.Columns(_ROOT)
    columns.add(_block(events[:2]))
    columns.add(_block(events[2:]))
    trace = columns.finish({})
    kernels = trace.of_kind("kernel")
    assert kernels["pid"].tolist() == [23, 22]  # in start order: id 6's launch, then id 5's first


def _distinct_reference(device: np.ndarray) -> list[int]:
    """The former device list: int() of each value an int32 column holds, distinct, sorted."""
    kept = device[np.abs(device) < 2.0**31]
    return sorted({int(d) for d in kept})


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [0.0, 1.0, 2.0, 7.0, 1.7, -0.5, -3.0, 65535.0, 65536.0, 2.0**31, 2.0**30, np.nan, np.inf]
        ),
        max_size=12,
    )
)
def test_device_table_lists_the_distinct_device_indices(values: list[float]) -> None:
    device = np.array(values, dtype=np.float64)
    got = devices.device_table(None, device, [])
    assert got.column("id").to_pylist() == _distinct_reference(device)
