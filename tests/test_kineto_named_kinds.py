"""kineto/named_kinds.py: the steps a block's names decide, done on the worker that scanned it (ready_block), equal
a direct reading of the events (steps from step-marker names of host annotations and ops, driver calls from
runtime calls of driver names, launch-side names, ids' validity bits, durations clamped), and a table whose blocks
were made ready before ``Columns.add`` equals one whose blocks ``add`` made ready."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracelens.ingest.kineto import msgspec_engine, named_kinds, table
from tracelens.ingest.kineto.blocks import KINDS
from tracelens.ingest.kineto.named_kinds import (
    DRIVER_CALL,
    KIND_MASK,
    STEP_MARKER,
    VALID_BIT,
    NameFlags,
    ready_block,
)
from tracelens.ingest.kineto.prepare import prepare_block
from tracelens.trace import ANNOTATION, CPU_OP, DRIVER, PYTHON, RUNTIME, STEP

_ROOT = Path("made.json")
_CATEGORY = {
    "cpu_op": CPU_OP,
    "user_annotation": ANNOTATION,
    "cuda_runtime": RUNTIME,
    "python_function": PYTHON,
}
# names that mark steps, driver calls (with and without API suffixes), and others; None: no name
_NAMES = [
    "ProfilerStep#3",
    "ProfilerStep#12",
    "tracelens/step#0",
    "cuLaunchKernel",
    "cuLaunchKernel_v2",
    "cudaLaunchKernel",
    "cudaLaunchKernel_v7000",
    "aten::mm",
    "ProfilerStep",
    None,
]
_STEP_NAMES = {"ProfilerStep#3", "ProfilerStep#12", "tracelens/step#0"}
_DRIVER_NAMES = {"cuLaunchKernel", "cuLaunchKernel_v2"}


@st.composite
def _event(draw: st.DrawFn) -> dict:
    cat = draw(st.sampled_from(sorted(_CATEGORY)))
    event: dict = {"ph": "X", "cat": cat, "ts": draw(st.integers(0, 6)), "dur": draw(st.integers(-3, 3))}
    name = draw(st.sampled_from(_NAMES))
    if name is not None:
        event["name"] = name
    for key in ("pid", "tid"):
        if draw(st.booleans()):
            event[key] = draw(st.integers(0, 3))
    args = {}
    for key in ("correlation", "External id"):
        if draw(st.booleans()):
            args[key] = draw(st.integers(1, 9))
    event["args"] = args
    return event


def _block(events: list[dict]) -> dict:
    payload = b"[" + b",".join(json.dumps(e).encode() for e in events) + b"]"
    return prepare_block(msgspec_engine.block_columns(msgspec_engine.decode_events(payload, _ROOT)))


def _kind(event: dict) -> str:
    kind, name = _CATEGORY[event["cat"]], event.get("name")
    if kind in (ANNOTATION, CPU_OP) and name in _STEP_NAMES:
        return STEP
    if kind == RUNTIME and name in _DRIVER_NAMES:
        return DRIVER
    return kind


@pytest.fixture(params=["native", "numpy"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """ready_block by the compiled pass (where built) or by its numpy steps."""
    if request.param == "numpy":
        monkeypatch.setattr(named_kinds, "scanner", lambda: None)
    elif getattr(named_kinds.scanner(), "name_kinds", None) is None:
        pytest.skip("the native scanner was not built")
    return str(request.param)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_event(), min_size=1, max_size=25))
def test_ready_block_equals_the_events_read_directly(path: str, events: list[dict]) -> None:
    block = ready_block(_block(events), NameFlags())
    assert [KINDS[k] for k in block["kind"]] == [_kind(e) for e in events]
    kind_valid = block["kind_valid"]
    assert [KINDS[k] for k in np.bitwise_and(kind_valid, KIND_MASK)] == [_kind(e) for e in events]
    for key in ("pid", "tid", "correlation", "external_id"):
        np.testing.assert_array_equal(
            np.bitwise_and(kind_valid, VALID_BIT[key]).astype(bool), block[f"{key}_valid"]
        )
    assert block["duration"].tolist() == [max(e["dur"], 0) * 1000 for e in events]
    codes, names = block["name"]
    launched = {names[c] for c, used in enumerate(block["launch_names"]) if used}
    want = {e["name"] for e in events if _kind(e) in (RUNTIME, DRIVER) and "name" in e}
    assert launched == want


def test_ready_block_runs_once_and_leaves_empty_blocks(path: str) -> None:
    flags = NameFlags()
    block = ready_block(
        _block([{"ph": "X", "cat": "cuda_runtime", "name": "cuInit", "ts": 1, "dur": -2}]), flags
    )
    kinds = block["kind"].copy()
    assert KINDS[kinds[0]] == DRIVER and block["duration"].tolist() == [0]
    assert ready_block(block, flags) is block
    np.testing.assert_array_equal(block["kind"], kinds)
    empty = {"counts": {"events": 0}}
    assert ready_block(empty, flags) is empty


def test_name_flags_shared_by_threads_agree() -> None:
    flags, seen = NameFlags(), []
    names = [n for n in _NAMES if n is not None] * 50

    def work() -> None:
        seen.append((flags.bits(names), flags.steps(names)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bits, steps = seen[0]
    assert (
        bits.dtype == np.uint8 and bits.size == len(names) + 1 and bits[-1] == 0
    )  # the slot of rows without a name
    assert bits[:9].tolist() == [STEP_MARKER] * 3 + [DRIVER_CALL] * 2 + [0] * 4
    np.testing.assert_array_equal(steps[:9], [3.0, 12.0, 0.0] + [np.nan] * 6)
    for other_bits, other_steps in seen[1:]:
        np.testing.assert_array_equal(other_bits, bits)
        np.testing.assert_array_equal(other_steps, steps)


@settings(max_examples=40, deadline=None)
@given(st.lists(_event(), min_size=1, max_size=30), st.lists(st.integers(1, 8), min_size=1, max_size=5))
def test_blocks_made_ready_before_add_give_the_same_table(events: list[dict], cuts: list[int]) -> None:
    blocks, lo = [], 0
    for size in [*cuts, len(events)]:
        if lo < len(events):
            blocks.append(events[lo : lo + size])
        lo += size
    tables = []
    for early in (False, True):
        columns = table.Columns(_ROOT)
        for events_of_block in blocks:
            block = _block(events_of_block)
            columns.add(ready_block(block, columns.name_flags) if early else block)
        trace = columns.finish({})
        tables.append((trace.events, trace.devices))
    (events_a, devices_a), (events_b, devices_b) = tables
    assert isinstance(events_a, pa.Table)
    assert events_a.equals(events_b) and devices_a.equals(devices_b)


@settings(max_examples=60, deadline=None)
@given(st.lists(_event(), min_size=0, max_size=40))
def test_the_compiled_pass_equals_the_numpy_steps(events: list[dict]) -> None:
    if getattr(named_kinds.scanner(), "name_kinds", None) is None:
        pytest.skip("the native scanner was not built")
    if not events:  # an empty block has no rows to ready
        return
    native = ready_block(_block(events), NameFlags())
    reference = _block(events)
    original = named_kinds.scanner
    named_kinds.scanner = lambda: None  # type: ignore[assignment]
    try:
        reference = ready_block(reference, NameFlags())
    finally:
        named_kinds.scanner = original  # type: ignore[assignment]
    for key in ("kind", "kind_valid", "launch_names", "duration"):
        assert native[key].dtype == reference[key].dtype, key
        np.testing.assert_array_equal(native[key], reference[key], err_msg=key)


def test_the_compiled_pass_refuses_codes_outside_its_tables() -> None:
    native = getattr(named_kinds.scanner(), "name_kinds", None)
    if native is None:
        pytest.skip("the native scanner was not built")
    kind = _block([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}])["kind"]
    valid = [np.ones(1, bool)] * 4
    kinds = np.arange(len(KINDS), dtype=np.int8)
    tables = (np.zeros(2, np.uint8), kinds, kinds, np.zeros(len(KINDS), np.uint8))
    for codes in (np.array([1], np.int32), np.array([-2], np.int32)):
        with pytest.raises(ValueError, match="outside its table"):
            native(
                kind.copy(),
                codes,
                *tables,
                *valid,
                np.zeros(1, np.int64),
                np.empty(1, np.uint8),
                np.zeros(1, bool),
            )


@settings(max_examples=40, deadline=None)
@given(st.lists(_event(), min_size=1, max_size=40))
def test_the_compiled_pass_clamps_int32_durations_as_int64_ones(events: list[dict]) -> None:
    # the durations of the row chunks are int32 (row_chunks.NARROW_KEYS): clamped in place, as the int64 ones
    if getattr(named_kinds.scanner(), "name_kinds", None) is None:
        pytest.skip("the native scanner was not built")
    wide = _block(events)
    narrow = _block(events)
    narrow["duration"] = narrow["duration"].astype(np.int32)
    written = narrow["duration"]
    wide, narrow = ready_block(wide, NameFlags()), ready_block(narrow, NameFlags())
    assert narrow["duration"] is written  # (in place: no int64 copy, the chunk's slice kept)
    np.testing.assert_array_equal(narrow["duration"].astype(np.int64), wide["duration"])
    for key in ("kind", "kind_valid", "launch_names"):
        np.testing.assert_array_equal(narrow[key], wide[key], err_msg=key)
