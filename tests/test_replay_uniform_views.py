"""graph.build's views where a per-op or per-call value needs no array of its own: the calls' rows and threads
(their start points' rows and chains), one device's typical stream gap at every op, no collective at any op.
Each checked against the value computed independently from the graph's other fields."""

from __future__ import annotations

import numpy as np

from tests.test_replay import input_rows, two_device_rows
from tracelens.replay.graph import build
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
