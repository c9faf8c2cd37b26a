"""The reserve step's sizes from the scanner's counts (``_kineto_scan.counted_sizes`` of scan_events'
``row_counts`` and ``max_abs_ts``) against the pass over the rows they replace (``prepared_sizes``); the blocks
the counts leave to that pass (a ts, correlation or pid set in the scanner's second phase, a category code beyond
the counters); and the column step's short cuts (op records where every record is kept, used_codes of no values,
NameFlags learning a name by the rules it can match) against the steps they skip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from tests.test_kineto_native import READ_NATIVELY, event_list
from tests.test_kineto_prepare import _events
from tests.test_kineto_prepared_scan import ODD, _size_sources, _traces
from tracelens import event_names
from tracelens.ingest import kineto
from tracelens.ingest.kineto import blocks, named_kinds, native, prepare, split

pytestmark = pytest.mark.skipif(
    getattr(kineto._kineto_scan, "counted_sizes", None) is None, reason="the native scanner is not built"
)


def _scanned(text: bytes) -> dict[str, Any]:
    scanned = native.scanner().scan_events((text,), native.to_number, msgspec.json.decode)
    assert scanned is not None
    return scanned


def _joined(events: list[dict[str, Any]]) -> bytes:
    return b",".join(json.dumps(e).encode() for e in events)


def _counted(scanned: dict[str, Any]) -> tuple[int, int] | None:
    return native.scanner().counted_sizes(
        scanned["row_counts"],
        scanned["max_abs_ts"],
        native.kind_table(scanned["categories"]),
        prepare.KIND_FLAGS,
        native.MAX_TIME_US,
    )


def _check_sizes(scanned: dict[str, Any], counted: bool | None = True) -> None:
    """The counts' sizes are the pass's (where the scanner counted: ``counted``, None either way), and
    native._sizes gives the pass's."""
    want = native.scanner().prepared_sizes(*_size_sources(scanned)) if scanned["rows"] else None
    if counted is not None:
        assert (scanned["row_counts"] is not None) is counted
    if scanned["row_counts"] is not None:
        assert _counted(scanned) == (want if scanned["rows"] else (0, 0))
    assert native._sizes(scanned) == want


@pytest.mark.parametrize("case", READ_NATIVELY)
def test_counted_sizes_of_the_native_cases(case: str) -> None:
    _check_sizes(_scanned(event_list(*READ_NATIVELY[case]).encode()), counted=None)


@pytest.mark.parametrize("n", [0, 1, 2, 24, 1000])
def test_counted_sizes_of_kineto_shaped_blocks(n: int) -> None:
    text = (
        _joined(_events(n))
        if n
        else json.dumps({"ph": "i", "name": "i", "pid": 1, "tid": 1, "ts": 1}).encode()
    )
    _check_sizes(_scanned(text))


# the events of ODD whose ids the scanner's second phase sets (written as text): no counts for their blocks
_SET_LATER = [i for i, e in enumerate(ODD) if isinstance(e.get("pid"), str) or isinstance(e.get("tid"), str)]


@pytest.mark.parametrize("first", range(len(ODD)))
def test_counted_sizes_of_odd_values(first: int) -> None:
    one = ODD[first]
    _check_sizes(_scanned(json.dumps(one).encode()), counted=not isinstance(one.get("pid"), str))
    rotated = ODD[first:] + ODD[:first]
    _check_sizes(_scanned(_joined(rotated)), counted=not any(isinstance(e.get("pid"), str) for e in rotated))


KEPT = {"ph": "X", "cat": "cpu_op", "name": "kept", "pid": 1, "tid": 1, "ts": 1, "dur": 1}


@pytest.mark.parametrize(
    ("dropped", "counted"),
    [
        ({"ts": 1e17}, True),  # off the timeline, read in phase one
        ({"ts": -(10**17)}, True),
        ({"ts": 1e300}, False),  # (an exponent: a number phase two reads)
        ({"cat": "TRACE"}, True),  # not a timeline event
        ({"cat": "trace"}, True),
        ({"ts": "no ts"}, True),  # (popped below: no ts, NaN)
    ],
)
def test_rows_dropped_give_no_sizes(dropped: dict[str, Any], counted: bool) -> None:
    row = {k: v for k, v in dict(KEPT, **dropped).items() if v != "no ts"}
    for events in ([KEPT, row], [row, KEPT], [row]):
        scanned = _scanned(_joined(events))
        _check_sizes(scanned, counted)
        assert native._sizes(scanned) is None


_LAUNCH = '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": 1, "ts": TS, "args": {"correlation": 4}}'


@pytest.mark.parametrize(
    ("pid", "ts", "counted"),
    [
        ('"Spans"', "2", False),  # a pid written as text: phase two sets it
        ('"7"', "2", False),
        ("1e300", "2", False),  # numbers phase two reads
        ("1e-300", "2", False),
        ("1", "1e-300", False),
        ("1", "15e2", True),  # read in phase one
        ("1", "123456789.012345678901234567890123", True),
    ],
)
def test_ids_and_times_set_in_phase_two_leave_the_sizes_to_the_pass(pid: str, ts: str, counted: bool) -> None:
    later = _LAUNCH.replace("PID", pid).replace("TS", ts).encode()
    plain = _LAUNCH.replace("PID", "1").replace("TS", "2").encode()
    for text in (later, b",".join((json.dumps(KEPT).encode(), later, plain))):
        _check_sizes(_scanned(text), counted)
    correlation = plain.replace(b'"correlation": 4', b'"correlation": 1e300')
    _check_sizes(_scanned(b",".join((plain, correlation))), counted=False)


def test_launches_counted_need_a_correlation_and_a_pid() -> None:
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2}
    events = [
        dict(launch, args={"correlation": 4}),
        launch,  # no correlation
        {k: v for k, v in launch.items() if k != "pid"} | {"args": {"correlation": 5}},  # no pid
        dict(launch, cat="cuda_driver", args={"correlation": 6}),
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, "args": {"correlation": 4}},
        {"ph": "X", "name": "no category", "pid": 1, "tid": 1, "ts": 8},
    ]
    scanned = _scanned(_joined(events))
    _check_sizes(scanned)
    assert _counted(scanned) == (1, 2)


def test_categories_beyond_the_counters_leave_the_sizes_to_the_pass() -> None:
    events = [dict(KEPT, cat=f"category {i}") for i in range(70)]
    _check_sizes(_scanned(_joined(events[:60])))
    _check_sizes(_scanned(_joined(events)), counted=False)


def test_counted_sizes_refuses_other_inputs() -> None:
    scanned = _scanned(_joined([KEPT]))
    table = native.kind_table(scanned["categories"])
    with pytest.raises(ValueError, match="row_counts"):
        native.scanner().counted_sizes(scanned["row_counts"][:-8], 1.0, table, prepare.KIND_FLAGS, 1e12)
    with pytest.raises(ValueError, match="outside"):  # a category code beyond the kind table
        native.scanner().counted_sizes(scanned["row_counts"], 1.0, table[-1:], prepare.KIND_FLAGS, 1e12)


class _Quiet:
    def advance(self, n: int) -> None:
        pass


def _blocks(path: Path) -> list[dict[str, Any]]:
    found = []
    for kind, payload, _ in split.split_stream(path, _Quiet(), 1 << 20):
        if kind == "events":
            scanned = native.scanner().scan_events(payload.pieces(), native.to_number, msgspec.json.decode)
            if scanned is not None:
                found.append(scanned)
    return found


def _same_columns(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert list(got) == list(want)
    for key, value in want.items():
        have = got[key]
        if isinstance(value, tuple):  # (codes, distinct strings)
            assert list(have[1]) == list(value[1]), key
            have, value = have[0], value[0]
        assert (have.dtype, have.shape) == (value.dtype, value.shape), key
        assert have.tobytes() == value.tobytes(), key


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_real_traces_counted_sizes_and_op_records(path: Path) -> None:
    for scanned in _blocks(path):
        _check_sizes(scanned, counted=None)
        if scanned["rows"]:  # every record kept: the same as with every row given (used_codes counted)
            every_row = np.arange(scanned["rows"])
            _same_columns(
                native.op_record_columns(None, scanned), native.op_record_columns(every_row, scanned)
            )


def test_op_records_of_kept_rows_equal_those_of_every_row() -> None:
    events = [
        dict(KEPT, args={"Input Dims": [[1, 2]], "Input type": ["float"]}),
        dict(KEPT, args={"Input Dims": [[3]], "Input type": ["int"], "Sequence number": 4}),
        dict(KEPT, args={"Input type": ["float"], "Concrete Inputs": [""]}),
        dict(KEPT, name="no op fields"),
        dict(KEPT, args={"Input Dims": None}),
    ]
    for n in range(1, len(events) + 1):
        scanned = _scanned(_joined(events[:n]))
        every_row = np.arange(scanned["rows"])
        _same_columns(native.op_record_columns(None, scanned), native.op_record_columns(every_row, scanned))


@pytest.mark.parametrize("rows", [None, np.array([], dtype=np.intp), np.array([0, 2])])
def test_used_codes_of_no_values(rows: np.ndarray | None) -> None:
    codes = np.full(3, -1, dtype=np.int32)
    found, values = blocks.used_codes(codes, [], rows)
    want = codes if rows is None else np.take(codes, rows)
    assert values == [] and found.dtype == want.dtype and found.tobytes() == want.tobytes()
    # the counting path's answer for the same codes (a value list to recode; none used)
    recoded, used = blocks.used_codes(codes, ["unused"], rows)
    assert used == [] and recoded.tobytes() == want.tobytes()


NAMES = [
    "",
    "c",
    "cu",
    "cuda",
    "cuInit",
    "cuLaunchKernel",
    "cuLaunchKernel_v2",
    "cuMemcpyHtoDAsync_v2_ptsz",
    "cudaLaunchKernel_v7000",
    "cudaMemcpyAsync_ptsz",
    "cudaGetDeviceProperties_v2_v12000",
    "hipMalloc_ptds",
    "hipLaunchKernel",
    "cublasSgemm_v2",
    "cu_Launch",
    "CuLaunch",
    "ProfilerStep#0",
    "ProfilerStep#12",
    "ProfilerStep#-1",
    "ProfilerStep#x",
    "ProfilerStep#3_v2",
    "tracelens/step#7",
    "tracelens/step#",
    "aten::mm",
    "volta_scudnn_128x64_relu_interior_nn_v1",
    " ProfilerStep#1",
    "cuProfilerStep#1",
]


def _rules(name: str) -> tuple[int, float]:
    """A name's bits and step number by event_names' rules on every name (what NameFlags learns)."""
    stripped = event_names.strip_api_suffix(name)
    number = event_names.step_number(stripped)
    bits = (number is not None) * named_kinds.STEP_MARKER | event_names.is_driver_call(
        stripped
    ) * named_kinds.DRIVER_CALL
    return bits, np.nan if number is None else float(number)


def test_name_flags_learn_by_the_rules() -> None:
    real = [name for path in _traces()[:20] for scanned in _blocks(path) for name in scanned["names"]]
    names = NAMES + sorted(set(real))
    flags = named_kinds.NameFlags()
    bits, steps = flags.bits(names), flags.steps(names)
    want = [_rules(name) for name in names]
    assert bits.tolist() == [b for b, _ in want] + [0]
    assert np.array_equal(steps, np.array([s for _, s in want]), equal_nan=True)
