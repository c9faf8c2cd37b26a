"""graph.build's views where a per-op or per-call value needs no array of its own: the calls' rows and threads
(their start points' rows and chains), one device's typical stream gap at every op, no collective at any op.
Each checked against the value computed independently from the graph's other fields."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_replay import input_rows, two_device_rows
from tracelens.replay import graph as graph_module
from tracelens.replay.graph import build, lex_ascending
from tracelens.trace import Trace


def _check_calls(graph) -> None:  # type: ignore[no-untyped-def]
    starts = np.arange(0, 2 * graph.call_row.size, 2)
    assert graph.call_row.tolist() == graph.row[starts].tolist()
    assert graph.call_thread.tolist() == graph.chain[starts].tolist()
    assert (graph.call_thread < graph.thread_keys.size).all()


def test_one_device_views_equal_the_per_op_values() -> None:
    graph = build(Trace.from_rows(input_rows()))
    n_ops = graph.op_start.size
    assert n_ops > 0 and np.unique(graph.op_device).size == 1
    device = int(graph.op_device[0])
    assert graph.op_stream_typical.shape == (n_ops,)
    assert graph.op_stream_typical.tolist() == [graph.typical["stream"][device]] * n_ops
    assert graph.op_collective.shape == (n_ops,) and graph.op_collective.tolist() == [-1] * n_ops
    # read-only views: no reader may write them in place
    assert not graph.op_stream_typical.flags.writeable and not graph.op_collective.flags.writeable
    _check_calls(graph)
    # the model replay reads the typical gaps at the queued ops' starts
    lag = graph.lag_at_typical_stream_gaps()
    queued = ~graph.chain_first[graph.op_start]
    assert (lag[graph.op_start[queued]] == graph.typical["stream"][device]).all()


def test_several_devices_keep_per_op_arrays() -> None:
    graph = build(Trace.from_rows(two_device_rows()))
    typical = graph.typical["stream"]
    assert len(set(graph.op_device.tolist())) == 2
    assert graph.op_stream_typical.tolist() == [typical[int(d)] for d in graph.op_device]
    assert graph.op_stream_typical.flags.writeable
    _check_calls(graph)


def test_empty_trace_graph() -> None:
    graph = build(Trace.from_rows([]))
    assert graph.op_stream_typical.size == graph.op_collective.size == graph.call_row.size == 0


def test_lex_ascending_is_whether_lexsort_is_the_identity() -> None:
    rng = np.random.default_rng(7)
    cases = [(np.zeros(0, np.intp), np.zeros(0, np.int64), np.zeros(0, np.int64))]
    cases.append((np.zeros(1, np.intp), np.array([5]), np.array([3])))
    for _ in range(400):
        n = int(rng.integers(2, 9))
        high = int(rng.integers(1, 4))
        major = np.sort(rng.integers(0, high, n)) if rng.random() < 0.7 else rng.integers(0, high, n)
        middle = rng.integers(0, 3, n)  # many ties
        if rng.random() < 0.5:
            middle = np.sort(middle)
        minor = rng.integers(0, 3, n)
        cases.append((major.astype(np.intp), middle.astype(np.int64), minor.astype(np.int64)))
    seen = set()
    for major, middle, minor in cases:
        want = bool((np.lexsort((minor, middle, major)) == np.arange(major.size)).all())
        assert lex_ascending(major, middle, minor) == want, (major, middle, minor)
        seen.add(want)
    assert seen == {True, False}


def _fields_equal(a, b) -> None:  # type: ignore[no-untyped-def]
    for name, value in vars(a).items():
        other = getattr(b, name)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other), name
        else:
            assert value == other, name


def test_ops_in_order_build_the_graph_the_lexsort_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    # the identity order (a slice: views of the op arrays) against the lexsort's order and gathers
    for rows in (input_rows(), two_device_rows()):
        fast = build(Trace.from_rows(rows))
        monkeypatch.setattr(graph_module, "lex_ascending", lambda *keys: False)
        slow = build(Trace.from_rows(rows))
        monkeypatch.undo()
        _fields_equal(fast, slow)
