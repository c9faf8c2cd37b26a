"""analyses/beside.start_beside and the event columns' thread ids read on a second thread (columns.event_columns):
the same view as read on one thread (every field's values and type, CodedInts kept), the error of a failed read raised
by the wait, and no second thread where the sections may use one only."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses.beside import start_beside
from tracelens.analyses.coded import CodedInts
from tracelens.analyses.columns import FIELD_COLUMNS, event_columns
from tracelens.analyses.schedule import threads_limit
from tracelens.trace import Trace


@st.composite
def rows(draw: st.DrawFn) -> list[dict]:
    out = []
    for i in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["cpu_op", "runtime", "kernel", "annotation"]))
        out.append(
            {
                "kind": kind,
                "name": draw(st.sampled_from(["a", "b", None])),
                "start_ns": i * 10,
                "end_ns": i * 10 + draw(st.integers(0, 20)),
                "pid": draw(st.sampled_from([1, 2, None])),
                "tid": None if kind == "kernel" else draw(st.sampled_from([7, 2**40, -5, None])),
                **({"device": 0, "stream": 7} if kind == "kernel" else {}),
            }
        )
    return out


def _fields(trace: Trace) -> dict:
    cols = event_columns(trace)
    out = {}
    for key in FIELD_COLUMNS:
        value = getattr(cols, key)
        out[key] = (value.codes, value.table) if isinstance(value, CodedInts) else (value,)
    return out


@settings(max_examples=60, deadline=None, database=None)
@given(rows())
def test_event_columns_read_beside_equal_those_read_on_one_thread(events: list[dict]) -> None:
    got = _fields(Trace.from_rows(events))
    with threads_limit(1):
        want = _fields(Trace.from_rows(events))
    assert got.keys() == want.keys()
    for key in got:
        for a, b in zip(got[key], want[key], strict=True):
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype, key
            assert np.array_equal(a, b), key


def test_start_beside_gives_the_value_and_raises_the_error() -> None:
    threads = []
    wait = start_beside(lambda: threads.append(threading.current_thread()) or 42)
    assert wait() == 42
    with threads_limit(2):
        assert start_beside(lambda: threading.current_thread())() is not threading.current_thread()

    def fail() -> None:
        raise ValueError("read failed")

    with threads_limit(2):
        wait = start_beside(fail)
    with pytest.raises(ValueError, match="read failed"):
        wait()


def test_start_beside_runs_on_the_calling_thread_with_one_thread() -> None:
    with threads_limit(1):
        ran = []
        wait = start_beside(lambda: ran.append(threading.current_thread()) or "now")
        assert ran == [threading.current_thread()]  # already run, before the wait
        assert wait() == "now"


def test_then_runs_after_the_computation_on_its_thread() -> None:
    order: list[str] = []
    with threads_limit(2):
        wait = start_beside(lambda: order.append("compute") or 1, lambda: order.append("then"))
        assert wait() == 1
    assert order == ["compute", "then"]
    with threads_limit(1):  # nothing beside: `then` not run
        order.clear()
        assert start_beside(lambda: order.append("compute") or 2, lambda: order.append("then"))() == 2
    assert order == ["compute"]
